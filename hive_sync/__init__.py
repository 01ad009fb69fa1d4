"""Syncing Hudi tables into a Hive metastore."""
