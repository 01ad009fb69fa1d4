"""Binary formats against golden files Hudi wrote (see tests/golden_formats.py)."""

from __future__ import annotations

import pytest

from tests.golden_formats import DECODERS, decoded, expected


@pytest.mark.parametrize("name", sorted(DECODERS))
def test_decodes_as_recorded(name: str) -> None:
    assert decoded(name) == expected(name)


def test_golden_files_hold_what_they_are_for() -> None:
    """The recorded JSON is not empty or trivial: it pins real content."""
    hfile = expected("files-partition.hfile")
    assert "__all_partitions__" in hfile["records"]
    assert hfile["entry_count"] == len(hfile["records"])
    stats = expected("column-stats.hfile")
    typed = [r["column_stats"] for r in stats["records"].values() if r["column_stats"]]
    assert typed
    assert {type(s["min_value"]).__name__ for s in typed} - {"NoneType"}
    log = expected("files-partition.log")
    assert [b["type"] for b in log["blocks"]] == ["HFILE_DATA"]
    assert log["problems"] == []
    commit = expected("v9.commit")
    assert commit["files_written"]
    assert expected("hoodie.properties")["config"]["version"] == 9
