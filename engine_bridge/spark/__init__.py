"""The Spark side: the `hudi` Python data source, catalog helpers, the
parquet fast path, planning and key lookups on executors, and a local SparkSession on a Hive metastore."""

from engine_bridge.spark.catalog import describe, register_views, table
from engine_bridge.spark.fast_read import read
from engine_bridge.spark.keys import lookup_keys
from engine_bridge.spark.plan import plan_on_spark
from engine_bridge.spark.register import Registration, register
from engine_bridge.spark.session import local_spark_session

__all__ = ["Registration", "describe", "local_spark_session", "lookup_keys", "plan_on_spark", "read", "register", "register_views", "table"]
