"""A differential query fuzzer: generated tables and queries on Spark with sparkagg against DataFusion 55
(runner.py). `make fuzz` runs it for a count or a time; tests/test_fuzz.py runs a short seeded part."""
