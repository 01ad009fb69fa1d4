"""Writers of sample Hudi tables, for tests, benchmarks and the demo.

Not part of the read path: nothing outside tests, `bench/` and the demo
imports this package (as hudi-rs keeps its table writer in `crates/test`).
"""
