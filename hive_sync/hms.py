"""The `hms` executor: the metastore's own Thrift API (through hmsclient).

Names, values and properties travel as Thrift structures, so nothing is
quoted or parsed and `spark.sql.*` properties are accepted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any, TypeVar
from urllib.parse import urlparse

from hmsclient import HMSClient
from hmsclient.genthrift.hive_metastore import ttypes
from thrift.protocol import TBinaryProtocol
from thrift.Thrift import TException
from thrift.transport import TSocket, TTransport

from hive_sync.errors import SyncError
from hive_sync.model import HivePartition, PartitionValues, RegisteredTable, TableDefinition
from hive_sync.names import partition_name
from hive_sync.schema import HiveColumn
from metadata.util.process import running_user

T = TypeVar("T")
DEFAULT_PORT = 9083


def parse_metastore_uri(uri: str) -> tuple[str, int]:
    """(host, port) of `thrift://host:port` (port 9083 when absent)."""
    parsed = urlparse(uri if "://" in uri else f"thrift://{uri}")
    if parsed.scheme != "thrift" or not parsed.hostname:
        raise SyncError(f"metastore URI {uri!r} is not of the form thrift://host:port")
    try:
        return parsed.hostname, parsed.port or DEFAULT_PORT
    except ValueError:
        raise SyncError(f"metastore URI {uri!r} has an invalid port") from None


def _fields(columns: Sequence[HiveColumn]) -> list[Any]:
    return [ttypes.FieldSchema(name=c.name, type=c.type, comment=c.comment) for c in columns]  # '' as Hudi's HiveSyncTool has it


def _columns(fields: Sequence[Any] | None) -> tuple[HiveColumn, ...]:
    return tuple(HiveColumn(f.name, f.type, f.comment or "") for f in fields or ())


class HmsClient:
    """One connection to a Hive metastore's Thrift API."""

    accepts_spark_properties = True

    def __init__(self, uri: str, timeout_seconds: float = 60.0) -> None:
        self.uri = uri
        host, port = parse_metastore_uri(uri)
        self.calls: Counter[str] = Counter()
        socket = TSocket.TSocket(host, port)
        socket.setTimeout(int(timeout_seconds * 1000))
        protocol = TBinaryProtocol.TBinaryProtocol(TTransport.TBufferedTransport(socket))
        self._client = HMSClient(iprot=protocol, oprot=protocol)
        self._call("open", self._client.open)

    def _call(self, name: str, fn: Callable[..., T], *args: Any, missing_ok: bool = False) -> T | None:
        """One counted round trip; Thrift errors become SyncErrors naming the
        call, and a missing object is None when `missing_ok`."""
        self.calls[name] += 1
        try:
            return fn(*args)
        except ttypes.NoSuchObjectException as exc:
            if missing_ok:
                return None
            raise SyncError(f"metastore {self.uri}: {name} failed: {exc.message}") from exc
        except (TException, OSError) as exc:
            message = getattr(exc, "message", None) or str(exc) or type(exc).__name__
            raise SyncError(f"metastore {self.uri}: {name} failed: {message}") from exc

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> HmsClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def describe(self) -> str:
        return f"metastore {self.uri}"

    # Databases and tables --------------------------------------------------------
    def database_exists(self, database: str) -> bool:
        return self._call("get_database", self._client.get_database, database, missing_ok=True) is not None

    def create_database(self, database: str) -> None:
        try:
            self._call("create_database", self._client.create_database, ttypes.Database(name=database, parameters={}))
        except SyncError as exc:
            if not isinstance(exc.__cause__, ttypes.AlreadyExistsException):
                raise

    def list_tables(self, database: str) -> list[str]:
        """The names of a database's tables (get_all_tables, which Hive 2.3, 3 and 4 all keep)."""
        return sorted(self._call("get_all_tables", self._client.get_all_tables, database) or [])

    def _get_thrift_table(self, database: str, name: str) -> Any | None:
        # get_table_req: Hive 4 dropped get_table (Hive 2.3 and 3 have both)
        result = self._call("get_table", self._client.get_table_req, ttypes.GetTableRequest(dbName=database, tblName=name), missing_ok=True)
        return None if result is None else result.table

    def get_table(self, database: str, name: str) -> RegisteredTable | None:
        table = self._get_thrift_table(database, name)
        if table is None:
            return None
        sd = table.sd
        return RegisteredTable(
            columns=_columns(sd.cols),
            partition_columns=_columns(table.partitionKeys),
            location=sd.location or "",
            params=dict(table.parameters or {}),
            serde_params=dict(sd.serdeInfo.parameters or {}) if sd.serdeInfo else {},
            input_format=sd.inputFormat or "",
        )

    def _storage(self, table: TableDefinition, location: str) -> Any:
        return ttypes.StorageDescriptor(
            cols=_fields(table.columns),
            location=location,
            inputFormat=table.input_format,
            outputFormat=table.output_format,
            compressed=False,
            numBuckets=0,  # not bucketed (Hive reads 0 and -1 alike); 0 is what Hudi's HiveSyncTool registers
            serdeInfo=ttypes.SerDeInfo(name=None, serializationLib=table.serde, parameters=dict(table.serde_params)),
            bucketCols=[],
            sortCols=[],
            parameters={},
        )

    def create_table(self, table: TableDefinition) -> None:
        thrift_table = ttypes.Table(
            tableName=table.name,
            dbName=table.database,
            owner=running_user(),  # as Hudi's HiveSyncTool and Hive's own CREATE TABLE register a table's owner
            sd=self._storage(table, table.location),
            partitionKeys=_fields(table.partition_columns),
            parameters=dict(table.table_params),
            tableType="EXTERNAL_TABLE",
        )
        self._call("create_table", self._client.create_table, thrift_table)

    def _alter(self, database: str, name: str, params: dict[str, str], storage: Any | None = None, cascade: bool = False) -> None:
        """Read the table, set `params` over its own (and the storage when
        given), write it back."""
        current = self._get_thrift_table(database, name)
        if current is None:
            raise SyncError(f"metastore {self.uri}: table {database}.{name} disappeared during the sync")
        if storage is not None:
            current.sd = storage
        current.parameters = {**(current.parameters or {}), **params}
        self._call("alter_table", self._client.alter_table_with_cascade, database, name, current, cascade)

    def alter_table(self, table: TableDefinition, params: dict[str, str], cascade: bool) -> None:
        self._alter(table.database, table.name, params, self._storage(table, table.location), cascade)

    def set_table_params(self, database: str, name: str, params: dict[str, str]) -> None:
        self._alter(database, name, params)

    # Partitions ----------------------------------------------------------------------
    def list_partitions(self, database: str, name: str) -> dict[PartitionValues, str]:
        partitions = self._call("get_partitions", self._client.get_partitions, database, name, -1) or []
        return {tuple(p.values): p.sd.location or "" for p in partitions}

    def get_partitions(self, table: TableDefinition, values: Sequence[PartitionValues]) -> dict[PartitionValues, str]:
        keys = [c.name for c in table.partition_columns]
        names = [partition_name(keys, v) for v in values]
        partitions = self._call("get_partitions_by_names", self._client.get_partitions_by_names, table.database, table.name, names) or []
        return {tuple(p.values): p.sd.location or "" for p in partitions}

    def _partition(self, table: TableDefinition, partition: HivePartition) -> Any:
        return ttypes.Partition(
            values=list(partition.values),
            dbName=table.database,
            tableName=table.name,
            sd=self._storage(table, partition.location),
            parameters={},
        )

    def add_partitions(self, table: TableDefinition, partitions: Sequence[HivePartition]) -> None:
        request = ttypes.AddPartitionsRequest(
            dbName=table.database,
            tblName=table.name,
            parts=[self._partition(table, p) for p in partitions],
            ifNotExists=True,
            needResult=False,
        )
        self._call("add_partitions", self._client.add_partitions_req, request)

    def alter_partitions(self, table: TableDefinition, partitions: Sequence[HivePartition]) -> None:
        parts = [self._partition(table, p) for p in partitions]
        self._call("alter_partitions", self._client.alter_partitions, table.database, table.name, parts)

    def drop_partitions(self, table: TableDefinition, values: Sequence[PartitionValues]) -> None:
        keys = [c.name for c in table.partition_columns]
        request = ttypes.DropPartitionsRequest(
            dbName=table.database,
            tblName=table.name,
            parts=ttypes.RequestPartsSpec(names=[partition_name(keys, v) for v in values]),
            deleteData=False,
            ifExists=True,
            needResult=False,
        )
        self._call("drop_partitions", self._client.drop_partitions_req, request)
