"""Our plans' pruning against Hudi's own data skipping, predicate by predicate.

The oracle records how many files Hudi's scan read with data skipping on
(its `numFiles` metric: one per file slice, after its partition pruning
and skipping). Where Hudi's answer is right, a plan keeps no more file
slices than that, or keeps more for one of two known reasons, both on the
side of soundness:
- the record index is not trusted after an insert commit, which may write
  a key two file groups hold (`--assume-unique-keys` trusts it, as Hudi
  does);
- a slice has no statistics for a column because its files were written
  before the column was added: Hudi reads the missing statistics as "no
  value", we keep the slice, which holds only nulls of it.
Anything else fails the test."""

from __future__ import annotations

from typing import Any

from expressions import parse_sql
from expressions.visitors import references
from listers import plan
from metadata import FileSlice, HudiTable


def against_hudi(table: HudiTable, predicate: str, kept: list[FileSlice], truth: list[int], oracle: dict[str, Any],
                 rows_of: Any) -> str:
    """The cell's words on pruning (empty where Hudi's count is not known or its answer is wrong); raises
    AssertionError where Hudi prunes more for no known reason. `rows_of(slices)`: the merged rows of slices."""
    read = oracle.get("hudi_files_read", {}).get(predicate)
    if not isinstance(read, int) or oracle.get("hudi_data_skipping", {}).get(predicate) != truth:
        return ""
    if len(kept) <= read:
        return f"; {len(kept)} file slice(s) kept, Hudi's data skipping read {read}"
    path = table.base_uri
    trusting = plan(path, predicate, assume_unique_keys=True).files
    if len(trusting) <= read:
        return (f"; {len(kept)} file slice(s) kept where Hudi's data skipping read {read}: the record index is not trusted "
                f"after an insert commit ({len(trusting)} with --assume-unique-keys, as Hudi)")
    columns = {ref.column.name for ref in references(parse_sql(predicate))}
    all_null = [s for s in kept if all(row.get(c) is None for row in rows_of([s]) for c in columns)]
    assert len(kept) - len(all_null) <= read, (
        f"{predicate}: Hudi's data skipping read {read} file slice(s), our plan keeps {len(kept)}, "
        f"{len(all_null)} of them without a value of {sorted(columns)}")
    return (f"; {len(kept)} file slice(s) kept where Hudi's data skipping read {read}: {len(all_null)} hold no value of "
            f"{', '.join(sorted(columns))} and no statistics for it (written before it was added)")
