"""The verifier runner (orchestrator.md §9)."""
