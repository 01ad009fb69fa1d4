"""DirectoryLister, candidate-file planning and incremental pull."""

from listers.directory_lister import DirectoryLister
from listers.incremental import IncrementalPlan, IncrementalRangeError, incremental, incremental_from_hive_conf
from listers.planner import Plan, plan

__all__ = ["DirectoryLister", "IncrementalPlan", "IncrementalRangeError", "Plan", "incremental", "incremental_from_hive_conf", "plan"]
