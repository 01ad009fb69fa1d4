"""Storage access for a table rooted at a base path, through `pyarrow.fs`.

All reads and writes of table files go through `Storage`, so local paths,
s3://, hdfs:// and gs:// behave alike, and tests can pass their own
`pyarrow.fs.FileSystem` (for example one that counts calls).
"""

from __future__ import annotations

import os
import posixpath
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from datetime import timedelta
from typing import BinaryIO, TypeVar, cast
from urllib.parse import unquote

import pyarrow.fs as pafs

from metadata.errors import HudiError, StorageError, StoredFileNotFound, UnsafePathError


@dataclass(frozen=True)
class StoredFile:
    """One file found by a listing: its path relative to the base and size."""

    relative_path: str
    size: int

    @property
    def name(self) -> str:
        return self.relative_path.rpartition("/")[2]


def unsafe_reason(relative: str) -> str | None:
    """Why a path relative to a table base could leave it (None when it cannot):
    absolute, or with a `..` segment."""
    if relative.startswith("/") or "\\" in relative:
        return "is absolute or holds a backslash"
    if ".." in relative and ".." in relative.split("/"):
        return "has a '..' segment"
    return None


def join(*parts: str) -> str:
    """Join relative path parts, ignoring empty ones ("" is the base itself)."""
    if len(parts) == 2 and parts[0] and parts[1] and "/" not in (parts[0][-1], parts[1][0]):
        return f"{parts[0]}/{parts[1]}"  # the common case, on hot paths
    kept = [p.strip("/") for p in parts if p and p.strip("/")]
    return "/".join(kept)


T = TypeVar("T")

# Remote calls give up after this long rather than hang (gs:// retries for 15
# minutes by default); the CLI's --timeout sets it.
DEFAULT_TIMEOUT_SECONDS = 30.0
_timeout_seconds = DEFAULT_TIMEOUT_SECONDS


def set_default_timeout(seconds: float) -> None:
    """Timeout for filesystems Storage creates for s3:// and gs:// URIs."""
    global _timeout_seconds
    if seconds <= 0:
        raise ValueError("a timeout must be positive")
    _timeout_seconds = seconds


def remote_filesystem(uri: str, timeout: float | None = None) -> tuple[pafs.FileSystem, str]:
    """A pyarrow filesystem and the path inside it, with connect and request
    timeouts where the filesystem has them."""
    seconds = timeout or _timeout_seconds
    scheme, _, rest = uri.partition("://")
    if scheme in ("gs", "gcs"):
        return pafs.GcsFileSystem(retry_time_limit=timedelta(seconds=seconds)), rest.rstrip("/")
    if scheme in ("s3", "s3a"):
        bucket = rest.split("/", 1)[0]
        region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION") or _s3_region(bucket, seconds)
        return pafs.S3FileSystem(region=region, connect_timeout=seconds, request_timeout=seconds), rest.rstrip("/")
    return pafs.FileSystem.from_uri(uri)


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


