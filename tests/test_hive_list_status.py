"""Hudi's Hive input-format listing over a job configuration."""

from __future__ import annotations

import json
import os
from pathlib import Path

import hudi
import pyarrow as pa
import pyarrow.fs as pafs
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

from engine_bridge.cli import main
from engine_bridge.hive import list_status, load_job_conf, split_input_paths
from engine_bridge.hive.job_conf import INPUT_DIR, JobConfError
from metadata import HudiTable
from metadata.mdt.write.writer import MetadataTableWriter
from metadata.sample_tables.builder import TableBuilder
from metadata.storage.storage import Storage
from metadata.table.config import update_table_config
from tests.conftest import fixture_ids, requires_fixtures
from tests.test_listers import CountingHandler


def _escape(path: str) -> str:
    return path.replace("\\", "\\\\").replace(",", "\\,")


def _conf(paths: list[str], **settings: str) -> dict[str, str]:
    return {INPUT_DIR: ",".join(_escape(p) for p in paths), **settings}


def _partition_dirs(path: str) -> list[str]:
    table = HudiTable.open(path, use_metadata=False)
    return [os.path.join(path, p) if p else path for p in table.partitions()]


def test_input_paths_split_as_hadoop_does(tmp_path: Path) -> None:
    assert split_input_paths(r"/a/b,/c\,d,/e\\f, /g ") == ["/a/b", "/c,d", "/e\\f", "/g"]
    assert split_input_paths("/t/p={a,b},/u") == ["/t/p={a,b}", "/u"]  # a glob's alternation is not a separator
    with pytest.raises(JobConfError, match="lone escape"):
        split_input_paths("/a\\")
    xml = tmp_path / "job.xml"
    xml.write_text("<configuration><property><name>a.b</name><value> 1 </value></property>"
                   "<property><name>c</name><value/></property></configuration>")
    assert load_job_conf(str(xml)) == {"a.b": "1", "c": ""}
    xml.write_text("<configuration><property>")
    with pytest.raises(JobConfError, match="not a Hadoop configuration file"):
        load_job_conf(str(xml))


@requires_fixtures
@pytest.mark.fixtures
@pytest.mark.parametrize("fixture_table", fixture_ids(), indirect=True)
def test_snapshot_lists_the_latest_base_files(fixture_table: str) -> None:
    rs = hudi.HudiTableBuilder.from_base_uri(fixture_table).build()
    expected = {os.path.join(fixture_table, s.base_file_relative_path()) for s in rs.get_file_slices() if s.base_file_name}
    inputs = _partition_dirs(fixture_table) or [fixture_table]  # an empty table: Hive passes the table folder
    result = list_status(_conf(inputs))
    assert {f.path for f in result.files} == expected
    assert all(f.length == os.path.getsize(f.path) and f.modification_time > 0 for f in result.files)
    assert [t.mode for t in result.tables] == ["snapshot"]


def _builder_table(path: Path, version: int, table_type: str) -> TableBuilder:
    builder = TableBuilder(str(path), pa.schema([("id", pa.int64()), ("p", pa.string())]), partition_fields=["p"],
                           version=version, table_type=table_type)
    builder.write([{"id": i, "p": f"p{i % 3}"} for i in range(9)])
    builder.write([{"id": 1, "p": "p1"}, {"id": 20, "p": "p5"}])
    builder.write([{"id": 30, "p": "p0"}])
    builder.write([{"id": 3, "p": "p0"}, {"id": 31, "p": "p6"}])
    return builder


