"""A process's settings: from the environment (each variable named and documented in
`env_vars`), secrets and the master key, CORS origins, the price table."""
