"""A local SparkSession wired to a Hive metastore."""

from __future__ import annotations

import logging
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from metadata.util.process import running_user

log = logging.getLogger(__name__)


def local_spark_session(metastore_uri: str | None = None, warehouse: str | None = None, app_name: str = "hudi-bridge",
                        cores: int = 2, java_log: str | None = None) -> Any:
    """`local[cores]` Spark on loopback, with Hive support on `metastore_uri`
    when one is given; Python workers use this interpreter (the one that has
    hudi-bridge installed). With `java_log`, the JVM's own output (its
    start-up warnings, log4j, stage progress) goes to that file, not the terminal."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # no "hostname resolves to a loopback address" warning
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
    )
    if metastore_uri is not None:
        builder = builder.config("spark.hadoop.hive.metastore.uris", metastore_uri).enableHiveSupport()
    if warehouse is not None:
        builder = builder.config("spark.sql.warehouse.dir", warehouse)
    with _stderr_to(java_log):  # the JVM inherits stderr when it starts, and keeps it
        session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


@contextmanager
def _stderr_to(path: str | None) -> Iterator[None]:
    if path is None:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    with open(path, "ab") as log_file:
        os.dup2(log_file.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def command_log_path() -> str | None:
    """Where a command's Spark writes its JVM output: a file of this run's own
    in the temporary folder (user, time and process in its name), or the
    terminal when debug logging is on (--debug)."""
    if logging.getLogger().isEnabledFor(logging.DEBUG):
        return None
    user = running_user() or str(os.getuid())
    stamp = time.strftime("%Y%m%d-%H%M%S")
    return os.path.join(tempfile.gettempdir(), f"hudi-bridge-spark-{user}-{stamp}-{os.getpid()}.log")


@contextmanager
def command_spark_session(app_name: str, cores: int = 2) -> Iterator[Any]:
    """The active SparkSession, or a local one started for a command and
    stopped after it (so a later session in the same process, say one on a
    Hive metastore, is not handed this one by getOrCreate)."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    java_log = None if active else command_log_path()
    session = active or local_spark_session(app_name=app_name, cores=cores, java_log=java_log)
    try:
        yield session
    except BaseException:
        if java_log is not None:
            log.warning("Spark's own output for this run is in %s", java_log)
        raise
    finally:
        if active is None:
            session.stop()
