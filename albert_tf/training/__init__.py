"""One training loop for every task, its optimizer and schedule, and the metrics."""
