"""Avro schemas of the timeline records this project writes.

They carry the fields Hudi's own models (HoodieCommitMetadata,
HoodieReplaceCommitMetadata, HoodieCleanMetadata, HoodieRollbackMetadata,
HoodieCompactionPlan) use, with the same names, so readers that decode with
the writer schema stored in each file (Hudi, hudi-rs, this project) read
them alike.
"""

from __future__ import annotations

from typing import Any

NAMESPACE = "org.apache.hudi.avro.model"


def _opt(name: str, avro_type: Any) -> dict[str, Any]:
    return {"name": name, "type": ["null", avro_type], "default": None}


WRITE_STAT: dict[str, Any] = {
    "type": "record",
    "name": "HoodieWriteStat",
    "fields": [
        _opt("fileId", "string"),
        _opt("path", "string"),
        _opt("prevCommit", "string"),
        _opt("numWrites", "long"),
        _opt("numDeletes", "long"),
        _opt("numUpdateWrites", "long"),
        _opt("totalWriteBytes", "long"),
        _opt("totalWriteErrors", "long"),
        _opt("partitionPath", "string"),
        _opt("numInserts", "long"),
        _opt("fileSizeInBytes", "long"),
        _opt("baseFile", "string"),
        _opt("logFiles", {"type": "array", "items": "string"}),
        _opt("cdcStats", {"type": "map", "values": "long"}),
    ],
}


def commit_metadata_schema(with_replace: bool) -> dict[str, Any]:
    fields: list[dict[str, Any]] = [
        _opt("partitionToWriteStats", {"type": "map", "values": {"type": "array", "items": WRITE_STAT}}),
        _opt("compacted", "boolean"),
        _opt("extraMetadata", {"type": "map", "values": "string"}),
        _opt("version", "int"),
        _opt("operationType", "string"),
    ]
    if with_replace:
        fields.append(_opt("partitionToReplaceFileIds", {"type": "map", "values": {"type": "array", "items": "string"}}))
    return {
        "type": "record",
        "name": "HoodieReplaceCommitMetadata" if with_replace else "HoodieCommitMetadata",
        "namespace": NAMESPACE,
        "fields": fields,
    }


CLEAN_METADATA: dict[str, Any] = {
    "type": "record",
    "name": "HoodieCleanMetadata",
    "namespace": NAMESPACE,
    "fields": [
        {"name": "startCleanTime", "type": "string"},
        {"name": "timeTakenInMillis", "type": "long"},
        {"name": "totalFilesDeleted", "type": "int"},
        {"name": "earliestCommitToRetain", "type": "string"},
        _opt("lastCompletedCommitTimestamp", "string"),
        {
            "name": "partitionMetadata",
            "type": {
                "type": "map",
                "values": {
                    "type": "record",
                    "name": "HoodieCleanPartitionMetadata",
                    "fields": [
                        {"name": "partitionPath", "type": "string"},
                        {"name": "policy", "type": "string"},
                        {"name": "deletePathPatterns", "type": {"type": "array", "items": "string"}},
                        {"name": "successDeleteFiles", "type": {"type": "array", "items": "string"}},
                        {"name": "failedDeleteFiles", "type": {"type": "array", "items": "string"}},
                        _opt("isPartitionDeleted", "boolean"),
                    ],
                },
            },
        },
        {"name": "version", "type": ["int", "null"], "default": 2},
    ],
}

ROLLBACK_METADATA: dict[str, Any] = {
    "type": "record",
    "name": "HoodieRollbackMetadata",
    "namespace": NAMESPACE,
    "fields": [
        {"name": "startRollbackTime", "type": "string"},
        {"name": "timeTakenInMillis", "type": "long"},
        {"name": "totalFilesDeleted", "type": "int"},
        {"name": "commitsRollback", "type": {"type": "array", "items": "string"}},
        {
            "name": "partitionMetadata",
            "type": {
                "type": "map",
                "values": {
                    "type": "record",
                    "name": "HoodieRollbackPartitionMetadata",
                    "fields": [
                        {"name": "partitionPath", "type": "string"},
                        {"name": "successDeleteFiles", "type": {"type": "array", "items": "string"}},
                        {"name": "failedDeleteFiles", "type": {"type": "array", "items": "string"}},
                        _opt("rollbackLogFiles", {"type": "map", "values": "long"}),
                    ],
                },
            },
        },
        {"name": "version", "type": ["int", "null"], "default": 1},
    ],
}

COMPACTION_PLAN: dict[str, Any] = {
    "type": "record",
    "name": "HoodieCompactionPlan",
    "namespace": NAMESPACE,
    "fields": [
        _opt(
            "operations",
            {
                "type": "array",
                "items": {
                    "type": "record",
                    "name": "HoodieCompactionOperation",
                    "fields": [
                        _opt("baseInstantTime", "string"),
                        _opt("deltaFilePaths", {"type": "array", "items": "string"}),
                        _opt("dataFilePath", "string"),
                        _opt("fileId", "string"),
                        _opt("partitionPath", "string"),
                        _opt("metrics", {"type": "map", "values": "double"}),
                    ],
                },
            },
        ),
        _opt("extraMetadata", {"type": "map", "values": "string"}),
        {"name": "version", "type": ["int", "null"], "default": 1},
    ],
}