class Storage:
    """Files below one base path on one filesystem."""

    def __init__(self, filesystem: pafs.FileSystem, base_path: str, uri: str | None = None) -> None:
        self.filesystem = filesystem
        self.base_path = base_path.rstrip("/") or "/"
        self.uri = uri or base_path

    @classmethod
    def open(cls, path_or_uri: str, filesystem: pafs.FileSystem | None = None) -> Storage:
        """Resolve a local path or URI; `filesystem` overrides the resolved one."""
        if filesystem is not None:
            if "://" in path_or_uri:
                _, base = pafs.FileSystem.from_uri(path_or_uri)
            else:
                base = path_or_uri
            return cls(filesystem, _normalise_local(base) if "://" not in path_or_uri else base, path_or_uri)
        if "://" in path_or_uri and not path_or_uri.startswith("file://"):
            try:
                fs, base = remote_filesystem(path_or_uri)
            except StorageError:
                raise
            except Exception as exc:  # pyarrow raises several types here
                raise HudiError(f"cannot open storage for {path_or_uri}: {exc}") from exc
            return cls(fs, base, path_or_uri)
        local = _normalise_local(hadoop_local_path(path_or_uri))
        # A relative path becomes absolute here, the boundary every API and command passes:
        # engines and hudi-rs are handed the table's location, and a relative one means nothing to them.
        return cls(pafs.LocalFileSystem(), local, path_or_uri if path_or_uri.startswith("file:") else local)

    def child(self, relative: str) -> Storage:
        """Storage rooted at a folder below this one (e.g. the metadata table)."""
        return Storage(self.filesystem, self.full_path(relative), join(self.uri, relative) if "://" in self.uri else self.full_path(relative))

    def _call(self, what: str, relative: str, call: Callable[[str], T]) -> T:
        """`call(full path)` below the base, with OS and connection errors turned
        into the project's errors naming the file as the user knows it."""
        path = self.full_path(relative)
        try:
            return call(path)
        except StorageError:
            raise
        except FileNotFoundError as exc:
            raise StoredFileNotFound(f"{self.display_path(relative)}: not found ({what})") from exc
        except PermissionError as exc:
            raise StorageError(f"{self.display_path(relative)}: permission denied ({what})") from exc
        except OSError as exc:
            raise StorageError(f"{self.display_path(relative)}: cannot {what}: {exc}") from exc

    def display_path(self, relative: str) -> str:
        """Where a file is, as the user named the table (with its scheme)."""
        return join(self.uri, relative) if "://" in self.uri else self.full_path(relative)

    def full_path(self, relative: str) -> str:
        """The path of a file below the base; never outside it."""
        reason = unsafe_reason(relative)
        if reason is not None:
            raise UnsafePathError(f"{self.uri}: {relative!r} {reason}: it would resolve outside the table")
        return posixpath.join(self.base_path, relative) if relative else self.base_path

    # Reading -------------------------------------------------------------
    def read_bytes(self, relative: str) -> bytes:
        def read(path: str) -> bytes:
            with self.filesystem.open_input_stream(path) as stream:
                return bytes(stream.read())

        return self._call("read", relative, read)

    def open_random_access(self, relative: str) -> pafs.NativeFile:
        return self._call("open", relative, self.filesystem.open_input_file)

    def exists(self, relative: str) -> bool:
        return bool(self._call("look up", relative, self.filesystem.get_file_info).type != pafs.FileType.NotFound)

    def is_dir(self, relative: str) -> bool:
        return bool(self._call("look up", relative, self.filesystem.get_file_info).type == pafs.FileType.Directory)

    def list_dir(self, relative: str = "") -> tuple[list[StoredFile], list[str]]:
        """Files and sub-folder names directly inside a folder ([] when absent)."""
        files: list[StoredFile] = []
        folders: list[str] = []
        infos = self._call(
            "list", relative, lambda path: self.filesystem.get_file_info(pafs.FileSelector(path, allow_not_found=True, recursive=False))
        )
        for info in infos:
            name = posixpath.basename(info.path.rstrip("/"))
            if info.type == pafs.FileType.Directory:
                folders.append(name)
            elif info.type == pafs.FileType.File:
                files.append(StoredFile(join(relative, name), int(info.size or 0)))
        files.sort(key=lambda f: f.relative_path)
        folders.sort()
        return files, folders

    # Writing -------------------------------------------------------------
    def write_bytes(self, relative: str, data: bytes) -> None:
        """Write a file so that readers never see it half written."""
        with self.write_stream(relative) as out:
            out.write(data)

    @contextmanager
    def write_stream(self, relative: str) -> Iterator[BinaryIO]:
        """A stream whose bytes appear under `relative` only once the block
        ends without error.

        The bytes go to a hidden temporary name in the same folder first and
        are moved into place; on object stores the move is a copy, which is
        still all-or-nothing for readers of the final name.
        """
        target = self.full_path(relative)
        folder = posixpath.dirname(target)
        temp = posixpath.join(folder, f".tmp-{uuid.uuid4().hex}-{posixpath.basename(target)}")
        self._call("write", relative, lambda _: self.filesystem.create_dir(folder, recursive=True))
        out = self._call("write", relative, lambda _: self.filesystem.open_output_stream(temp))
        try:
            yield cast(BinaryIO, out)
            out.close()
        except BaseException as exc:
            with suppress(OSError):
                out.close()
            with suppress(OSError):
                self.filesystem.delete_file(temp)  # nothing half written stays behind
            if isinstance(exc, OSError):
                raise StorageError(f"{self.display_path(relative)}: cannot write: {exc}") from exc
            raise
        self._call("write", relative, lambda _: self.filesystem.move(temp, target))

    def delete_file(self, relative: str) -> None:
        self._call("delete", relative, self.filesystem.delete_file)

    def make_dirs(self, relative: str) -> None:
        self._call("create", relative, lambda path: self.filesystem.create_dir(path, recursive=True))


def hadoop_local_path(path_or_uri: str) -> str:
    """A local path from `file:///x`, or `file:/x` as Hadoop and Spark's
    catalog write it (percent-encoded); other text is returned as it is."""
    if path_or_uri.startswith("file://"):
        return path_or_uri[len("file://"):]
    if path_or_uri.startswith("file:/"):
        return unquote(path_or_uri[len("file:"):])
    return path_or_uri


def _normalise_local(path: str) -> str:
    return os.path.abspath(os.path.expanduser(path))
