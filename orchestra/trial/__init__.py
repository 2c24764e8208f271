"""The life of one trial (orchestrator.md §7)."""
