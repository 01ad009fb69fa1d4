"""Hive's pushed predicate forms as HudiExpression trees (RFC-27's Hive side).

- `parse_hive_filter`: the text Hive puts in `hive.io.filter.text`, the
  display form of its ExprNodeDesc (`((key >= 100L) and (key < 200))`,
  `(not x)`, `x is null`, `(col) IN (1, 2)`, typed constants such as `10L`,
  `1.5D`, `DATE'2024-01-01'`). It is Hive SQL, so the SQL front end reads it.
- `parse_search_argument`: a SearchArgument's string form (`leaf-0 =
  (LESS_THAN x 10), leaf-1 = (IN y a b), expr = (and leaf-0 (not leaf-1))`,
  or the older form with one entry per line).

Both give the tree `parse_sql` gives for the same predicate; leaves they
cannot read become `Unknown` (never prune) and malformed text is a
positioned SqlSyntaxError.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

from expressions.dialect import Dialect
from expressions.errors import SqlSyntaxError, line_column
from expressions.sql import parse_sql
from expressions.tree import MAX_TREE_DEPTH, And, Comparison, Expr, In, IsNull, Literal, Not, Op, Or, Ref, Unknown, chain, depth

ORIGIN = Dialect.HIVE


def parse_hive_filter(text: str) -> Expr:
    """The tree of a `hive.io.filter.text` predicate."""
    return parse_sql(text, ORIGIN)


_ENTRY = re.compile(r"\s*(leaf-(\d+)|expr)\s*=\s*")
_LEAF = re.compile(r"\(\s*([A-Z_]+)\s+(\S+)((?:\s+\S+)*)\s*\)\s*$")
_COMPARISONS = {"EQUALS": Op.EQ, "NULL_SAFE_EQUALS": Op.NULL_SAFE_EQ, "LESS_THAN": Op.LT, "LESS_THAN_EQUALS": Op.LE}


def parse_search_argument(text: str) -> Expr:
    """The tree of a SearchArgument's `toString()`."""
    entries = list(_ENTRY.finditer(text))
    if not entries or entries[-1].group(1) != "expr":
        raise SqlSyntaxError("a SearchArgument string ends with 'expr = ...'", line_column(text, len(text)))
    leaves: dict[int, Expr] = {}
    for entry, following in zip(entries, entries[1:]):
        if entry.group(2) is None:
            raise SqlSyntaxError("'expr = ...' must come last in a SearchArgument string", line_column(text, entry.start()))
        body = text[entry.end() : following.start()].strip().rstrip(",").strip()
        leaves[int(entry.group(2))] = _leaf(body, text, entry.end())
    last = entries[-1]
    return _Tree(text, last.end(), leaves).parse()


def _leaf(body: str, text: str, offset: int) -> Expr:
    match = _LEAF.match(body)
    if match is None:
        raise SqlSyntaxError(f"a SearchArgument leaf is '(OPERATOR column literal...)', not {body!r}", line_column(text, offset))
    operator, column, rest = match.group(1), match.group(2), match.group(3).split()
    ref = Ref(tuple(column.split(".")))
    literals = tuple(_literal(v) for v in rest)
    if operator in _COMPARISONS and len(literals) == 1:
        return Comparison(_COMPARISONS[operator], ref, literals[0], ORIGIN)
    if operator == "IN" and literals:
        return In(ref, literals, False, ORIGIN)
    if operator == "BETWEEN" and len(literals) == 2:
        return And(Comparison(Op.GE, ref, literals[0], ORIGIN), Comparison(Op.LE, ref, literals[1], ORIGIN))
    if operator == "IS_NULL" and not literals:
        return IsNull(ref)
    return Unknown(f"SearchArgument leaf {body} is not supported for pruning", None, (ref,))


