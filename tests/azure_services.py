"""Azurite, Azure Storage's emulator from the npm registry, on 127.0.0.1 for
the test session (blob service, in memory). `scripts/setup.sh --test`
installs it under .cache/azurite when npm is present."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from hive_sync.embedded import free_port

AZURITE = Path(__file__).resolve().parents[1] / ".cache" / "azurite" / "node_modules" / ".bin" / "azurite-blob"
ACCOUNT = "devstoreaccount1"  # Azurite's well-known development account and key
ACCOUNT_KEY = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
NOT_INSTALLED = "Azurite is not installed (scripts/setup.sh --test installs it with npm)"


@dataclass
class AzureServer:
    endpoint: str

    def options(self) -> dict[str, str]:
        """storage_options as deltalake and object_store spell them."""
        return {"azure_storage_account_name": ACCOUNT, "azure_storage_account_key": ACCOUNT_KEY, "azure_storage_endpoint": self.endpoint}

    def client(self) -> pafs.AzureFileSystem:
        authority = self.endpoint.removeprefix("http://")
        return pafs.AzureFileSystem(account_name=ACCOUNT, account_key=ACCOUNT_KEY, blob_storage_authority=authority, blob_storage_scheme="http",
                                    dfs_storage_authority=authority, dfs_storage_scheme="http")


@pytest.fixture(scope="session")
def azure_server() -> Iterator[AzureServer]:
    if not AZURITE.exists() or shutil.which("node") is None:
        pytest.skip(NOT_INSTALLED)
    port = free_port()
    process = subprocess.Popen([str(AZURITE), "--blobHost", "127.0.0.1", "--blobPort", str(port), "--inMemoryPersistence",
                                "--skipApiVersionCheck", "--silent"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), 0.2).close()
                break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"Azurite did not start on 127.0.0.1:{port}") from None
                time.sleep(0.1)
        yield AzureServer(f"http://127.0.0.1:{port}")
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
