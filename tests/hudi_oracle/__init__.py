"""Apache Hudi itself as the table factory and the oracle.

`scripts/setup.sh --test` puts Hudi's Spark bundle (from Maven Central, by
`mvn dependency:get`) and a PySpark 3.5 of its own (a virtualenv under
`.cache/hudi-spark/`, apart from the project's PySpark 4) on the machine.
`write_tables.py` runs there: it writes each shape below through Hudi's
Spark datasource and records what Hudi reads back. Tables are cached under
`.cache/hudi-tables/<bundle version>/<shape key>/` by their spec, so a run
writes only the shapes it has not written before.
"""

from __future__ import annotations

import hashlib
import json
import subprocess
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent.parent
CACHE = REPO / ".cache"
# The Hudi releases the factory writes with, and the table versions each writes (`hoodie.write.table.version`).
# Maven Central serves these Spark 3.5 bundles here; 1.1.0 and 1.2.1 it does not. HUDI_VERSION is the quick tier's
# (and the live-writer tests'); the slow tier runs every release.
RELEASES: dict[str, tuple[int, ...]] = {"1.0.2": (6, 8), "1.1.1": (6, 8, 9), "1.2.0": (6, 8, 9)}
HUDI_VERSION = "1.0.2"


def bundle(release: str = HUDI_VERSION) -> Path:
    """Hudi's Spark bundle of `release` in the local Maven repository (`scripts/setup.sh --test` fetches it)."""
    return (Path.home() / ".m2" / "repository" / "org" / "apache" / "hudi" / "hudi-spark3.5-bundle_2.12" / release /
            f"hudi-spark3.5-bundle_2.12-{release}.jar")


BUNDLE = bundle()
PYTHON = CACHE / "hudi-spark" / "venv" / "bin" / "python"
WRITER = Path(__file__).resolve().parent / "write_tables.py"
RECIPES = Path(__file__).resolve().parent / "recipes.py"

ORACLE_VERSION = 5  # bump when write_tables.py records more, so cached tables are written again
PREDICATES = ["id = 1", "id IN (2, 5)", "v >= 50", "v < 20 OR id = 6", "region = 'us'", "name = 'n3' AND v > 10",
              "ts >= 1705172800000", "grp = 'g1' AND id = 5"]


