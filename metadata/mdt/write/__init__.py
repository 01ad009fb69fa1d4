"""The metadata table's write side: the writer (build, sync, compact, drop),
the HFile writer, the writer lock and the spill that sorts cells past memory.
Nothing on the read path imports it (tests/test_architecture.py checks)."""
