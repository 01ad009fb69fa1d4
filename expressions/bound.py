"""A predicate bound once to its table's schema (pyiceberg's Unbound/Bound split).

`BoundPredicate` is the type that says a tree is bound: every reference names
a field of the table and every literal holds a value of that field's Arrow
type. Evaluators given one do not bind again; they narrow it to the columns
they hold (`on`): a leaf on a column they lack becomes Unknown (it may match
anything), and only a leaf whose column has another type there (statistics
kept in a coarser type) is coerced again.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import pyarrow as pa

from expressions.binding import Schema, bind
from expressions.tree import And, Comparison, Expr, In, IsNotNull, IsNull, Or, StartsWith, Unknown, and_, or_
from expressions.visitors import references, values_required


@dataclass(frozen=True)
class BoundPredicate:
    """`expr` bound to a schema whose fields have the types in `types`
    (dotted names for nested fields)."""

    expr: Expr
    types: Mapping[str, pa.DataType]

    @property
    def columns(self) -> list[str]:
        """The fields the predicate reads, sorted."""
        return sorted({ref.name for ref in references(self.expr)})

    def values_required(self, column: str) -> list[object] | None:
        """The values (of the column's type) `column` must take for the
        predicate to hold, or None (`expressions.tree.values_required`)."""
        return values_required(self.expr, column)

    def on(self, schema: pa.Schema) -> Expr:
        """The predicate over a table with only `schema`'s columns."""
        return _narrow(self.expr, {f.name: f.type for f in schema}, self.types, schema)


def bind_predicate(expr: Expr | BoundPredicate, schema: pa.Schema, case_sensitive: bool = False) -> BoundPredicate:
    """Bind once, strictly: an unknown column or a literal the column cannot
    hold is an error naming its SQL position."""
    if isinstance(expr, BoundPredicate):
        return expr
    lookup = Schema(schema, case_sensitive)
    return BoundPredicate(bind(expr, lookup, strict=True), lookup.types)


def bound_as(expr: Expr, schema: pa.Schema) -> BoundPredicate:
    """A tree already bound to `schema` (a rewrite of a bound predicate), named as such."""
    return BoundPredicate(expr, Schema(schema).types)


def _narrow(expr: Expr, available: Mapping[str, pa.DataType], types: Mapping[str, pa.DataType], schema: pa.Schema) -> Expr:
    if isinstance(expr, And):
        return and_(_narrow(expr.left, available, types, schema), _narrow(expr.right, available, types, schema))
    if isinstance(expr, Or):
        return or_(_narrow(expr.left, available, types, schema), _narrow(expr.right, available, types, schema))
    if not isinstance(expr, (Comparison, In, IsNull, IsNotNull, StartsWith)):
        return expr  # true, false, unknown
    name = expr.ref.name
    if name not in available:
        return Unknown(f"column {name} is not known here", refs=(expr.ref,))
    if available[name] == types.get(name):
        return expr
    return bind(expr, schema, strict=False)  # kept in another type here: coerce the literal to it
