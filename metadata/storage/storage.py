"""Storage access for a table rooted at a base path, through `pyarrow.fs`.

All reads and writes of table files go through `Storage`, so local paths,
s3://, hdfs:// and gs:// behave alike, and tests can pass their own
`pyarrow.fs.FileSystem` (for example one that counts calls).
"""

from __future__ import annotations

import logging
import os
import posixpath
import re
import shutil
import stat
import tempfile
import uuid
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from typing import BinaryIO, TypeVar, cast

import pyarrow.fs as pafs

from metadata.errors import (
    HudiError,
    OversizedFile,
    StorageError,
    StoredFileNotFound,
    TransientStorageError,
    UnsafePathError,
)
from metadata.storage.calls import LIST_PAGE, REQUEST_KIND, RangedFile, RequestCounts, default_timeout, is_transient, retrying
from metadata.storage.options import effective_options, object_store_filesystem
from metadata.storage.paths import StoredFile, hadoop_local_path, join, normalise_local, unsafe_reason
from metadata.storage.secrets import redact, user_info_refusal

log = logging.getLogger(__name__)


T = TypeVar("T")


def remote_filesystem(uri: str, timeout: float | None = None,
                      storage_options: Mapping[str, str] | None = None) -> tuple[pafs.FileSystem, str]:
    """A pyarrow filesystem and the path inside it, with connect and request
    timeouts where the filesystem has them (`metadata.storage.options` says
    how object stores are configured)."""
    seconds = timeout or default_timeout()
    found = object_store_filesystem(uri, storage_options, seconds)
    if found is not None:
        return found
    return pafs.FileSystem.from_uri(uri)


OBJECT_STORES = frozenset({"s3", "gcs", "abfs"})  # pyarrow's type names of the object-store filesystems


