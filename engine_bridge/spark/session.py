"""A local SparkSession wired to a Hive metastore."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any


def local_spark_session(metastore_uri: str | None = None, warehouse: str | None = None, app_name: str = "hudi-bridge",
                        cores: int = 2) -> Any:
    """`local[cores]` Spark on loopback, with Hive support on `metastore_uri`
    when one is given; Python workers use this interpreter (the one that has
    hudi-bridge installed)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    builder = (
        SparkSession.builder.master(f"local[{cores}]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
    )
    if metastore_uri is not None:
        builder = builder.config("spark.hadoop.hive.metastore.uris", metastore_uri).enableHiveSupport()
    if warehouse is not None:
        builder = builder.config("spark.sql.warehouse.dir", warehouse)
    session = builder.getOrCreate()
    session.sparkContext.setLogLevel("ERROR")
    return session


@contextmanager
def command_spark_session(app_name: str, cores: int = 2) -> Iterator[Any]:
    """The active SparkSession, or a local one started for a command and
    stopped after it (so a later session in the same process, say one on a
    Hive metastore, is not handed this one by getOrCreate)."""
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    session = active or local_spark_session(app_name=app_name, cores=cores)
    try:
        yield session
    finally:
        if active is None:
            session.stop()
