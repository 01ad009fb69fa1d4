"""Tables whose writer is hostile (issue 64): what such a table can make
hudi-bridge read, write or delete. The suite at the end runs every command
on every table the generator (tests/hostile) makes, memory capped, with a
canary beside the table; the tests before it pin single bounds."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from engine_bridge.cli import main
from tests.hostile import COMMANDS, TRAPS, base_table, canary
from tests.hostile.traps import held


def test_an_avro_instant_that_inflates_past_its_cap_is_refused_before_it_is_inflated() -> None:
    import io

    import fastavro

    from metadata.errors import HudiFormatError
    from metadata.timeline.instant_content import _check_inflated_size, decode_instant_content

    schema = {"type": "record", "name": "r", "fields": [{"name": "s", "type": "string"}]}
    out = io.BytesIO()
    fastavro.writer(out, schema, [{"s": "a" * 5_000_000}], codec="deflate")
    data = out.getvalue()
    assert len(data) < 50_000  # a small file
    with pytest.raises(HudiFormatError, match="inflates past 1000000 bytes"):
        _check_inflated_size("f", data, 1_000_000)
    assert decode_instant_content("f", data)["s"] == "a" * 5_000_000  # under the default cap it reads


def test_a_gzip_block_is_inflated_at_most_to_its_limit() -> None:
    import gzip

    from metadata.mdt.hfile_blocks import gunzip_at_most

    bomb = gzip.compress(b"\0" * 50_000_000) + gzip.compress(b"x")  # two members: the fallback path
    assert len(gunzip_at_most(bomb, 1001)) == 1001
    assert gunzip_at_most(gzip.compress(b"ab") + gzip.compress(b"cd"), 100) == b"abcd"


def test_names_with_markup_and_escape_sequences_print_as_they_are_never_as_styles(tmp_path: Path) -> None:
    import pyarrow as pa

    from metadata.sample_tables.builder import TableBuilder

    hostile = "[bold red]RICH[blink]X\x1b]0;pwned\x07\x1b[31mANSI"
    table = str(tmp_path / "t")
    TableBuilder(table, pa.schema([("id", pa.int64()), ("city", pa.string())]), partition_fields=["city"]).write(
        [{"id": 1, "city": hostile}, {"id": 2, "city": "plain"}])
    for command in (["table", "partitions", table], ["table", "files", table], ["incremental", table, "--begin", "0"]):
        result = CliRunner().invoke(main, command, env={"COLUMNS": "300"})
        assert result.exit_code == 0, result.output
        assert "\x1b" not in result.output and "\x07" not in result.output, command
        assert "[bold red]RICH[blink]X\\x1b]0;pwned\\x07\\x1b[31mANSI" in result.output, (command, result.output)
    listed = CliRunner().invoke(main, ["table", "partitions", table, "--json"])
    assert f"city={hostile}" in __import__("json").loads(listed.output)  # --json is the names as they are


def test_deep_documents_and_deep_predicates_fail_in_one_line_naming_the_input() -> None:
    from expressions import parse_sql
    from expressions.errors import SqlSyntaxError
    from metadata.errors import HudiFormatError
    from metadata.timeline.instant_content import MAX_DOCUMENT_DEPTH, decode_instant_content, nesting_depth

    with pytest.raises(HudiFormatError, match="c.commit: JSON nested deeper"):
        decode_instant_content("c.commit", b'{"a": ' + b"[" * 1_000_000 + b"]" * 1_000_000 + b"}")
    deep: dict = {"type": "int"}
    for _ in range(20_000):
        deep = {"type": deep}
    assert nesting_depth(deep) > MAX_DOCUMENT_DEPTH  # iterative: no RecursionError on 20,000 levels
    with pytest.raises(SqlSyntaxError, match="at most 32 arithmetic operators"):
        parse_sql("fare" + " + 1" * 50 + " > 3")
    assert parse_sql("x IN (" + ", ".join(f"-{i}" for i in range(500)) + ")") is not None  # a long list is not deep


# The suite: every command on every hostile table the generator makes (tests/hostile), each table in a process of
# its own with memory capped. A command answers (exit 0 or 1) or refuses in one `error:` line, never with a
# traceback or a MemoryError, never showing a secret; what a trap promises besides is in its `says`; and the
# canary beside the table is intact after all of them.
CAP_MIB = 1024
BOMB_MIB = {"quick": 1100, "slow": 4000}  # what a bomb inflates to: past the cap, so an unbounded read fails


@pytest.fixture(scope="session")
def hostile_base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return base_table(tmp_path_factory.mktemp("hostile") / "t")


def _run_on_hostile(name: str, base: Path, tmp_path: Path, bomb_mib: int) -> None:
    table, outside = tmp_path / "t", tmp_path / "outside"
    shutil.copytree(base, table, symlinks=True)
    outside.mkdir()
    before = canary(outside)
    TRAPS[name].plant(table, outside, bomb_mib)
    planted = held(outside)  # a trap may add its own victims
    assert planted.items() >= before.items()
    run = subprocess.run([sys.executable, "-m", "tests.hostile.run", str(table), str(CAP_MIB)], capture_output=True, text=True,
                         cwd=Path(__file__).parent.parent, timeout=600, env={**os.environ, "PYTHONPATH": str(Path(__file__).parent.parent)})
    assert run.returncode == 0, run.stderr[-3000:]
    results = {r["command"]: r for r in map(json.loads, run.stdout.splitlines())}
    assert list(results) == list(COMMANDS), run.stderr[-3000:]
    for command, result in results.items():
        output, where = result["output"], (name, command, result["output"][-2000:])
        assert "Traceback" not in output and "uncaught" not in output and "MemoryError" not in output, where
        assert "SEKRIT" not in output and "\x1b" not in output and "\x07" not in output, where
        if result["exit_code"] not in (0, 1):
            assert [line.startswith("error:") for line in output.strip().splitlines()].count(True) == 1, where
        if command in TRAPS[name].says:
            assert TRAPS[name].says[command] in output, where
    assert held(outside) == planted, name


@pytest.mark.parametrize("name", list(TRAPS))
def test_every_command_on_a_hostile_table_answers_or_refuses_in_one_line_and_touches_nothing_outside(
        name: str, hostile_base: Path, tmp_path: Path) -> None:
    _run_on_hostile(name, hostile_base, tmp_path, BOMB_MIB["quick"])


@pytest.mark.slow
@pytest.mark.parametrize("name", [n for n in TRAPS if "bomb" in n])
def test_larger_bombs_stay_bounded(name: str, hostile_base: Path, tmp_path: Path) -> None:
    _run_on_hostile(name, hostile_base, tmp_path, BOMB_MIB["slow"])


def test_names_from_a_table_reach_engine_sql_as_literals_never_as_sql(tmp_path: Path) -> None:
    """The Trino/Presto rewrite puts partition values and file paths from the table into SQL: as quoted literals."""
    import pyarrow as pa
    import sqlglot

    from engine_bridge.trino import candidate_query
    from metadata.sample_tables.builder import TableBuilder

    hostile = "a') OR 1=1 --"
    table = str(tmp_path / "t")
    TableBuilder(table, pa.schema([("id", pa.int64()), ("city", pa.string())]), partition_fields=["city"]).write(
        [{"id": 1, "city": hostile}, {"id": 2, "city": "b"}])
    query = candidate_query("SELECT * FROM hudi.s.t WHERE id > 0", table)
    [parsed] = sqlglot.parse(query.sql, read="trino")
    values = {literal.this for literal in parsed.find_all(sqlglot.exp.Literal) if literal.is_string}
    assert hostile in values  # the value, whole, as one string literal
    assert not [eq for eq in parsed.find_all(sqlglot.exp.EQ) if eq.sql() == "1 = 1"]  # nothing of it became SQL
