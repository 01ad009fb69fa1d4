"""The HoodieMetadataRecord Avro schema this project writes, and encoding.

Field names, record names and union order follow Hudi 1.1 (table v9) for the
parts this project writes: the files, column/partition stats and record
index payloads.
Readers decode with the writer schema stored in each file, so a subset of
Hudi's optional fields is enough.
"""

from __future__ import annotations

import json
from typing import Any

from metadata._moved import moved_attribute

NS = "org.apache.hudi.avro.model"


def _wrapper(name: str, value_type: Any) -> dict[str, Any]:
    return {"type": "record", "name": name, "namespace": NS, "fields": [{"name": "value", "type": value_type}]}


WRAPPERS = [
    _wrapper("BooleanWrapper", "boolean"),
    _wrapper("IntWrapper", "int"),
    _wrapper("LongWrapper", "long"),
    _wrapper("FloatWrapper", "float"),
    _wrapper("DoubleWrapper", "double"),
    _wrapper("BytesWrapper", "bytes"),
    _wrapper("StringWrapper", "string"),
]

METADATA_RECORD_SCHEMA: dict[str, Any] = {
    "type": "record",
    "name": "HoodieMetadataRecord",
    "namespace": NS,
    "fields": [
        {"name": "key", "type": "string"},
        {"name": "type", "type": "int"},
        {
            "name": "filesystemMetadata",
            "type": [
                "null",
                {
                    "type": "map",
                    "values": {
                        "type": "record",
                        "name": "HoodieMetadataFileInfo",
                        "namespace": NS,
                        "fields": [{"name": "size", "type": "long"}, {"name": "isDeleted", "type": "boolean"}],
                    },
                },
            ],
            "default": None,
        },
        {
            "name": "BloomFilterMetadata",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "HoodieMetadataBloomFilter",
                    "namespace": NS,
                    "fields": [
                        {"name": "type", "type": "string"},
                        {"name": "timestamp", "type": "string"},
                        {"name": "bloomFilter", "type": "bytes"},
                        {"name": "isDeleted", "type": "boolean"},
                    ],
                },
            ],
            "default": None,
        },
        {
            "name": "ColumnStatsMetadata",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "HoodieMetadataColumnStats",
                    "namespace": NS,
                    "fields": [
                        {"name": "fileName", "type": ["null", "string"], "default": None},
                        {"name": "columnName", "type": ["null", "string"], "default": None},
                        {"name": "minValue", "type": ["null", *WRAPPERS], "default": None},
                        {"name": "maxValue", "type": ["null", *[w["namespace"] + "." + w["name"] for w in WRAPPERS]], "default": None},
                        {"name": "valueCount", "type": ["null", "long"], "default": None},
                        {"name": "nullCount", "type": ["null", "long"], "default": None},
                        {"name": "totalSize", "type": ["null", "long"], "default": None},
                        {"name": "totalUncompressedSize", "type": ["null", "long"], "default": None},
                        {"name": "isDeleted", "type": "boolean"},
                        {"name": "isTightBound", "type": "boolean", "default": False},
                        {
                            "name": "valueType",
                            "type": [
                                "null",
                                {
                                    "type": "record",
                                    "name": "HoodieValueTypeInfo",
                                    "namespace": NS,
                                    "fields": [
                                        {"name": "typeOrdinal", "type": "int"},
                                        {"name": "additionalInfo", "type": ["null", "string"], "default": None},
                                    ],
                                },
                            ],
                            "default": None,
                        },
                    ],
                },
            ],
            "default": None,
        },
        {
            "name": "recordIndexMetadata",
            "type": [
                "null",
                {
                    "type": "record",
                    "name": "HoodieRecordIndexInfo",
                    "namespace": NS,
                    "fields": [
                        {"name": "partitionName", "type": ["null", "string"], "default": None},
                        {"name": "fileIdHighBits", "type": ["null", "long"], "default": None},
                        {"name": "fileIdLowBits", "type": ["null", "long"], "default": None},
                        {"name": "fileIndex", "type": ["null", "int"], "default": None},
                        {"name": "fileId", "type": ["null", "string"], "default": None},
                        {"name": "instantTime", "type": ["null", "long"], "default": None},
                        {"name": "fileIdEncoding", "type": "int", "default": 0},
                        {"name": "position", "type": ["null", "long"], "default": None},
                    ],
                },
            ],
            "default": None,
        },
        {
            "name": "SecondaryIndexMetadata",
            "type": [
                "null",
                {"type": "record", "name": "HoodieSecondaryIndexInfo", "namespace": NS, "fields": [{"name": "isDeleted", "type": "boolean"}]},
            ],
            "default": None,
        },
    ],
}
def with_java_strings(node: Any) -> Any:
    """The schema as Hudi's generated classes declare it: every string (and map
    key) marked `"avro.java.string": "String"`. Hudi reads metadata records with
    the writer's schema; without the mark Avro hands it Utf8 where it casts to
    String (Hudi 1.0 fails: "Utf8 cannot be cast to String")."""
    if node == "string":
        return {"type": "string", "avro.java.string": "String"}
    if isinstance(node, list):
        return [with_java_strings(n) for n in node]
    if not isinstance(node, dict):
        return node
    if node.get("type") == "record":
        return {**node, "fields": [{**f, "type": with_java_strings(f["type"])} for f in node["fields"]]}
    if node.get("type") == "map":
        return {**node, "values": with_java_strings(node["values"]), "avro.java.string": "String"}
    if node.get("type") == "array":
        return {**node, "items": with_java_strings(node["items"])}
    return node


