"""A small MCP server built with the official SDK, for the MCP client's tests: `add`,
`slow` (sleeps, to be killed mid-call), `fail` (a tool error) and `whoami` (its pid and
environment). Over stdio by default, or Streamable HTTP on 127.0.0.1 with `--http PORT`
(path `/mcp`); `--bad-schema` gives `add` an inputSchema that is not JSON Schema.

    python -m tests.fakes.mcp_calc            # stdio
    python -m tests.fakes.mcp_calc --http 0   # prints `listening on PORT`
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("calc")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
async def slow(seconds: float) -> str:
    """Sleep for `seconds`, then answer."""
    await asyncio.sleep(seconds)
    return f"slept {seconds}s"


@server.tool()
def fail(reason: str) -> str:
    """Always fails with `reason`."""
    raise ToolError(reason)


@server.tool()
def whoami() -> str:
    """The server's process id, the CALC_TOKEN it was started with, its env's names."""
    names = ",".join(sorted(os.environ))
    return f"pid={os.getpid()} token={os.environ.get('CALC_TOKEN', '')} env={names}"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--http", type=int, default=None)
    parser.add_argument("--tag", default="")  # tells one test's server process from another
    parser.add_argument("--bad-schema", action="store_true")
    options = parser.parse_args()
    if options.bad_schema:
        tool = server._tool_manager.get_tool("add")
        assert tool is not None
        tool.parameters = {"type": "object", "properties": {"a": {"type": 42}}}
    port = options.http
    if port is None:
        server.run()
        return
    if port == 0:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
    print(f"listening on {port}", flush=True)
    server.run("streamable-http", host="127.0.0.1", port=port)


if __name__ == "__main__":
    main()
