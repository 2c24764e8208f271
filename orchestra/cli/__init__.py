"""The `orchestra` command line (orchestrator.md §2)."""
