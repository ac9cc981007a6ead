"""What an operator follows: JSON logs and OpenTelemetry traces."""
