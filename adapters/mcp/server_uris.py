"""The URIs of TokenDance's MCP resources: a session's artifacts."""

from __future__ import annotations

import re
from uuid import UUID

ARTIFACT_TEMPLATE = "tokendance://sessions/{session_id}/artifacts/{artifact_id}"
_ID = "[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}"
_ARTIFACT = re.compile(f"^tokendance://sessions/({_ID})/artifacts/({_ID})$")


def artifact_uri(session_id: UUID, artifact_id: UUID) -> str:
    return ARTIFACT_TEMPLATE.format(session_id=session_id, artifact_id=artifact_id)


def parse_artifact_uri(uri: str) -> tuple[UUID, UUID] | None:
    """(session id, artifact id) of an artifact's URI; None if it is not one."""
    found = _ARTIFACT.match(uri)
    return None if found is None else (UUID(found.group(1)), UUID(found.group(2)))
