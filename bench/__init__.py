"""Benchmarks: `make bench` (python -m bench). Not part of `make test`."""