class Storage:
    """Files below one base path on one filesystem."""

    def __init__(self, filesystem: pafs.FileSystem, base_path: str, uri: str | None = None,
                 requests: RequestCounts | None = None, storage_options: Mapping[str, str] | None = None) -> None:
        self.filesystem = filesystem
        self.storage_options = dict(storage_options or {})  # handed on to whatever opens the table again (Spark tasks)
        self.base_path = base_path.rstrip("/") or "/"
        self.uri = uri or base_path
        self.requests = requests or RequestCounts()  # shared with child storages (the metadata table's)
        # On an object store a PUT is atomic and nothing can be renamed; every request is a round trip.
        self.is_object_store = filesystem.type_name in OBJECT_STORES
        self._local = filesystem.type_name == "local"
        self._link_root = self.base_path  # the table's base: a child storage (the metadata table's) checks from there
        self._plain_folders: set[str] = set()  # folders below the base lstat found not to be links

    @classmethod
    def open(cls, path_or_uri: str, filesystem: pafs.FileSystem | None = None,
             storage_options: Mapping[str, str] | None = None) -> Storage:
        """Resolve a local path or URI; `filesystem` overrides the resolved one;
        `storage_options` configure an object store (`metadata.storage.options`)."""
        if filesystem is not None:
            if "://" in path_or_uri:
                _, base = pafs.FileSystem.from_uri(path_or_uri)
            else:
                base = path_or_uri
            return cls(filesystem, normalise_local(base) if "://" not in path_or_uri else base, path_or_uri)
        if "://" in path_or_uri and not path_or_uri.startswith("file://"):
            refusal = user_info_refusal(path_or_uri)
            if refusal is not None:
                raise HudiError(refusal)
            try:
                fs, base = remote_filesystem(path_or_uri, storage_options=storage_options)
            except StorageError:
                raise
            except Exception as exc:  # pyarrow raises several types here
                raise HudiError(redact(f"cannot open storage for {path_or_uri}: {exc}")) from exc
            # The options in force (the CLI's --storage-option included) travel with the storage to whatever opens the table again.
            return cls(fs, base, path_or_uri, storage_options=effective_options(storage_options))
        local = normalise_local(hadoop_local_path(path_or_uri))
        # A relative path becomes absolute here, the boundary every API and command passes:
        # engines and hudi-rs are handed the table's location, and a relative one means nothing to them.
        return cls(pafs.LocalFileSystem(), local, path_or_uri if path_or_uri.startswith("file:") else local)

    def _call(self, what: str, relative: str, call: Callable[[str], T]) -> T:
        """`call(full path)` below the base, with OS and connection errors turned
        into the project's errors naming the file as the user knows it. A store
        that throttles or fails for a moment (503 SlowDown, 500, a dropped
        connection) is asked again with backoff, within the timeout."""
        path = self.full_path(relative)
        self._refuse_links_to(path, relative)
        self.requests.add(REQUEST_KIND.get(what, "OTHER"))
        return retrying(lambda: self._translated(what, relative, lambda: call(path)))

    def refuse_links(self, relative: str) -> None:
        """On a local or mounted file system: refuse a path below the base that
        passes through a symbolic link. Whoever can write the table can plant
        one, and a read, write or delete through it would reach outside (a
        linked `.hoodie/metadata` made `index drop` delete another folder).
        The base itself may be a link: the user named it. Folders found plain
        are remembered; object stores have no links."""
        if self._local and relative:
            self._refuse_links_to(self.full_path(relative), relative)

    def _refuse_links_to(self, path: str, relative: str) -> None:
        """`refuse_links` of `relative`, whose full path is `path`."""
        if not self._local or not relative:
            return
        current = self._link_root
        for part in path[len(self._link_root):].strip("/").split("/"):
            current = posixpath.join(current, part)
            if current in self._plain_folders:
                continue
            try:
                mode = os.lstat(current).st_mode
            except OSError:
                return  # not there (yet): nothing below it can be a link
            if stat.S_ISLNK(mode):
                raise UnsafePathError(f"{self.display_path(relative)}: {current[len(self._link_root):].lstrip('/')!r} is a symbolic "
                                      "link; links below a table are not followed (they could lead outside it)")
            if stat.S_ISDIR(mode):
                self._plain_folders.add(current)

    def _translated(self, what: str, relative: str, call: Callable[[], T]) -> T:
        try:
            return call()
        except StorageError:
            raise
        except FileNotFoundError as exc:
            raise StoredFileNotFound(f"{self.display_path(relative)}: not found ({what})") from exc
        except PermissionError as exc:
            raise StorageError(f"{self.display_path(relative)}: permission denied ({what})") from exc
        except OSError as exc:
            text = str(exc)
            if "ACCESS_DENIED" in text or "AccessDenied" in text:
                raise StorageError(f"{self.display_path(relative)}: access denied ({what}); check the keys and the bucket's policy") from exc
            if "wrong version number" in text or ("SSL" in text and "connect" in text):  # TLS to a plain-HTTP endpoint: never goes away
                raise StorageError(f"{self.display_path(relative)}: cannot {what}: the TLS handshake failed ({text.splitlines()[0]}); "
                                   "for a plain-HTTP endpoint give an http:// endpoint (AWS_ENDPOINT_URL=http://...) or "
                                   "fs.s3a.connection.ssl.enabled=false") from exc
            bucket = re.search(r"Bucket '([^']+)' not found|NoSuchBucket", text)
            if bucket:
                raise StorageError(f"{self.display_path(relative)}: no bucket {bucket.group(1) or self.uri.split('/')[2]!r} ({what})") from exc
            raise (TransientStorageError if is_transient(text) else StorageError)(
                f"{self.display_path(relative)}: cannot {what}: {text}") from exc

    def check_bucket(self) -> None:
        """On an object store: a StorageError naming the bucket when it does
        not exist (an object in a missing bucket only reads as not found)."""
        if not self.is_object_store or "://" not in self.uri:
            return
        bucket = self.base_path.split("/", 1)[0]
        try:
            missing = self.filesystem.get_file_info(bucket).type == pafs.FileType.NotFound
        except OSError:
            return  # not allowed to look: the caller's own error stands
        if missing:
            scheme = self.uri.split("://", 1)[0]
            raise StorageError(f"{scheme}://{bucket}: no such bucket (table {self.uri}); check the name and the endpoint")

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
    def read_bytes(self, relative: str, max_bytes: int | None = None) -> bytes:
        """The file's bytes; with `max_bytes`, a longer file is refused (a hostile table's bounded read)."""
        def read(path: str) -> bytes | None:
            if max_bytes is None:
                with self.filesystem.open_input_stream(path) as stream:
                    return bytes(stream.read())
            with self.filesystem.open_input_file(path) as file:
                if file.size() > max_bytes:
                    return None  # its size first: a longer file is never read
                data = bytes(file.read(max_bytes + 1))
                return data if len(data) <= max_bytes else None  # it grew while we read

        data = self._call("read", relative, read)
        if data is None:
            raise OversizedFile(self.full_path(relative), f"is larger than the {max_bytes} bytes this file may take; not read")
        if self.is_object_store:
            self.requests.add("HEAD")  # pyarrow asks for the object's size before it reads
        self.requests.add_bytes(len(data))
        return data

    def open_random_access(self, relative: str) -> pafs.NativeFile:
        """A file for pyarrow's own readers (Parquet), which retry by the filesystem's strategy."""
        return self._call("open", relative, self.filesystem.open_input_file)

    def open_ranges(self, relative: str) -> RangedFile:
        """A file read by `read_at` ranges (HFiles, log files), each read
        counted, and asked again when an object store fails for a moment."""
        handle = self.open_random_access(relative)
        return RangedFile(handle, lambda call: retrying(lambda: self._translated("read", relative, call)), self.requests,
                          windowed=self.is_object_store)

    def exists(self, relative: str) -> bool:
        return bool(self._call("look up", relative, self.filesystem.get_file_info).type != pafs.FileType.NotFound)

    def modified_time(self, relative: str) -> float | None:
        """When a file or folder was last written (seconds since the epoch; None: absent or the store does not say)."""
        info = self._call("look up", relative, self.filesystem.get_file_info)
        if info.type == pafs.FileType.NotFound or info.mtime is None:
            return None
        return float(info.mtime.timestamp())

    def unless_removed(self, relative: str, read: Callable[[], T], removed: T) -> T:
        """`read()` of a listed file, or `removed` when the file is gone since it
        was listed (a cleaner or a rollback at work beside us: whatever removed
        it records that); a file still there that does not read is an error."""
        try:
            return read()
        except StoredFileNotFound:
            if self.exists(relative):
                raise
            log.info("%s: removed since it was listed (a cleaner at work?)", self.display_path(relative))
            return removed

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

    def list_tree(self, relative: str = "") -> list[StoredFile]:
        """Every file below a folder, at any depth ([] when absent). On an
        object store this is one flat listing, a request per 1,000 keys,
        where a walk would be a request per folder."""
        infos = self._call(
            "list", relative, lambda path: self.filesystem.get_file_info(pafs.FileSelector(path, allow_not_found=True, recursive=True))
        )
        root = self.full_path(relative).rstrip("/")
        files = [StoredFile(join(relative, info.path[len(root) + 1:]), int(info.size or 0)) for info in infos
                 if info.type == pafs.FileType.File]
        for _ in range(max(len(files) - 1, 0) // LIST_PAGE):
            self.requests.add("LIST")  # the store answers a flat listing 1,000 keys a page: the pages after the first
        files.sort(key=lambda f: f.relative_path)
        return files

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
        if self.is_object_store:
            with self._object_stream(relative, target) as out:
                yield out
            return
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
        self._drop_hadoop_checksum(target)
        self._call("write", relative, lambda _: self.filesystem.move(temp, target))

    def _drop_hadoop_checksum(self, target: str) -> None:
        """Hadoop's local filesystem keeps a checksum beside each file it wrote
        (`.<name>.crc`) and refuses a file that no longer matches it: a file
        rewritten here loses its stale checksum first (Hadoop reads a file
        without one unchecked)."""
        checksum = posixpath.join(posixpath.dirname(target), f".{posixpath.basename(target)}.crc")
        if self.filesystem.get_file_info(checksum).type == pafs.FileType.File:
            self.filesystem.delete_file(checksum)

    @contextmanager
    def _object_stream(self, relative: str, target: str) -> Iterator[BinaryIO]:
        """On an object store nothing can be renamed, but an upload is all or
        nothing: the bytes gather here (on disk past 64 MiB) and go up in one
        PUT only when the block ends without error."""
        with tempfile.SpooledTemporaryFile(max_size=64 * 2**20) as spool:
            yield cast(BinaryIO, spool)

            def upload(_: str) -> None:
                spool.seek(0)  # from the start on every attempt: a retried upload sends the whole object again
                with self.filesystem.open_output_stream(target) as out:
                    shutil.copyfileobj(spool, out, 8 * 2**20)

            self._call("write", relative, upload)

    def delete_file(self, relative: str) -> None:
        self._call("delete", relative, self.filesystem.delete_file)
        if not self.is_object_store:
            self._drop_hadoop_checksum(self.full_path(relative))

    def child(self, relative: str) -> Storage:
        """Storage rooted at a folder below this one (e.g. the metadata table); links are refused from this one's root."""
        below = Storage(self.filesystem, self.full_path(relative), join(self.uri, relative) if "://" in self.uri else self.full_path(relative),
                        self.requests, self.storage_options)
        self.refuse_links(relative)
        below._link_root = self._link_root
        return below

    def delete_dir(self, relative: str) -> None:
        """A folder below the base and all it holds; never through a link (`refuse_links`)."""
        if not relative:
            raise UnsafePathError(f"{self.uri}: the table's base folder is never deleted")
        self._call("remove dir", relative, self.filesystem.delete_dir)
        self._plain_folders = {f for f in self._plain_folders if not f.startswith(self.full_path(relative))}

    def make_dirs(self, relative: str) -> None:
        self._call("create", relative, lambda path: self.filesystem.create_dir(path, recursive=True))


