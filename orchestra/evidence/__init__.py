"""Evidence export: `buzz-evidence.json`, schema version 1 (orchestrator.md §8)."""
