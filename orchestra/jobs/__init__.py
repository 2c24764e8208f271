"""Jobs directory, trial scheduling and resume (orchestrator.md §2.5, §10)."""
