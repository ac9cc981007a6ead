"""Tools the agent can call. One module per tool (or family); the registry finds them."""
