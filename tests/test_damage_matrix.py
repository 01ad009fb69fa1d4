"""The damage matrix: each fault, on v6 and v9 tables, COW and MOR, through
each command (`table files`, `plan`, `incremental`, `sync --dry-run`).

Every cell either gives the answer the undamaged table gives (with a warning
where the fault changed how it was found) or exits 2 with one line naming
the damaged file. No cell prints a traceback.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from click.testing import CliRunner

from engine_bridge.cli import main
from metadata import HudiTable
from metadata.sample_tables.builder import TableBuilder
from metadata.timeline.instant_content import decode_instant_content, encode_avro_instant
from metadata.timeline.models import commit_metadata_schema
from tests.conftest import FIXTURE_ZIPS, NO_FIXTURES, table_path

SCHEMA = pa.schema([("id", pa.int64()), ("p", pa.string()), ("amount", pa.float64())])
KINDS = ["v6-cow", "v6-mor", "v9-cow", "v9-mor"]
V9_FIXTURES = {"v9-cow": "sample_table__cow__v9_txns_simple_meta", "v9-mor": "sample_table__mor__avro__v9_txns_simple_meta"}
COMMANDS = ["files", "plan", "incremental", "sync"]


def make_table(kind: str, root: Path, fixture_root: Path | None) -> Path:
    path = root / kind
    if kind.startswith("v9"):
        if fixture_root is None:
            pytest.skip(NO_FIXTURES)
        shutil.copytree(table_path(fixture_root, V9_FIXTURES[kind]), path)
        return path
    table_type = "MERGE_ON_READ" if kind.endswith("mor") else "COPY_ON_WRITE"
    builder = TableBuilder(str(path), SCHEMA, version=6, table_type=table_type, partition_fields=["p"])
    builder.write([{"id": i, "p": f"p{i % 3}", "amount": float(i)} for i in range(12)])
    builder.write([{"id": i, "p": f"p{i % 3}", "amount": 100.0 + i} for i in (1, 4, 5)])
    builder.write([{"id": 50, "p": "p1", "amount": 7.5}])
    return path


# Faults: each damages a table and returns the file it damaged -------------------------------
def _latest_commit(path: Path) -> tuple[Any, Path]:
    table = HudiTable.open(str(path), use_metadata=False)
    instant = table.timeline.commits()[-1]
    return instant, Path(table.timeline.instant_file(instant))


def _newest_base(path: Path) -> Path:
    timeline = HudiTable.open(str(path), use_metadata=False).timeline
    for instant in reversed(timeline.commits()):
        written = [s.path for s in timeline.commit_metadata(instant).write_stats() if s.path and s.path.endswith(".parquet")]
        if written:
            return path / written[0]
    raise AssertionError("no commit wrote a base file")


def damage_mdt_log(path: Path) -> Path:
    logs = sorted((path / ".hoodie" / "metadata" / "files").glob(".files-*.log.*"), key=lambda f: f.name.split("_")[1])
    logs[-1].write_bytes(bytes(logs[-1].stat().st_size))
    return logs[-1]


def empty_latest_commit(path: Path) -> Path:
    _, file = _latest_commit(path)
    file.write_bytes(b"")
    return file


def lose_newest_base(path: Path) -> Path:
    file = _newest_base(path)
    file.unlink()
    return file


def break_checksum(path: Path) -> Path:
    props = path / ".hoodie" / "hoodie.properties"
    text = props.read_text()
    name = next(line.split("=", 1)[1] for line in text.splitlines() if line.startswith("hoodie.table.name="))
    props.write_text(text.replace(f"hoodie.table.name={name}", f"hoodie.table.name={name}x"))
    return props


def duplicate_latest_commit(path: Path) -> Path:
    instant, file = _latest_commit(path)
    twin = file.with_name(file.name.rsplit(".", 1)[0] + ".replacecommit")
    if "_" in file.name:  # layout 2: another completion time
        twin = file.with_name(f"{instant.requested_time}_29990101000000000.replacecommit")
    shutil.copyfile(file, twin)
    return twin


def partition_outside_the_table(path: Path) -> Path:
    instant, file = _latest_commit(path)
    content = decode_instant_content(str(file), file.read_bytes())
    stats = content["partitionToWriteStats"]
    first = sorted(stats)[0]
    moved = stats.pop(first)
    for stat in moved:
        stat["partitionPath"] = "../outside"
    stats["../outside"] = moved
    if file.read_bytes()[:4] == b"Obj\x01":
        file.write_bytes(encode_avro_instant(commit_metadata_schema(False), content))
    else:
        file.write_text(json.dumps(content))
    return file


@dataclass(frozen=True)
class Fault:
    damage: Callable[[Path], Path]
    # command -> "error" (exit 2 naming the file), "warn:<text>" (same answer, text on stderr or in the
    # output) or "same" (the undamaged answer); a function of whether the table has a metadata table.
    expect: Callable[[str, bool], str]
    needs_mdt: bool = False


FAULTS: dict[str, Fault] = {
    "mdt-log-zeroed": Fault(damage_mdt_log, lambda command, mdt: "warn:metadata table damaged", needs_mdt=True),
    "empty-commit": Fault(empty_latest_commit, lambda command, mdt: "error" if command == "incremental" else "same"),
    "missing-base": Fault(lose_newest_base, lambda command, mdt: "same" if mdt else "error"),
    "bad-checksum": Fault(break_checksum, lambda command, mdt: "error"),
    "duplicate-instant": Fault(duplicate_latest_commit, lambda command, mdt: "error"),
    "partition-outside": Fault(partition_outside_the_table, lambda command, mdt: "same" if mdt and command == "files" else "error"),
}


# Commands -------------------------------------------------------------------------------------
def run(command: str, path: Path, kind: str, metastore_uri: str | None = None, database: str = "") -> tuple[int, Any, str, str]:
    """Exit code, the JSON answer (reduced to what must not change), stdout and stderr."""
    predicate = "id > 0" if kind.startswith("v6") else "amount > 0"
    args = {
        "files": ["table", "files", str(path), "--json"],
        "plan": ["plan", str(path), "--where", predicate, "--json"],
        "incremental": ["incremental", str(path), "--begin", "00000000000000000", "--json"],
        "sync": ["sync", str(path), "--database", database, "--metastore-uri", metastore_uri or "", "--dry-run", "--json"],
    }[command]
    result = CliRunner().invoke(main, args)
    assert "Traceback" not in result.output, result.output
    answer: Any = None
    if result.exit_code == 0:
        data = json.loads(result.stdout)
        if command == "files":
            answer = sorted(json.dumps(s, sort_keys=True) for s in data)
        elif command in ("plan", "incremental"):
            answer = sorted(json.dumps(s, sort_keys=True) for s in data["files"])
        else:
            answer = {t["table"]: t["partitions"] for t in data["tables"]}
    return result.exit_code, answer, result.stdout, result.stderr


def check_cell(fault_name: str, kind: str, command: str, tmp_path: Path, fixture_root: Path | None,
               metastore_uri: str | None = None) -> None:
    fault = FAULTS[fault_name]
    has_mdt = kind.startswith("v9")
    path = make_table(kind, tmp_path, fixture_root)
    database = f"matrix_{kind.replace('-', '_')}_{fault_name.replace('-', '_')}"
    code, truth, _, _ = run(command, path, kind, metastore_uri, database)
    assert code == 0
    damaged = fault.damage(path)
    code, answer, stdout, stderr = run(command, path, kind, metastore_uri, database)
    expected = fault.expect(command, has_mdt)
    if expected == "error":
        assert code == 2, f"{fault_name}/{kind}/{command}: expected an error, got exit {code}"
        assert stderr.startswith("error: ")
        assert stderr.count("\n") == 1, stderr
        assert damaged.name in stderr, stderr
        return
    assert code == 0, f"{fault_name}/{kind}/{command}: {stderr}"
    assert answer == truth, f"{fault_name}/{kind}/{command}: the answer changed"
    if expected.startswith("warn:"):
        assert expected[5:] in stderr + stdout


def fixture_root_or_none(request: pytest.FixtureRequest, kind: str) -> Path | None:
    if not kind.startswith("v9"):
        return None
    if not FIXTURE_ZIPS:
        pytest.skip(NO_FIXTURES)
    root: Path = request.getfixturevalue("fixture_root")
    return root


# A metadata-table fault applies to tables that have one (the v9 ones here).
CELLS = [(f, k) for f in sorted(FAULTS) for k in KINDS if not (FAULTS[f].needs_mdt and k.startswith("v6"))]


@pytest.mark.parametrize("command", ["files", "plan", "incremental"])
@pytest.mark.parametrize("fault_name,kind", CELLS)
def test_damage_matrix(fault_name: str, kind: str, command: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    check_cell(fault_name, kind, command, tmp_path, fixture_root_or_none(request, kind))


@pytest.mark.services
@pytest.mark.parametrize("fault_name,kind", CELLS)
def test_damage_matrix_sync_dry_run(fault_name: str, kind: str, tmp_path: Path, request: pytest.FixtureRequest, metastore: Any) -> None:
    check_cell(fault_name, kind, "sync", tmp_path, fixture_root_or_none(request, kind), metastore.uri)
