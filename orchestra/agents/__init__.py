"""The per-agent process tree: buzz-acp (bridge), buzz-agent (LLM loop), buzz-dev-mcp (tools)."""
