"""The terminal output: the summary table of §11.2, its CSV and JSON, the live progress."""
