"""The bytes the metadata-table writer writes for one fixed input: a history
of builder tables (v6 and v8, COW and MOR; every partition, a secondary index,
expression indexes; builds, syncs of upserts, deletes, cleans, compactions and
a rebuild), as a digest per metadata-table file (the timeline's own files
apart: they carry completion times). `tests/golden/writer-bytes.json` holds
the digests; `python -m tests.writer_bytes --write` regenerates it, only for
an intended change of what is written."""

from __future__ import annotations

import hashlib
import json
import random
import sys
import types
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from unittest import mock

from expressions.index_expressions import SparkIndexExpressions, expression_index_of
from metadata.mdt.file_groups import PARTITION_ORDER, MdtPartition, SecondaryIndexPartition
from metadata.mdt.write import hfile_writer
from metadata.mdt.write.writer import MetadataTableWriter
from metadata.sample_tables import table_writes as builder_writes
from tests.test_index_writer import _builder, _rows

GOLDEN = Path(__file__).resolve().parent / "golden" / "writer-bytes.json"
DAY = expression_index_of("ts_day", "date_format(ts, 'yyyy-MM-dd')")
UPPER = expression_index_of("city_upper", "upper(city)")


@contextmanager
def fixed_inputs() -> Iterator[None]:
    """File ids from a seeded generator, HFiles' creation time fixed: the only inputs that are not the data."""
    rng = random.Random(7)
    ids = types.SimpleNamespace(uuid4=lambda: uuid.UUID(int=rng.getrandbits(128), version=4))
    with mock.patch.object(builder_writes, "uuid", ids), mock.patch.object(hfile_writer, "time", types.SimpleNamespace(time=lambda: 1.7e9)):
        yield


def _history(path: Path, version: int, table_type: str, **options: Any) -> None:
    builder = _builder(path, version, table_type)
    for city in ("sf", "nyc", "la"):
        builder.write(_rows(0 if city == "sf" else 100 if city == "nyc" else 200, 7, city))
    partitions: list[Any] = list(PARTITION_ORDER)
    if version >= 8:
        partitions += [SecondaryIndexPartition("secondary_index_city", "city"), DAY, UPPER]

    def writer() -> MetadataTableWriter:
        return MetadataTableWriter(str(path), index_expressions=SparkIndexExpressions(), **options)

    writer().build(partitions)
    builder.write(_rows(3, 6, "sf"))
    builder.delete(["k001", "k005"])
    builder.write(_rows(300, 4, "ny2"))
    writer().sync()
    if table_type == "MERGE_ON_READ":
        writer().compact(force=True)
    builder.clean()
    builder.write(_rows(203, 3, "la"))
    writer().sync()
    writer().build([MdtPartition.COLUMN_STATS], rebuild=True)


def written_bytes(root: Path, **options: Any) -> dict[str, str]:
    """Relative path -> SHA-256 of every file of each history's metadata partitions."""
    with fixed_inputs():
        for version in (6, 8):
            for table_type in ("COPY_ON_WRITE", "MERGE_ON_READ"):
                _history(root / f"v{version}-{table_type.lower()}", version, table_type, **options)
    digests = {}
    for path in sorted(root.rglob("*")):
        relative = path.relative_to(root).as_posix()
        if path.is_file() and "/.hoodie/metadata/" in relative and "/.hoodie/metadata/.hoodie/" not in relative:
            digests[relative] = hashlib.sha256(path.read_bytes()).hexdigest()
    return digests


def main() -> None:
    import tempfile

    if sys.argv[1:] != ["--write"]:
        raise SystemExit("usage: python -m tests.writer_bytes --write")
    with tempfile.TemporaryDirectory() as folder:
        digests = written_bytes(Path(folder))
    GOLDEN.write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n")
    print(f"{GOLDEN.name}: {len(digests)} files")


if __name__ == "__main__":
    main()
