"""Aggregation and summary (orchestrator.md §11)."""
