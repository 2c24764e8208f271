"""`report.html`: the page, its sections (trials, transcripts, trajectories, agents, trend)."""
