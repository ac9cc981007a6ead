"""What keeps a process and its servers running: the embedded Postgres and NATS, their
supervisor and watchdog, the data directory's lease, the worker, the event loop."""