def _written_in_range(path: str, instants: list[str], folders: list[str]) -> set[str]:
    """Per file group, the newest base file one of `instants` wrote (from
    commit metadata) and storage still holds, unless a replacecommit of the
    range replaced the group (one replaced later still holds what the range
    wrote: Hudi's input format lists it, tests/test_hive_input_format.py)."""
    table = HudiTable.open(path, use_metadata=False)
    replaced = {g for i in table.timeline.commits() if i.requested_time in instants
                for g in table.timeline.commit_metadata(i).replaced_file_groups()}
    newest: dict[tuple[str, str], tuple[str, str]] = {}
    for instant in table.timeline.commits():
        if instant.requested_time not in instants:
            continue
        for stat in table.timeline.commit_metadata(instant).write_stats():
            if stat.path and stat.path.endswith(".parquet") and os.path.join(path, stat.partition_path).rstrip("/") in folders:
                key = (stat.partition_path, stat.file_id)
                if key in replaced:
                    continue
                if key not in newest or newest[key][0] < instant.requested_time:
                    newest[key] = (instant.requested_time, stat.path)
    return {os.path.join(path, p) for _, p in newest.values() if os.path.exists(os.path.join(path, p))}


@pytest.mark.parametrize("version,table_type", [(6, "COPY_ON_WRITE"), (8, "COPY_ON_WRITE"), (6, "MERGE_ON_READ"), (8, "MERGE_ON_READ")])
def test_builder_tables_snapshot_and_incremental(tmp_path: Path, version: int, table_type: str) -> None:
    path = str(tmp_path / "t")
    _builder_table(tmp_path / "t", version, table_type)
    rs = hudi.HudiTableBuilder.from_base_uri(path).build()
    snapshot = list_status(_conf(_partition_dirs(path)))
    assert {f.path for f in snapshot.files} == {os.path.join(path, s.base_file_relative_path()) for s in rs.get_file_slices() if s.base_file_name}
    _check_incremental(path, "sample")


@requires_fixtures
@pytest.mark.fixtures
@pytest.mark.parametrize("fixture_table", [f for f in fixture_ids() if "empty" not in f] or ["no-fixtures"], indirect=True)
def test_fixture_incremental_lists_only_what_the_range_wrote(fixture_table: str) -> None:
    _check_incremental(fixture_table, HudiTable.open(fixture_table).config.name)


def _check_incremental(path: str, name: str) -> None:
    table = HudiTable.open(path, use_metadata=False)
    commits = [c.requested_time for c in table.timeline.commits()]
    partitions = _partition_dirs(path)
    for start in ["00000000000000000"] + commits:
        for max_commits in (1, 2, -1):
            later = [c for c in commits if c > start]
            in_range = later if max_commits < 0 else later[:max_commits]
            handler = CountingHandler()
            conf = _conf(partitions, **{f"hoodie.{name}.consume.mode": "INCREMENTAL", f"hoodie.{name}.consume.start.timestamp": start,
                                        f"hoodie.{name}.consume.max.commits": str(max_commits)})
            result = list_status(conf, filesystem=pafs.PyFileSystem(handler))
            assert {f.path for f in result.files} == _written_in_range(path, in_range, partitions), (start, max_commits)
            assert result.tables[0].instants == tuple(in_range)
            written = {p for c in in_range for p in table.timeline.commit_metadata(table.timeline.require(c)).partition_to_write_stats}
            data_listed = {os.path.relpath(d, path) for d in handler.listed if "/.hoodie" not in d and d != path}
            assert data_listed <= written, (start, max_commits)


