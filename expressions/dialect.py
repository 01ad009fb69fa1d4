"""SQL dialects a predicate can come from, and how each treats NaN."""

from __future__ import annotations

from metadata.util.text_enum import TextEnum


class NanSemantics(TextEnum):
    # Spark and Hive: NaN equals itself and is greater than every number.
    ORDERED = "ordered"
    # Trino and Presto (IEEE 754): every comparison with NaN is false except `<>`.
    IEEE = "ieee"


class Dialect(TextEnum):
    HIVE = "hive"
    SPARK = "spark"
    TRINO = "trino"
    PRESTO = "presto"

    @property
    def nan_semantics(self) -> NanSemantics:
        return NanSemantics.IEEE if self in (Dialect.TRINO, Dialect.PRESTO) else NanSemantics.ORDERED

    @classmethod
    def of(cls, name: Dialect | str) -> Dialect:
        try:
            return cls(name)
        except ValueError:
            raise ValueError(f"dialect {name!r} is not one of {', '.join(cls.values())}") from None


def nan_semantics(origin: Dialect | str | None) -> NanSemantics:
    """NaN semantics of a leaf. A leaf of unknown origin (a tree built by
    hand) follows Spark, Hudi's engine: with statistics that is also the
    semantics that keeps more files, so pruning stays sound either way."""
    return NanSemantics.ORDERED if origin is None else Dialect.of(origin).nan_semantics
