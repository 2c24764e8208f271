"""`orchestra leaderboard`: conditions ranked and the ranking's output."""
