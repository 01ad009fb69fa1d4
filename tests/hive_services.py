"""Session fixtures: a real Hive metastore (PySpark's Hive 2.3 jars on
Derby), Spark's Thrift server as HiveServer2, and a local SparkSession on
that metastore. All on 127.0.0.1 and free ports; stopped at session end."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from hive_sync.embedded import EmbeddedMetastore, free_port, spark_home, stop_process, wait_for_port

NO_JAVA = "Java is not on PATH; the real Hive metastore cannot start"


def _require_java() -> None:
    if shutil.which("java") is None:
        pytest.skip(NO_JAVA)


@pytest.fixture(scope="session")
def metastore(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedMetastore]:
    _require_java()
    with EmbeddedMetastore(tmp_path_factory.mktemp("metastore")) as ms:
        yield ms


@pytest.fixture(scope="session")
def spark(metastore: EmbeddedMetastore) -> Iterator[Any]:
    from engine_bridge.spark import local_spark_session

    session = local_spark_session(metastore.uri, str(metastore.warehouse), "hudi-bridge-tests")
    yield session
    session.stop()


@contextmanager
def spark_server(main_class: str, master: str, folder: Path, port: int, what: str, arguments: list[str]) -> Iterator[None]:
    """A server Spark ships (`spark-submit --class main_class`) on 127.0.0.1,
    its Python workers on this interpreter; stopped on exit."""
    command = [
        str(spark_home() / "bin" / "spark-submit"), "--master", master, "--class", main_class,
        "--conf", "spark.ui.enabled=false",
        "--conf", "spark.driver.bindAddress=127.0.0.1",
        "--conf", "spark.driver.host=127.0.0.1",
        *arguments,
        "spark-internal",
    ]
    env = {**os.environ, "SPARK_HOME": str(spark_home()), "PYSPARK_PYTHON": sys.executable}
    log_path = folder / f"{main_class.rsplit('.', 1)[-1]}.log"
    with open(log_path, "ab") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, cwd=folder, env=env)
    try:
        wait_for_port(port, process, 180.0, log_path, what)
        yield
    finally:
        stop_process(process)


@pytest.fixture(scope="session")
def hiveserver2(metastore: EmbeddedMetastore, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """host:port of Spark's Thrift server (HiveServer2) on the same metastore."""
    folder, port = Path(tmp_path_factory.mktemp("hiveserver2")), free_port()
    with spark_server("org.apache.spark.sql.hive.thriftserver.HiveThriftServer2", "local[1]", folder, port, "Spark's Thrift server", [
        "--conf", f"spark.hadoop.hive.metastore.uris={metastore.uri}",
        "--conf", f"spark.sql.warehouse.dir={metastore.warehouse}",
        "--hiveconf", f"hive.server2.thrift.port={port}",
        "--hiveconf", "hive.server2.thrift.bind.host=127.0.0.1",
    ]):
        yield f"127.0.0.1:{port}"


@pytest.fixture(scope="session")
def spark_connect(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """sc://host:port of a Spark Connect server started from the PySpark
    distribution on 127.0.0.1, whose Python workers run this interpreter."""
    _require_java()
    folder, port = Path(tmp_path_factory.mktemp("spark-connect")), free_port()
    with spark_server("org.apache.spark.sql.connect.service.SparkConnectServer", "local[2]", folder, port, "the Spark Connect server", [
        "--conf", "spark.connect.grpc.binding.address=127.0.0.1",
        "--conf", f"spark.connect.grpc.binding.port={port}",
        "--conf", f"spark.sql.warehouse.dir={folder / 'warehouse'}",
    ]):
        yield f"sc://127.0.0.1:{port}"
