"""Streams over HTTP: SSE for chat and sessions, the push socket's messages, and the limits
on their waits."""
