"""Secrets never echoed: credentials given as storage options, in the
environment or in a URI appear in no output, traceback, JSON, cache or file
the commands write (`metadata.storage.secrets` is the one rule)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest

from metadata.sample_tables.builder import TableBuilder
from metadata.storage.secrets import MASK, redact, redact_options, user_info_refusal

SECRET, KEY_ID, TOKEN = "SUPERSECRET123", "AKIASECRETID789", "TOKENSECRET456"


def _cli(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "engine_bridge", *args], capture_output=True, text=True, timeout=120,
                          env={**os.environ, **(env or {})})


@pytest.fixture(scope="module")
def table(tmp_path_factory: pytest.TempPathFactory) -> str:
    path = tmp_path_factory.mktemp("secrets") / "t"
    builder = TableBuilder(str(path), pa.schema([("id", pa.string()), ("city", pa.string()), ("fare", pa.float64())]),
                           version=8, partition_fields=["city"])
    builder.write([{"id": f"k{i}", "city": c, "fare": float(i)} for i, c in enumerate(["sf", "la", "sf"])])
    return str(path)


def _no_secret(*texts: str) -> None:
    for text in texts:
        for secret in (SECRET, KEY_ID, TOKEN):
            assert secret not in text, text


def test_the_rule() -> None:
    assert redact_options({"AWS_SECRET_ACCESS_KEY": SECRET, "fs.s3a.session.token": TOKEN, "region": "eu-west-1"}) == \
        {"AWS_SECRET_ACCESS_KEY": MASK, "fs.s3a.session.token": MASK, "region": "eu-west-1"}
    assert redact(f"s3://{KEY_ID}:{SECRET}@lab/t") == "s3://***@lab/t"
    assert redact("abfss://container@account.dfs.core.windows.net/t") == "abfss://container@account.dfs.core.windows.net/t"
    assert user_info_refusal("abfss://container@account.dfs.core.windows.net/t") is None
    assert user_info_refusal(f"s3a://{KEY_ID}:{SECRET}@lab/t").startswith("s3a://lab: credentials in the URI are not accepted")


@pytest.mark.parametrize("debug", [[], ["--debug"]])
def test_credentials_in_a_uri_are_refused_unshown(debug: list[str]) -> None:
    result = _cli(*debug, "table", "show", f"s3://{KEY_ID}:{SECRET}@lab/mdt")
    assert result.returncode == 2
    _no_secret(result.stdout, result.stderr)
    assert result.stderr.splitlines()[-1].startswith("error: s3://lab: credentials in the URI are not accepted")


def test_a_malformed_storage_option_is_named_by_position() -> None:
    result = _cli("--storage-option", "region=x", "--storage-option", SECRET, "table", "show", "/nonexistent")
    assert result.returncode == 2 and "the 2nd one is not KEY=VALUE" in result.stderr
    _no_secret(result.stdout, result.stderr)


def test_secret_options_and_environment_stay_out_of_every_output(table: str, tmp_path: Path) -> None:
    options = ["--storage-option", f"AWS_SECRET_ACCESS_KEY={SECRET}", "--storage-option", f"fs.s3a.access.key={KEY_ID}"]
    env = {"AWS_SESSION_TOKEN": TOKEN}
    cache = tmp_path / "cache"
    runs = [
        ["table", "show", table, "--json"],
        ["plan", table, "--where", "fare > 1", "--explain", "--cache-dir", str(cache), "--json"],
        ["plan", table, "--where", "fare >", "--explain"],
        ["index", "build", table, "--json"],
        ["table", "validate", table],
        ["changes", table, "--begin", "0", "--json"],
        ["incremental", table, "--begin", "20991301000000000"],
        ["table", "show", str(tmp_path / "none")],
    ]
    for args in runs:
        for debug in ([], ["--debug"]):
            result = _cli(*debug, *options, *args, env=env)
            _no_secret(result.stdout, result.stderr)
    written = [p for root in (Path(table), cache) for p in root.rglob("*") if p.is_file()]
    assert written
    for path in written:
        data = path.read_bytes()
        assert all(s.encode() not in data for s in (SECRET, KEY_ID, TOKEN)), path


@pytest.mark.services
@pytest.mark.slow
def test_a_spark_backed_command_keeps_secrets_out_of_its_output_and_spark_log(table: str, tmp_path: Path) -> None:
    import glob
    import tempfile

    before = set(glob.glob(f"{tempfile.gettempdir()}/hudi-bridge-spark-*.log"))
    options = ["--storage-option", f"AWS_SECRET_ACCESS_KEY={SECRET}", "--storage-option", f"fs.s3a.access.key={KEY_ID}"]
    result = _cli(*options, "pull", table, "--to", str(tmp_path / "out"), "--begin", "0", env={"AWS_SESSION_TOKEN": TOKEN})
    assert result.returncode == 0, result.stderr[-2000:]
    _no_secret(result.stdout, result.stderr)
    logs = set(glob.glob(f"{tempfile.gettempdir()}/hudi-bridge-spark-*.log")) - before
    assert logs  # one log of the run's own
    written = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    for path in [*map(Path, logs), *written]:
        data = path.read_bytes()
        assert all(s.encode() not in data for s in (SECRET, KEY_ID, TOKEN)), path


@pytest.mark.parametrize("uri", ["s3://bkt/t?secret_key=SEKRIT&access_key=AKIAX", "gs://bkt/t?access_token=SEKRIT",
                                 "https://acct.blob.core.windows.net/c/t?sig=SEKRIT&se=2030"])
def test_a_uri_query_string_is_masked_wherever_printed(uri: str) -> None:
    """Signed URLs and SAS tokens travel in query strings (issue 64): messages never show them."""
    from metadata.storage.secrets import redact

    shown = redact(f"error: {uri}: cannot open")
    assert "SEKRIT" not in shown and "AKIAX" not in shown and uri.split("?")[0] + "?***" in shown
