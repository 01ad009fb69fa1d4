"""The HudiExpression tree: immutable nodes and exact negation (visitors: `expressions.visitors`).

Leaves compare one column reference with typed literals. Anything the
evaluators cannot reason about is an explicit `Unknown` node: it never
prunes and is not an error. `negate()` is exact under SQL's three-valued
logic, so NOT can be pushed down to the leaves before evaluation.

`origin` (the dialect a leaf came from) is not part of equality: the same
predicate from any dialect is the same tree. It only picks NaN semantics
when rows are evaluated (Spark orders NaN above every number and equal to
itself; Trino follows IEEE).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, TypeVar

from expressions.dialect import Dialect
from expressions.functions.base import Function
from expressions.functions.base import to_sql as function_sql

if TYPE_CHECKING:
    from expressions.visitors import Visitor

T = TypeVar("T")


class Op(str, Enum):
    EQ = "="
    NE = "<>"
    LT = "<"
    LE = "<="
    GT = ">"
    GE = ">="
    NULL_SAFE_EQ = "<=>"

    def flipped(self) -> Op:
        """The operator with its operands swapped (5 < a  ==  a > 5)."""
        return {Op.LT: Op.GT, Op.LE: Op.GE, Op.GT: Op.LT, Op.GE: Op.LE}.get(self, self)


_NEGATED = {Op.EQ: Op.NE, Op.NE: Op.EQ, Op.LT: Op.GE, Op.GE: Op.LT, Op.GT: Op.LE, Op.LE: Op.GT}


class Expr:
    """Base of every node."""

    def negate(self) -> Expr:
        raise NotImplementedError

    def accept(self, visitor: Visitor[T]) -> T:
        raise NotImplementedError

    def __and__(self, other: Expr) -> Expr:
        return and_(self, other)

    def __or__(self, other: Expr) -> Expr:
        return or_(self, other)

    def __invert__(self) -> Expr:
        return self.negate()


@dataclass(frozen=True)
class Ref:
    """A column, possibly nested (`a.b` is ("a", "b")). `position` (line,
    column in the SQL text) is for error messages only."""

    path: tuple[str, ...]
    position: tuple[int, int] | None = field(default=None, compare=False)
    cast: str | None = None  # CAST(col AS <cast>); binding keeps it only when it widens
    # Order-preserving functions applied to the column, innermost first: the
    # leaf compares f(column) with its literal.
    functions: tuple[Function, ...] = ()

    @property
    def name(self) -> str:
        """The column's name (functions aside)."""
        return ".".join(self.path)

    @property
    def column(self) -> Ref:
        """The bare column this reference reads."""
        return Ref(self.path, self.position, self.cast)

    def __str__(self) -> str:
        return function_sql(self.functions, self.name)


@dataclass(frozen=True)
class Literal:
    """A typed literal: `kind` is one of null, boolean, integer, decimal,
    float, string, date, timestamp, binary (before binding) or an Arrow type
    name after binding."""

    value: Any
    kind: str
    position: tuple[int, int] | None = field(default=None, compare=False)

    @property
    def is_null(self) -> bool:
        return self.value is None


@dataclass(frozen=True)
class AlwaysTrue(Expr):
    def negate(self) -> Expr:
        return AlwaysFalse()

    def accept(self, visitor: Visitor[T]) -> T:
        return visitor.always_true()


@dataclass(frozen=True)
class AlwaysFalse(Expr):
    def negate(self) -> Expr:
        return AlwaysTrue()

    def accept(self, visitor: Visitor[T]) -> T:
        return visitor.always_false()


@dataclass(frozen=True)
class And(Expr):
    left: Expr
    right: Expr

    def negate(self) -> Expr:
        return or_(self.left.negate(), self.right.negate())

    def accept(self, visitor: Visitor[T]) -> T:
        return visitor.and_(self.left.accept(visitor), self.right.accept(visitor))


@dataclass(frozen=True)
class Or(Expr):
    left: Expr
    right: Expr

    def negate(self) -> Expr:
        return and_(self.left.negate(), self.right.negate())

    def accept(self, visitor: Visitor[T]) -> T:
        return visitor.or_(self.left.accept(visitor), self.right.accept(visitor))


@dataclass(frozen=True)
class Not(Expr):
    """Only exists before `push_not_down`; evaluators never see it."""

    child: Expr

    def negate(self) -> Expr:
        return self.child

    def accept(self, visitor: Visitor[T]) -> T:
        return push_not_down(self).accept(visitor)


@dataclass(frozen=True)
class Comparison(Expr):
    op: Op
    ref: Ref
    literal: Literal
    origin: Dialect | None = field(default=None, compare=False)

    def negate(self) -> Expr:
        if self.op is Op.NULL_SAFE_EQ:
            if self.literal.is_null:
                return IsNotNull(self.ref)
            # NOT (a <=> v) holds when a is NULL or a differs from v.
            return or_(IsNull(self.ref), Comparison(Op.NE, self.ref, self.literal, self.origin))
        return Comparison(_NEGATED[self.op], self.ref, self.literal, self.origin)

    def accept(self, visitor: Visitor[T]) -> T:
        return visitor.comparison(self)


