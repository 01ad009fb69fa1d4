"""The Hive side: Hudi's input-format listing over a job configuration."""

from engine_bridge.hive.job_conf import JobConfError, load_job_conf, split_input_paths
from engine_bridge.hive.list_status import ListedFile, ListStatus, TableListing, list_status

__all__ = ["JobConfError", "ListStatus", "ListedFile", "TableListing", "list_status", "load_job_conf", "split_input_paths"]
