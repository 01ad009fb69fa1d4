"""A live Trino on 127.0.0.1 for the tests: Trino's server from Maven Central
(`io.trino:trino-server:476`, the newest served here; `scripts/setup.sh --test`
unpacks it under `.cache/trino/` keeping only the Hive and Hudi plugins), run
on the Java 25 beside Java 17, its catalogs on the session's Hive metastore:

- `hive`: Trino's Hive connector (it refuses tables registered with Hudi's
  input format, so a Hudi table read there is registered as plain Parquet,
  its folders read recursively: every base file ever written);
- `hudi`: Trino's Hudi connector. In 476 it lists storage through Hudi's
  file-system view and reads read-optimized; it neither reads the metadata
  table (`hudi.metadata-enabled` is a defunct property there) nor prunes on
  column statistics, which later Trino releases add (not served here).

Started once per session, stopped at its end.
"""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from hive_sync.embedded import EmbeddedMetastore, free_port, stop_process, wait_for_port
from tests.needs import require

REPO = Path(__file__).resolve().parent.parent
TRINO_VERSION = "476"
TRINO_HOME = REPO / ".cache" / "trino" / f"trino-server-{TRINO_VERSION}"
JAVA_25 = next(iter(sorted(Path("/usr/lib/jvm").glob("*25*jdk*"))), Path("/usr/lib/jvm/temurin-25-jdk-amd64"))
CATALOGS = {
    "hive": {"connector.name": "hive", "hive.recursive-directories": "true"},
    "hudi": {"connector.name": "hudi"},
}


def build_trips(path: Path) -> str:
    """A v8 COW table (partitioned by `p`) whose updates left older base files beside the latest."""
    import pyarrow as pa

    from metadata.sample_tables.builder import TableBuilder

    builder = TableBuilder(str(path), pa.schema([("id", pa.int64()), ("v", pa.string()), ("p", pa.string())]), partition_fields=["p"],
                           version=8)
    builder.write([{"id": i, "v": "a", "p": f"p{i % 3}"} for i in range(12)])
    builder.write([{"id": 1, "v": "b", "p": "p1"}, {"id": 2, "v": "b", "p": "p2"}])
    builder.write([{"id": 4, "v": "c", "p": "p1"}, {"id": 20, "v": "c", "p": "p4"}])
    return str(path)


def missing_trino() -> str | None:
    """Why Trino cannot run here, or None."""
    if not (TRINO_HOME / "lib").is_dir():
        return f"{TRINO_HOME.relative_to(REPO)} is missing (scripts/setup.sh --test unpacks io.trino:trino-server:{TRINO_VERSION})"
    if not (JAVA_25 / "bin" / "java").is_file():
        return f"Trino {TRINO_VERSION} needs Java 24 or later; {JAVA_25} is missing"
    return None


def _write_properties(path: Path, values: dict[str, str]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(f"{k}={v}\n" for k, v in values.items()))


@contextmanager
def trino_server(folder: Path, metastore_uri: str, hive4_uri: str | None = None) -> Iterator[str]:
    """http://127.0.0.1:port of a Trino coordinator (also its only worker): catalogs `hive` and `hudi` on the
    metastore at `metastore_uri`, and `hive4` and `hudi4` on the one at `hive4_uri` when given."""
    port = free_port()
    etc, data = folder / "etc", folder / "data"
    _write_properties(etc / "node.properties", {"node.environment": "hudi_bridge_tests", "node.id": "tests",
                                                "node.data-dir": str(data), "node.bind-ip": "127.0.0.1",
                                                "node.internal-address": "127.0.0.1"})
    _write_properties(etc / "config.properties", {
        "coordinator": "true", "node-scheduler.include-coordinator": "true", "http-server.http.port": str(port),
        "discovery.uri": f"http://127.0.0.1:{port}", "query.max-memory": "1GB", "query.max-memory-per-node": "1GB",
        "catalog.management": "static"})
    (etc / "jvm.config").write_text("\n".join([
        "-server", "-Xmx2G", "-XX:+UseG1GC", "-XX:+ExitOnOutOfMemoryError", "-Djdk.attach.allowAttachSelf=true",
        "-XX:ReservedCodeCacheSize=256M", "-Dfile.encoding=UTF-8", "--enable-native-access=ALL-UNNAMED", ""]))
    (etc / "log.properties").write_text("io.trino=WARN\nio.trino.server.Server=INFO\n")
    for suffix, uri in (("", metastore_uri), ("4", hive4_uri)):
        for name, settings in CATALOGS.items():
            if uri is not None:
                _write_properties(etc / "catalog" / f"{name}{suffix}.properties",
                                  {**settings, "hive.metastore.uri": uri, "fs.hadoop.enabled": "true"})
    log_path = folder / "trino.log"
    env = {**os.environ, "JAVA_HOME": str(JAVA_25), "PATH": f"{JAVA_25 / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"}
    with open(log_path, "ab") as log:
        process = subprocess.Popen([str(TRINO_HOME / "bin" / "launcher"), "run", f"--etc-dir={etc}", f"--data-dir={data}"],
                                   stdout=log, stderr=subprocess.STDOUT, cwd=folder, env=env)
    try:
        wait_for_port(port, process, 240.0, log_path, "Trino")
        _wait_until_started(log_path, process, 240.0)
        url = f"http://127.0.0.1:{port}"
        _wait_for_a_worker(url, folder / "warmup", 120.0)
        yield url
    finally:
        stop_process(process)


def _wait_for_a_worker(url: str, folder: Path, timeout: float) -> None:
    """The coordinator refuses scans ("No nodes available to run query") until its own worker has
    announced its catalogs: scan a one-row Parquet table until that works."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from engine_bridge.trino import run_query
    from metadata.errors import HudiError

    (folder / "one").mkdir(parents=True)
    pq.write_table(pa.table({"x": pa.array([1], pa.int32())}), folder / "one" / "one.parquet")
    run_query(url, "hive", "default", f"CREATE SCHEMA hive.warmup WITH (location = 'file:{folder}')")
    run_query(url, "hive", "warmup", f"CREATE TABLE one (x INTEGER) WITH (format = 'PARQUET', external_location = 'file:{folder / 'one'}')")
    deadline = time.monotonic() + timeout
    while True:
        try:
            run_query(url, "hive", "warmup", "SELECT x FROM one")
            return
        except HudiError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def _wait_until_started(log_path: Path, process: subprocess.Popen[bytes], timeout: float) -> None:
    """Trino answers HTTP before its catalogs load; it logs SERVER STARTED when it takes queries."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if "======== SERVER STARTED ========" in log_path.read_text(errors="replace"):
            return
        if process.poll() is not None:
            break
        time.sleep(0.5)
    tail = log_path.read_text(errors="replace")[-2000:]
    raise RuntimeError(f"Trino did not start within {timeout:.0f} s (see {log_path}): {tail}")


@pytest.fixture(scope="session")
def trino(metastore: EmbeddedMetastore, tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> Iterator[str]:
    """http://127.0.0.1:port of the session's Trino, on the session's metastores: Hive 2.3's (catalogs `hive`,
    `hudi`) and, where it can run, Hive 4's (`hive4`, `hudi4`)."""
    from tests.hive4_services import missing_hive4

    require(missing_trino(), "the live Trino tests")
    hive4 = request.getfixturevalue("hive4_metastore").uri if missing_hive4() is None else None
    with trino_server(Path(tmp_path_factory.mktemp("trino")), metastore.uri, hive4) as url:
        yield url
