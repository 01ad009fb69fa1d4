"""Adapters to Spark, Hive and Presto/Trino, and the hudi-bridge command line."""
