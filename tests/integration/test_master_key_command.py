"""`tokendance secrets reseal` through a key rotation, on the real accounts store.

A process started with keys that cannot open a stored secret stops before it does
anything, naming the variable and the secret; with the new key first and the old one
after it, `reseal` moves every secret to the new key; then the new key alone is enough.
"""

from __future__ import annotations

import base64
import os
import subprocess
import sys
from pathlib import Path
from uuid import uuid4

import pytest

from adapters.config.secrets import Sealer, key_id
from adapters.container import Container
from adapters.personal_keys import UserKeys
from domain.mcp_servers import McpServerConfig

pytestmark = pytest.mark.integration

OLD, NEW = b"\x05" * 32, b"\x06" * 32


def b64(*keys: bytes) -> str:
    return ",".join(base64.b64encode(k).decode() for k in keys)


def reseal(env: dict[str, str], keys: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "adapters.cli", "secrets", "reseal"],
        env={**env, "TOKENDANCE_MASTER_KEY": keys},
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def test_a_rotation_from_the_command_line(
    container: Container, database_url: str, nats_url: str, data_root: Path
) -> None:
    accounts = container.accounts
    accounts.sealer = Sealer(OLD)
    keys = container.erasure.keys
    assert isinstance(keys, UserKeys)
    keys.master = Sealer(OLD)  # the users' personal keys too
    who = accounts.register("keys@example.com", "correct horse battery", "Keys")
    server = McpServerConfig("calc", "stdio", ("calc",), env={"TOKEN": "t0ken"})
    accounts.register_mcp_server(who.user_id, who.workspace_id, server)
    env = {
        **os.environ,
        "TOKENDANCE_DATABASE_URL": database_url,
        "TOKENDANCE_NATS_URL": nats_url,
        "TOKENDANCE_DATA_DIR": str(data_root / f"keys-{uuid4().hex[:6]}"),
    }

    wrong = reseal(env, b64(NEW))
    assert wrong.returncode == 1, wrong
    assert "TOKENDANCE_MASTER_KEY cannot open 1 stored secret" in wrong.stderr
    assert f"TOKEN of MCP server 'calc' in workspace {who.workspace_id}" in wrong.stderr
    assert key_id(OLD) in wrong.stderr  # which key is missing

    rotated = reseal(env, b64(NEW, OLD))
    assert rotated.returncode == 0, rotated.stderr
    assert "the secrets of 1 MCP server(s), the personal keys of 1 user(s)" in rotated.stdout
    after = reseal(env, b64(NEW))  # the old key dropped: it starts, nothing left to move
    assert after.returncode == 0, after.stderr
    assert "the secrets of 0 MCP server(s), the personal keys of 0 user(s)" in after.stdout

    accounts.sealer = Sealer(NEW)
    (kept,) = accounts.workspace_mcp_servers(who.workspace_id)
    assert kept.env == {"TOKEN": "t0ken"}
    keys.master = Sealer(NEW)  # the resealed personal key opens the user's name
    keys.forget(who.user_id)
    assert accounts.find_user(who.user_id) is not None
    assert accounts.profile(who.user_id).name == "Keys"
