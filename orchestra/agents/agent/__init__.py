"""buzz-agent: the ACP agent that runs the LLM tool loop (agent-harness.md §2)."""
