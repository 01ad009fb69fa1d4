"""Partition paths and the values they encode."""

from __future__ import annotations

from collections.abc import Collection, Mapping
from urllib.parse import unquote

from metadata.errors import HudiFormatError
from metadata.storage.paths import unsafe_reason

HIVE_DEFAULT_PARTITION = "__HIVE_DEFAULT_PARTITION__"
# The metadata table names the partition of a non-partitioned table ".".
NON_PARTITIONED_ID = "."

# Hive's FileUtils.escapePathName, which Hudi's PartitionPathEncodeUtils copies:
# ASCII control characters and these are written as %XX; nothing else is.
_ESCAPED = frozenset(chr(c) for c in range(0x20)) | frozenset('"#%\'*/:=?\\\x7f{[]^')


def escape_path_name(text: str) -> str:
    """A value as Hive and Hudi write it in a path segment or partition name."""
    return "".join(f"%{ord(c):02X}" if c in _ESCAPED else c for c in text)


def unescape_path_name(text: str) -> str:
    return unquote(text)


def parse_partition_values(
    partition_path: str,
    fields: tuple[str, ...],
    hive_style: bool,
    url_encoded: bool = False,
    segments_of: Mapping[str, int] | None = None,
) -> dict[str, str | None]:
    """Field -> raw string value (None for Hive's default partition).
    `segments_of` gives fields whose values span several path segments (a
    key generator's `yyyy/MM/dd`) in paths that are not hive-style."""
    if not fields:
        return {}
    segments = partition_path.split("/") if partition_path else []

    def value_of(text: str) -> str | None:
        text = unescape_path_name(text) if url_encoded else text
        return None if text == HIVE_DEFAULT_PARTITION else text

    if hive_style:
        raw_values: dict[str, str] = {}
        key = None
        for segment in segments:
            if "=" not in segment:
                if key is None:
                    raise HudiFormatError(partition_path, f"hive-style partition segment {segment!r} has no '='")
                raw_values[key] += "/" + segment  # a value with slashes (a key generator's yyyy/MM/dd)
                continue
            key, _, raw = segment.partition("=")
            raw_values[key] = raw
        values: dict[str, str | None] = {k: value_of(v) for k, v in raw_values.items()}
        missing = [f for f in fields if f not in values]
        if missing:
            raise HudiFormatError(partition_path, f"partition path lacks field(s) {', '.join(missing)} (fields: {', '.join(fields)})")
        return {f: values[f] for f in fields}
    if len(fields) == 1:
        # A single field may hold slashes (e.g. a yyyy/MM/dd value).
        return {fields[0]: value_of(partition_path)}
    widths = [(segments_of or {}).get(f, 1) for f in fields]
    if len(segments) != sum(widths):
        raise HudiFormatError(
            partition_path, f"partition path has {len(segments)} segment(s) but the table has {len(fields)} partition fields ({', '.join(fields)})"
        )
    values, start = {}, 0
    for name, width in zip(fields, widths):
        values[name] = value_of("/".join(segments[start:start + width]))
        start += width
    return values


def format_partition_path(
    values: dict[str, object], fields: tuple[str, ...], hive_style: bool, url_encode: bool = False, formatted: Collection[str] = ()
) -> str:
    """The partition path Hudi writes for these values. A value that would
    add a folder level or leave the base (`/`, `..`) needs url-encoding,
    except in `formatted` fields, whose values a key generator formatted
    (a time as `yyyy/MM/dd` spans folders on purpose)."""
    segments = []
    for f in fields:
        raw = values.get(f)
        text = HIVE_DEFAULT_PARTITION if raw is None or raw == "" else str(raw)
        if url_encode and f not in formatted:
            text = escape_path_name(text)  # escapes separators, not dots
        elif f not in formatted and ("/" in text or "\\" in text):
            raise ValueError(f"partition value {text!r} of {f} holds a path separator; write it with url-encoding")
        if not hive_style and text in (".", ".."):
            raise ValueError(f"partition value {text!r} of {f} would name no folder or the parent folder")
        segments.append(f"{f}={text}" if hive_style else text)
    return "/".join(segments)


def check_partition_path(partition: str, where: str) -> str:
    """A partition path read from the table, refused when it could leave the base."""
    reason = unsafe_reason(partition)
    if reason is None and partition and any(s in ("", ".") for s in partition.split("/")):
        reason = "has an empty or '.' segment"
    if reason is not None:
        raise HudiFormatError(where, f"partition path {partition!r} {reason}: it would resolve outside the table or nowhere")
    return partition


# What a path needs to hold for check_partition_path to refuse it; paths
# joined by newlines are scanned for these once, and checked one by one only
# when one is found.
_SUSPECT = ("\\", "\n/", "/\n", "//", "..", "\n./", "/./", "/.\n", "\n.\n")


def check_partition_paths(partitions: list[str], where: str) -> list[str]:
    """`check_partition_path` of many paths, with one scan when all are plain."""
    joined = "\n" + "\n".join(partitions) + "\n"
    if any(s in joined for s in _SUSPECT) or any("\n" in p for p in partitions):
        for partition in partitions:
            check_partition_path(partition, where)
    return partitions


def to_metadata_partition(partition: str) -> str:
    return partition or NON_PARTITIONED_ID


def from_metadata_partition(partition_id: str) -> str:
    return "" if partition_id == NON_PARTITIONED_ID else partition_id
