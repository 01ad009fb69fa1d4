"""The Spark side: a local SparkSession on a Hive metastore."""

from engine_bridge.spark.session import local_spark_session

__all__ = ["local_spark_session"]