METADATA_RECORD_SCHEMA = with_java_strings(METADATA_RECORD_SCHEMA)
METADATA_RECORD_SCHEMA_JSON = json.dumps(METADATA_RECORD_SCHEMA, separators=(",", ":"))

# Hudi 0.14/1.0 (table v6, v8): logical types live in their own wrappers
# (DateWrapper, DecimalWrapper as decimal(30,15), TimestampMicrosWrapper...)
# and there is no valueType.
LEGACY_WRAPPERS = [
    *WRAPPERS,
    _wrapper("DateWrapper", "int"),
    _wrapper("DecimalWrapper", {"type": "bytes", "logicalType": "decimal", "precision": 30, "scale": 15}),
    _wrapper("TimeMicrosWrapper", {"type": "long", "logicalType": "time-micros"}),
    _wrapper("TimestampMicrosWrapper", "long"),
    _wrapper("LocalDateWrapper", "int"),
]


def _legacy_schema() -> dict[str, Any]:
    schema = json.loads(METADATA_RECORD_SCHEMA_JSON)
    stats = next(f for f in schema["fields"] if f["name"] == "ColumnStatsMetadata")["type"][1]
    fields = [f for f in stats["fields"] if f["name"] != "valueType"]
    for f in fields:
        if f["name"] == "minValue":
            f["type"] = ["null", *LEGACY_WRAPPERS]
        elif f["name"] == "maxValue":
            f["type"] = ["null", *[w["namespace"] + "." + w["name"] for w in LEGACY_WRAPPERS]]
    stats["fields"] = fields
    return schema


LEGACY_METADATA_RECORD_SCHEMA_JSON = json.dumps(_legacy_schema(), separators=(",", ":"))


def record_schema_json(table_version: int) -> str:
    """The HoodieMetadataRecord schema a table of this version's writer uses."""
    return METADATA_RECORD_SCHEMA_JSON if table_version >= 9 else LEGACY_METADATA_RECORD_SCHEMA_JSON


# Names this module offered before it was split, for one release.
_MOVED = {"wrap_typed": "metadata.mdt.record_builders", "range_record": "metadata.mdt.record_builders", "files_record": "metadata.mdt.record_builders", "bloom_filter_record": "metadata.mdt.record_builders", "removed_bloom_filter_records": "metadata.mdt.record_builders", "secondary_index_record": "metadata.mdt.record_builders", "record_index_record": "metadata.mdt.record_builders", "stat_type_of": "metadata.mdt.record_builders", "column_stats_record": "metadata.mdt.record_builders"}


def __getattr__(name: str) -> Any:
    return moved_attribute(__name__, name, _MOVED)
