"""Storage access for a table rooted at a base path, through `pyarrow.fs`.

All reads and writes of table files go through `Storage`, so local paths,
s3://, hdfs:// and gs:// behave alike, and tests can pass their own
`pyarrow.fs.FileSystem` (for example one that counts calls).
"""

from __future__ import annotations

import posixpath
import uuid
from dataclasses import dataclass

import pyarrow.fs as pafs

from metadata.errors import HudiError, UnsafePathError


@dataclass(frozen=True)
class StoredFile:
    """One file found by a listing: its path relative to the base and size."""

    relative_path: str
    size: int

    @property
    def name(self) -> str:
        return posixpath.basename(self.relative_path)


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
                fs, base = pafs.FileSystem.from_uri(path_or_uri)
            except Exception as exc:  # pyarrow raises several types here
                raise HudiError(f"cannot open storage for {path_or_uri}: {exc}") from exc
            return cls(fs, base, path_or_uri)
        local = path_or_uri[len("file://"):] if path_or_uri.startswith("file://") else path_or_uri
        return cls(pafs.LocalFileSystem(), _normalise_local(local), path_or_uri)

    def child(self, relative: str) -> Storage:
        """Storage rooted at a folder below this one (e.g. the metadata table)."""
        return Storage(self.filesystem, self.full_path(relative), join(self.uri, relative) if "://" in self.uri else self.full_path(relative))

    def full_path(self, relative: str) -> str:
        """The path of a file below the base; never outside it."""
        reason = unsafe_reason(relative)
        if reason is not None:
            raise UnsafePathError(f"{self.uri}: {relative!r} {reason}: it would resolve outside the table")
        return posixpath.join(self.base_path, relative) if relative else self.base_path

    # Reading -------------------------------------------------------------
    def read_bytes(self, relative: str) -> bytes:
        with self.filesystem.open_input_stream(self.full_path(relative)) as stream:
            return stream.read()

    def open_random_access(self, relative: str) -> pafs.NativeFile:
        return self.filesystem.open_input_file(self.full_path(relative))

    def exists(self, relative: str) -> bool:
        info = self.filesystem.get_file_info(self.full_path(relative))
        return info.type != pafs.FileType.NotFound

    def is_dir(self, relative: str) -> bool:
        return self.filesystem.get_file_info(self.full_path(relative)).type == pafs.FileType.Directory

    def list_dir(self, relative: str = "") -> tuple[list[StoredFile], list[str]]:
        """Files and sub-folder names directly inside a folder ([] when absent)."""
        selector = pafs.FileSelector(self.full_path(relative), allow_not_found=True, recursive=False)
        files: list[StoredFile] = []
        folders: list[str] = []
        for info in self.filesystem.get_file_info(selector):
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
        """Write a file so that readers never see it half written.

        The bytes go to a hidden temporary name in the same folder first and
        are moved into place; on object stores the move is a copy, which is
        still all-or-nothing for readers of the final name.
        """
        target = self.full_path(relative)
        folder = posixpath.dirname(target)
        self.filesystem.create_dir(folder, recursive=True)
        temp = posixpath.join(folder, f".tmp-{uuid.uuid4().hex}-{posixpath.basename(target)}")
        with self.filesystem.open_output_stream(temp) as out:
            out.write(data)
        self.filesystem.move(temp, target)

    def delete_file(self, relative: str) -> None:
        self.filesystem.delete_file(self.full_path(relative))

    def make_dirs(self, relative: str) -> None:
        self.filesystem.create_dir(self.full_path(relative), recursive=True)


def _normalise_local(path: str) -> str:
    import os

    return os.path.abspath(os.path.expanduser(path))
