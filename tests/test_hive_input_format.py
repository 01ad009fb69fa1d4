"""`hive list-status` against Apache Hudi's own Hive input format.

`tests/hudi_oracle/InputFormatOracle.java` calls
`HoodieParquetInputFormat.listStatus(JobConf)` (Hudi 1.0.2, from its Spark
bundle, on Spark 3.5's Hadoop and Hive jars). Every table shape Hudi wrote
for the conformance tier is listed both ways, for the same job
configurations: snapshot of every partition and of one, with the metadata
table on and off, as of an earlier commit, incremental from the start and
from a middle commit (one commit, two, all), and with the last commit left
pending. The files and their lengths are equal. One JVM answers all
configurations; the cells go to `.cache/hudi-tables/<version>/hive_input_format.json`
for `docs/conformance.md`.

Two cases are not equality, by design:
- a pushed filter (`hive.io.filter.text`): Hudi's input format does not
  prune on statistics, so ours is a subset of Hudi's that keeps every file
  holding a matching row;
- `consume.pending.commits=true`: Hudi 1.0.2's input format lists exactly
  what it lists without it (the pending commit's files are not visible),
  while the flag exists to show them (HUDI-1646, apache/hudi#2611, for
  pre-commit validation); ours lists them, and the test checks both.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from engine_bridge.hive.job_conf import INPUT_DIR
from engine_bridge.hive.list_status import list_status
from metadata import HudiTable
from metadata.errors import HudiError
from tests.hudi_oracle import BUNDLE, CACHE, HUDI_VERSION, SHAPES, java17_home, missing_setup, tables
from tests.needs import require

pytestmark = [pytest.mark.services, pytest.mark.slow]
ORACLE = Path(__file__).resolve().parent / "hudi_oracle" / "InputFormatOracle.java"
LISTED_SHAPES = [s for s in SHAPES if not s.hudi_write_fails]
REPORT_PATH = CACHE / "hudi-tables" / HUDI_VERSION / "hive_input_format.json"
PUSHED_FILTER = "(v >= 50)"
EQUAL, FILTERED, PENDING_SHOWN = "equal", "filtered", "pending shown"
Answer = list[tuple[str, int]] | str


@dataclass(frozen=True)
class Case:
    shape: str
    name: str
    conf: dict[str, str]
    expect: str = EQUAL
    pending_files: tuple[str, ...] = ()  # the base files the pending commit wrote


def _spark35_jars() -> Path:
    found = sorted((CACHE / "hudi-spark" / "venv").glob("lib/python3*/site-packages/pyspark/jars"))
    if not found:
        raise FileNotFoundError("PySpark 3.5's jars are not in .cache/hudi-spark/venv (scripts/setup.sh --test)")
    return found[0]


def _java17() -> str:
    home = java17_home()
    return str(Path(home) / "bin" / "java") if home else shutil.which("java") or "java"


def hudi_list_status(confs: list[dict[str, str]], work: Path) -> list[Answer]:
    """What Hudi's HoodieParquetInputFormat lists for each configuration: (path, length) pairs, or its error."""
    files = []
    for n, conf in enumerate(confs):
        path = work / f"job{n}.properties"
        path.write_text("".join(f"{_escape_property(k)}={_escape_property(v)}\n" for k, v in conf.items()))
        files.append(str(path))
    result = subprocess.run([_java17(), "-cp", f"{BUNDLE}{os.pathsep}{_spark35_jars()}/*", str(ORACLE), *files],
                            capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    answers: list[Answer] = []
    for line in result.stdout.splitlines():
        if line.startswith("== "):
            answers.append([])
        elif line.startswith("!! "):
            answers[-1] = line[3:]
        elif "\t" in line and answers and isinstance(answers[-1], list):
            listed, length = line.rsplit("\t", 1)
            answers[-1].append((_local(listed), int(length)))
    assert len(answers) == len(confs), result.stdout[-3000:]
    return answers


def _escape_property(text: str) -> str:
    return text.replace("\\", "\\\\").replace(":", "\\:").replace("=", "\\=")


def _local(path: str) -> str:
    return path.removeprefix("file:")


def _leave_last_commit_pending(source: Path, target: Path) -> tuple[str, ...]:
    """A copy of the table whose last commit is inflight (its completed instant file removed): the base files it wrote."""
    shutil.copytree(source, target)
    table = HudiTable.open(str(target), use_metadata=False)
    last = table.timeline.commits()[-1]
    extension = table.config.base_file_format.extension
    written = tuple(sorted(s.file_name for s in table.timeline.commit_metadata(last).write_stats() if s.file_name.endswith(extension)))
    os.remove(table.timeline.instant_file(last))
    for crc in target.rglob(f".*{last.requested_time}*.crc"):
        crc.unlink()
    return written


def _cases(name: str, path: Path, work: Path) -> list[Case]:
    table = HudiTable.open(str(path), use_metadata=False)
    partitions = table.partitions() if table.config.is_partitioned else [""]
    folders = [str(path / p) if p else str(path) for p in partitions]
    key = table.config.name
    commits = [i.requested_time for i in table.timeline.commits()]
    every = {INPUT_DIR: ",".join(folders)}

    def incremental(start: str, max_commits: int) -> dict[str, str]:
        return {**every, f"hoodie.{key}.consume.mode": "INCREMENTAL", f"hoodie.{key}.consume.start.timestamp": start,
                f"hoodie.{key}.consume.max.commits": str(max_commits)}

    cases = [
        Case(name, "snapshot", every),
        Case(name, "snapshot, one partition", {INPUT_DIR: folders[0]}),
        Case(name, "snapshot, metadata table on", {**every, "hoodie.metadata.enable": "true"}),
        Case(name, "snapshot as of the second commit", {**every, f"hoodie.{key}.consume.commit": commits[1]}),
        Case(name, "incremental from 0, one commit", incremental("0", 1)),
        Case(name, "incremental from 0, all", incremental("0", -1)),
        Case(name, "incremental from the second commit, two", incremental(commits[1], 2)),
        Case(name, "incremental from the second commit, one partition", {**incremental(commits[1], -1), INPUT_DIR: folders[-1]}),
    ]
    pending_table = work / f"{name}-pending"
    pending = _leave_last_commit_pending(path, pending_table)
    pending_folders = ",".join(str(pending_table / p) if p else str(pending_table) for p in partitions)
    cases += [
        Case(name, "last commit pending", {INPUT_DIR: pending_folders}),
        Case(name, "last commit pending, consume.pending.commits",
             {INPUT_DIR: pending_folders, f"hoodie.{key}.consume.pending.commits": "true"}, PENDING_SHOWN, pending),
        Case(name, f"snapshot, pushed filter {PUSHED_FILTER}", {**every, "hive.io.filter.text": PUSHED_FILTER}, FILTERED),
    ]
    return cases


@pytest.fixture(scope="module")
def answers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, list[tuple[Case, Answer]]]]:
    require(missing_setup(), "the Hive input-format oracle")
    work = tmp_path_factory.mktemp("input-format")
    written = tables(LISTED_SHAPES)
    cases = [case for shape in LISTED_SHAPES for case in _cases(shape.name, written[shape.name][0], work)]
    found = hudi_list_status([c.conf for c in cases], work)
    by_shape: dict[str, list[tuple[Case, Answer]]] = {}
    for case, answer in zip(cases, found):
        by_shape.setdefault(case.shape, []).append((case, answer))
    yield by_shape
    REPORT_PATH.write_text(json.dumps(REPORT, indent=1, sort_keys=True))