@dataclass(frozen=True)
class Shape:
    name: str
    table_type: str
    version: int
    key_generator: str
    meta_fields: bool
    steps: tuple[str, ...]
    predicates: tuple[str, ...] = field(default_factory=lambda: tuple(PREDICATES))
    cdc_mode: str = ""  # hoodie.table.cdc.supplemental.logging.mode, CDC on when set
    # Where Apache Hudi 1.0.2 itself fails on this shape: the text its error holds (the test checks it still does).
    hudi_write_fails: str = ""
    hudi_read_fails: str = ""
    # A shape the steps cannot say: the function of recipes.py that writes it, and its arguments.
    recipe: str = ""
    recipe_args: dict[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        recipes = hashlib.sha256(RECIPES.read_bytes()).hexdigest() if self.recipe else ""  # a recipe's shape changes with its code
        spec = json.dumps({**{k: v for k, v in asdict(self).items() if not k.startswith("hudi_")}, "oracle": ORACLE_VERSION,
                           "recipes": recipes}, sort_keys=True)
        return f"{self.name}-{hashlib.sha256(spec.encode()).hexdigest()[:10]}"


def _steps(*extra: str) -> tuple[str, ...]:
    return ("insert:0-9", "upsert:1,2,7", *extra, "upsert:4,8", "delete:3")


# Hudi writes tables without meta fields only with the simple, complex and non-partitioned key generators
# ("Only simple, non-partitioned or complex key generator are supported when meta-fields are disabled").
SHAPES = [
    Shape("cow_v8_simple", "COPY_ON_WRITE", 8, "simple", True, _steps()),
    Shape("cow_v8_simple_virtual_keys", "COPY_ON_WRITE", 8, "simple", False, _steps()),
    Shape("mor_v8_complex_added_column", "MERGE_ON_READ", 8, "complex", True, _steps("add_column"),
          (*PREDICATES, "extra IS NULL", "extra = 'x4'")),
    Shape("cow_v6_timestamp", "COPY_ON_WRITE", 6, "timestamp", True, _steps()),
    Shape("mor_v6_nonpartitioned", "MERGE_ON_READ", 6, "nonpartitioned", True, _steps()),
    Shape("cow_v8_custom", "COPY_ON_WRITE", 8, "custom", True, _steps()),
    Shape("cow_v8_nonpartitioned_virtual_keys", "COPY_ON_WRITE", 8, "nonpartitioned", False, _steps()),
    Shape("cow_v8_complex_virtual_keys_promoted", "COPY_ON_WRITE", 8, "complex", False, _steps("promote"),
          hudi_read_fails="ClassCastException"),
    Shape("mor_v8_timestamp", "MERGE_ON_READ", 8, "timestamp", True, _steps()),
    Shape("cow_v6_simple_virtual_keys_added_column", "COPY_ON_WRITE", 6, "simple", False, _steps("add_column"),
          (*PREDICATES, "extra IS NULL")),
    Shape("cow_v8_simple_promoted", "COPY_ON_WRITE", 8, "simple", True, _steps("promote")),
    Shape("mor_v8_simple_promoted", "MERGE_ON_READ", 8, "simple", True, _steps("promote"), hudi_write_fails="AvroTypeException"),
    # Histories with Hudi's table services and replace commits.
    Shape("cow_v8_history", "COPY_ON_WRITE", 8, "simple", True,
          ("insert:0-9", "upsert:1,2,7", "cluster", "upsert:4,8", "clean", "upsert:0,5", "insert_overwrite:21,24",
           "delete_partition:eu", "delete:3")),
    Shape("mor_v8_history", "MERGE_ON_READ", 8, "simple", True,
          ("insert:0-9", "upsert:1,2,7", "upsert:6", "rollback", "compact", "upsert:4,8", "savepoint", "upsert:0,5",
           "restore", "delete:3")),
    Shape("cow_v6_history", "COPY_ON_WRITE", 6, "simple", True,
          ("insert:0-9", "upsert:1,2,7", "cluster", "upsert:4,8", "clean", "insert_overwrite:21,24", "delete:3")),
    # CDC in its three supplemental logging modes.
    Shape("cow_v8_cdc_op_key_only", "COPY_ON_WRITE", 8, "simple", True, _steps(), cdc_mode="OP_KEY_ONLY"),
    Shape("mor_v8_cdc_data_before", "MERGE_ON_READ", 8, "simple", True, _steps(), cdc_mode="DATA_BEFORE"),
    Shape("cow_v8_cdc_data_before_after", "COPY_ON_WRITE", 8, "complex", True, _steps(), cdc_mode="DATA_BEFORE_AFTER"),
    # Secondary and expression indexes written by Hudi.
    Shape("cow_v8_secondary_and_expression_index", "COPY_ON_WRITE", 8, "simple", True,
          ("insert:0-9", "secondary_index:name", "expression_index:ts", "upsert:1,2,7", "upsert:4,8", "delete:3")),
]


# Round two (issue 63): shapes Hudi really writes that the first round lacked, written by recipes.py.
ROUND_TWO = [
    Shape("cow_v8_default_partitions", "COPY_ON_WRITE", 8, "complex", True, (),
          ("city = ''", "city IS NULL", "country IS NULL", "country = ''", "country = 'de/at'", "country = 'a=b'", "country = '50%'",
           "city = '日本'", "country = 'sp ace' AND city = 'x'", "id = 3", "city IS NOT NULL AND v > 4"),
          recipe="default_partitions", recipe_args={"hive_style": True, "url_encode": False}),
    Shape("mor_v8_default_partitions_encoded", "MERGE_ON_READ", 8, "complex", True, (),
          ("city = ''", "city IS NULL", "country IS NULL", "country = 'de/at'", "country = 'a=b'", "country = '50%'", "city = '日本'",
           "id = 3"),
          recipe="default_partitions", recipe_args={"hive_style": False, "url_encode": True}),
    Shape("cow_v8_wide_typed", "COPY_ON_WRITE", 8, "simple", True, (),
          ("dbl < -0.1", "dbl > 1.5", "dbl = 0.0", "isnan(dbl)", "dbl IS NULL", "dbl >= 2.5", "flt < -0.1", "flt > 2.5", "b = true",
           "b IS NULL", "t > timestamp'2024-01-01 06:42:54.666678'", "bin = X'010300'", "startswith(name, 'xa')", "name LIKE 'xb%'",
           "dec > 30.0", "d = DATE'2024-01-04'", "st.a = 11"),
          recipe="wide_typed"),
    Shape("mor_v8_bucket_pending_compaction", "MERGE_ON_READ", 8, "simple", True, (), ("id = 3", "id = 41", "v < 10", "id > 38"),
          recipe="bucket_pending_compaction"),
    Shape("cow_v8_archived", "COPY_ON_WRITE", 8, "simple", True, (), ("id = 1", "v >= 10"), recipe="archived"),
    Shape("cow_v6_archived", "COPY_ON_WRITE", 6, "simple", True, (), ("id = 1", "v >= 10"), recipe="archived"),
    Shape("mor_v6_rolled_back", "MERGE_ON_READ", 6, "simple", True, (), ("id = 4", "v < 5", "region = 'eu'"), recipe="rolled_back"),
    Shape("cow_v8_timestamp_days_zone", "COPY_ON_WRITE", 8, "timestamp", True, (),
          ("ts >= 1711900000000", "ts < 1711870000000", "ts = 1711846800000", "ts BETWEEN 1711900000000 AND 1711950000000", "id = 5"),
          recipe="timestamp_days"),
    Shape("mor_v8_record_index_strings", "MERGE_ON_READ", 8, "nonpartitioned", True, (),
          ("key LIKE 'k01%'", "key = 'k042'", "key IN ('k001', 'k079')", "key > 'k070'", "v = 3"), recipe="record_index_strings"),
    Shape("cow_v8_evolved_past_int", "COPY_ON_WRITE", 8, "simple", True, (),
          ("n > 2147483647", "n = 2147483640", "n < 0", "n >= 2147483660"), recipe="evolved_past_int"),
    Shape("cow_v8_z_ordered", "COPY_ON_WRITE", 8, "nonpartitioned", True, (),
          ("x < 10 AND y > 90", "x = 55", "y BETWEEN 20 AND 25", "x < 5 OR y < 5"), recipe="z_ordered"),
    Shape("mor_v8_cdc_across_compaction", "MERGE_ON_READ", 8, "simple", True, (), ("id = 1", "v < 5"), cdc_mode="DATA_BEFORE_AFTER",
          recipe="cdc_across_compaction"),
]


# Shapes only a Hudi that writes table version 9 writes (1.1's and 1.2's indexes, 1.2's compaction-time CDC logs).
KEY_LOOKUPS = ("key = 'g0003'", "key IN ('g0001', 'g0032')", "key LIKE 'g001%'", "v = 3", "key = 'g0003' AND region = 'us'",
               "key = 'g9999'")
NEWEST = [
    Shape("cow_v9_global_record_index", "COPY_ON_WRITE", 9, "simple", True, (), KEY_LOOKUPS, recipe="record_level_index",
          recipe_args={"scope": "global"}),
    Shape("mor_v9_partitioned_record_index", "MERGE_ON_READ", 9, "simple", True, (), KEY_LOOKUPS, recipe="record_level_index",
          recipe_args={"scope": "partitioned"}),
    Shape("mor_v9_cdc_across_compaction", "MERGE_ON_READ", 9, "simple", True, (), ("id = 1", "v < 5"), cdc_mode="DATA_BEFORE_AFTER",
          recipe="cdc_across_compaction"),
    Shape("cow_v9_expression_indexes", "COPY_ON_WRITE", 9, "simple", True, (),
          ("name = 'n3'", "upper(name) = 'M1'", "upper(name) = 'N3' AND region = 'eu'",
           "from_unixtime(ts, 'yyyy-MM-dd') = '2024-01-04' OR upper(name) = 'M1'", "date_format(t, 'yyyy-MM-dd') = '2024-01-03'",
           "date_format(t, 'yyyy-MM-dd') >= '2024-01-05'", "to_date(s, 'yyyy-MM-dd') = DATE'2024-01-02'",
           "to_date(s, 'yyyy-MM-dd') < DATE'2024-01-03'", "s = '2024-01-06'"),
          recipe="expression_indexes"),
]


def for_release(shapes: list[Shape], release: str) -> list[Shape]:
    """The shapes as `release` writes them: a release that writes table version 9 writes the version 8 shapes
    at 9 (their names say so), as a user upgrading Hudi gets by default, and a few at 8 still; version 6
    shapes stay at 6."""
    if release == HUDI_VERSION:
        return list(shapes)
    if 9 in RELEASES[release]:
        nines = [replace(s, name=s.name.replace("_v8_", "_v9_"), version=9) for s in shapes if s.version == 8]
        shapes = [s for s in shapes if s.version != 8 or s.name in STILL_V8] + nines
    # The failures recorded on a shape are Hudi 1.0.2's; a later release has its own (or none).
    return [replace(s, hudi_write_fails=LATER_HUDI_FAILS.get((release, s.name), ("", ""))[0],
                    hudi_read_fails=LATER_HUDI_FAILS.get((release, s.name), ("", ""))[1]) for s in shapes]


# (release, shape) -> (what Hudi's failed write says, what its failed read says), for releases after 1.0.2.
LATER_HUDI_FAILS: dict[tuple[str, str], tuple[str, str]] = {}


# The version 8 shapes a release that writes 9 writes at 8 as well (`hoodie.write.table.version=8`, as a user
# keeping readers on Hudi 1.0 does).
STILL_V8 = frozenset({"cow_v8_simple", "mor_v8_complex_added_column", "mor_v8_cdc_data_before"})


# The slow tier writes every shape with 1.0.2, every version 9 shape with 1.2.0 (its default), and a sample with 1.1.1
# (its versions 6 and 8 among them), NEWEST with both; the `matrix` tier (`scripts/check.sh -m matrix`) writes and checks
# the rest, to keep CI within its budget.
SLOW_SAMPLE: dict[str, Callable[[str], bool]] = {
    "1.2.0": lambda name: "_v9_" in name,
    "1.1.1": lambda name: name in {"cow_v9_simple", "mor_v9_history", "mor_v9_cdc_data_before", "cow_v8_simple", "cow_v6_timestamp"},
}


def in_slow_tier(release: str, name: str) -> bool:
    return release not in SLOW_SAMPLE or SLOW_SAMPLE[release](name) or name in {s.name for s in NEWEST}


def release_shapes(release: str, full: bool = False) -> list[Shape]:
    """The shapes Hudi `release` writes for the conformance tiers, in one Spark session: those of the slow tier, or
    with `full` all of them (1.0.2's round two with them, a newer release's NEWEST shapes with them)."""
    more = ROUND_TWO if release == HUDI_VERSION else NEWEST if 9 in RELEASES[release] else []
    return [*(s for s in for_release(SHAPES, release) if full or in_slow_tier(release, s.name)), *more]


def record_cells(release: str, cells: dict[str, dict[str, str]]) -> None:
    """Conformance cells (shape -> check -> outcome) into `release`'s conformance.json, cell by cell over those an
    earlier run recorded: a run of part of the tiers (the slow tier without the matrix, one test) leaves the rest."""
    out = CACHE / "hudi-tables" / release / "conformance.json"
    held: dict[str, dict[str, str]] = json.loads(out.read_text()) if out.is_file() else {}
    for shape, checks in cells.items():
        held[shape] = {**held.get(shape, {}), **checks}
    out.write_text(json.dumps(held, indent=1, sort_keys=True))


def missing_setup(release: str = HUDI_VERSION) -> str | None:
    """Why Hudi cannot run here, or None."""
    if not bundle(release).is_file():
        return f"Hudi's Spark bundle {bundle(release).name} is not in the local Maven repository (scripts/setup.sh --test fetches it)"
    if not PYTHON.is_file():
        return f"{PYTHON} is missing (scripts/setup.sh --test makes the PySpark 3.5 virtualenv)"
    return None


def tables(shapes: list[Shape] = SHAPES, release: str = HUDI_VERSION) -> dict[str, tuple[Path, dict[str, Any]]]:
    """shape name -> (table path, what Hudi `release` read back), writing the shapes not cached yet."""
    root = CACHE / "hudi-tables" / release
    root.mkdir(parents=True, exist_ok=True)
    todo = [s for s in shapes if not (root / f"{s.key}.oracle.json").is_file()]
    if todo:
        run_writer([{**asdict(s), "path": str(root / s.key)} for s in todo], root / "spec.json", release)
    return {s.name: (root / s.key, json.loads((root / f"{s.key}.oracle.json").read_text())) for s in shapes}


def run_writer(specs: list[dict[str, Any]], spec_path: Path, release: str = HUDI_VERSION) -> None:
    """Run write_tables.py on `specs` under Hudi `release`'s bundle."""
    spec_path.write_text(json.dumps(specs))
    result = subprocess.run([str(PYTHON), str(WRITER), str(spec_path), str(bundle(release))], capture_output=True, text=True, timeout=2400,
                            cwd=spec_path.parent,
                            env={"PATH": "/usr/bin:/bin", "JAVA_HOME": java17_home(), "PYSPARK_PYTHON": str(PYTHON),
                                 "SPARK_LOCAL_IP": "127.0.0.1", "HOME": str(Path.home())})
    if result.returncode != 0:
        raise RuntimeError(f"Hudi's writer failed:\n{result.stderr[-4000:]}")


def go_on(tables_and_shapes: list[tuple[Path, Shape, dict[str, Any]]], more_steps: tuple[str, ...], work: Path,
          release: str = HUDI_VERSION) -> dict[str, dict[str, Any]]:
    """Hudi reads each table (its metadata table built by hudi-bridge) with data
    skipping on, writes `more_steps` on top, and reads again: shape name -> what it saw."""
    specs = [{**asdict(shape), "path": str(path), "expected": oracle["expected"], "more_steps": list(more_steps)}
             for path, shape, oracle in tables_and_shapes]
    run_writer(specs, work / "go_on.json", release)
    return {shape.name: json.loads(Path(f"{path}.go_on.json").read_text()) for path, shape, _ in tables_and_shapes}


def read_synced(metastore_uri: str, names: list[str], work: Path) -> dict[str, list[int] | str]:
    """Hudi's Spark SQL (its catalog on the metastore) reads each `db.table`: its ids, or why it cannot."""
    out = work / "read_synced.json"
    run_writer([{"metastore": metastore_uri, "tables": names, "out": str(out)}], work / "read_synced_spec.json")
    return dict(json.loads(out.read_text()))


def hive_sync_tool(release: str, metastore_uri: str, database: str, tables: list[dict[str, str]], work: Path) -> dict[str, str | None]:
    """Hudi `release`'s own HiveSyncTool (hms mode) registers each table ({"name", "path", "partition_fields",
    "extractor"}) in `database`: table name -> None, or Hudi's error."""
    out = work / "hive_sync_tool.json"
    spec = {"hive_sync_tool": {"uri": metastore_uri, "database": database, "tables": tables}, "out": str(out)}
    run_writer([spec], work / "hive_sync_tool_spec.json", release)
    return dict(json.loads(out.read_text()))


def with_our_metadata_table(source: Path, shape: Shape, path: Path) -> Path:
    """A copy of a table Hudi wrote at `path`, Hudi's metadata table replaced by
    one hudi-bridge builds (files, column_stats, bloom_filters, partition_stats
    where Hudi keeps them, the record index with meta fields)."""
    import shutil

    from metadata.mdt.file_groups import MdtPartition
    from metadata.mdt.write.writer import MetadataTableWriter
    from metadata.storage.storage import Storage
    from metadata.table.config import update_table_config

    shutil.copytree(source, path)
    shutil.rmtree(path / ".hoodie" / "metadata")
    update_table_config(Storage.open(str(path)), {"hoodie.table.metadata.partitions": None,
                                                  "hoodie.table.metadata.partitions.inflight": None})
    partitions = [MdtPartition.FILES, MdtPartition.COLUMN_STATS, MdtPartition.BLOOM_FILTERS]
    partitions += [MdtPartition.PARTITION_STATS] if shape.version >= 8 and shape.key_generator != "nonpartitioned" else []
    partitions += [MdtPartition.RECORD_INDEX] if shape.meta_fields else []
    MetadataTableWriter(str(path)).build(partitions)
    return path


def java17_home() -> str:
    """The Java 17 JDK Hudi 1.0.2 and Spark 3.5 run on ("" when there is none: the PATH's java then)."""
    for candidate in sorted(Path("/usr/lib/jvm").glob("java-17-openjdk*")):
        return str(candidate)
    return ""


LIVE_WRITER = Path(__file__).resolve().parent / "live_writer.py"


class LiveWriter:
    """A live Hudi pipeline (`live_writer.py`): upserts `commits` commits into
    `path`, one after another, while the test runs hudi-bridge beside it.
    `done()` once Hudi has written them all; `finish()` lets it read every
    committed key back through Hudi's data skipping and returns its record."""

    def __init__(self, path: Path, table_type: str, commits: int, writer_options: dict[str, str] | None = None, first: int = 0,
                 release: str = HUDI_VERSION) -> None:
        """`first`: commits an earlier writer made on `path` (their rows are replayed into the record); `release`: the
        Hudi that writes (1.1.1 and 1.2.0 write table version 9)."""
        self.path = path
        work = path.parent
        self.out, self.go, self.started = work / f"{path.name}.live.json", work / f"{path.name}.go", work / f"{path.name}.started"
        spec = {"path": str(path), "table_type": table_type, "commits": commits, "first": first, "writer_options": writer_options or {},
                "out": str(self.out), "go": str(self.go), "started": str(self.started)}
        spec_path = work / f"{path.name}.live-spec.json"
        spec_path.write_text(json.dumps(spec))
        self.log = work / f"{path.name}.live.log"
        with open(self.log, "w") as log:
            self.process = subprocess.Popen(
                [str(PYTHON), str(LIVE_WRITER), str(spec_path), str(bundle(release))], stdout=log, stderr=subprocess.STDOUT,
                cwd=work, start_new_session=True,  # its own process group: a kill -9 takes Spark's JVM with it
                env={"PATH": "/usr/bin:/bin", "JAVA_HOME": java17_home(), "PYSPARK_PYTHON": str(PYTHON),
                     "SPARK_LOCAL_IP": "127.0.0.1", "HOME": str(Path.home())})

    def done(self) -> bool:
        return self.out.is_file() or self.process.poll() is not None

    def finish(self, timeout: float = 900) -> dict[str, Any]:
        self.go.write_text("go")
        self.process.wait(timeout=timeout)
        if not self.out.is_file():
            raise RuntimeError(f"Hudi's live writer failed:\n{self.log.read_text()[-4000:]}")
        return dict(json.loads(self.out.read_text()))

    def kill(self) -> None:
        """kill -9 of the writer and its JVM, mid-whatever it is doing."""
        import os
        import signal

        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=60)
