"""Where users run it: storage options reach Spark's executors, `--timeout`
bounds every wait, a missing bucket and a TLS handshake to a plain-HTTP
endpoint are named, `pull` plans before Spark starts, `table validate` says
when the metadata table is behind."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow as pa
import pyarrow.fs as pafs
import pytest
from click.testing import CliRunner

from engine_bridge.cli import main
from metadata.mdt.write.writer import MetadataTableWriter
from metadata.sample_tables.builder import TableBuilder
from tests.s3_services import ACCESS_KEY, SECRET_KEY, S3Server

SCHEMA = pa.schema([("id", pa.int64()), ("city", pa.string()), ("fare", pa.float64())])


def _table(path: Path) -> TableBuilder:
    builder = TableBuilder(str(path), SCHEMA, version=8, partition_fields=["city"])
    builder.write([{"id": i, "city": c, "fare": float(i * 10)} for i, c in enumerate(["sf", "la", "sf", "ny"])])
    return builder


def _cli(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engine_bridge", *args], capture_output=True, text=True, timeout=timeout,
                          env={k: v for k, v in os.environ.items() if not k.startswith("AWS_")})


@pytest.fixture
def silent_endpoint() -> Iterator[int]:
    """A port on 127.0.0.1 that accepts connections and never answers."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(64)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    stop.set()
    thread.join()
    for conn in held:
        conn.close()
    server.close()


def test_timeout_bounds_the_wait_on_a_silent_endpoint(silent_endpoint: int) -> None:
    started = time.monotonic()
    result = _cli("--timeout", "3", "--storage-option", f"AWS_ENDPOINT_URL=http://127.0.0.1:{silent_endpoint}",
                  "--storage-option", "AWS_ACCESS_KEY_ID=a", "--storage-option", "AWS_SECRET_ACCESS_KEY=b", "table", "show", "s3://lake/t")
    elapsed = time.monotonic() - started
    assert result.returncode == 2 and result.stderr.splitlines()[-1].startswith("error: s3://lake/t/.hoodie/hoodie.properties: ")
    assert elapsed < 3 + 4, f"{elapsed:.1f} s for --timeout 3 (interpreter start-up and one retry interval allowed)"


def test_a_missing_bucket_is_named(s3_server: S3Server) -> None:
    options = [a for k, v in s3_server.options().items() for a in ("--storage-option", f"{k}={v}")]
    result = CliRunner().invoke(main, [*options, "table", "show", "s3://nobucket/t"])
    assert result.exit_code == 2
    assert result.stderr == "error: s3://nobucket: no such bucket (table s3://nobucket/t); check the name and the endpoint\n"


def test_tls_to_a_plain_http_endpoint_is_named_not_retried(s3_server: S3Server) -> None:
    host = s3_server.endpoint.split("://", 1)[1]  # Hadoop's fs.s3a.endpoint without a scheme means https
    started = time.monotonic()
    result = CliRunner().invoke(main, ["--storage-option", f"fs.s3a.endpoint={host}", "--storage-option", f"fs.s3a.access.key={ACCESS_KEY}",
                                       "--storage-option", f"fs.s3a.secret.key={SECRET_KEY}", "table", "show", "s3://lake/t"])
    assert result.exit_code == 2 and time.monotonic() - started < 10
    line = result.stderr.strip()
    assert "the TLS handshake failed" in line and "fs.s3a.connection.ssl.enabled=false" in line and "\n" not in line


def test_pull_with_nothing_to_do_does_not_start_spark(tmp_path: Path) -> None:
    builder = _table(tmp_path / "t")
    latest = builder.write([{"id": 9, "city": "la", "fare": 1.0}])
    completed = next(p.name for p in (tmp_path / "t" / ".hoodie" / "timeline").iterdir() if p.name.startswith(latest + "_"))
    started = time.monotonic()
    result = CliRunner().invoke(main, ["pull", str(tmp_path / "t"), "--to", str(tmp_path / "out"), "--begin", completed.split("_")[1][:17]])
    assert result.exit_code == 0, result.output
    assert time.monotonic() - started < 3 and "starting Spark" not in result.stderr
    assert result.stdout.count("nothing to pull") == 1 and "nothing new to pull" not in result.output


