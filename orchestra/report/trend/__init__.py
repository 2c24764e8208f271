"""`orchestra trend`: runs of one condition over time, as text and as an SVG chart."""
