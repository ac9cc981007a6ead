"""The HTTP API's routes, one module per resource (controllers and route handlers)."""