def test_validate_says_first_that_the_metadata_table_is_behind(tmp_path: Path) -> None:
    builder = _table(tmp_path / "t")
    MetadataTableWriter(str(tmp_path / "t")).build()
    builder.write([{"id": 7, "city": "la", "fare": 1.0}, {"id": 8, "city": "tokyo", "fare": 2.0}])
    result = CliRunner().invoke(main, ["table", "validate", str(tmp_path / "t")])
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines[0].startswith("metadata table is behind the timeline: 1 completed instant(s) not in it")
    assert "hudi-bridge index sync" in lines[0] and all(line.startswith("behind: ") for line in lines[1:]), lines
    report = json.loads(CliRunner().invoke(main, ["table", "validate", str(tmp_path / "t"), "--json"]).stdout)
    assert report["behind"] and report["behind_differences"] and report["differences"] == []
    MetadataTableWriter(str(tmp_path / "t")).sync()
    assert CliRunner().invoke(main, ["table", "validate", str(tmp_path / "t")]).exit_code == 0


@pytest.mark.services
@pytest.mark.slow
def test_storage_options_reach_every_spark_backed_command(tmp_path: Path, s3_server: S3Server) -> None:
    """--storage-option given once reaches Spark's executors (no AWS environment at all)."""
    _table(tmp_path / "t")
    MetadataTableWriter(str(tmp_path / "t")).build()
    filesystem = s3_server.client()
    filesystem.create_dir("spark-options")
    pafs.copy_files(str(tmp_path / "t"), "spark-options/t", source_filesystem=pafs.LocalFileSystem(), destination_filesystem=filesystem)
    options = [a for k, v in s3_server.options().items() for a in ("--storage-option", f"{k}={v}")]
    pulled = _cli(*options, "pull", "s3://spark-options/t", "--to", str(tmp_path / "out"), "--begin", "0")
    assert pulled.returncode == 0, pulled.stderr[-2000:]
    assert "1 instant(s), 4 row(s)" in pulled.stdout
    planned = _cli(*options, "plan", "s3://spark-options/t", "--where", "id >= 2", "--engine", "spark", "--json")
    assert planned.returncode == 0, planned.stderr[-2000:]
    assert len(json.loads(planned.stdout)["files"]) == 2
    built = _cli(*options, "index", "build", "s3://spark-options/t", "--partitions", "record_index", "--engine", "spark", "--json")
    assert built.returncode == 0, built.stderr[-2000:]
    assert json.loads(built.stdout)["partitions"] == ["record_index"]


def test_spark_output_goes_to_a_log_of_the_run_s_own() -> None:
    import getpass
    import tempfile

    from engine_bridge.spark.session import command_log_path

    first = command_log_path()
    assert first is not None and first.startswith(f"{tempfile.gettempdir()}/hudi-bridge-spark-{getpass.getuser()}-")
    assert first.endswith(f"-{os.getpid()}.log")


def test_a_rewritten_file_drops_the_checksum_hadoop_kept_beside_it(tmp_path: Path) -> None:
    """Hadoop's local filesystem refuses a file that no longer matches its `.<name>.crc` (Hudi then cannot load
    hoodie.properties): found with Hudi reading a table whose metadata table hudi-bridge built."""
    from metadata.storage.storage import Storage
    from metadata.table.config import update_table_config

    _table(tmp_path / "t")
    hoodie = tmp_path / "t" / ".hoodie"
    (hoodie / ".hoodie.properties.crc").write_bytes(b"crc\x00\x00\x00\x02\x00stale")
    (hoodie / ".unrelated.crc").write_bytes(b"kept")
    update_table_config(Storage.open(str(tmp_path / "t")), {"hoodie.table.metadata.partitions": None})
    assert not (hoodie / ".hoodie.properties.crc").exists() and (hoodie / ".unrelated.crc").exists()
