"""Cold commands import only what they use: command modules load when the
command is named, so `table show` or `plan` does not load Spark's, Hive's
or Trino's clients. And no cold path imports pandas: pyarrow imports it,
when installed, the first time it converts a Python or numpy value, so the
cold paths build their arrays through `metadata.util.arrow_values` (issue 39)."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa

from engine_bridge.cli.app import COMMANDS, main
from metadata import HudiTable
from metadata.sample_tables.builder import TableBuilder
from tests.conftest import fixture_ids, requires_fixtures, table_path

PROBE = """
import json, sys
from click.testing import CliRunner
from engine_bridge.cli import main
result = CliRunner().invoke(main, json.loads(sys.argv[1]))
print(json.dumps({"exit": result.exit_code, "modules": sorted({m.split(".")[0] for m in sys.modules}),
                  "dialects": sorted(m for m in sys.modules if m.startswith("sqlglot.dialects.")),
                  "functions": sorted(m for m in sys.modules if m.startswith("expressions.functions."))}))
"""
CLIENTS = {"pyspark", "py4j", "hudi", "trino", "pyhive", "hmsclient", "thrift", "thrift_sasl", "duckdb", "polars", "boto3"}


def _loaded(args: list[str]) -> dict[str, object]:
    out = subprocess.run([sys.executable, "-c", PROBE, json.dumps(args)], capture_output=True, text=True, timeout=120, check=True)
    return json.loads(out.stdout)


def test_every_command_is_where_the_lazy_group_looks_for_it() -> None:
    for module in set(COMMANDS.values()):
        importlib.import_module(f"engine_bridge.cli.{module}")
    assert set(main.commands) == set(COMMANDS)


def test_cold_commands_leave_the_engines_clients_out(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    TableBuilder(path, pa.schema([("id", pa.int64()), ("city", pa.string())]), version=8, partition_fields=["city"]).write(
        [{"id": 1, "city": "sf"}, {"id": 2, "city": "la"}])
    shown = _loaded(["table", "show", path])
    assert shown["exit"] == 0
    assert not CLIENTS & set(shown["modules"]) and "pandas" not in shown["modules"] and "sqlglot" not in shown["modules"]
    planned = _loaded(["plan", path, "--where", "id = 1"])  # a plain predicate: read and printed without sqlglot
    assert planned["exit"] == 0 and not CLIENTS & set(planned["modules"]) and "pandas" not in planned["modules"]
    assert "sqlglot" not in planned["modules"]
    # a predicate naming no function loads none of their classes (a fifth of a cold `import listers`)
    assert planned["functions"] == ["expressions.functions.base", "expressions.functions.zones"] and not shown["functions"]
    functions = _loaded(["plan", path, "--where", "upper(city) = 'SF'"])  # sqlglot's front end reads it
    assert functions["exit"] == 0 and not CLIENTS & set(functions["modules"]) and "pandas" not in functions["modules"]
    assert set(functions["dialects"]) <= {"sqlglot.dialects", "sqlglot.dialects.dialect", "sqlglot.dialects.hive", "sqlglot.dialects.spark",
                                          "sqlglot.dialects.spark2"}  # the predicate's dialect and what it derives from
    assert "expressions.functions.text" in functions["functions"]  # upper(): loaded when named


LIBRARY_PROBE = """
import json, sys
from listers import DirectoryLister, plan, scan
path = sys.argv[1]
with DirectoryLister.open(path) as lister:
    listed = len(lister.list_files("city=sf"))
kept = {p: len(plan(path, p).files) for p in ["city = 'sf'", "id BETWEEN 2 AND 3 AND score > 1.5", "id IN (1, 4) OR city <> 'la'",
                                              "upper(city) = 'SF'", "id % 2 = 1"]}
rows = scan(path, where="id >= 2 AND city IN ('sf', 'la')", columns=["id", "score"]).to_table().num_rows
print(json.dumps({"listed": listed, "kept": kept, "rows": rows, "modules": sorted({m.split(".")[0] for m in sys.modules})}))
"""


def test_the_lister_plans_and_scans_leave_pandas_out(tmp_path: Path) -> None:
    """With pandas installed (the test extra installs it), a lister, plans through partition values, column_stats,
    IN lists and functions, and a scan never import it."""
    import pandas  # noqa: F401  (installed: the probe's process could import it)

    path = str(tmp_path / "t")
    builder = TableBuilder(path, pa.schema([("id", pa.int64()), ("score", pa.float64()), ("city", pa.string())]), version=8,
                           partition_fields=["city"])
    builder.write([{"id": i, "score": i * 1.5, "city": ("sf", "la", "ny")[i % 3]} for i in range(6)])
    builder.write([{"id": i, "score": i * 2.0, "city": ("sf", "la", "ny")[i % 3]} for i in range(6, 9)])
    out = subprocess.run([sys.executable, "-c", LIBRARY_PROBE, path], capture_output=True, text=True, timeout=120, check=True)
    found = json.loads(out.stdout)
    assert found["listed"] == 2 and found["rows"] == 4 and found["kept"]["city = 'sf'"] == 2
    assert "pandas" not in found["modules"], found["modules"]


STREAMED_PROBE = """
import json, sys
from listers import plan
from listers.index_support import column_stats
column_stats.STREAM_ABOVE_BYTES = 0  # column_stats read in runs of partitions, as over 100,000 listed files
found = plan(sys.argv[1], "_hoodie_record_key > ''")
notes = [stage.note for stage in found.stages if stage.name == "column_stats"]
print(json.dumps({"kept": len(found.files), "notes": notes, "modules": sorted({m.split(".")[0] for m in sys.modules})}))
"""


@requires_fixtures
def test_a_streamed_plan_leaves_pandas_out(fixture_root: Path) -> None:
    """A plan reading column_stats in runs, each run's candidates and their groups found, never imports pandas."""
    import pandas  # noqa: F401  (installed: the probe's process could import it)

    for stem in fixture_ids():
        table = HudiTable.open(table_path(fixture_root, stem))
        if table.metadata_table is None or "column_stats" not in table.config.metadata_partitions:
            continue
        out = subprocess.run([sys.executable, "-c", STREAMED_PROBE, table_path(fixture_root, stem)], capture_output=True, text=True,
                             timeout=120, check=True)
        found = json.loads(out.stdout)
        assert found["kept"] and any("run(s) of partitions" in note for note in found["notes"]), (stem, found["notes"])
        assert "pandas" not in found["modules"], stem
        return
    raise AssertionError("no fixture has column_stats")
