"""A Hive metastore of one's own: the one PySpark's jars provide, on Derby.

Used by `hudi-bridge sync --embedded-metastore DIR`, the demo and the tests.
The Derby files live in the folder named, so a second start sees what the
first one registered. Clients are told `thrift://127.0.0.1:PORT`; Hive 2.3's
metastore has no bind-address setting, so the port is a free one chosen at
start and the process lives only as long as its owner.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType

from hive_sync.errors import SyncError

METASTORE_CLASS = "org.apache.hadoop.hive.metastore.HiveMetaStore"


def spark_home() -> Path:
    """SPARK_HOME, else the folder of the installed pyspark package."""
    if os.environ.get("SPARK_HOME"):
        return Path(os.environ["SPARK_HOME"])
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_for_port(port: int, process: subprocess.Popen[bytes], timeout: float, log_path: Path, what: str) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SyncError(f"{what} exited with code {process.returncode} before listening; see {log_path.name}: {_tail(log_path)}")
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
            s.settimeout(0.5)
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.3)
    process.kill()
    raise SyncError(f"{what} did not listen on 127.0.0.1:{port} within {timeout:.0f} s; see {log_path.name}: {_tail(log_path)}")


def _tail(path: Path, lines: int = 5) -> str:
    try:
        return " | ".join(path.read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def stop_process(process: subprocess.Popen[bytes] | None) -> None:
    if process is None or process.poll() is not None:
        return
    process.terminate()
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


class EmbeddedMetastore:
    """Start with `with EmbeddedMetastore(folder) as ms: ms.uri`."""

    def __init__(self, folder: str | Path, port: int | None = None, start_timeout: float = 120.0) -> None:
        self.folder = Path(folder).resolve()
        self.port = port or free_port()
        self.start_timeout = start_timeout
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def uri(self) -> str:
        return f"thrift://127.0.0.1:{self.port}"

    @property
    def warehouse(self) -> Path:
        return self.folder / "warehouse"

    def command(self) -> list[str]:
        java = shutil.which("java")
        if java is None:
            raise SyncError("an embedded metastore needs Java (java on PATH)")
        jars = spark_home() / "jars"
        if not jars.is_dir():
            raise SyncError(f"no Spark jars at {jars}; set SPARK_HOME or install pyspark")
        derby = f"jdbc:derby:;databaseName={self.folder / 'metastore_db'};create=true"
        return [
            java, "-Xmx512m", "-cp", f"{jars}/*", METASTORE_CLASS, "-p", str(self.port),
            "--hiveconf", "hive.async.log.enabled=false",
            "--hiveconf", f"javax.jdo.option.ConnectionURL={derby}",
            "--hiveconf", "datanucleus.schema.autoCreateAll=true",
            "--hiveconf", "hive.metastore.schema.verification=false",
            "--hiveconf", f"hive.metastore.warehouse.dir={self.warehouse}",
        ]

    def start(self) -> EmbeddedMetastore:
        self.folder.mkdir(parents=True, exist_ok=True)
        log_path = self.folder / "metastore.log"
        with open(log_path, "ab") as log:
            # Derby writes derby.log into the working directory: keep it in the folder.
            self.process = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT, cwd=self.folder)
        wait_for_port(self.port, self.process, self.start_timeout, log_path, "the embedded metastore")
        return self

    def stop(self) -> None:
        stop_process(self.process)

    def __enter__(self) -> EmbeddedMetastore:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
