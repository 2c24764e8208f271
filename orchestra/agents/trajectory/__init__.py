"""Agent trajectories: the ATIF document (`atif`) and the JSON-lines side file buzz-agent writes
its steps to as they happen (`sidefile`), which the orchestrator assembles into the document at
teardown (orchestrator.md §7.16)."""
