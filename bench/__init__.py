"""Benchmarks: `make bench` (python -m bench). Not part of `make test`. They drive the
same loopback fakes and kits as the tests (`tests.kit`, `tests.kit.fakes`)."""
