"""The benchmark stack: the relay and its PostgreSQL database (orchestrator.md §5)."""
