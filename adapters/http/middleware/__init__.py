"""What every request passes through: authentication, CORS, rate and login limits,
idempotency, metrics, JSON bodies, log redaction."""
