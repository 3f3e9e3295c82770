"""Benchmarks: each module prints figures and asserts nothing. Run one from the repository root as
`python -m benchmarks.<name>` (the `test` extra installed: some start a Kafka broker from
tests/support). Modules whose names start with an underscore are helpers. Stopped by SIGTERM or
Ctrl-C, a benchmark stops the brokers, monitors and other processes it started and removes its
temporary folders before it exits (_stopping.py)."""
