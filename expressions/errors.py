"""Errors of the expression front ends and of binding; each says where."""

from __future__ import annotations

from metadata.errors import HudiBridgeError


class ExpressionError(HudiBridgeError, ValueError):
    """A predicate cannot be read or bound; `position` is (line, column) in its SQL."""

    def __init__(self, message: str, position: tuple[int, int] | None = None) -> None:
        self.message = message
        self.position = position
        where = f" (line {position[0]}, column {position[1]})" if position else ""
        super().__init__(message + where)


def line_column(text: str, offset: int) -> tuple[int, int]:
    """(line, column), both from 1, of a character offset in a text."""
    return text.count("\n", 0, offset) + 1, offset - (text.rfind("\n", 0, offset) + 1) + 1


class SqlSyntaxError(ExpressionError):
    """The SQL text does not parse."""


class UnknownColumnError(ExpressionError):
    def __init__(self, name: str, suggestion: str | None, position: tuple[int, int] | None = None) -> None:
        self.name = name
        self.suggestion = suggestion
        hint = f"; did you mean {suggestion!r}?" if suggestion else ""
        super().__init__(f"unknown column {name!r}{hint}", position)


class CoercionError(ExpressionError):
    """A literal cannot take the type of the column it is compared with."""
