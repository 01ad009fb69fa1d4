"""Golden files: small files Apache Hudi 1.1 wrote (from a v9 fixture table),
and what this project decodes from them, as JSON beside each file.

`python -m tests.golden_formats --write` regenerates the JSON; do that only
for an intended decoder change, checked against hudi-rs first.
"""

from __future__ import annotations

import dataclasses
import json
import sys
from datetime import date, datetime
from decimal import Decimal
from enum import Enum
from pathlib import Path
from typing import Any

from metadata.formats.log_format import BlockType, read_log_blocks
from metadata.mdt.hfile_reader import HFileReader
from metadata.mdt.records import decode_record
from metadata.table.config import TableConfig, parse_java_properties
from metadata.timeline.commit_metadata import CommitMetadata
from metadata.timeline.instant_content import decode_instant_content

GOLDEN = Path(__file__).resolve().parent / "golden"


def jsonable(value: Any) -> Any:
    """Plain JSON values, keeping types visible (bytes as hex, decimals as text)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: jsonable(getattr(value, f.name)) for f in dataclasses.fields(value) if f.repr}
    if isinstance(value, Enum):
        return value.name
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if isinstance(value, bytes):
        return {"hex": value.hex()}
    if isinstance(value, Decimal):
        return {"decimal": str(value)}
    if isinstance(value, (date, datetime)):
        return {type(value).__name__: value.isoformat()}
    return value


def decode_hfile(path: Path) -> dict[str, Any]:
    reader = HFileReader.from_bytes(path.read_bytes(), path.name)
    schema = reader.schema_json()
    assert schema is not None
    records = {row.decode(): decode_record(row.decode(), value, schema, path.name) for row, value in reader.iter_all()}
    return {
        "entry_count": reader.entry_count,
        "data_blocks": len(reader.data_index),
        "file_info_keys": sorted(k.decode() for k in reader.file_info),
        "records": jsonable(records),
    }


def decode_log(path: Path) -> dict[str, Any]:
    result = read_log_blocks(path.read_bytes(), path.name)
    blocks = []
    for block in result.blocks:
        entry: dict[str, Any] = {"type": block.block_type.name, "offset": block.offset, "header": jsonable(block.header)}
        if block.block_type is BlockType.HFILE_DATA:
            inner = HFileReader.from_bytes(block.content, f"{path.name}@{block.offset}")
            schema = block.schema or inner.schema_json()
            assert schema is not None
            entry["records"] = jsonable({row.decode(): decode_record(row.decode(), value, schema, path.name) for row, value in inner.iter_all()})
        blocks.append(entry)
    return {"blocks": blocks, "problems": [str(p) for p in result.problems]}


def decode_commit(path: Path) -> dict[str, Any]:
    content = decode_instant_content(path.name, path.read_bytes())
    meta = CommitMetadata.from_dict(path.name, content)
    return {
        "content": jsonable(content),
        "operation_type": meta.operation_type,
        "touched_partitions": sorted(meta.touched_partitions()),
        "files_written": sorted(s.path for stats in meta.partition_to_write_stats.values() for s in stats),
    }


def decode_properties(path: Path) -> dict[str, Any]:
    props = parse_java_properties(path.read_text(encoding="utf-8"))
    return {"properties": props, "config": jsonable(TableConfig.from_properties(props, source=path.name))}


DECODERS = {
    "files-partition.hfile": decode_hfile,
    "column-stats.hfile": decode_hfile,
    "files-partition.log": decode_log,
    "v9.commit": decode_commit,
    "hoodie.properties": decode_properties,
}


def decoded(name: str) -> Any:
    """The decoded form, through JSON (so it compares with the stored file)."""
    return json.loads(json.dumps(DECODERS[name](GOLDEN / name), sort_keys=True))


def expected(name: str) -> Any:
    return json.loads((GOLDEN / f"{name}.json").read_text(encoding="utf-8"))


if __name__ == "__main__":
    if "--write" not in sys.argv:
        sys.exit("usage: python -m tests.golden_formats --write")
    for file_name in DECODERS:
        (GOLDEN / f"{file_name}.json").write_text(json.dumps(decoded(file_name), indent=1, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {file_name}.json")
