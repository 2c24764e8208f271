"""`orchestra compare`: the comparison of a candidate with a baseline and its output."""
