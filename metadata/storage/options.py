"""Object-store configuration as the ecosystem spells it.

A `storage_options` mapping (as deltalake, pyiceberg and hudi-rs take one),
the CLI's `--storage-option KEY=VALUE`, Hadoop's `fs.s3a.*` names (what a
Hive job conf or a Spark conf hands over) and the AWS environment
(`AWS_ENDPOINT_URL[_S3]`, `AWS_REGION`, keys, `AWS_PROFILE`) all configure the
same pyarrow filesystems. Keys are matched without case; an explicit option
wins over the environment. `s3a://` and `s3n://` are S3, as Spark and Hive
write them; `gs://` is GCS; `abfs[s]://` and `az://` are Azure.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from urllib.parse import urlparse

import pyarrow.fs as pafs

from metadata.errors import StorageError
from metadata.storage.secrets import remember_secrets

S3_SCHEMES = ("s3", "s3a", "s3n")
GCS_SCHEMES = ("gs", "gcs")
AZURE_SCHEMES = ("abfs", "abfss", "az", "adl")

# Each setting and the names it goes by (lower case): deltalake/object_store, pyiceberg, Hadoop's s3a.
_S3_NAMES = {
    "endpoint": ("aws_endpoint_url_s3", "aws_endpoint_url", "aws_endpoint", "endpoint_url", "endpoint", "s3.endpoint", "fs.s3a.endpoint"),
    "access_key": ("aws_access_key_id", "access_key_id", "s3.access-key-id", "fs.s3a.access.key"),
    "secret_key": ("aws_secret_access_key", "secret_access_key", "s3.secret-access-key", "fs.s3a.secret.key"),
    "session_token": ("aws_session_token", "session_token", "s3.session-token", "fs.s3a.session.token"),
    "region": ("aws_region", "region", "s3.region", "aws_default_region", "fs.s3a.endpoint.region"),
    "path_style": ("fs.s3a.path.style.access", "s3.path-style-access", "aws_force_path_style"),
    "virtual_hosted": ("aws_virtual_hosted_style_request", "virtual_hosted_style_request"),
    "anonymous": ("aws_skip_signature", "skip_signature", "anonymous", "s3.anonymous"),
    "allow_http": ("aws_allow_http", "allow_http", "fs.s3a.connection.ssl.enabled"),
}
_GCS_NAMES = {
    "endpoint": ("google_endpoint", "gcs.endpoint", "gcs_endpoint", "endpoint", "storage_emulator_host"),
    "anonymous": ("google_skip_signature", "gcs.anonymous", "anonymous", "skip_signature"),
    "token": ("google_access_token", "gcs.oauth2.token", "access_token"),
}
_AZURE_NAMES = {
    "account_name": ("azure_storage_account_name", "account_name", "adls.account-name", "adlfs.account-name"),
    "account_key": ("azure_storage_account_key", "azure_storage_access_key", "account_key", "adls.account-key"),
    "sas_token": ("azure_storage_sas_token", "sas_token", "adls.sas-token"),
    "endpoint": ("azure_storage_endpoint", "azure_endpoint", "endpoint", "adls.endpoint"),
}

_defaults: dict[str, str] = {}
_lock = threading.Lock()


def set_default_storage_options(options: Mapping[str, str]) -> None:
    """Options every Storage opened without its own uses (the CLI's --storage-option)."""
    remember_secrets(options)
    remember_secrets({k: v for k, v in os.environ.items() if k.startswith(("AWS_", "AZURE_", "GOOGLE_"))})  # read by _pick
    with _lock:
        _defaults.clear()
        _defaults.update({k.lower(): v for k, v in options.items()})


def effective_options(options: Mapping[str, str] | None) -> dict[str, str]:
    """The process defaults overlaid with `options`, keys in lower case."""
    with _lock:
        merged = dict(_defaults)
    merged.update({k.lower(): v for k, v in (options or {}).items()})
    remember_secrets(merged)
    return merged


def _pick(options: Mapping[str, str], names: tuple[str, ...], environment: bool = True) -> str | None:
    for name in names:
        if options.get(name):
            return options[name]
    if environment:
        for name in names:
            value = os.environ.get(name.upper()) if name.startswith(("aws_", "google_", "azure_", "storage_")) else None
            if value:
                return value
    return None


def _flag(text: str | None) -> bool | None:
    return None if text is None else text.strip().lower() in ("true", "1", "yes")


@dataclass(frozen=True)
class _S3Settings:
    """What the options say of S3, however spelt: for pyarrow and for hudi-rs alike."""

    scheme: str | None  # of a custom endpoint
    endpoint: str | None  # a custom endpoint's host[:port][/path]
    region: str | None  # None: not given, and AWS's own endpoint (look the bucket up)
    anonymous: bool
    virtual_hosted: bool

    @property
    def endpoint_url(self) -> str | None:
        return f"{self.scheme}://{self.endpoint}" if self.endpoint else None


def _s3_settings(options: Mapping[str, str]) -> _S3Settings:
    endpoint = _pick(options, _S3_NAMES["endpoint"])
    scheme = None
    if endpoint:
        parsed = urlparse(endpoint if "://" in endpoint else f"https://{endpoint}")
        scheme = parsed.scheme
        allow_http = _flag(_pick(options, _S3_NAMES["allow_http"]))
        if "fs.s3a.connection.ssl.enabled" in options and "://" not in endpoint:  # Hadoop says it the other way round
            scheme = "https" if _flag(options["fs.s3a.connection.ssl.enabled"]) else "http"
        elif allow_http and "://" not in endpoint:
            scheme = "http"
        endpoint = parsed.netloc + parsed.path.rstrip("/")
    # A custom endpoint (MinIO, Ceph, R2, a test server) has no AWS region to look up.
    region = _pick(options, _S3_NAMES["region"]) or ("us-east-1" if endpoint else None)
    virtual = _flag(_pick(options, _S3_NAMES["virtual_hosted"], environment=False))
    path_style = _flag(_pick(options, _S3_NAMES["path_style"], environment=False))
    return _S3Settings(scheme, endpoint or None, region, bool(_flag(_pick(options, _S3_NAMES["anonymous"]))),
                       bool(virtual) if virtual is not None else (path_style is False))


def s3_filesystem(bucket: str, options: Mapping[str, str], seconds: float) -> pafs.S3FileSystem:
    """An S3 filesystem for `bucket`: endpoint, keys, region and addressing from
    the options or the AWS environment; every request bounded by `seconds`."""
    settings = _s3_settings(options)
    region = settings.region or _s3_region(bucket, seconds)
    try:
        return pafs.S3FileSystem(
            access_key=_pick(options, _S3_NAMES["access_key"], environment=False),
            secret_key=_pick(options, _S3_NAMES["secret_key"], environment=False),
            session_token=_pick(options, _S3_NAMES["session_token"], environment=False),
            anonymous=settings.anonymous, region=region, scheme=settings.scheme,
            endpoint_override=settings.endpoint, force_virtual_addressing=settings.virtual_hosted,
            # Two attempts of half the timeout each: a silent endpoint gives up within the timeout, not five times it.
            connect_timeout=seconds / 2, request_timeout=seconds / 2,
            retry_strategy=pafs.AwsStandardS3RetryStrategy(max_attempts=2),
        )
    except (ValueError, OSError) as exc:
        raise StorageError(f"s3://{bucket}: cannot configure S3 ({exc})") from None


def _s3_region(bucket: str, seconds: float) -> str:
    """The bucket's region (what FileSystem.from_uri looks up), within the timeout."""
    found: list[str] = []
    failed: list[BaseException] = []

    def resolve() -> None:
        try:
            found.append(pafs.resolve_s3_region(bucket))
        except BaseException as exc:  # reported below with the bucket named
            failed.append(exc)

    worker = threading.Thread(target=resolve, daemon=True)
    worker.start()
    worker.join(seconds)
    if found:
        return found[0]
    why = f"{failed[0]}" if failed else f"no answer within {seconds:g} s"
    raise StorageError(f"s3://{bucket}: cannot find the bucket's region ({why}); set AWS_REGION to skip the lookup")


def gcs_filesystem(options: Mapping[str, str], seconds: float) -> pafs.GcsFileSystem:
    endpoint = _pick(options, _GCS_NAMES["endpoint"])
    scheme = None
    if endpoint:
        parsed = urlparse(endpoint if "://" in endpoint else f"http://{endpoint}")
        scheme, endpoint = parsed.scheme, parsed.netloc
    token = _pick(options, _GCS_NAMES["token"])
    anonymous = bool(_flag(_pick(options, _GCS_NAMES["anonymous"]))) or (endpoint is not None and token is None)
    # pyarrow wants an access token's expiry with it; an OAuth2 access token lives an hour at most.
    expiry = datetime.now(timezone.utc) + timedelta(hours=1) if token else None
    return pafs.GcsFileSystem(anonymous=anonymous, access_token=token, credential_token_expiration=expiry, scheme=scheme,
                              endpoint_override=endpoint, retry_time_limit=timedelta(seconds=seconds))


def azure_filesystem(authority: str, options: Mapping[str, str]) -> tuple[pafs.FileSystem, str]:
    """An Azure filesystem for `container@account.dfs.core.windows.net` (abfs) or `container` (az)."""
    container, _, host = authority.partition("@")
    account = _pick(options, _AZURE_NAMES["account_name"]) or (host.split(".", 1)[0] if host else None)
    if not account:
        raise StorageError(f"{authority}: no Azure storage account (give azure_storage_account_name, or container@account.dfs.core.windows.net)")
    endpoint = _pick(options, _AZURE_NAMES["endpoint"])
    extra: dict[str, str] = {}
    if endpoint:  # Azurite and other emulators: http://127.0.0.1:10000/<account>
        parsed = urlparse(endpoint)
        extra = {"blob_storage_authority": parsed.netloc, "dfs_storage_authority": parsed.netloc,
                 "blob_storage_scheme": parsed.scheme or "https", "dfs_storage_scheme": parsed.scheme or "https"}
    filesystem = pafs.AzureFileSystem(account, account_key=_pick(options, _AZURE_NAMES["account_key"]),
                                      sas_token=_pick(options, _AZURE_NAMES["sas_token"]), **extra)
    return filesystem, container


def object_store_filesystem(uri: str, options: Mapping[str, str] | None, seconds: float) -> tuple[pafs.FileSystem, str] | None:
    """(filesystem, path inside it) for an object-store URI, or None for other schemes."""
    merged = effective_options(options)
    scheme, _, rest = uri.partition("://")
    scheme = scheme.lower()
    if scheme in S3_SCHEMES:
        bucket = rest.split("/", 1)[0]
        return s3_filesystem(bucket, merged, seconds), rest.rstrip("/")
    if scheme in GCS_SCHEMES:
        return gcs_filesystem(merged, seconds), rest.rstrip("/")
    if scheme in AZURE_SCHEMES:
        authority, _, path = rest.partition("/")
        filesystem, container = azure_filesystem(authority, merged)
        return filesystem, f"{container}/{path}".rstrip("/")
    return None


def hudi_rs_options(uri: str, options: Mapping[str, str] | None) -> dict[str, str]:
    """The same configuration in object_store's names, for hudi-rs (which
    merges MOR file slices here): whichever way the options were spelt."""
    merged = effective_options(options)
    scheme = uri.partition("://")[0].lower()
    out: dict[str, str] = {}

    def put(key: str, value: str | None) -> None:
        if value:
            out[key] = value

    if scheme in S3_SCHEMES:
        settings = _s3_settings(merged)
        put("aws_endpoint_url", settings.endpoint_url)
        if settings.scheme == "http":
            out["aws_allow_http"] = "true"
        put("aws_access_key_id", _pick(merged, _S3_NAMES["access_key"]))
        put("aws_secret_access_key", _pick(merged, _S3_NAMES["secret_key"]))
        put("aws_session_token", _pick(merged, _S3_NAMES["session_token"]))
        put("aws_region", settings.region)
        if settings.anonymous:
            out["aws_skip_signature"] = "true"
        out["aws_virtual_hosted_style_request"] = "true" if settings.virtual_hosted else "false"
    elif scheme in AZURE_SCHEMES:
        put("azure_storage_account_name", _pick(merged, _AZURE_NAMES["account_name"]))
        put("azure_storage_account_key", _pick(merged, _AZURE_NAMES["account_key"]))
        put("azure_storage_sas_token", _pick(merged, _AZURE_NAMES["sas_token"]))
        endpoint = _pick(merged, _AZURE_NAMES["endpoint"])
        put("azure_storage_endpoint", endpoint)
        if endpoint and endpoint.startswith("http://"):
            out["azure_allow_http"] = "true"
    elif scheme in GCS_SCHEMES:
        out.update({k: v for k, v in merged.items() if k.startswith("google_")})
    return out
