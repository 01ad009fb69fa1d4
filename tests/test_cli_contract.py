"""The command line's contract on bad input: exit code 2, one line on stderr
naming what is wrong, no traceback, and nothing changed on disk. A failed
`index build/sync/compact/drop` leaves the table's files byte for byte."""

from __future__ import annotations

import hashlib
import shutil
from collections.abc import Callable
from pathlib import Path

import pyarrow as pa
import pytest
from click.testing import CliRunner

from engine_bridge.cli import main
from metadata.mdt.write.writer import MetadataTableWriter
from metadata.sample_tables.builder import TableBuilder

SCHEMA = pa.schema([("id", pa.int64()), ("city", pa.string()), ("amount", pa.float64())])


def tree_digest(root: Path) -> dict[str, str]:
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`t`: a MOR table with log files and a metadata table; `behind`: the same with one commit more, not synced."""
    root = tmp_path_factory.mktemp("contract")
    path = root / "t"
    builder = TableBuilder(str(path), SCHEMA, table_type="MERGE_ON_READ", version=8, partition_fields=["city"])
    builder.write([{"id": i, "city": c, "amount": float(i)} for i, c in enumerate(["sf", "la", "sf", "ny"])])
    builder.write([{"id": 1, "city": "la", "amount": 9.5}])  # log files
    MetadataTableWriter(str(path)).build()
    shutil.copytree(path, root / "saved")
    builder.write([{"id": 7, "city": "sf", "amount": 1.0}])
    (root / "t").rename(root / "behind")
    (root / "saved").rename(root / "t")
    return path


@pytest.fixture
def table(template: Path, tmp_path: Path) -> Path:
    copy = tmp_path / "t"
    shutil.copytree(template, copy)
    return copy


# Each case: the arguments ({t} is the table, {missing} a path that does not exist, {file} a plain file)
# and what the one line must say.
CASES = [
    (["table", "show", "{missing}"], "no hoodie.properties"),
    (["table", "files", "{file}"], "plain.txt is a file, not a Hudi table folder"),
    (["table", "files", "{t}", "--as-of", "yesterday"], "is not an instant time"),
    (["table", "timeline", "{missing}"], "not a Hudi table"),
    (["table", "partitions", "{t}", "--as-of", "2024"], "is not an instant time"),
    (["table", "validate", "{missing}"], "not a Hudi table"),
    (["plan", "{t}", "--where", "amount >"], "incomplete '>': its right-hand side is missing (line 1, column 8)"),
    (["plan", "{t}", "--where", "amount > 'abc'"], "cannot be compared with column amount of type double"),
    (["plan", "{t}", "--where", "amount"], "column amount of type double is not a condition"),
    (["plan", "{t}", "--where", "nosuch = 1"], "unknown column 'nosuch'"),
    (["plan", "{t}", "--where", "amount > 1; DROP TABLE x"], "only one boolean expression is accepted"),
    (["plan", "{t}", "--where", "day = DATE '2024-13-45'"], "DATE '2024-13-45' is not a valid date"),
    (["plan", "{t}", "--where", "amount > 1", "--dialect", "oracle"], "Invalid value for '--dialect'"),
    (["plan", "{t}"], "Missing option '--where'"),
    (["incremental", "{t}", "--begin", "yesterday"], "'yesterday' is not an instant time"),
    (["incremental", "{t}", "--begin", "0", "--end", "soon"], "'soon' is not an instant time"),
    (["pull", "{t}", "--to", "{file}"], "is a file, not a folder"),
    (["pull", "{t}", "--to", "{out}", "--begin", "x"], "'x' is not an instant time"),
    (["pull", "{t}", "--to", "{out}", "--begin", "0", "--checkpoint", "{out}/c.json"], "give --begin or --checkpoint, not both"),
    (["sync", "{t}", "--database", "bad db", "--dry-run"], "'bad db' is not a valid Hive database name"),
    (["sync", "{t}", "--database", "ok", "--metastore-uri", "thrift://127.0.0.1:1"], "metastore thrift://127.0.0.1:1: open failed"),
    (["sync", "{t}", "--database", "ok"], "mode hms needs a metastore URI"),
    (["sync", "{t}", "--database", "ok", "--metastore-uri", "thrift://no-such-host.invalid:9083"], "no-such-host.invalid"),
    (["index", "build", "{t}", "--columns", "nosuchcol", "--rebuild"], "no column 'nosuchcol' in the table schema"),
    (["index", "build", "{t}", "--partitions", "bloom"], "unknown metadata partition bloom"),
    (["index", "build", "{missing}"], "not a Hudi table"),
    (["index", "sync", "{missing}"], "not a Hudi table"),
    (["index", "compact", "{t}", "--compact-after", "0"], "Invalid value for '--compact-after'"),
    (["index", "drop", "{t}", "--partitions", "nosuch"], "unknown metadata partition nosuch"),
    (["hive", "list-status", "--set", "mapreduce.input.fileinputformat.inputdir={missing}"], "Input path does not exist"),
    (["hive", "list-status", "--set", "nokeyvalue"], "the 1st one is not KEY=VALUE (its text is not shown: it may be a secret)"),
    (["hive", "pull", "--hiveserver2", "127.0.0.1:1", "--source-db", "s", "--source-table", "t", "--target-db", "d",
      "--target-table", "x", "--extract-sql", "{sql}", "--begin", "0", "--table-path", "{t}"], "must be exactly one SELECT statement"),
    (["hive", "pull", "--hiveserver2", "no-such-host.invalid:10000", "--source-db", "s", "--source-table", "t", "--target-db", "d",
      "--target-table", "x", "--extract-sql", "{good_sql}", "--begin", "0"], "cannot connect to HiveServer2 no-such-host.invalid:10000"),
    (["trino", "rewrite", "--table-path", "{t}", "DELETE FROM t"], "expected a SELECT"),
    (["trino", "rewrite", "--table-path", "{t}", "SELECT * FROM (SELECT * FROM t) s"], "the FROM clause holds a subquery"),
    (["trino", "rewrite", "--table-path", "{t}", "SELECT * FROM t WHERE x = E'it\\'s'"], "cannot read the query's text"),
    (["trino", "query", "--server", "http://127.0.0.1:1", "--catalog", "c", "--schema", "s", "--table-path", "{t}", "SELECT * FROM t"],
     "Trino/Presto server http://127.0.0.1:1: cannot connect (connection refused)"),
    (["demo", "--path", "{file}"], "plain.txt exists: the demo builds a new table"),
    (["plan", "{t}", "--where", "city = sf"], "unknown column 'sf' (line 1, column 8)"),
    (["table", "files", "{t}", "--partition", "city=nosuch"], "no partition 'city=nosuch' in "),
    (["incremental", "{t}", "--begin", "20241301000000000"], "'20241301000000000' is not a date and time"),
    (["incremental", "{t}", "--begin", "20240201000000000", "--end", "20240101000000000"], "is before the begin instant 20240201000000000"),
    (["changes", "{t}", "--begin", "20240132000000000"], "is not a date and time"),
    (["pull", "{t}", "--to", "{out}", "--begin", "20240201000000000", "--end", "20240101000000000"], "is before the begin instant"),
    (["table", "show", "s3://AKIASECRETID789:SUPERSECRET123@lab/t"], "s3://lab: credentials in the URI are not accepted"),
    (["--storage-option", "region=x", "--storage-option", "SUPERSECRET123", "table", "show", "{t}"], "the 2nd one is not KEY=VALUE"),
]


@pytest.mark.parametrize(("args", "message"), CASES, ids=[" ".join(a[:3]) + f" #{n}" for n, (a, _) in enumerate(CASES)])
def test_bad_input_is_one_line_exit_2_and_changes_nothing(table: Path, tmp_path: Path, args: list[str], message: str) -> None:
    plain = tmp_path / "plain.txt"
    plain.write_text("not a table\n")
    sql = tmp_path / "extract.sql"
    sql.write_text("SELECT * FROM s.t WHERE `_hoodie_commit_time` > '%s'; DROP TABLE s.t")
    good_sql = tmp_path / "good.sql"
    good_sql.write_text("SELECT * FROM s.t WHERE `_hoodie_commit_time` > '%s'")
    (tmp_path / "out").mkdir()
    before = tree_digest(tmp_path)
    filled = [a.format(t=table, missing=tmp_path / "missing", file=plain, out=tmp_path / "out", sql=sql, good_sql=good_sql) for a in args]
    result = CliRunner().invoke(main, filled)
    assert result.exit_code == 2, result.output
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("error: ") and message in lines[0], lines[0]
    assert "Traceback" not in result.output and result.stdout == ""
    assert tree_digest(tmp_path) == before


def index_operation(operation: str, template: Path, table: Path) -> Callable[[MetadataTableWriter], object]:
    """What `operation` runs, with `table` (a copy of the template) made ready for it."""
    from metadata.mdt.file_groups import MdtPartition

    if operation == "build":  # new partitions on a table whose metadata table has files only
        MetadataTableWriter(str(table)).drop([MdtPartition.COLUMN_STATS, MdtPartition.PARTITION_STATS])
    if operation == "sync":
        shutil.rmtree(table)
        shutil.copytree(template.parent / "behind", table)
    return {
        "build": lambda w: w.build(),
        "rebuild": lambda w: w.build([MdtPartition.COLUMN_STATS], rebuild=True),
        "sync": lambda w: w.sync(),
        "compact": lambda w: w.compact(force=True),
        "drop": lambda w: w.drop([MdtPartition.PARTITION_STATS]),
    }[operation]


def commit_point(operation: str) -> str:
    """The step after which a failed operation's write stands: hoodie.properties
    listing a new partition (build), else the first completed MDT instant."""
    return "after config update" if operation == "build" else ": after completion"


class Crash(Exception):
    pass


@pytest.mark.parametrize("operation", ["build", "rebuild", "sync", "compact", "drop"])
def test_a_failed_index_operation_leaves_the_table_byte_for_byte(template: Path, table: Path, tmp_path: Path, operation: str) -> None:
    """Each operation fails at every step it reaches (an exception, as a full disk or a lost connection
    raises): the table's files, hoodie.properties included, are as they were, and a rerun completes."""
    from metadata.mdt.validate import validate_metadata

    run = index_operation(operation, template, table)
    before = tree_digest(table)
    steps: list[str] = []
    counted = tmp_path / "counted"
    shutil.copytree(table, counted)
    run(MetadataTableWriter(str(counted), fault=steps.append))  # the steps one run goes through
    assert steps, operation
    committed = next((n for n, step in enumerate(steps) if step.endswith(commit_point(operation))), len(steps))
    for n, step in enumerate(steps):
        attempt = tmp_path / f"attempt{n}"
        shutil.copytree(table, attempt)

        def crash(at: str, step: str = step) -> None:
            if at == step:
                raise Crash(at)

        with pytest.raises(Crash):
            run(MetadataTableWriter(str(attempt), fault=crash))
        if n < committed:
            assert tree_digest(attempt) == before, step
        else:  # failed after its commit point: the write happened (a sync's instant, a compaction), as a whole
            assert validate_metadata(str(attempt)).ok, step
        run(MetadataTableWriter(str(attempt)))
        assert validate_metadata(str(attempt)).ok, step


def test_debug_keeps_the_exit_code_and_adds_the_traceback(tmp_path: Path) -> None:
    for args in (["table", "show", str(tmp_path / "missing")], ["plan", str(tmp_path / "missing"), "--where", "x = 1"]):
        plain, debug = CliRunner().invoke(main, args), CliRunner().invoke(main, ["--debug", *args])
        assert plain.exit_code == debug.exit_code == 2
        assert "Traceback (most recent call last)" in debug.stderr and debug.stderr.splitlines()[-1] == plain.stderr.strip()
