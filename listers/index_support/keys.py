"""The index keys a predicate pins: record keys (through the key fields or
`_hoodie_record_key`) and secondary-index values, as Hudi writes them."""

from __future__ import annotations

import itertools

from expressions import BoundPredicate
from metadata.mdt.indexes import index_text
from metadata.table.record_key import RecordKeyRule

MAX_KEYS = 100_000  # record keys looked up in one plan


def index_texts(predicate: BoundPredicate, column: str, days: bool) -> list[str] | None:
    """The index keys of the values the predicate pins `column` to, if it does."""
    values = predicate.values_required(column)
    if values is None:
        return None
    texts = [index_text(v, days) for v in values]
    return None if None in texts else [t for t in texts if t is not None]


def pinned_record_keys(predicate: BoundPredicate, rule: RecordKeyRule) -> tuple[set[str] | None, str]:
    """(The record keys the predicate pins through the key fields and through
    `_hoodie_record_key`, both where both do, or None; a note when too many
    combinations were left out)."""
    keys: set[str] | None = None
    texts, note = _record_key_texts(predicate, rule)
    for found in (texts, index_texts(predicate, "_hoodie_record_key", days=False)):
        if found is not None:
            keys = set(found) if keys is None else keys & set(found)
    return keys, note


def _record_key_texts(predicate: BoundPredicate, rule: RecordKeyRule) -> tuple[list[str] | None, str]:
    """Record keys pinned through the key fields: the value of a single field,
    or `f1:v1,f2:v2` as Hudi's ComplexKeyGenerator encodes composite keys,
    for every combination of pinned values (up to MAX_KEYS), in every
    encoding the table's key generator may have written."""
    fields = rule.fields
    if not fields:
        return None, ""
    per_field = [index_texts(predicate, f, days=False) for f in fields]
    if any(texts is None for texts in per_field):
        return None, ""
    combinations = 1
    for texts in per_field:
        combinations *= len(texts or ())
    if combinations > MAX_KEYS:
        return None, f"record_index: {combinations} key combinations (more than {MAX_KEYS})"
    return [text for values in itertools.product(*per_field) for text in rule.texts(values)], ""  # type: ignore[arg-type]
