"""MCP both ways: the agent uses MCP servers' tools (`client`), and TokenDance serves its
own as an MCP server at /mcp (`server`)."""
