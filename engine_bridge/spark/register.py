"""Registering the `hudi` source in a Spark session."""

from __future__ import annotations

import logging
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from typing import Any

from engine_bridge.spark.datasource import configured_source

log = logging.getLogger(__name__)
NAME = "hudi"
FALLBACK_NAME = "hudi_bridge"
SOURCE_CONF = "spark.hudi.bridge.source"  # the name this session's source answers to
PUSHDOWN_CONF = "spark.sql.python.filterPushdown.enabled"
PRUNING_OFF = (
    "this Spark reuses one query's pushed-filter plan for later queries on the same DataFrame or view, "
    "so pushed filters do not prune files by default (set hoodie.bridge.prune.pushed.filters=true on a "
    "DataFrame used for one query, or use engine_bridge.spark.read)"
)
_PYTHON_SOURCE_CLASS = "org.apache.spark.sql.execution.datasources.v2.python.PythonDataSourceV2"


@dataclass(frozen=True)
class Registration:
    name: str
    prunes_pushed_filters: bool
    notes: tuple[str, ...] = ()


def pushdown_state_is_scoped(spark: Any) -> bool:
    """Whether this Spark keeps a pushdown's planned partitions with the
    scan that pushed (safe to prune), rather than on the relation shared by
    every later query (PySpark 4.1-4.3: `PythonDataSourceV2.setReadInfo`).
    Unknown counts as unsafe."""
    try:
        jvm = spark._jvm
        cls = jvm.py4j.reflection.ReflectionUtil.classForName(_PYTHON_SOURCE_CLASS)
        return "setReadInfo" not in {m.getName() for m in cls.getDeclaredMethods()}
    except Exception:  # Spark Connect has no JVM handle; pyspark internals vary
        return False


def workers_run_this_interpreter(spark: Any) -> str | None:
    """Spark starts the source's Python workers with the interpreter the
    SparkContext names (PYSPARK_PYTHON, else `python3` from PATH), fixed when
    the source is registered. On a local master whose interpreter cannot import
    hudi-bridge (a virtualenv run as `.venv/bin/python script.py`), the workers
    run this interpreter instead; elsewhere it is the cluster's to set. Returns
    a note when something was changed or needs doing."""
    context = getattr(spark, "sparkContext", None)
    current = getattr(context, "pythonExec", None)
    if context is None or not current:  # Spark Connect: the server's workers are the server's
        return None
    resolved = shutil.which(current) or current
    if os.path.realpath(resolved) == os.path.realpath(sys.executable) or _imports_hudi_bridge(resolved):
        return None
    if not str(context.master).startswith("local"):
        note = (f"Spark's Python workers run {current!r}, which cannot import hudi-bridge here: set spark.pyspark.python "
                "(or PYSPARK_PYTHON) to an interpreter that has it, on every executor")
        log.warning("%s", note)
        return note
    context.pythonExec = sys.executable
    note = f"Spark's Python workers would run {current!r}, which cannot import hudi-bridge; they run {sys.executable} instead"
    log.info("%s", note)
    return note


def _imports_hudi_bridge(python: str) -> bool:
    """Whether `python` imports the source outside this project's folder (workers do not run from it)."""
    try:
        found = subprocess.run([python, "-c", "import engine_bridge.spark.datasource"], capture_output=True, timeout=60, cwd="/")
    except (OSError, subprocess.SubprocessError):
        return False
    return found.returncode == 0


def register(spark: Any, name: str = NAME, fallback: str = FALLBACK_NAME) -> Registration:
    """Register the source as `name`; when a JVM source of that name is on
    the classpath (Apache Hudi's bundle), as `fallback`, and say so."""
    spark.conf.set(PUSHDOWN_CONF, "true")
    prune = pushdown_state_is_scoped(spark)
    notes = [note for note in (workers_run_this_interpreter(spark),) if note]
    if not prune:
        log.info("%s", PRUNING_OFF)
        notes.append(PRUNING_OFF)
    chosen = name
    try:
        spark.dataSource.register(configured_source(name, prune))
    except Exception as exc:
        if "DATA_SOURCE_ALREADY_EXISTS" not in str(exc):
            raise
        chosen = fallback
        spark.dataSource.register(configured_source(fallback, prune))
        notes.append(f"a JVM data source named {name!r} is on the classpath and wins; hudi-bridge's source is {fallback!r}")
        log.warning("%s", notes[-1])
    spark.conf.set(SOURCE_CONF, chosen)
    return Registration(chosen, prune, tuple(notes))


def source_name(spark: Any) -> str:
    """The name of the source in this session, registering it first if needed."""
    name = spark.conf.get(SOURCE_CONF, None)
    if name:
        return str(name)
    return register(spark).name
