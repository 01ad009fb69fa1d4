"""DirectoryLister, candidate-file planning, incremental pull and change feeds."""

from listers.changes import CDC_SCHEMA, ChangeFeedError, changes
from listers.directory_lister import DirectoryLister
from listers.incremental import IncrementalPlan, IncrementalRangeError, incremental, incremental_from_hive_conf
from listers.planner import Plan, plan
from listers.scan import QueryType, Scan, ScanError, scan

__all__ = ["CDC_SCHEMA", "ChangeFeedError", "DirectoryLister", "IncrementalPlan", "IncrementalRangeError", "Plan", "QueryType", "Scan",
           "ScanError", "changes", "incremental", "incremental_from_hive_conf", "plan", "scan"]
