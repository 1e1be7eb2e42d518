"""Console output: progress with ETA per phase and the results table (rich)."""
