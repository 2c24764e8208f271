"""buzz-acp, the bridge between Buzz and an ACP agent (agent-harness.md §1).

Modules: `config` (options), `wake` (wake rule), `queues` (batching), `prompt` (prompt
composition), `relay` and `channels` (relay side), `slot`, `acp_client`, `pool` (agent
processes), `turns` (one turn's outcome), `bridge` (main loop), `cli` (entry point).
"""