REPORT: dict[str, dict[str, str]] = {}


def _paths(answer: Answer) -> set[str]:
    assert not isinstance(answer, str), f"Hudi's input format failed: {answer}"
    return {path for path, _ in answer}


def _files_matching(paths: set[str]) -> set[str]:
    """The base files holding a row with v >= 50 (what the pushed filter selects on a read-optimized read)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    return {p for p in paths if pc.any(pc.greater_equal(pq.read_table(p, columns=["v"]).column("v"), 50)).as_py()}


@pytest.mark.parametrize("shape", [s.name for s in LISTED_SHAPES])
def test_hive_list_status_lists_what_hudis_input_format_lists(answers: dict[str, list[tuple[Case, Answer]]], shape: str) -> None:
    cells = REPORT.setdefault(shape, {})
    for case, theirs in answers[shape]:
        if isinstance(theirs, str) and "Cleaner cleaned up the timestamp of interest" in theirs:
            # Hudi refuses any time before its last clean kept; ours refuses only when a file that view needs is gone
            try:
                listed = list_status(case.conf).files
            except HudiError as exc:
                assert "clean" in str(exc), str(exc)
                cells[case.name] = "both refuse: a clean removed files of that time"
                continue
            assert all(os.path.exists(_local(f.path)) for f in listed), f"{shape}, {case.name}"
            cells[case.name] = f"Hudi refuses (a clean ran after that time); ours lists {len(listed)} file(s), all there"
            continue
        assert not isinstance(theirs, str), f"{shape}, {case.name}: Hudi's input format failed: {theirs}"
        ours = sorted((_local(f.path), f.length) for f in list_status(case.conf).files)
        if case.expect == EQUAL:
            assert ours == sorted(theirs), f"{shape}, {case.name}"
            cells[case.name] = "equal"
        elif case.expect == FILTERED:
            kept = {path for path, _ in ours}
            assert kept <= _paths(theirs), f"{shape}, {case.name}: listed a file Hudi does not"
            assert _files_matching(_paths(theirs)) <= kept, f"{shape}, {case.name}: dropped a file holding a matching row"
            cells[case.name] = f"a subset ({len(kept)} of {len(theirs)} files; Hudi does not prune), every matching file kept"
        else:
            without_flag = next(a for c, a in answers[shape] if c.name == "last commit pending")
            assert sorted(theirs) == sorted(without_flag), f"{shape}: Hudi now honours consume.pending.commits"
            shown = {p for p, _ in ours} - _paths(theirs)
            assert {os.path.basename(p) for p in shown} == set(case.pending_files), f"{shape}, {case.name}: {shown}"
            cells[case.name] = (f"ours lists the pending commit's {len(shown)} file(s); Hudi {HUDI_VERSION} lists the same as without "
                                "the flag (apache/hudi#2611 added it to show them)")
