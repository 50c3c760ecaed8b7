"""MemoryHub's MCP server: the agent API's operations as MCP tools (stdio and streamable HTTP)."""
