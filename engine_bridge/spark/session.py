"""A local SparkSession wired to a Hive metastore."""

from __future__ import annotations

import os
import sys
from typing import Any


def local_spark_session(metastore_uri: str, warehouse: str, app_name: str = "hudi-bridge") -> Any:
    """`local[2]` Spark with Hive support on `metastore_uri`; Python workers
    use this interpreter (the one that has hudi-bridge installed)."""
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName(app_name)
        .config("spark.ui.enabled", "false")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.hadoop.hive.metastore.uris", metastore_uri)
        .config("spark.sql.warehouse.dir", warehouse)
        .enableHiveSupport()
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    return session
