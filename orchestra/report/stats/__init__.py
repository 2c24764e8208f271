"""The statistics of the report, compare and leaderboard commands (docs/statistics.md)."""
