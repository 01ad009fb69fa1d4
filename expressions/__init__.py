"""HudiExpression: the engine-agnostic predicate tree, its front ends and evaluators."""

from expressions.binding import bind
from expressions.bound import BoundPredicate, bind_predicate
from expressions.dialect import Dialect, NanSemantics
from expressions.errors import CoercionError, ExpressionError, SqlSyntaxError, UnknownColumnError
from expressions.eval_rows import evaluate_rows
from expressions.eval_stats import may_match, prune_files
from expressions.hive_filters import parse_hive_filter, parse_search_argument
from expressions.iceberg_json import IcebergExpressionError, parse_iceberg_json
from expressions.spark_filters import from_spark_filters
from expressions.sql import parse_sql, to_sql
from expressions.tree import (
    AlwaysFalse,
    AlwaysTrue,
    And,
    Comparison,
    Expr,
    In,
    IsNotNull,
    IsNull,
    Literal,
    Not,
    Op,
    Or,
    Ref,
    StartsWith,
    Unknown,
    push_not_down,
)

__all__ = [
    "AlwaysFalse", "AlwaysTrue", "And", "CoercionError", "Comparison", "Dialect", "NanSemantics", "Expr", "ExpressionError", "IcebergExpressionError", "In",
    "IsNotNull", "IsNull", "Literal", "Not", "Op", "Or", "Ref", "SqlSyntaxError", "StartsWith", "Unknown",
    "UnknownColumnError", "BoundPredicate", "bind", "bind_predicate", "evaluate_rows", "from_spark_filters", "may_match", "parse_hive_filter", "parse_iceberg_json", "parse_search_argument", "parse_sql",
    "prune_files", "push_not_down", "to_sql",
]