@dataclass(frozen=True)
class In(Expr):
    ref: Ref
    literals: tuple[Literal, ...]
    negated: bool = False
    origin: Dialect | None = field(default=None, compare=False)

    def negate(self) -> Expr:
        return In(self.ref, self.literals, not self.negated, self.origin)

    def accept(self, visitor: Visitor[T]) -> T:
        return visitor.in_(self)


@dataclass(frozen=True)
class IsNull(Expr):
    ref: Ref

    def negate(self) -> Expr:
        return IsNotNull(self.ref)

    def accept(self, visitor: Visitor[T]) -> T:
        return visitor.is_null(self)


@dataclass(frozen=True)
class IsNotNull(Expr):
    ref: Ref

    def negate(self) -> Expr:
        return IsNull(self.ref)

    def accept(self, visitor: Visitor[T]) -> T:
        return visitor.is_not_null(self)


@dataclass(frozen=True)
class StartsWith(Expr):
    """`ref LIKE 'prefix%'`; `negated` is NOT LIKE."""

    ref: Ref
    prefix: str
    negated: bool = False

    def negate(self) -> Expr:
        return StartsWith(self.ref, self.prefix, not self.negated)

    def accept(self, visitor: Visitor[T]) -> T:
        return visitor.starts_with(self)


@dataclass(frozen=True)
class Unknown(Expr):
    """A predicate the evaluators cannot reason about (a function, a
    column compared with a column...). It keeps every file. `sql` keeps its
    text so the tree can be printed back."""

    reason: str
    sql: str | None = None
    refs: tuple[Ref, ...] = ()

    def negate(self) -> Expr:
        return Unknown(self.reason, f"NOT ({self.sql})" if self.sql else None, self.refs)

    def accept(self, visitor: Visitor[T]) -> T:
        return visitor.unknown(self)


LEAVES = (Comparison, In, IsNull, IsNotNull, StartsWith, Unknown)


# Longer AND/OR chains are built balanced, so that a tree of 10,000 terms is
# about 14 levels deep and every recursive visitor stays far from Python's limit.
LEFT_DEEP_CHAIN = 32


MAX_TREE_DEPTH = 64  # what every recursive visitor and sqlglot's printer walk far from Python's limit


def depth(expr: Expr) -> int:
    """Levels of AND/OR/NOT above the deepest leaf, counted without recursion."""
    deepest, pending = 0, [(expr, 0)]
    while pending:
        node, level = pending.pop()
        deepest = max(deepest, level)
        if isinstance(node, (And, Or)):
            pending += [(node.left, level + 1), (node.right, level + 1)]
        elif isinstance(node, Not):
            pending.append((node.child, level + 1))
    return deepest


def chain(kind: type[And] | type[Or], parts: Sequence[Expr]) -> Expr:
    """`parts` joined by AND or OR as written: left-deep as SQL associates
    for short chains, balanced for long ones (same meaning, bounded depth)."""
    if not parts:
        raise ValueError("an AND/OR chain needs at least one part")
    if len(parts) <= LEFT_DEEP_CHAIN:
        result = parts[0]
        for part in parts[1:]:
            result = kind(result, part)
        return result
    middle = len(parts) // 2
    return kind(chain(kind, parts[:middle]), chain(kind, parts[middle:]))


def and_(*parts: Expr) -> Expr:
    """AND with constant folding (TRUE is neutral, FALSE absorbs)."""
    result: Expr = AlwaysTrue()
    for part in parts:
        if isinstance(part, AlwaysFalse) or isinstance(result, AlwaysFalse):
            result = AlwaysFalse()
        elif isinstance(result, AlwaysTrue):
            result = part
        elif not isinstance(part, AlwaysTrue):
            result = And(result, part)
    return result


def or_(*parts: Expr) -> Expr:
    result: Expr = AlwaysFalse()
    for part in parts:
        if isinstance(part, AlwaysTrue) or isinstance(result, AlwaysTrue):
            result = AlwaysTrue()
        elif isinstance(result, AlwaysFalse):
            result = part
        elif not isinstance(part, AlwaysFalse):
            result = Or(result, part)
    return result


def not_(child: Expr) -> Expr:
    return Not(child)


def push_not_down(expr: Expr) -> Expr:
    """The same predicate with no Not node (negations moved into leaves)."""
    if isinstance(expr, Not):
        return push_not_down(expr.child).negate()
    if isinstance(expr, And):
        return and_(push_not_down(expr.left), push_not_down(expr.right))
    if isinstance(expr, Or):
        return or_(push_not_down(expr.left), push_not_down(expr.right))
    return expr


# Names this module offered before it was split, for one release.
_MOVED = {"Visitor": "expressions.visitors", "visit": "expressions.visitors", "values_required": "expressions.visitors", "references": "expressions.visitors", "conjuncts": "expressions.visitors"}


def __getattr__(name: str) -> Any:
    from metadata._moved import moved_attribute  # only when an old name is asked for: expressions loads without metadata

    return moved_attribute(__name__, name, _MOVED)
