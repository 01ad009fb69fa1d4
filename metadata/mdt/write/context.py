"""What every partition writer is given: the transaction (and through it the
data table and the metadata table's storage), the engine that reads
statistics, the evaluator of expression indexes and the progress line."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import pyarrow as pa

from metadata.mdt.expression_index import IndexExpressions
from metadata.mdt.file_stats import ColumnRange
from metadata.mdt.stats_engine import StatsEngine, engine_ranges
from metadata.mdt.write.table_inputs import completed_instants
from metadata.mdt.write.transaction import MetadataTransaction
from metadata.storage.storage import Storage
from metadata.table.stored_table import TableParts


@dataclass
class WriteContext:
    tx: MetadataTransaction
    engine: StatsEngine
    index_expressions: IndexExpressions | None
    progress: Callable[[str], None]

    @property
    def data(self) -> TableParts:
        """The data table as the transaction last loaded it."""
        return self.tx.data

    @property
    def storage(self) -> Storage:
        return self.tx.storage

    @property
    def version(self) -> int:
        return self.tx.version

    @property
    def schema_json(self) -> str:
        """The metadata record schema the HFiles and log blocks carry."""
        return self.tx.schema_json

    def file_ranges(self, files: Sequence[tuple[str, str | None]], columns: Sequence[str], schema: pa.Schema) -> list[ColumnRange]:
        """Column ranges of data files ((path, instant whose blocks alone count) pairs), read by the engine."""
        return engine_ranges(self.engine, self.storage.uri, files, columns, schema, completed_instants(self.data),
                             self.storage.storage_options)
