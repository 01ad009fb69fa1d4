"""`file_id_of`, the quick file id a plan filters listings by, gives what
`classify` gives for every base and log file name: real tables' names, the
builder's, the metadata table's, and made-up edge cases."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from metadata.sample_tables.sample import build_sample_table
from metadata.table.file_naming import BaseFileName, LogFileName, classify, file_id_of, file_ids_of
from tests.conftest import requires_fixtures


def _agree(names: list[str], extension: str) -> int:
    checked = 0
    for name in names:
        parsed = classify(name, extension, name)
        if parsed is not None:
            assert file_id_of(name) == parsed.file_id, name
            checked += 1
    return checked


@requires_fixtures
def test_file_id_of_agrees_with_classify_on_every_fixture_file(fixture_root: Path) -> None:
    names = [p.name for p in fixture_root.rglob("*") if p.is_file()]
    assert _agree(names, ".parquet") > 100  # base and log files of the data tables
    assert _agree([n for n in names if n.endswith(".hfile") or ".log." in n], ".hfile") > 50  # metadata tables: files-0000-0, record-index-0001-0


def test_file_id_of_agrees_with_classify_on_a_sample_table(tmp_path: Path) -> None:
    build_sample_table(str(tmp_path / "t"))
    names = [p.name for p in (tmp_path / "t").rglob("*") if p.is_file() and ".hoodie" not in p.parts]
    assert _agree(names, ".parquet") > 5


ids = st.text(st.characters(whitelist_categories=("Ll", "Nd"), whitelist_characters="-"), min_size=1, max_size=12)
instants = st.from_regex(r"\d{17}", fullmatch=True)


@given(ids, instants, st.integers(1, 99), st.booleans(), st.booleans())
def test_file_id_of_agrees_with_classify_on_made_up_names(file_id: str, instant: str, version: int, cdc: bool, archive: bool) -> None:
    base = BaseFileName(file_id, "1-2-3", instant, ".parquet").name
    log = LogFileName(file_id, instant, "archive" if archive else "log", version, "0-1-2", cdc).name
    assert file_id_of(base) == classify(base, ".parquet").file_id  # type: ignore[union-attr]
    assert file_id_of(log) == LogFileName.parse(log).file_id
    assert (classify(log, ".parquet") is None) == cdc  # a change-data log is no log file of the slice


@settings(max_examples=300, deadline=None)
@given(names=st.lists(st.text(alphabet="ab_.-é0", max_size=12) | st.builds(lambda f, i: f".{f}_{i}.log.1_0-1-2", st.text("ab_", max_size=5),
                                                                        st.text("01", max_size=3)), max_size=20),
       split=st.integers(0, 20))
def test_file_ids_of_is_file_id_of_each_name(names: list[str], split: int) -> None:
    """By Arrow over an array (one chunk or two): what `file_id_of` gives a name at a time, log names and names without '_' too."""
    expected = [file_id_of(name) for name in names]
    assert file_ids_of(pa.array(names, pa.string())).to_pylist() == expected
    assert file_ids_of(pa.chunked_array([names[:split], names[split:]], pa.string())).to_pylist() == expected


def test_file_ids_of_names_of_one_width_are_cut_where_the_ids_end() -> None:
    """Hudi's names: every first '_' at the same byte (cut there, non-ASCII text before it included), or not (by the
    general rule), or a name without '_' (the whole name)."""
    same = ["aé-0_1-2-3_20240101010101.parquet", "bé-0_1-2-3_20240101010102.parquet", "cé-0_x_y.parquet"]
    mixed = [*same, "dd-0_1-2-3_20240101010101.parquet", "no-underscore.parquet"]
    for names in (same, mixed, same[:1], []):
        expected = [file_id_of(name) for name in names]
        assert file_ids_of(pa.array(names, pa.string())).to_pylist() == expected
        assert file_ids_of(pa.chunked_array([names[:1], names[1:]], pa.string())).to_pylist() == expected
