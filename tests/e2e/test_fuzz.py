"""Schemathesis over the running server's OpenAPI document: no input makes a 5xx, and
every error is in the `{detail, error_code, timestamp}` format.

One real `tokendance serve` (no model), one registered user whose bearer token every
case carries. Ids in the generated requests that are well-formed UUIDs are replaced by
the user's real session and workspace (and HITL request ids by its pending request), so
the cases reach the handlers' logic rather than stopping at 404 (ill-formed ids are left
alone: they test the validation).
Excluded: the SSE session stream (it never ends by itself) and logout (it would
revoke the token in the middle of the run). Bounded and deterministic: 25 examples per
operation, derandomized.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

import pytest
import requests
import schemathesis
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis.generation import GenerationMode

from tests.e2e.client import Server, sign_up
from tests.e2e.conftest import StartServer

pytestmark = [pytest.mark.e2e]

ERROR_KEYS = {"detail", "error_code", "timestamp"}


@dataclass(frozen=True)
class Target:
    server: Server
    headers: dict[str, str]
    session_id: str
    workspace_id: str
    request_id: str


@pytest.fixture
def fuzz_target(start_server: StartServer) -> Target:
    server = start_server(None)
    http = server.client()
    account = sign_up(http, "fuzz@example.com")
    headers = {"Authorization": f"Bearer {account['access_token']}"}
    workspace_id = str(account["workspace_id"])
    created = http.post(
        "/api/v1/sessions/",
        json={"workspace_id": workspace_id, "settings": {"confirmation": "always"}},
        headers=headers,
    )
    assert created.status_code == 201, created.text
    session_id = str(created.json()["id"])
    # A pending approval (a tool run by hand under "always") for the HITL operations.
    asked = http.post(
        "/api/v1/mcp/tools/note_progress/execute",
        json={"session_id": session_id, "args": {"text": "fuzz"}},
        headers=headers,
    )
    assert asked.status_code == 202, asked.text
    return Target(server, headers, session_id, workspace_id, str(asked.json()["action_id"]))


EXCLUDED = {("GET", "/api/v1/sessions/{session_id}/stream"), ("POST", "/api/v1/auth/logout")}
MODES = (GenerationMode.POSITIVE, GenerationMode.NEGATIVE)
EXAMPLES = 25


def _is_uuid(value: object) -> bool:
    try:
        uuid.UUID(str(value))
    except ValueError:
        return False
    return True


def aim(case: schemathesis.Case, target: Target) -> None:
    """Point well-formed ids at the user's real session and workspace, and HITL request
    ids at its real request (an unknown one costs the server a second of waiting for the
    read model, by design: adapters/http/routes/session_stream.py `_visible`)."""
    ids = {"session_id": target.session_id, "workspace_id": target.workspace_id}
    if isinstance(case.path_parameters, dict) and "request_id" in case.path_parameters:
        case.path_parameters["request_id"] = target.request_id
    for container in (case.path_parameters, case.query):
        if isinstance(container, dict):
            for key, real in ids.items():
                if key in container and _is_uuid(container[key]):
                    container[key] = real
    if isinstance(case.body, dict):
        for key, real in ids.items():
            if key in case.body and _is_uuid(case.body[key]):
                case.body[key] = real


def check(case: schemathesis.Case, target: Target) -> None:
    aim(case, target)
    response = case.call(base_url=target.server.url, headers=target.headers, timeout=15)
    where = case.as_curl_command(headers=target.headers)
    assert response.status_code < 500, f"{response.status_code} {response.text[:300]}\n{where}"
    if response.status_code >= 400:
        assert_error_format(response, where)


@pytest.mark.parametrize("mode", MODES, ids=[m.value for m in MODES])  # two tests: two cores
def test_no_input_makes_a_server_error_and_every_error_has_the_format(
    fuzz_target: Target, mode: GenerationMode
) -> None:
    # (schemathesis' own pytest integration, `from_fixture(...).parametrize()`, fails on
    # pytest 9: it reads `request.node._nodeid`. So: its strategies under Hypothesis.)
    schema = schemathesis.openapi.from_url(f"{fuzz_target.server.url}/schema/openapi.json")
    operations = [r.ok() for r in schema.get_all_operations()]
    assert len(operations) > 20, "the OpenAPI document lost its operations"
    failures: list[str] = []
    for operation in operations:
        if (operation.method.upper(), operation.path) in EXCLUDED:
            continue

        @given(case=operation.as_strategy(generation_mode=mode))
        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            derandomize=True,
            database=None,
            phases=[Phase.explicit, Phase.generate],
            suppress_health_check=list(HealthCheck),
        )
        def fuzz(case: schemathesis.Case) -> None:
            check(case, fuzz_target)

        try:
            fuzz()
        except Unsatisfiable:  # no parameter, body or token to make invalid (`/health`)
            assert mode is GenerationMode.NEGATIVE, operation.path
        except Exception as e:  # noqa: BLE001 - every operation is tried; all reported
            failures.append(f"{operation.method.upper()} {operation.path} ({mode.value}): {e}")
    assert not failures, f"{len(failures)} failing operation(s):\n\n" + "\n\n".join(failures)


def assert_error_format(response: requests.Response, where: str) -> None:
    try:
        body = response.json()
    except ValueError:
        raise AssertionError(f"a {response.status_code} without a JSON body\n{where}") from None
    assert isinstance(body, dict) and body.keys() >= ERROR_KEYS, f"{body}\n{where}"
    assert all(isinstance(body[k], str) and body[k] for k in ERROR_KEYS), f"{body}\n{where}"
