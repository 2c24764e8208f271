"""buzz-dev-mcp: the stdio MCP tool server (agent-harness.md §3)."""
