"""The specialised encoder of column_stats and partition_stats records writes
exactly the bytes fastavro's generic writer writes, for every wrapper type,
both schemas (table version 9, and 6/8), deleted and partition records, null
bounds and names; what it does not take (decimals on the legacy schema, other
records) goes to the generic writer (fixed seed)."""

from __future__ import annotations

import datetime
import io
import random
from decimal import Decimal
from typing import Any

import fastavro
import pyarrow as pa

from metadata.mdt.file_stats import ColumnRange
from metadata.mdt.record_builders import files_record, range_record
from metadata.mdt.record_encoding import encode_record
from metadata.mdt.record_schema import LEGACY_METADATA_RECORD_SCHEMA_JSON, METADATA_RECORD_SCHEMA_JSON
from metadata.mdt.records import parse_schema_cached
from metadata.mdt.stats_encoding import encode_stats_record


def _generic(record: dict[str, Any], schema_json: str, blank_key: bool) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, parse_schema_cached(schema_json), dict(record, key="") if blank_key else record)
    return out.getvalue()


def _values(rng: random.Random) -> list[tuple[pa.DataType, Any]]:
    utc = datetime.timezone.utc
    return [
        (pa.int8(), lambda: rng.randint(-128, 127)), (pa.int32(), lambda: rng.randint(-2**31, 2**31 - 1)),
        (pa.int64(), lambda: rng.randint(-2**63, 2**63 - 1)), (pa.uint32(), lambda: rng.randint(0, 2**32 - 1)),
        (pa.float32(), lambda: rng.randint(-10**6, 10**6) / 8), (pa.float64(), lambda: rng.uniform(-1e300, 1e300)),
        (pa.string(), lambda: "".join(rng.choice("aZ0é😀'\"") for _ in range(rng.randint(0, 90)))),
        (pa.bool_(), lambda: rng.random() < 0.5), (pa.binary(), lambda: bytes(rng.randrange(256) for _ in range(rng.randint(0, 9)))),
        (pa.date32(), lambda: datetime.date(1970, 1, 1) + datetime.timedelta(days=rng.randint(-30000, 30000))),
        (pa.timestamp("us", tz="UTC"), lambda: datetime.datetime(2024, 1, 1, tzinfo=utc) + datetime.timedelta(microseconds=rng.randint(-10**14, 10**14))),
        (pa.timestamp("ms"), lambda: datetime.datetime(2024, 1, 1) + datetime.timedelta(milliseconds=rng.randint(0, 10**10))),
        (pa.time64("us"), lambda: datetime.time(rng.randint(0, 23), rng.randint(0, 59), rng.randint(0, 59), rng.randint(0, 999999))),
        (pa.decimal128(12, 3), lambda: Decimal(rng.randint(-10**11, 10**11)).scaleb(-3)),
    ]


def test_stats_records_encode_to_the_generic_writers_bytes() -> None:
    rng = random.Random(20261125)
    kinds = _values(rng)
    specialised = 0
    for version, schema_json in ((9, METADATA_RECORD_SCHEMA_JSON), (8, LEGACY_METADATA_RECORD_SCHEMA_JSON), (6, LEGACY_METADATA_RECORD_SCHEMA_JSON)):
        for n in range(1500):
            dtype, make = rng.choice(kinds)
            low = None if rng.random() < 0.1 else make()
            high = None if rng.random() < 0.1 else make()
            name = "" if rng.random() < 0.05 else f"part-{n}.parquet"
            stats = ColumnRange(name, f"c{n % 9}", dtype, low, high, rng.randint(0, 10**6), rng.randint(0, 10**9),
                                rng.randint(0, 10**12), rng.randint(0, 10**12))
            record = range_record(f"key-{n}", stats, version, partition_stats=rng.random() < 0.3, deleted=rng.random() < 0.1)
            blank = rng.random() < 0.8
            assert encode_record(record, schema_json, blank) == _generic(record, schema_json, blank), (version, record)
            specialised += encode_stats_record(record, version < 9, blank) is not None
    assert specialised > 4000  # most went the specialised way (legacy decimals do not)


def test_other_records_take_the_generic_writer() -> None:
    record = files_record("p1", {"a.parquet": (10, False), "b.parquet": (0, True)})
    assert encode_stats_record(record, False) is None
    assert encode_record(record) == _generic(record, METADATA_RECORD_SCHEMA_JSON, True)