def test_incremental_honours_use_database_stop_at_compaction_and_partial_inputs(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    builder = _builder_table(tmp_path / "t", 6, "MERGE_ON_READ")
    commits = [c.requested_time for c in HudiTable.open(path).timeline.commits()]
    builder.schedule_compaction()
    builder.write([{"id": 40, "p": "p7"}])
    base = {"hoodie.sample.consume.mode": "INCREMENTAL", "hoodie.sample.consume.start.timestamp": "0" * 17,
            "hoodie.sample.consume.max.commits": "-1"}
    stopped = list_status(_conf([path + "/p=p7", path + "/p=p0"], **base))
    assert stopped.tables[0].instants == tuple(commits)  # the commit after the pending compaction waits
    assert any("pending compaction" in n for n in stopped.tables[0].notes)
    assert {os.path.dirname(f.path) for f in stopped.files} == {path + "/p=p0"}  # p=p7 was written after it
    everything = list_status(_conf([path + "/p=p7"], **base, **{"hoodie.sample.ro.stop.at.compaction": "false"}))
    assert {os.path.dirname(f.path) for f in everything.files} == {path + "/p=p7"}
    update_table_config(Storage.open(path), {"hoodie.database.name": "db1"})
    qualified = {"hoodie.db1.sample.consume.mode": "INCREMENTAL", "hoodie.db1.sample.consume.start.timestamp": "0" * 17}
    assert list_status(_conf([path + "/p=p0"], **qualified)).tables[0].mode == "snapshot"  # keys by table name
    used = list_status(_conf([path + "/p=p0"], **qualified, **{"hoodie.incremental.use.database": "true"})).tables[0]
    assert (used.table, used.mode, used.instants) == ("db1.sample", "incremental", (commits[0],))


def test_snapshot_as_of_a_commit_and_with_pending_commits(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    builder = _builder_table(tmp_path / "t", 8, "COPY_ON_WRITE")
    first = HudiTable.open(path).timeline.commits()[0].requested_time
    pending = builder.write([{"id": 50, "p": "p0"}], complete=False)
    dirs = _partition_dirs(path)
    old = list_status(_conf(dirs, **{"hoodie.sample.consume.commit": first}))
    assert {f.path.rsplit("_", 1)[-1] for f in old.files} == {f"{first}.parquet"}
    latest = {f.path for f in list_status(_conf(dirs)).files}
    with_pending = {f.path for f in list_status(_conf(dirs, **{"hoodie.sample.consume.pending.commits": "true"})).files}
    assert not any(pending in p for p in latest)
    added = with_pending - latest
    assert added and all(pending in p for p in added)
    assert all(os.path.basename(p).split("_")[0] in {os.path.basename(a).split("_")[0] for a in added} for p in latest - with_pending)


def test_non_hudi_paths_come_back_as_hadoop_lists_them(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    pq.write_table(pa.table({"x": [1]}), plain / "part-0.parquet")
    (plain / "_SUCCESS").write_text("")
    (plain / ".part-0.parquet.crc").write_text("")
    hudi_path = str(tmp_path / "t")
    _builder_table(tmp_path / "t", 8, "COPY_ON_WRITE")
    result = list_status(_conf([str(plain), hudi_path + "/p=p1"]))
    assert result.non_hudi_paths == (str(plain),)
    assert [f.path for f in result.files if f.path.startswith(str(plain))] == [str(plain / "part-0.parquet")]
    assert len([f for f in result.files if f.path.startswith(hudi_path)]) == 1


def test_pushed_filter_prunes_on_column_stats_and_keeps_every_match(tmp_path: Path) -> None:
    path = str(tmp_path / "stats")
    builder = TableBuilder(path, pa.schema([("id", pa.int64()), ("p", pa.string())]), partition_fields=["p"], version=8,
                           metadata_table=True, max_rows_per_file=10)
    builder.write([{"id": i, "p": f"p{i // 50}"} for i in range(100)])
    MetadataTableWriter(path).build()
    dirs = _partition_dirs(path)
    everything = list_status(_conf(dirs))
    cases = [("(id > 95)", lambda i: i > 95), ("((id >= 12) and (id < 18))", lambda i: 12 <= i < 18),
             ("(id) IN (3, 77)", lambda i: i in (3, 77))]
    for text, matches in cases:
        result = list_status(_conf(dirs, **{"hive.io.filter.text": text}))
        kept = {f.path for f in result.files}
        holding = {f.path for f in everything.files if any(matches(i) for i in pq.read_table(f.path, columns=["id"]).column("id").to_pylist())}
        assert holding and holding <= kept < {f.path for f in everything.files}, text
    sarg = "leaf-0 = (LESS_THAN id 5), expr = leaf-0"
    assert len(list_status(_conf(dirs, **{"sarg.pushdown": sarg})).files) == 1
    kryo = list_status(_conf(dirs, **{"hive.io.filter.expr.serialized": "AQEAamF2YS51dGlsLkFycmF5TGlz"}))
    assert "not decoded" in kryo.predicate_note and len(kryo.files) == len(everything.files)


def test_cli_list_status_from_a_job_xml(tmp_path: Path) -> None:
    path = str(tmp_path / "t")
    _builder_table(tmp_path / "t", 8, "COPY_ON_WRITE")
    xml = tmp_path / "job.xml"
    xml.write_text(f"<configuration><property><name>{INPUT_DIR}</name><value>{path}/p=p0</value></property></configuration>")
    runner = CliRunner()
    result = runner.invoke(main, ["hive", "list-status", "--conf", str(xml), "--set", f"{INPUT_DIR}={path}/p=p1", "--json"])
    assert result.exit_code == 0, result.output
    listed = json.loads(result.stdout)
    assert {os.path.dirname(f["path"]) for f in listed["files"]} == {path + "/p=p1"}
    assert listed["tables"][0]["mode"] == "snapshot"
    bad = runner.invoke(main, ["hive", "list-status", "--set", "nothing"])
    assert bad.exit_code == 2
    missing = runner.invoke(main, ["hive", "list-status"])
    assert missing.exit_code == 2 and "has no mapreduce.input.fileinputformat.inputdir" in missing.output


def _hive_table(tmp_path: Path) -> str:
    path = str(tmp_path / "t")
    builder = TableBuilder(path, pa.schema([("id", pa.int64()), ("region", pa.string())]), partition_fields=["region"], version=8)
    builder.write([{"id": i, "region": r} for i, r in enumerate(["us", "eu", "apac", "us"])])
    return path


def test_input_paths_are_qualified_and_globs_expanded_as_hadoop_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _hive_table(tmp_path)
    every = sorted(f.path for f in list_status(_conf([path])).files)
    assert len(every) == 3 and all(p.startswith(path + "/region=") for p in every)
    assert sorted(f.path for f in list_status(_conf([path + "/region=*"])).files) == every
    assert sorted(f.path for f in list_status(_conf([path + "/region={us,eu}"])).files) == [p for p in every if "apac" not in p]
    dotted = f"{path}/region=us/../region=eu"
    assert [f.path for f in list_status(_conf([dotted])).files] == [p for p in every if "region=eu" in p]
    monkeypatch.chdir(tmp_path)
    assert sorted(f.path for f in list_status(_conf(["t"])).files) == every  # relative: from the working directory
    assert sorted(f.path for f in list_status(_conf(["file:" + path])).files) == ["file:" + p for p in every]


@pytest.mark.parametrize(("given", "message"), [
    ("missing", "Input path does not exist: {root}/missing"),
    ("t/region=nowhere*", "Input Pattern {root}/t/region=nowhere* matches 0 files"),
])
def test_a_missing_input_path_fails_as_in_hadoop(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: str, message: str) -> None:
    _hive_table(tmp_path)
    monkeypatch.chdir(tmp_path)
    job = tmp_path / "job.xml"
    job.write_text(f"<configuration><property><name>{INPUT_DIR}</name><value>{given}</value></property></configuration>")
    result = CliRunner().invoke(main, ["hive", "list-status", "--conf", str(job)])
    assert result.exit_code == 2
    assert result.stderr == f"error: {message.format(root=tmp_path)}\n"


def test_search_arguments_nested_200_deep(tmp_path: Path) -> None:
    """Nesting of one kind flattens (and double negations cancel) and still prunes; alternating nesting
    deeper than a plan walks lists every file, with a note (never a RecursionError)."""
    path = _hive_table(tmp_path)
    region = "leaf-0 = (EQUALS region us), expr = "
    for nested in ("(not " * 200 + "leaf-0" + ")" * 200, "(and " * 200 + "leaf-0" + ")" * 200):
        listed = list_status(_conf([path], **{"sarg.pushdown": region + nested}))
        assert [f.path.split("/")[-2] for f in listed.files] == ["region=us"], nested[:20]
    alternating = "(and leaf-0 (or leaf-0 " * 100 + "leaf-0" + "))" * 100
    listed = list_status(_conf([path], **{"sarg.pushdown": region + alternating}))
    assert len(listed.files) == 3
    assert listed.predicate_note.startswith("the pushed filter was not used: SearchArgument nested too deeply (more than 64 levels")
