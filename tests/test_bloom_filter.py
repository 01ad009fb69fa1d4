"""Hudi's footer bloom filters, decoded bit for bit: every key of every base
file of every fixture is "might contain" in its own filter (a hash that
differed from Hudi's would miss them), absent keys are ruled out, and
`plan(..., footers=True)` never drops a slice holding a pinned key."""

from __future__ import annotations

import base64
import struct
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from expressions import evaluate_rows, parse_sql
from listers import plan
from metadata import HudiTable
from metadata.errors import HudiFormatError
from metadata.formats.bloom_filter import decode_bloom_filter, footer_bloom_filter
from tests.conftest import FIXTURE_ZIPS, requires_fixtures, table_path
from tests.test_listers import rows_of

READ_FIXTURES = [z.stem for z in FIXTURE_ZIPS if "empty" not in z.stem]


@requires_fixtures
def test_every_key_is_in_its_files_filter_and_absent_keys_are_not(fixture_root: Path) -> None:
    files = checked = absent_hits = 0
    for stem in READ_FIXTURES:  # every base file each table ever wrote, not only the latest
        root = Path(table_path(fixture_root, stem))
        for base in sorted(p for p in root.rglob("*.parquet") if ".hoodie" not in p.relative_to(root).parts):
            found = footer_bloom_filter(pq.read_metadata(base).metadata, str(base))
            assert found is not None, base  # Hudi wrote one into every base file, with Murmur
            files += 1
            for key in pq.read_table(base, columns=["_hoodie_record_key"]).column(0).to_pylist():
                assert found.might_contain(key), (base, key)
                checked += 1
            absent_hits += sum(found.might_contain(f"absent-{stem}-{i}") for i in range(100))
    assert files >= 90 and checked >= 240, (files, checked)  # 92 files, 242 keys in the fixtures
    assert absent_hits <= files  # at most 1% false positives (Hudi sizes its filters for 1e-9)


def _simple(nb_hash: int, hash_type: int, vector_size: int, bits: bytes) -> str:
    """Hadoop's Filter.write layout: version -1, nbHash, hash type, vector size, then the bits."""
    return base64.b64encode(struct.pack(">iiBi", -1, nb_hash, hash_type, vector_size) + bits).decode()


def test_damaged_or_foreign_filters_never_rule_a_file_out() -> None:
    full = _simple(3, 1, 16, b"\xff\xff")
    decoded = decode_bloom_filter(full, "SIMPLE", "f.parquet")
    assert decoded is not None and decoded.might_contain("anything")
    empty = decode_bloom_filter(_simple(3, 1, 16, b"\x00\x00"), "SIMPLE", "f.parquet")
    assert empty is not None and not empty.might_contain("anything")
    assert decode_bloom_filter(_simple(3, 0, 16, b"\x00\x00"), "SIMPLE", "f.parquet") is None  # Jenkins: not read, so kept
    with pytest.raises(HudiFormatError, match=r"f\.parquet.*bloom filter ends at byte"):
        decode_bloom_filter(_simple(3, 1, 64, b"\x00"), "SIMPLE", "f.parquet")
    with pytest.raises(HudiFormatError, match="type 'BLOCKED' is not known"):
        decode_bloom_filter(full, "BLOCKED", "f.parquet")
    assert footer_bloom_filter({b"other": b"x"}, "f.parquet") is None


@requires_fixtures
@pytest.mark.parametrize("stem", READ_FIXTURES)
def test_footer_filters_prune_absent_keys_and_keep_every_holder(fixture_root: Path, stem: str) -> None:
    path = table_path(fixture_root, stem)
    table = HudiTable.open(path)
    slices = table.file_slices()
    rows = {(s.partition, s.file_id): rows_of(path, s) for s in slices}
    keys = sorted({k for found in rows.values() for k in found.column("_hoodie_record_key").to_pylist()})
    for where in [f"_hoodie_record_key = '{keys[0]}'", f"_hoodie_record_key IN ('{keys[-1]}', 'no-such-key')"]:
        expression = parse_sql(where)
        holding = {group for group, found in rows.items() if found.num_rows and any(evaluate_rows(expression, found).to_pylist())}
        kept = {(s.partition, s.file_id) for s in plan(path, where, footers=True).files}
        assert holding <= kept, where
    absent = plan(path, "_hoodie_record_key = 'no-such-key'", footers=True)
    base_only = [s for s in slices if not s.log_files]
    assert len(absent.files) <= len(slices) - len(base_only) + len(base_only) // 10, absent.explain()
