"""`TextEnum`: an enum of strings that prints, formats and serialises as its value.

Closed sets (actions, table types, dialects, sync modes) are enums so a
typo is an error, while JSON output and CLI choices keep the plain strings.
Python 3.10 has no `enum.StrEnum`.
"""

from __future__ import annotations

from enum import Enum


class TextEnum(str, Enum):
    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)

    @classmethod
    def values(cls) -> list[str]:
        return [str(member.value) for member in cls]
