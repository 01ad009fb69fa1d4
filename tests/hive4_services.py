"""A Hive 4 standalone metastore (4.0.1) on PostgreSQL for the test session,
on 127.0.0.1 and free ports: PostgreSQL from Debian's package, the metastore's
jars and schema scripts from Maven Central (scripts/setup.sh --test puts them
in .cache/hive4). The schema is made by Hive's own `schematool`. Stopped, and
its database removed, at session end."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from hive_sync.embedded import free_port, stop_process, wait_for_port
from tests.needs import require

HIVE4 = Path(__file__).resolve().parent.parent / ".cache" / "hive4"
HOME = HIVE4 / "apache-hive-metastore-4.0.1-bin"  # METASTORE_HOME: schematool finds its scripts below it
SCHEMA_TOOL = "org.apache.hadoop.hive.metastore.tools.schematool.MetastoreSchemaTool"
SERVER = "org.apache.hadoop.hive.metastore.HiveMetaStore"
SITE = """<configuration>
<property><name>javax.jdo.option.ConnectionURL</name><value>{jdbc}</value></property>
<property><name>javax.jdo.option.ConnectionDriverName</name><value>org.postgresql.Driver</value></property>
<property><name>javax.jdo.option.ConnectionUserName</name><value>hive</value></property>
<property><name>javax.jdo.option.ConnectionPassword</name><value>hive</value></property>
<property><name>metastore.warehouse.dir</name><value>file://{warehouse}</value></property>
<property><name>metastore.thrift.bind.host</name><value>127.0.0.1</value></property>
<property><name>metastore.thrift.port</name><value>{port}</value></property>
</configuration>
"""


def _postgres_bin() -> Path | None:
    found = sorted(Path("/usr/lib/postgresql").glob("*/bin/initdb"))
    return found[-1].parent if found else None


def missing_hive4() -> str | None:
    if not (HIVE4 / "lib").is_dir() or not (HOME / "scripts").is_dir():
        return f"Hive 4's metastore is not in {HIVE4} (scripts/setup.sh --test fetches it)"
    if _postgres_bin() is None:
        return "PostgreSQL is not installed (scripts/setup.sh --test installs Debian's postgresql)"
    if os.geteuid() == 0 and (shutil.which("runuser") is None or _uid("postgres") is None):
        return "PostgreSQL will not run as root, and there is no postgres user to run it as"
    return None


def _uid(user: str) -> int | None:
    import pwd

    try:
        return pwd.getpwnam(user).pw_uid
    except KeyError:
        return None


def _as_postgres(command: list[str]) -> list[str]:
    return ["runuser", "-u", "postgres", "--", *command] if os.geteuid() == 0 else command


@dataclass(frozen=True)
class Hive4Metastore:
    uri: str
    warehouse: Path


@pytest.fixture(scope="session")
def hive4_metastore() -> Iterator[Hive4Metastore]:
    require(missing_hive4(), "the Hive 4 metastore tests")
    bin_dir = _postgres_bin()
    assert bin_dir is not None
    root = Path(tempfile.mkdtemp(prefix="hudi-bridge-hive4-"))  # not under pytest's 0700 folders: postgres must reach it
    data, warehouse, conf = root / "pgdata", root / "warehouse", root / "conf"
    for folder in (data, warehouse, conf):
        folder.mkdir()
    if os.geteuid() == 0:
        os.chmod(root, 0o755)
        shutil.chown(data, "postgres")
    pg_port, port = free_port(), free_port()
    server: subprocess.Popen[bytes] | None = None
    started = False
    try:
        subprocess.run(_as_postgres([str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "hive"]), check=True,
                       capture_output=True, timeout=120)
        subprocess.run(_as_postgres([str(bin_dir / "pg_ctl"), "-D", str(data), "-w", "-l", str(data / "server.log"), "-o",
                                     f"-p {pg_port} -k {data} -c listen_addresses=127.0.0.1", "start"]), check=True,
                       capture_output=True, timeout=120)
        started = True
        subprocess.run([str(bin_dir / "createdb"), "-h", "127.0.0.1", "-p", str(pg_port), "-U", "hive", "metastore"], check=True,
                       capture_output=True, timeout=60)
        jdbc = f"jdbc:postgresql://127.0.0.1:{pg_port}/metastore"
        classpath = f"{conf}:{HIVE4 / 'lib'}/*"
        env = {**os.environ, "METASTORE_HOME": str(HOME)}
        made = subprocess.run(["java", "-cp", classpath, SCHEMA_TOOL, "-dbType", "postgres", "-initSchema", "-url", jdbc, "-driver",
                               "org.postgresql.Driver", "-userName", "hive", "-passWord", "hive"], capture_output=True, text=True,
                              env=env, timeout=300)
        assert made.returncode == 0, f"Hive's schematool failed:\n{made.stdout[-2000:]}{made.stderr[-2000:]}"
        (conf / "metastore-site.xml").write_text(SITE.format(jdbc=jdbc, warehouse=warehouse, port=port))
        log_path = root / "metastore.log"
        with open(log_path, "wb") as log:
            server = subprocess.Popen(["java", "-Xmx512m", "-cp", classpath, SERVER], stdout=log, stderr=subprocess.STDOUT, env=env)
        wait_for_port(port, server, 180, log_path, "the Hive 4 metastore")
        yield Hive4Metastore(f"thrift://127.0.0.1:{port}", warehouse)
    finally:
        stop_process(server)
        if started:
            subprocess.run(_as_postgres([str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "fast", "stop"]), capture_output=True, timeout=120)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(params=["hive-2.3", "hive-4"])
def hms(request: pytest.FixtureRequest) -> Hive4Metastore:
    """Each metastore the Hive sync tests run against: Hive 2.3 (PySpark's jars, Derby) and Hive 4 (PostgreSQL)."""
    found: Hive4Metastore = request.getfixturevalue("metastore" if request.param == "hive-2.3" else "hive4_metastore")
    return found
