"""A real ZooKeeper on 127.0.0.1 for the test session (Debian's `zookeeper`
package, which scripts/setup.sh --test installs): the server Hudi's
ZookeeperBasedLockProvider and hudi-bridge both take their lock on. Stops
with the session."""

from __future__ import annotations

import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from hive_sync.embedded import free_port, stop_process
from tests.needs import require

JARS = Path("/usr/share/java")
CLASSPATH = ["zookeeper.jar", "zookeeper-jute.jar", "slf4j-api.jar", "slf4j-nop.jar", "netty-handler.jar", "netty-common.jar",
             "netty-buffer.jar", "netty-transport.jar", "netty-codec.jar", "netty-resolver.jar",
             "netty-transport-native-unix-common.jar", "netty-transport-native-epoll.jar", "commons-io.jar", "metrics-core.jar"]


def missing_zookeeper() -> str | None:
    absent = [jar for jar in CLASSPATH[:2] if not (JARS / jar).is_file()]
    return f"ZooKeeper's jars ({', '.join(absent)}) are not in {JARS}: scripts/setup.sh --test installs Debian's zookeeper" if absent else None


@pytest.fixture(scope="session")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`host:port` of a standalone ZooKeeper server started for the session."""
    require(missing_zookeeper(), "the ZooKeeper lock tests")
    port = free_port()
    data = tmp_path_factory.mktemp("zookeeper")
    classpath = ":".join(str(JARS / jar) for jar in CLASSPATH if (JARS / jar).is_file())
    log = open(data / "server.log", "w")
    server = subprocess.Popen(["java", "-Xmx256m", "-Dzookeeper.admin.enableServer=false", "-cp", classpath,
                               "org.apache.zookeeper.server.ZooKeeperServerMain", str(port), str(data / "data")],
                              stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + 60
    try:
        while True:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1) as probe:
                    probe.sendall(b"ruok")
                    break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"ZooKeeper did not start:\n{(data / 'server.log').read_text()[-3000:]}") from None
                time.sleep(0.3)
        yield f"127.0.0.1:{port}"
    finally:
        stop_process(server)
        log.close()
