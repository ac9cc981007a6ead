"""Rotating the master key: the first key seals, every listed key opens, and `reseal`
moves every stored MCP secret to the new key, so the old one can be dropped."""

from __future__ import annotations

import base64
from pathlib import Path

import pytest
from argon2 import PasswordHasher

from adapters.bootstrap.in_memory import in_memory_accounts
from adapters.config.secrets import SealBroken, Sealer, key_id
from domain.mcp_servers import McpServerConfig

OLD, NEW = b"\x01" * 32, b"\x02" * 32


def b64(key: bytes) -> str:
    return base64.b64encode(key).decode()


def test_the_first_key_seals_and_every_key_opens() -> None:
    sealed_old = Sealer(OLD).seal("s3cret")
    rotating = Sealer(NEW, OLD)
    assert rotating.unseal(sealed_old) == "s3cret"
    assert rotating.stale(sealed_old)
    sealed_new = rotating.seal("s3cret")
    assert sealed_new.startswith(f"v2:{key_id(NEW)}:") and not rotating.stale(sealed_new)
    assert Sealer(NEW).unseal(sealed_new) == "s3cret"
    with pytest.raises(SealBroken, match=f"master key {key_id(OLD)}"):
        Sealer(NEW).unseal(sealed_old)  # the old key dropped too early: which key is missing


def test_values_sealed_before_key_ids_still_open() -> None:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM

    nonce = b"\x00" * 12
    v1 = "v1:" + base64.b64encode(nonce + AESGCM(OLD).encrypt(nonce, b"old", None)).decode()
    assert Sealer(NEW, OLD).unseal(v1) == "old"
    assert Sealer(NEW, OLD).stale(v1)
    with pytest.raises(SealBroken):
        Sealer(NEW).unseal(v1)


def test_keys_come_from_the_variable_or_a_file_never_both(tmp_path: Path) -> None:
    key_file = tmp_path / "keys"
    key_file.write_text(f"{b64(NEW)},{b64(OLD)}\n")
    from_file = Sealer.from_settings(None, tmp_path, key_file)
    assert from_file.current == key_id(NEW)
    assert from_file.unseal(Sealer(OLD).seal("x")) == "x"
    assert Sealer.from_settings(f"{b64(NEW)}, {b64(OLD)}", tmp_path).current == key_id(NEW)
    with pytest.raises(SystemExit, match="not both"):
        Sealer.from_settings(b64(NEW), tmp_path, key_file)
    with pytest.raises(SystemExit, match="TOKENDANCE_MASTER_KEY: key 2 is not base64 of 32"):
        Sealer.from_settings(f"{b64(NEW)},c2hvcnQ=", tmp_path)
    with pytest.raises(SystemExit, match="TOKENDANCE_MASTER_KEY_FILE: cannot read"):
        Sealer.from_settings(None, tmp_path, tmp_path / "missing")
    assert not (tmp_path / "master-key").exists()  # a configured key: none made


def test_reseal_moves_every_stored_secret_to_the_new_key() -> None:
    accounts = in_memory_accounts(jwt_secret="s" * 32, hasher=PasswordHasher(time_cost=1))
    accounts.sealer = Sealer(OLD)
    workspaces = []
    for email in ("a@example.com", "b@example.com"):
        r = accounts.register(email, "correct horse battery", email)
        workspaces.append(r.workspace_id)
        server = McpServerConfig(
            "calc", "http", url="http://127.0.0.1:1/mcp", headers={"Authorization": "Bearer t"},
            env={"TOKEN": "x"},
        )  # fmt: skip
        accounts.register_mcp_server(r.user_id, r.workspace_id, server)

    accounts.sealer = Sealer(NEW, OLD)
    assert accounts.reseal_mcp_secrets() == 2
    assert accounts.reseal_mcp_secrets() == 0  # nothing stale left: a second run changes nothing

    accounts.sealer = Sealer(NEW)  # the old key dropped
    for workspace_id in workspaces:
        (server,) = accounts.workspace_mcp_servers(workspace_id)
        assert server.headers == {"Authorization": "Bearer t"} and server.env == {"TOKEN": "x"}
