"""Use cases on a workspace's MCP servers: register (secrets sealed), list (secret
names, never values), remove; and what the engine reads to connect (values unsealed).

Registration probes the server first (`McpProbe`: connect, initialize, list its tools,
check their schemas and names), so a command that does not exist, a URL that does not
speak MCP or a tool the model could not be given is a clear 400, and nothing is kept.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import replace
from typing import Protocol
from uuid import UUID

from application.tenants import Tenants
from domain.mcp_servers import McpServerConfig, WorkspaceMcpServers
from domain.roles import Actor, actor_of


class SecretBox(Protocol):
    """Seals secrets kept at rest (`adapters.config.secrets.Sealer`)."""

    def seal(self, value: str) -> str: ...

    def unseal(self, sealed: str) -> str: ...

    def stale(self, sealed: str) -> bool:
        """Sealed with another key than the one that seals now."""
        ...


# Checks a server for real before it is kept: raises `InvalidValue` saying why not.
McpProbe = Callable[[McpServerConfig], Awaitable[None]]


class McpServerRegistry(Tenants):
    """The MCP servers of workspaces, in the accounts' event store."""

    sealer: SecretBox | None = None

    def mcp_servers(self, who: UUID | Actor, workspace_id: UUID) -> list[McpServerConfig]:
        """The workspace's servers as registered (secret values sealed)."""
        self.authorize(who, workspace_id)
        return self.workspace_mcp_servers(workspace_id, unsealed=False)

    def register_mcp_server(
        self, who: UUID | Actor, workspace_id: UUID, server: McpServerConfig
    ) -> McpServerConfig:
        """Keep `server` (already probed) for the workspace; its secrets sealed."""
        actor = actor_of(who)
        self.authorize(actor, workspace_id, action="manage_workspaces")
        servers = self._get(WorkspaceMcpServers, WorkspaceMcpServers.create_id(workspace_id))
        servers = servers or WorkspaceMcpServers(workspace_id)
        sealed = replace(
            server.check(),
            env={k: self._box().seal(v) for k, v in server.env.items()},
            headers={k: self._box().seal(v) for k, v in server.headers.items()},
        )
        servers.register(sealed, actor.user_id)
        self._save(servers)
        return sealed

    def remove_mcp_server(self, who: UUID | Actor, workspace_id: UUID, name: str) -> None:
        actor = actor_of(who)
        self.authorize(actor, workspace_id, action="manage_workspaces")
        servers = self._get(WorkspaceMcpServers, WorkspaceMcpServers.create_id(workspace_id))
        if servers is None:
            servers = WorkspaceMcpServers(workspace_id)
        servers.remove(name, actor.user_id)
        self._save(servers)

    def workspace_mcp_servers(
        self, workspace_id: UUID, *, unsealed: bool = True
    ) -> list[McpServerConfig]:
        """The workspace's servers, for the engine that connects to them (no access check:
        the engine acts for a session of the workspace)."""
        servers = self._get(
            WorkspaceMcpServers, WorkspaceMcpServers.create_id(workspace_id), copy=False
        )
        configs = servers.configs() if servers is not None else []
        if not unsealed:
            return configs
        box = self._box()
        return [
            replace(
                c,
                env={k: box.unseal(v) for k, v in c.env.items()},
                headers={k: box.unseal(v) for k, v in c.headers.items()},
            )
            for c in configs
        ]

    def reseal_mcp_secrets(self) -> int:
        """Seal every stored MCP secret again with the key that seals now (after a new
        master key was put first); how many servers changed. Safe to run again."""
        box, changed = self._box(), 0
        for servers_id in self._aggregate_ids(WorkspaceMcpServers.Started):
            servers = self._get(WorkspaceMcpServers, servers_id)
            assert servers is not None
            for c in servers.configs():
                if not any(box.stale(v) for v in (*c.env.values(), *c.headers.values())):
                    continue
                env = {k: box.seal(box.unseal(v)) for k, v in c.env.items()}
                headers = {k: box.seal(box.unseal(v)) for k, v in c.headers.items()}
                servers.reseal(c.name, env, headers)
                changed += 1
            self._save(servers)
        return changed

    def unopenable_mcp_secrets(self) -> list[str]:
        """Which stored MCP secrets the keys at hand cannot open, and why (none: all open)."""
        box, found = self._box(), []
        for servers_id in self._aggregate_ids(WorkspaceMcpServers.Started):
            servers = self._get(WorkspaceMcpServers, servers_id, copy=False)
            assert servers is not None
            for c in servers.configs():
                for name, value in (*c.env.items(), *c.headers.items()):
                    try:
                        box.unseal(value)
                    except Exception as e:  # noqa: BLE001 - the box says why, in its words
                        found.append(f"{name} of MCP server {c.name!r} in workspace "
                                     f"{servers.workspace_id}: {e}")  # fmt: skip
        return found

    def _aggregate_ids(self, created: type[object]) -> list[UUID]:
        """The ids of every aggregate started with the event class `created`."""
        topic = f"{created.__module__}:{created.__qualname__}"
        ids: list[UUID] = []
        start = 1
        while page := self.recorder.select_notifications(start, 500, topics=[topic]):
            ids.extend(UUID(str(n.originator_id)) for n in page)
            start = page[-1].id + 1
        return ids

    def _box(self) -> SecretBox:
        if self.sealer is None:
            raise RuntimeError("no sealer: the composition root sets `sealer`")
        return self.sealer
