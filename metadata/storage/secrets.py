"""The one redaction rule: what is a secret, and how it is shown (`***`).

A storage option is secret when its name says secret, key, token,
password, signature, credential or sas (`AWS_SECRET_ACCESS_KEY`,
`fs.s3a.access.key`, `azure_storage_sas_token`, ...). A URI's user info
(`s3://ID:SECRET@bucket/...`) and its query string (`?sig=...`) are secret
whatever they hold, and a URI that carries user info is refused: credentials go in storage options or the
environment, where they are never printed. Every message, traceback, JSON
output, log line and file the project writes passes the text through
`redact`, which also masks the values of the secret options in force.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Mapping
from urllib.parse import urlsplit

MASK = "***"
_SECRET_WORDS = ("secret", "key", "token", "password", "passwd", "signature", "credential", "sas")
_USER_INFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*)://([^/\s@'\"]+)@")
# A URI's query string (`?sig=...`, `?access_token=...`, `?secret_key=...`): signed URLs and SAS tokens live there.
_QUERY = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://[^\s?'\"]*)\?[^\s'\"]+")
# Azure's URIs name the container as user info (abfss://container@account.dfs.core.windows.net/...): a path, not a secret.
_CONTAINER_SCHEMES = ("abfs", "abfss", "wasb", "wasbs")
_known: set[str] = set()
_lock = threading.Lock()


def is_secret_name(name: str) -> bool:
    lowered = name.lower()
    return any(word in lowered for word in _SECRET_WORDS)


def redact_options(options: Mapping[str, str] | None) -> dict[str, str]:
    """Options as they may be shown: secret values as `***`."""
    return {k: MASK if is_secret_name(k) else v for k, v in (options or {}).items()}


def remember_secrets(options: Mapping[str, str] | Iterable[tuple[str, str]]) -> None:
    """Secret option values in force in this process: `redact` masks them wherever they appear."""
    pairs = options.items() if isinstance(options, Mapping) else options
    with _lock:
        _known.update(v for k, v in pairs if is_secret_name(k) and len(v) >= 4)


def redact(text: str) -> str:
    """Text with URI user info, URI query strings and the known secret values masked."""
    text = _USER_INFO.sub(lambda m: m.group(0) if _is_container(m.group(1), m.group(2)) else f"{m.group(1)}://{MASK}@", text)
    text = _QUERY.sub(lambda m: f"{m.group(1)}?{MASK}", text)
    with _lock:
        known = sorted(_known, key=len, reverse=True)
    for value in known:
        text = text.replace(value, MASK)
    return text


def user_info_refusal(uri: str) -> str | None:
    """Why a URI is refused when it carries user info (naming the scheme and
    the bucket only), or None."""
    if "://" not in uri:
        return None
    parts = urlsplit(uri)
    if "@" not in parts.netloc or _is_container(parts.scheme, parts.netloc.rsplit("@", 1)[0]):
        return None
    host = parts.netloc.rsplit("@", 1)[1]
    return (f"{parts.scheme}://{host}: credentials in the URI are not accepted (they would be shown and logged); "
            "give them as storage options (--storage-option KEY=VALUE, storage_options=) or in the environment")


def _is_container(scheme: str, user_info: str) -> bool:
    return scheme.lower() in _CONTAINER_SCHEMES and ":" not in user_info
