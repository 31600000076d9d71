"""casrbd benchmarks: graph sizes, timings and accuracy (see README)."""
