"""A storage listing held on local disk, not in memory: what a build walks
once and reads back a run of partitions at a time. A million files' listing
held as `StoredFile`s took 430 MiB of a build's driver; spilled, it costs a
partition index and one batch of names."""

from __future__ import annotations

import os
import tempfile

import numpy as np
import pyarrow as pa

from metadata.storage.listing import StorageListing
from metadata.storage.paths import StoredFile, join
from metadata.storage.storage import Storage
from metadata.util import arrow_values

SPILL_BATCH_FILES = 8192  # names written (and read back) as one Arrow batch
SPILL_SCHEMA = pa.schema([("name", pa.string()), ("size", pa.int64())])


class SpilledListing(StorageListing):
    """`StorageListing` whose walk writes each partition's files to a
    temporary Arrow file as it finds them; `files_for` reads them back each
    time it is asked (nothing is kept). Partitions the walk did not find are
    listed from storage as usual."""

    def __init__(self, storage: Storage, why: str = "", warning: str | None = None) -> None:
        super().__init__(storage, why, warning)
        self._folder = tempfile.TemporaryDirectory(prefix="hudi-bridge-listing-")  # removed with this object
        self._path = os.path.join(self._folder.name, "files.arrow")
        self._writer: pa.ipc.RecordBatchFileWriter | None = None
        self._reader: pa.ipc.RecordBatchFileReader | None = None
        self._names: list[str] = []  # the batch being filled
        self._sizes: list[int] = []
        self._batches = 0  # batches written
        self._where: dict[str, tuple[int, int, int]] = {}  # partition -> (batch, first row, rows)
        self._last: tuple[int, pa.RecordBatch] | None = None  # the batch read last (a run reads neighbours)

    def _keep(self, partition: str, files: list[StoredFile]) -> None:
        self._where[partition] = (self._batches, len(self._names), len(files))
        self._names.extend(f.name for f in files)
        self._sizes.extend(f.size for f in files)
        if len(self._names) >= SPILL_BATCH_FILES:
            self._flush()

    def _flush(self) -> None:
        if not self._names:
            return
        if self._writer is None:
            self._writer = pa.ipc.new_file(self._path, SPILL_SCHEMA)
        # through arrow_values: pa.array of Python values imports pandas (0.2 s or more where it is installed)
        self._writer.write_batch(pa.record_batch([arrow_values.strings(self._names),
                                                  arrow_values.from_numpy(np.array(self._sizes, dtype=np.int64))], schema=SPILL_SCHEMA))
        self._batches += 1
        self._names, self._sizes = [], []

    def _walk(self) -> list[str]:
        found = super()._walk()
        self._flush()
        if self._writer is not None:
            self._writer.close()
            self._reader = pa.ipc.open_file(pa.OSFile(self._path))  # read into memory, not mapped: RSS stays a batch
        return found

    def files_for(self, partitions: list[str]) -> dict[str, list[StoredFile]]:
        with self._lock:
            spilled = {p: self._read(p) for p in partitions if p in self._where}
        rest = [p for p in partitions if p not in spilled]
        listed = super().files_for(rest) if rest else {}
        return {p: spilled[p] if p in spilled else listed[p] for p in partitions}

    def _read(self, partition: str) -> list[StoredFile]:
        batch_index, first, rows = self._where[partition]
        if not rows:
            return []
        if self._last is None or self._last[0] != batch_index:
            assert self._reader is not None, "a partition is indexed only once its batch is written"
            self._last = (batch_index, self._reader.get_batch(batch_index))
        batch = self._last[1]
        names = batch.column(0).slice(first, rows).to_pylist()
        sizes = batch.column(1).slice(first, rows).to_pylist()
        return [StoredFile(join(partition, name), size) for name, size in zip(names, sizes)]
