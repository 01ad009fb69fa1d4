"""A real S3-protocol server on 127.0.0.1 for the test session (moto's
standalone server), and a proxy of our own in front of it that counts
requests by method and injects latency, throttling (503 SlowDown) and errors.
Loopback only; both stop with the session."""

from __future__ import annotations

import http.client
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pyarrow.fs as pafs
import pytest

from hive_sync.embedded import free_port

ACCESS_KEY = "testing"
SECRET_KEY = "testing"
REGION = "us-east-1"


@dataclass
class Faults:
    """What the proxy does to the requests passing through it."""

    latency_seconds: float = 0.0
    throttle_every: int = 0  # every Nth request answered 503 SlowDown (0: never)
    fail_puts: int = 0  # the next this many PUTs answered 503 SlowDown
    seen: int = 0
    counts: Counter[str] = field(default_factory=Counter)  # method (GET with a Range header: RANGED_GET) -> requests
    requests: list[tuple[str, str]] = field(default_factory=list)  # (kind, path) in order
    bytes_read: int = 0
    throttled: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)

    def reset(self) -> None:
        with self.lock:
            self.latency_seconds, self.throttle_every, self.seen, self.bytes_read, self.throttled = 0.0, 0, 0, 0, 0
            self.fail_puts = 0
            self.counts = Counter()
            self.requests = []


@dataclass
class S3Server:
    endpoint: str  # straight to the server
    proxy_endpoint: str  # through the counting, delaying and failing proxy
    faults: Faults

    def client(self) -> pafs.S3FileSystem:
        """A client of the server itself, which may create buckets (hudi-bridge's never does)."""
        return pafs.S3FileSystem(access_key=ACCESS_KEY, secret_key=SECRET_KEY, region=REGION, scheme="http",
                                 endpoint_override=self.endpoint.removeprefix("http://"), allow_bucket_creation=True)

    def options(self, through_proxy: bool = False) -> dict[str, str]:
        """storage_options as deltalake spells them."""
        return {"AWS_ENDPOINT_URL": self.proxy_endpoint if through_proxy else self.endpoint, "AWS_ACCESS_KEY_ID": ACCESS_KEY,
                "AWS_SECRET_ACCESS_KEY": SECRET_KEY, "AWS_REGION": REGION}


def partitioned_table(path: Path, partitions: int) -> str:
    """A v8 table of `partitions` partitions, one base file each, a second
    commit touching every seventh, and a metadata table built by hudi-bridge
    (files, column_stats, partition_stats): the request-count tests' and
    bench.object_store's table."""
    import pyarrow as pa

    from metadata.mdt.write.writer import MetadataTableWriter
    from metadata.sample_tables.builder import TableBuilder

    builder = TableBuilder(str(path), pa.schema([("id", pa.int64()), ("p", pa.string()), ("v", pa.int64())]), partition_fields=["p"],
                           version=8)
    builder.write([{"id": i, "p": f"p{i:05d}", "v": i} for i in range(partitions)])
    builder.write([{"id": i, "p": f"p{i:05d}", "v": i + 1} for i in range(0, partitions, 7)])
    MetadataTableWriter(str(path)).build()
    return str(path)


def _proxy_handler(upstream_port: int, faults: Faults) -> type[BaseHTTPRequestHandler]:
    class Proxy(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _forward(self) -> None:
            body = self._body()
            kind = "RANGED_GET" if self.command == "GET" and "Range" in self.headers else self.command
            if self.command == "GET" and "list-type" in self.path or self.command == "GET" and "prefix=" in self.path:
                kind = "LIST"
            with faults.lock:
                faults.seen += 1
                faults.counts[kind] += 1
                faults.requests.append((kind, self.path))
                throttle = bool(faults.throttle_every and faults.seen % faults.throttle_every == 0)
                if self.command == "PUT" and faults.fail_puts > 0:
                    faults.fail_puts -= 1
                    throttle = True
                latency = faults.latency_seconds
            if latency:
                time.sleep(latency)
            if throttle:
                with faults.lock:
                    faults.throttled += 1
                message = b"<Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>"
                self.send_response(503)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(message)))
                self.end_headers()
                self.wfile.write(message)
                return
            upstream = http.client.HTTPConnection("127.0.0.1", upstream_port, timeout=60)
            try:
                headers = {k: v for k, v in self.headers.items() if k.lower() not in ("connection", "keep-alive", "transfer-encoding", "expect")}
                headers["Content-Length"] = str(len(body))
                upstream.request(self.command, self.path, body=body, headers=headers)
                answer = upstream.getresponse()
                data = answer.read()
            finally:
                upstream.close()
            if self.command == "GET":
                with faults.lock:
                    faults.bytes_read += len(data)
            self.send_response(answer.status)
            for key, value in answer.getheaders():
                if key.lower() not in ("transfer-encoding", "connection", "content-length"):
                    self.send_header(key, value)
            # A HEAD answer carries the object's length, not its body's.
            self.send_header("Content-Length", answer.getheader("Content-Length", "0") if self.command == "HEAD" else str(len(data)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(data)

        def _body(self) -> bytes:
            if "chunked" in self.headers.get("Transfer-Encoding", "").lower():
                chunks: list[bytes] = []
                while True:
                    size = int(self.rfile.readline().split(b";", 1)[0].strip() or b"0", 16)
                    if size == 0:
                        while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                            pass  # trailers
                        return b"".join(chunks)
                    chunks.append(self.rfile.read(size))
                    self.rfile.readline()
            length = int(self.headers.get("Content-Length") or 0)
            return self.rfile.read(length) if length else b""

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = _forward

    return Proxy


@contextmanager
def running_s3_server() -> Iterator[S3Server]:
    """moto's S3 server on 127.0.0.1, and the proxy in front of it, until the block ends."""
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    faults = Faults()
    proxy = ThreadingHTTPServer(("127.0.0.1", 0), _proxy_handler(port, faults))
    proxy.daemon_threads = True
    thread = threading.Thread(target=proxy.serve_forever, daemon=True)
    thread.start()
    try:
        yield S3Server(f"http://127.0.0.1:{port}", f"http://127.0.0.1:{proxy.server_address[1]}", faults)
    finally:
        proxy.shutdown()
        proxy.server_close()
        server.stop()


@pytest.fixture(scope="session")
def s3_server() -> Iterator[S3Server]:
    """The session's S3 server (moto is a test extra: scripts/setup.sh --test)."""
    pytest.importorskip("moto.server", reason="moto is a test extra (scripts/setup.sh --test)")
    with running_s3_server() as server:
        yield server
