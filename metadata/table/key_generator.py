"""What the table's key generator put in its partition paths.

Partition-value pruning compares a predicate with the values in partition
paths, which is right only where a path holds the field's own value: Hudi's
SIMPLE and COMPLEX key generators (and CUSTOM fields of type SIMPLE). A
TIMESTAMP key generator (or a CUSTOM field of type TIMESTAMP) writes a
formatted time (`2023-06-01T08:15:00Z` becomes `2023/06/01/08`), so comparing
the predicate's value with the path text would drop matching partitions.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta, tzinfo
from decimal import Decimal
from typing import Any

from metadata.util.datetime_pattern import FixedWidthParser, Pattern, fixed_width_parser, parse_pattern
from metadata.util.text_enum import TextEnum
from metadata.util.time_zone import EPOCH, fixed_offset, time_zone

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
    # TIMESTAMP (and CUSTOM TIMESTAMP) fields: the transform, or why it is not known.
    timestamp: TimestampPartitioning | str | None = None

    @classmethod
    def from_properties(cls, props: dict[str, str]) -> KeyGenerator:
        field_types = {}
        for spec in props.get(PARTITION_FIELDS_KEY, "").split(","):
            name, _, kind = spec.strip().partition(":")
            if name and kind:
                field_types[name] = kind.strip().upper()
        type_name = props.get(TYPE_KEY, "").strip().upper()
        class_name = props.get(CLASS_KEY, "").strip()
        if type_name:
            kind, name = _TYPE_NAMES.get(type_name, KeyGeneratorType.OTHER), type_name
        elif class_name:
            kind, name = _CLASSES.get(class_name.rsplit(".", 1)[-1], KeyGeneratorType.OTHER), class_name
        else:  # no key generator recorded: Hudi's default, the field's value as written
            kind, name = KeyGeneratorType.SIMPLE, "SIMPLE (default)"
        timestamp = None
        if kind in (KeyGeneratorType.TIMESTAMP, KeyGeneratorType.CUSTOM):
            timestamp = TimestampPartitioning.from_properties(props)
        return cls(kind, name, field_types, timestamp)

    def timestamp_partitioning(self, field: str) -> TimestampPartitioning | str | None:
        """For a field written as a formatted time: its transform, or why it
        is not known; None for fields written otherwise."""
        if self.type is KeyGeneratorType.TIMESTAMP or (self.type is KeyGeneratorType.CUSTOM and self.field_types.get(field) == "TIMESTAMP"):
            return self.timestamp
        return None

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


class TimestampType(TextEnum):
    """`hoodie.keygen.timebased.timestamp.type`: what the field holds."""

    UNIX_TIMESTAMP = "UNIX_TIMESTAMP"  # seconds
    EPOCHMILLISECONDS = "EPOCHMILLISECONDS"
    EPOCHMICROSECONDS = "EPOCHMICROSECONDS"
    SCALAR = "SCALAR"  # a number in hoodie.keygen.timebased.timestamp.scalar.time.unit
    DATE_STRING = "DATE_STRING"  # text in one of the input formats
    MIXED = "MIXED"


_PREFIX = "hoodie.keygen.timebased."
_MICROS_PER = {"NANOSECONDS": None, "MICROSECONDS": 1, "MILLISECONDS": 1_000, "SECONDS": 1_000_000, "MINUTES": 60_000_000,
               "HOURS": 3_600_000_000, "DAYS": 86_400_000_000}


@dataclass(frozen=True)
class TimestampPartitioning:
    """How Hudi's TimestampBasedKeyGenerator turns a value into a path
    (`TimestampBasedAvroKeyGenerator.getPartitionPath`): a number is a time
    in its unit (truncated towards zero), a string is parsed with the input
    format in the input zone, and the time is printed with the output format
    in the output zone."""

    timestamp_type: TimestampType
    output: Pattern
    zone: tzinfo
    fixed_zone: bool
    micros_per_unit: int | None = None
    inputs: tuple[FixedWidthParser, ...] = ()
    input_zone: tzinfo | None = None

    @classmethod
    def from_properties(cls, props: dict[str, str]) -> TimestampPartitioning | str:
        """The transform, or why it is not known exactly."""
        try:
            kind = TimestampType(props.get(_PREFIX + "timestamp.type", "").strip().upper())
        except ValueError:
            return f"timestamp type {props.get(_PREFIX + 'timestamp.type')!r} is not one Hudi defines"
        output_text = props.get(_PREFIX + "output.dateformat", "")
        output = parse_pattern(output_text)
        if output is None:
            return f"output format {output_text!r} has fields this planner does not format"
        zone_name = props.get(_PREFIX + "output.timezone") or props.get(_PREFIX + "timezone")
        if not zone_name:
            return "no output time zone is recorded (Hudi would use the writer's JVM zone)"
        zone = time_zone(zone_name)
        if zone is None:
            return f"unknown time zone {zone_name!r}"
        fixed = fixed_offset(zone_name) is not None
        if kind in (TimestampType.DATE_STRING, TimestampType.MIXED):
            delimiter = props.get(_PREFIX + "input.dateformat.list.delimiter.regex", ",") or ","
            parsers = []
            for text in re.split(delimiter, props.get(_PREFIX + "input.dateformat", "")):
                pattern = parse_pattern(text.strip(), offsets=True)
                parser = fixed_width_parser(pattern) if pattern is not None else None
                if parser is None:
                    return f"input format {text.strip()!r} is not one this planner parses exactly"
                parsers.append(parser)
            input_zone_name = props.get(_PREFIX + "input.timezone") or zone_name
            input_zone = time_zone(input_zone_name)
            if input_zone is None:
                return f"unknown time zone {input_zone_name!r}"
            if kind is TimestampType.MIXED:
                return "MIXED timestamps (text or numbers) are not mapped"
            return cls(kind, output, zone, fixed, inputs=tuple(parsers), input_zone=input_zone)
        unit = {TimestampType.UNIX_TIMESTAMP: "SECONDS", TimestampType.EPOCHMILLISECONDS: "MILLISECONDS",
                TimestampType.EPOCHMICROSECONDS: "MICROSECONDS"}.get(kind) or props.get(_PREFIX + "timestamp.scalar.time.unit", "SECONDS").upper()
        micros = _MICROS_PER.get(unit)
        if micros is None:
            return f"scalar time unit {unit!r} is not mapped"
        return cls(kind, output, zone, fixed, micros_per_unit=micros)

    def instant(self, value: Any) -> datetime | None:
        """The time a field value stands for (None where it has none)."""
        if isinstance(value, str):
            for parser in self.inputs:
                moment = parser.parse(value)
                if moment is not None:
                    return moment if moment.tzinfo is not None else moment.replace(tzinfo=self.input_zone)
            return None
        if self.micros_per_unit is None or isinstance(value, bool) or not isinstance(value, (int, float, Decimal)):
            return None
        micros = int(value) * self.micros_per_unit
        millis = abs(micros) // 1000 * (1 if micros >= 0 else -1)  # Hudi's conversion to milliseconds truncates towards zero
        micros = millis * 1000
        try:
            return EPOCH + timedelta(microseconds=micros)
        except OverflowError:
            return None

    def path_value(self, value: Any) -> str | None:
        """The partition path text Hudi writes for a field value."""
        moment = self.instant(value)
        if moment is None:
            return None
        try:
            return self.output.format(moment.astimezone(self.zone).replace(tzinfo=None))
        except (OverflowError, ValueError):
            return None

    @property
    def path_segments(self) -> int:
        """Path segments a formatted time spans (`yyyy/MM/dd` spans 3): no field prints a '/'."""
        return self.output.format(datetime(2000, 1, 1)).count("/") + 1

    def why_not_monotone(self) -> str | None:
        """None when a larger value never gets a smaller path (ranges map);
        else why only equality maps."""
        if fixed_width_parser(self.output) is None:
            return f"output format {self.output.text!r} is not fixed-width year-first, so paths do not sort as times"
        if self.inputs and any(p.has_offset for p in self.inputs):
            return "input times carry zone offsets, so their text does not sort as times"
        if not self.fixed_zone:
            return "the output time zone has daylight saving time, so local times do not sort as instants"
        return None
