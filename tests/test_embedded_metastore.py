"""The embedded metastore never outlives its owner and never shares its folder:
SIGINT, SIGTERM and SIGKILL of the owner stop it, a second run on the same folder
fails at once naming the holder, and a dead owner's leftovers are recovered."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from hive_sync import EmbeddedMetastore, SyncError
from hive_sync.embedded import OWNER_FILE
from tests.hive_services import _require_java

pytestmark = [pytest.mark.services, pytest.mark.slow]

OWNER_SCRIPT = """
import sys, time
from hive_sync import EmbeddedMetastore
ms = EmbeddedMetastore(sys.argv[1]).start()
print(ms.process.pid, flush=True)
time.sleep(600)
"""


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return Path(f"/proc/{pid}/stat").exists() and Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"


def wait_gone(pid: int, seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not alive(pid):
            return True
        time.sleep(0.2)
    return False


def start_owner(folder: Path) -> tuple[subprocess.Popen[str], int]:
    _require_java()
    owner = subprocess.Popen([sys.executable, "-c", OWNER_SCRIPT, str(folder)], stdout=subprocess.PIPE, text=True,
                             cwd=Path(__file__).resolve().parent.parent)
    assert owner.stdout is not None
    line = owner.stdout.readline()
    assert line.strip().isdigit(), f"the owner did not start a metastore (exit {owner.poll()})"
    return owner, int(line)


def test_second_run_on_the_same_folder_fails_at_once_naming_the_holder(metastore: EmbeddedMetastore) -> None:
    started = time.monotonic()
    with pytest.raises(SyncError, match=rf"another process \(pid {os.getpid()}\) runs a metastore on this folder"):
        EmbeddedMetastore(metastore.folder).start()
    assert time.monotonic() - started < 2
    assert metastore.process is not None
    assert metastore.process.poll() is None  # the running one is untouched


@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_owner_killed_leaves_no_metastore_and_the_folder_is_reusable(tmp_path: Path, how: signal.Signals) -> None:
    folder = tmp_path / "ms"
    owner, jvm = start_owner(folder)
    assert alive(jvm)
    owner.send_signal(how)
    owner.wait(timeout=30)
    assert wait_gone(jvm, 30), f"metastore pid {jvm} outlived its owner after {how.name}"
    with EmbeddedMetastore(folder) as again:  # stale owner file and Derby lock: recovered
        assert again.process is not None
        assert (folder / OWNER_FILE).read_text().split() == [str(os.getpid()), str(again.process.pid)]


def _listening_addresses(port: int) -> set[str]:
    """Local addresses of sockets listening on `port`, from /proc/net/tcp and tcp6 (state 0A: LISTEN)."""
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            local, state = line.split()[1], line.split()[3]
            address, port_hex = local.rsplit(":", 1)
            if state == "0A" and int(port_hex, 16) == port:
                found.add(address)
    return found


def test_the_metastore_listens_on_loopback_only(metastore: EmbeddedMetastore) -> None:
    loopback = {"0100007F", "0000000000000000FFFF00000100007F", "00000000000000000000000001000000"}  # 127.0.0.1, ::ffff:127.0.0.1, ::1
    addresses = _listening_addresses(metastore.port)
    assert addresses and addresses <= loopback, addresses


def test_a_table_and_its_database_drop(metastore: EmbeddedMetastore, tmp_path: Path) -> None:
    """Hive 2.3's metastore pools connections with BoneCP unless told otherwise, and PySpark's jars have no BoneCP:
    every dropDatabase failed with NoClassDefFoundError in its transaction handler. The embedded metastore uses DBCP."""
    from hive_sync import SyncOptions, sync
    from hive_sync.hms import HmsClient
    from metadata import HudiTable
    from metadata.sample_tables.sample import build_sample_table

    build_sample_table(str(tmp_path / "t"), table_type="COPY_ON_WRITE")
    with HmsClient(metastore.uri) as client:
        assert sync(HudiTable.open(str(tmp_path / "t")), client, SyncOptions(database="to_drop")).applied
        raw = client._client
        assert raw.get_all_tables("to_drop") == ["trips"]
        raw.drop_table("to_drop", "trips", True)
        raw.drop_database("to_drop", True, False)
        assert "to_drop" not in raw.get_all_databases()
