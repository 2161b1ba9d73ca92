"""kioku benchmarks: numbers, not assertions (see bench/RESULTS.md)."""