def _literal(text: str) -> Literal:
    """A SearchArgument prints literals untyped; binding gives them the column's type."""
    if text == "null":
        return Literal(None, "null")
    if re.fullmatch(r"-?\d+", text):
        return Literal(int(text), "integer")
    if re.fullmatch(r"-?\d+\.\d*(E-?\d+)?", text):
        try:
            return Literal(Decimal(text), "decimal")
        except InvalidOperation:
            pass
    if text in ("true", "false"):
        return Literal(text == "true", "boolean")
    return Literal(text, "string")


class _Tree:
    """`(and a b ...)`, `(or ...)`, `(not x)`, `leaf-N` and constants (YES, NO...)."""

    def __init__(self, text: str, start: int, leaves: dict[int, Expr]) -> None:
        self.text = text
        self.tokens = [(m.group(0), m.start()) for m in re.finditer(r"\(|\)|[^\s()]+", text[start:])]
        self.tokens = [(token, start + at) for token, at in self.tokens]
        self.leaves = leaves
        self.pos = 0

    def parse(self) -> Expr:
        result = self._node()
        if self.pos != len(self.tokens):
            raise SqlSyntaxError("unexpected text after the SearchArgument expression", line_column(self.text, self.tokens[self.pos][1]))
        return result

    def _next(self) -> tuple[str, int]:
        if self.pos >= len(self.tokens):
            raise SqlSyntaxError("the SearchArgument expression ends early", line_column(self.text, len(self.text)))
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def _node(self) -> Expr:
        # Iterative over (and ...)/(or ...) nesting: a frame stack, not recursion.
        stack: list[tuple[str, int, list[Expr]]] = []
        while True:
            token, at = self._next()
            if token == "(":
                operator, op_at = self._next()
                if operator not in ("and", "or", "not"):
                    raise SqlSyntaxError(f"unknown SearchArgument operator {operator!r}", line_column(self.text, op_at))
                stack.append((operator, op_at, []))
                continue
            value: Expr | None = self._atom(token, at)
            while True:
                if not stack:
                    assert value is not None  # only a frame with a parent merges into it
                    return self._bounded(value, at)
                if value is not None:
                    stack[-1][2].append(value)
                closing, close_at = self.tokens[self.pos] if self.pos < len(self.tokens) else (None, len(self.text))
                if closing != ")":
                    break
                self.pos += 1
                operator, op_at, children = stack.pop()
                if operator != "not" and children and stack and stack[-1][0] == operator:
                    stack[-1][2].extend(children)  # (and (and a b) c) is (and a b c): nesting of one kind flattens
                    value = None
                else:
                    value = self._combine(operator, children, op_at)

    def _bounded(self, tree: Expr, at: int) -> Expr:
        """What is left nested after flattening (alternating and/or/not) must stay walkable."""
        if depth(tree) > MAX_TREE_DEPTH:
            raise SqlSyntaxError(f"SearchArgument nested too deeply (more than {MAX_TREE_DEPTH} levels of alternating and/or/not)",
                                 line_column(self.text, at))
        return tree

    def _atom(self, token: str, at: int) -> Expr:
        match = re.fullmatch(r"leaf-(\d+)", token)
        if match:
            number = int(match.group(1))
            if number not in self.leaves:
                raise SqlSyntaxError(f"{token} is not defined", line_column(self.text, at))
            return self.leaves[number]
        if token in ("YES", "NO", "NULL", "YES_NO", "NO_NULL", "YES_NULL", "YES_NO_NULL"):
            return Unknown(f"SearchArgument constant {token}")  # a truth value: never prunes
        raise SqlSyntaxError(f"unexpected {token!r} in a SearchArgument expression", line_column(self.text, at))

    def _combine(self, operator: str, children: list[Expr], at: int) -> Expr:
        if operator == "not":
            if len(children) != 1:
                raise SqlSyntaxError("(not ...) takes one operand", line_column(self.text, at))
            child = children[0]
            return child.child if isinstance(child, Not) else Not(child)  # a double negation cancels
        if not children:
            raise SqlSyntaxError(f"({operator}) needs operands", line_column(self.text, at))
        return chain(And if operator == "and" else Or, children)
