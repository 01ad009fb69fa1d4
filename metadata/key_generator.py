"""What the table's key generator put in its partition paths.

Partition-value pruning compares a predicate with the values in partition
paths, which is right only where a path holds the field's own value: Hudi's
SIMPLE and COMPLEX key generators (and CUSTOM fields of type SIMPLE). A
TIMESTAMP key generator (or a CUSTOM field of type TIMESTAMP) writes a
formatted time (`2023-06-01T08:15:00Z` becomes `2023/06/01/08`), so comparing
the predicate's value with the path text would drop matching partitions.
"""

from __future__ import annotations

from dataclasses import dataclass

from metadata.text_enum import TextEnum

TYPE_KEY = "hoodie.table.keygenerator.type"  # table v8+
CLASS_KEY = "hoodie.table.keygenerator.class"  # table v6 (and kept on v8+ by some writers)
PARTITION_FIELDS_KEY = "hoodie.table.partition.fields"  # on v8+ CUSTOM fields carry ":SIMPLE" / ":TIMESTAMP"


class KeyGeneratorType(TextEnum):
    SIMPLE = "SIMPLE"
    COMPLEX = "COMPLEX"
    TIMESTAMP = "TIMESTAMP"
    CUSTOM = "CUSTOM"
    NON_PARTITION = "NON_PARTITION"
    GLOBAL_DELETE = "GLOBAL_DELETE"
    SPARK_SQL = "SPARK_SQL"  # Spark SQL's SqlKeyGenerator, wrapping one of the above
    OTHER = "OTHER"  # a user-provided class: what its paths hold is unknown


# Hudi's classes (org.apache.hudi.keygen.* and the Avro variants) by simple name.
_CLASSES = {
    "SimpleKeyGenerator": KeyGeneratorType.SIMPLE,
    "SimpleAvroKeyGenerator": KeyGeneratorType.SIMPLE,
    "ComplexKeyGenerator": KeyGeneratorType.COMPLEX,
    "ComplexAvroKeyGenerator": KeyGeneratorType.COMPLEX,
    "TimestampBasedKeyGenerator": KeyGeneratorType.TIMESTAMP,
    "TimestampBasedAvroKeyGenerator": KeyGeneratorType.TIMESTAMP,
    "CustomKeyGenerator": KeyGeneratorType.CUSTOM,
    "CustomAvroKeyGenerator": KeyGeneratorType.CUSTOM,
    "NonpartitionedKeyGenerator": KeyGeneratorType.NON_PARTITION,
    "NonpartitionedAvroKeyGenerator": KeyGeneratorType.NON_PARTITION,
    "GlobalDeleteKeyGenerator": KeyGeneratorType.GLOBAL_DELETE,
    "SqlKeyGenerator": KeyGeneratorType.SPARK_SQL,
}
# Types Hudi 1.x writes under hoodie.table.keygenerator.type, by their base type.
_TYPE_NAMES = {t.value: t for t in KeyGeneratorType} | {
    "SIMPLE_AVRO": KeyGeneratorType.SIMPLE,
    "COMPLEX_AVRO": KeyGeneratorType.COMPLEX,
    "TIMESTAMP_AVRO": KeyGeneratorType.TIMESTAMP,
    "CUSTOM_AVRO": KeyGeneratorType.CUSTOM,
    "NON_PARTITION_AVRO": KeyGeneratorType.NON_PARTITION,
    "GLOBAL_DELETE_AVRO": KeyGeneratorType.GLOBAL_DELETE,
}


@dataclass(frozen=True)
class KeyGenerator:
    type: KeyGeneratorType
    name: str  # as the table config names it, for messages
    field_types: dict[str, str]  # CUSTOM: field -> SIMPLE / TIMESTAMP, where the config records it

    @classmethod
    def from_properties(cls, props: dict[str, str]) -> KeyGenerator:
        field_types = {}
        for spec in props.get(PARTITION_FIELDS_KEY, "").split(","):
            name, _, kind = spec.strip().partition(":")
            if name and kind:
                field_types[name] = kind.strip().upper()
        type_name = props.get(TYPE_KEY, "").strip().upper()
        if type_name:
            return cls(_TYPE_NAMES.get(type_name, KeyGeneratorType.OTHER), type_name, field_types)
        class_name = props.get(CLASS_KEY, "").strip()
        if class_name:
            return cls(_CLASSES.get(class_name.rsplit(".", 1)[-1], KeyGeneratorType.OTHER), class_name, field_types)
        # No key generator recorded: Hudi's default, the field's value as written.
        return cls(KeyGeneratorType.SIMPLE, "SIMPLE (default)", field_types)

    def why_path_is_not_the_value(self, field: str, is_timestamp_column: bool = False) -> str | None:
        """None when the partition path holds `field`'s value; else why not."""
        kind = self.type
        if kind in (KeyGeneratorType.SIMPLE, KeyGeneratorType.COMPLEX, KeyGeneratorType.NON_PARTITION, KeyGeneratorType.GLOBAL_DELETE):
            return None
        if kind is KeyGeneratorType.SPARK_SQL:
            # SqlKeyGenerator formats timestamp columns into the path; other values are as written.
            return f"key generator {self.name} formats timestamp column {field} into the path" if is_timestamp_column else None
        if kind is KeyGeneratorType.CUSTOM:
            field_type = self.field_types.get(field)
            if field_type == "SIMPLE":
                return None
            if field_type is None:
                return f"key generator {self.name} does not record whether {field} is SIMPLE or TIMESTAMP"
            return f"key generator {self.name} writes {field} as {field_type}, a transformed value"
        if kind is KeyGeneratorType.TIMESTAMP:
            return f"key generator {self.name} writes a formatted time for {field}, not its value"
        return f"key generator {self.name} is not one whose paths are known to hold the value of {field}"
