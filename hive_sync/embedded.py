"""A Hive metastore of one's own: the one PySpark's jars provide, on Derby.

Used by `hudi-bridge sync --embedded-metastore DIR`, the demo and the tests.
The Derby files live in the folder named, so a second start sees what the
first one registered. Clients are told `thrift://127.0.0.1:PORT`. Hive 2.3's
metastore has no bind-address setting and binds every interface, so it is
started through `java/LoopbackMetastore.java`, which sets up the same server
bound to 127.0.0.1 (with a JRE that cannot run source programs, the plain
server with a warning). It has no authentication: anyone on this machine can
reach it. The port is a free one chosen at start and the process lives only
as long as its owner.
"""

from __future__ import annotations

import atexit
import ctypes
import fcntl
import logging
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import FrameType, TracebackType

from hive_sync.errors import SyncError
from metadata.util.process import process_alive

METASTORE_CLASS = "org.apache.hadoop.hive.metastore.HiveMetaStore"
OWNER_FILE = "metastore.owner"  # "<owner pid> <metastore pid>", locked while a metastore runs
PR_SET_PDEATHSIG = 1

log = logging.getLogger(__name__)


def _die_with_parent() -> None:
    """In the child before exec (Linux): SIGTERM when the parent dies, so a
    killed owner leaves no metastore behind."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


def _is_metastore_of(pid: int, folder: Path) -> bool:
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return False
    return (METASTORE_CLASS in cmdline or LOOPBACK_LAUNCHER.name in cmdline) and str(folder) in cmdline


LOOPBACK_LAUNCHER = Path(__file__).with_name("java") / "LoopbackMetastore.java"


def _runs_source_programs(java: str) -> bool:
    """Whether this Java can launch a single-file source program (a JDK: it has jdk.compiler)."""
    try:
        modules = subprocess.run([java, "--list-modules"], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return False
    return any(line.startswith("jdk.compiler@") for line in modules.splitlines())


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
        self._owner: int | None = None  # fd of the locked owner file
        self._previous_sigterm: signal.Handlers | object = None

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
        settings = [
            "hive.async.log.enabled=false",
            f"javax.jdo.option.ConnectionURL={derby}",
            "datanucleus.schema.autoCreateAll=true",
            # Hive 2.3 defaults to BoneCP, which PySpark's jars lack: its transaction handler then fails every
            # dropDatabase with NoClassDefFoundError. DBCP is among them.
            "datanucleus.connectionPoolingType=dbcp",
            "hive.metastore.schema.verification=false",
            f"hive.metastore.warehouse.dir={self.warehouse}",
        ]
        hiveconf = [arg for setting in settings for arg in ("--hiveconf", setting)]
        if _runs_source_programs(java):  # bound to 127.0.0.1 (Hive 2.3 itself binds every interface)
            return [java, "-Xmx512m", "-cp", f"{jars}/*", str(LOOPBACK_LAUNCHER), str(self.port), *hiveconf]
        log.warning("%s cannot run Java source programs (a JRE without jdk.compiler): the embedded metastore "
                    "listens on every interface, without authentication", java)
        return [java, "-Xmx512m", "-cp", f"{jars}/*", METASTORE_CLASS, "-p", str(self.port), *hiveconf]

    def start(self) -> EmbeddedMetastore:
        self.folder.mkdir(parents=True, exist_ok=True)
        self._take_ownership()
        log_path = self.folder / "metastore.log"
        try:
            with open(log_path, "ab") as out:
                # Derby writes derby.log into the working directory: keep it in the folder.
                self.process = subprocess.Popen(
                    self.command(), stdout=out, stderr=subprocess.STDOUT, cwd=self.folder, preexec_fn=_die_with_parent
                )
            self._record_owner()
            atexit.register(self.stop)
            self._stop_on_sigterm()
            wait_for_port(self.port, self.process, self.start_timeout, log_path, "the embedded metastore")
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        stop_process(self.process)
        self.process = None
        if self._owner is not None:
            os.close(self._owner)  # releases the lock
            self._owner = None
        if self._previous_sigterm is not None and threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, self._previous_sigterm)  # type: ignore[arg-type]
            self._previous_sigterm = None

    # One owner per folder ------------------------------------------------------------
    def _take_ownership(self) -> None:
        """Lock the folder's owner file: a second run on the same folder fails at
        once; a dead owner's leftover metastore (if its parent-death signal did
        not reach it) is stopped, and Derby's lock of a dead process is stale."""
        path = self.folder / OWNER_FILE
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.read(fd, 100).decode(errors="replace").split()
            os.close(fd)
            raise SyncError(
                f"{self.folder}: another process (pid {holder[0] if holder else '?'}) runs a metastore on this folder; "
                "stop it or give another folder"
            ) from None
        recorded = os.read(fd, 100).decode(errors="replace").split()
        if len(recorded) == 2 and recorded[1].isdigit():
            orphan = int(recorded[1])
            if process_alive(orphan) and _is_metastore_of(orphan, self.folder):
                log.warning("%s: stopping metastore pid %d left by dead owner pid %s", self.folder, orphan, recorded[0])
                os.kill(orphan, signal.SIGTERM)
                deadline = time.monotonic() + 20
                while process_alive(orphan) and time.monotonic() < deadline:
                    time.sleep(0.2)
            elif recorded[0].isdigit():
                log.info("%s: owner pid %s is gone; its locks are stale and recovered", self.folder, recorded[0])
        self._owner = fd

    def _record_owner(self) -> None:
        assert self._owner is not None and self.process is not None
        os.ftruncate(self._owner, 0)
        os.pwrite(self._owner, f"{os.getpid()} {self.process.pid}\n".encode(), 0)

    def _stop_on_sigterm(self) -> None:
        """SIGTERM ends the owner through Python's exit path, which stops the
        metastore (the default action would skip every cleanup)."""
        if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
            return

        def exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
            raise SystemExit(128 + signum)

        self._previous_sigterm = signal.signal(signal.SIGTERM, exit_on_sigterm)

    def __enter__(self) -> EmbeddedMetastore:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()
