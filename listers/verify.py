"""`plan --verify`: read the file slices a plan ruled out and check that none
holds a row the predicate selects (issue 26). A user's safety net against
statistics that lie (Apache Hudi's #18755 writes all-null column_stats that
look true), and the project's own test oracle.

Rows are the slice's merged rows (`metadata.table.slice_rows`).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

from expressions import Expr, ExpressionError, evaluate_rows
from listers.planner import Plan
from metadata import HudiTable
from metadata.table.slice_rows import merged_rows


@dataclass(frozen=True)
class Verification:
    ruled_out: int  # slices the plan left out
    checked: int  # of those, read (all, or a sample)
    matches: tuple[str, ...] = ()  # slices that held a matching row: the plan would have dropped them
    unchecked: tuple[str, ...] = ()  # slices whose rows the predicate could not be evaluated on, and why

    @property
    def ok(self) -> bool:
        return not self.matches

    def describe(self) -> str:
        if self.matches:
            return f"verify: {len(self.matches)} ruled-out file slice(s) held a matching row: {', '.join(self.matches)}"
        text = f"verify: read {self.checked} of {self.ruled_out} ruled-out file slices; none held a matching row"
        return text + (f" ({len(self.unchecked)} could not be checked: {'; '.join(self.unchecked)})" if self.unchecked else "")

    def to_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "ruled_out": self.ruled_out, "checked": self.checked, "matches": list(self.matches),
                "unchecked": list(self.unchecked)}


def verify_plan(table: HudiTable, result: Plan, expr: Expr, as_of: str | None = None, sample: int | None = None,
                seed: int = 0) -> Verification:
    """Read the slices `result` ruled out (all, or `sample` of them chosen
    with `seed`) and evaluate `expr` on their rows."""
    kept = {(s.partition, s.file_id) for s in result.files}
    ruled_out = [s for s in table.file_slices(as_of=as_of) if (s.partition, s.file_id) not in kept]
    chosen = ruled_out if sample is None or sample >= len(ruled_out) else random.Random(seed).sample(ruled_out, sample)
    matches, unchecked = [], []
    for piece in chosen:
        where = table.storage.display_path(piece.base_file or (piece.log_files[0] if piece.log_files else piece.partition))
        rows = merged_rows(table, piece)
        if not rows.num_rows:
            continue
        try:
            selected = evaluate_rows(expr, rows)
        except ExpressionError as exc:
            unchecked.append(f"{where}: {exc}")
            continue
        if any(selected.to_pylist()):
            matches.append(where)
    return Verification(len(ruled_out), len(chosen), tuple(matches), tuple(unchecked))
