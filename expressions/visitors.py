"""Walking a HudiExpression tree: the bottom-up `Visitor` (pyiceberg's
shape) over a tree with NOT pushed down, and what a predicate asks of its
columns (the references it makes, its conjuncts, the values a column must
take)."""

from __future__ import annotations

from typing import Any, Generic, TypeVar

from expressions.tree import (
    AlwaysFalse,
    And,
    Comparison,
    Expr,
    In,
    IsNotNull,
    IsNull,
    Not,
    Op,
    Or,
    Ref,
    StartsWith,
    Unknown,
    push_not_down,
)

T = TypeVar("T")


def references(expr: Expr) -> list[Ref]:
    """Every column reference, in order of appearance."""
    found: list[Ref] = []

    def walk(node: Expr) -> None:
        if isinstance(node, (And, Or)):
            walk(node.left)
            walk(node.right)
        elif isinstance(node, Not):
            walk(node.child)
        elif isinstance(node, Unknown):
            found.extend(node.refs)
        elif hasattr(node, "ref"):
            found.append(node.ref)

    walk(expr)
    return found


def conjuncts(expr: Expr) -> list[Expr]:
    if isinstance(expr, And):
        return conjuncts(expr.left) + conjuncts(expr.right)
    return [expr]


class Visitor(Generic[T]):
    """Bottom-up visitor over a NOT-free tree (pyiceberg's BooleanExpressionVisitor shape)."""

    def always_true(self) -> T:
        raise NotImplementedError

    def always_false(self) -> T:
        raise NotImplementedError

    def and_(self, left: T, right: T) -> T:
        raise NotImplementedError

    def or_(self, left: T, right: T) -> T:
        raise NotImplementedError

    def comparison(self, node: Comparison) -> T:
        raise NotImplementedError

    def in_(self, node: In) -> T:
        raise NotImplementedError

    def is_null(self, node: IsNull) -> T:
        raise NotImplementedError

    def is_not_null(self, node: IsNotNull) -> T:
        raise NotImplementedError

    def starts_with(self, node: StartsWith) -> T:
        raise NotImplementedError

    def unknown(self, node: Unknown) -> T:
        raise NotImplementedError


def visit(expr: Expr, visitor: Visitor[T]) -> T:
    return push_not_down(expr).accept(visitor)


def values_required(expr: Expr, column: str) -> list[Any] | None:
    """The values `column` must take for `expr` to hold (`= v`, `IN (...)`,
    through AND and OR), or None when the predicate allows any value. An
    index lookup of these values finds every matching row."""
    node = push_not_down(expr)
    if isinstance(node, Comparison):
        if node.ref.path == (column,) and not node.ref.functions and node.op in (Op.EQ, Op.NULL_SAFE_EQ) and not node.literal.is_null:
            return [node.literal.value]
        return None
    if isinstance(node, In):
        if node.ref.path == (column,) and not node.ref.functions and not node.negated:
            return [lit.value for lit in node.literals if not lit.is_null]
        return None
    if isinstance(node, AlwaysFalse):
        return []
    if isinstance(node, And):
        left, right = values_required(node.left, column), values_required(node.right, column)
        if left is None or right is None:
            return right if left is None else left
        return [v for v in left if v in right]
    if isinstance(node, Or):
        left, right = values_required(node.left, column), values_required(node.right, column)
        return None if left is None or right is None else left + [v for v in right if v not in left]
    return None
