"""The sample table the README's main job builds: trips in a few cities."""

from __future__ import annotations

import random
from datetime import date, datetime, timedelta, timezone
from decimal import Decimal

import pyarrow as pa

from metadata.sample_tables.builder import TableBuilder

TRIPS_SCHEMA = pa.schema(
    [
        ("uuid", pa.string()),
        ("ts", pa.int64()),
        ("rider", pa.string()),
        ("driver", pa.string()),
        ("fare", pa.float64()),
        ("tip", pa.decimal128(10, 2)),
        ("trip_date", pa.date32()),
        ("pickup_time", pa.timestamp("us", tz="UTC")),
        ("city", pa.string()),
    ]
)
CITIES = ("san_francisco", "sao_paulo", "chennai", "amsterdam")


def trip_rows(start: int, count: int, seed: int = 7) -> list[dict[str, object]]:
    rng = random.Random(seed + start)
    base = datetime(2024, 1, 1, tzinfo=timezone.utc)
    rows = []
    for i in range(start, start + count):
        pickup = base + timedelta(minutes=37 * i)
        rows.append(
            {
                "uuid": f"trip-{i:05d}",
                "ts": int(pickup.timestamp() * 1000),
                "rider": f"rider-{rng.randrange(20):02d}",
                "driver": f"driver-{rng.randrange(10):02d}",
                "fare": round(5 + 10 * (i % 10) + rng.random(), 2),
                "tip": Decimal(f"{rng.randrange(0, 1000) / 100:.2f}"),
                "trip_date": date(2024, 1, 1) + timedelta(days=i // 8),
                "pickup_time": pickup,
                "city": CITIES[i % len(CITIES)],
            }
        )
    return rows


def build_sample_table(path: str, table_type: str = "MERGE_ON_READ", version: int = 8) -> TableBuilder:
    """Three inserts, an update, a delete, and a compaction of the updates."""
    builder = TableBuilder(
        path,
        TRIPS_SCHEMA,
        name="trips",
        table_type=table_type,
        version=version,
        partition_fields=["city"],
        record_key="uuid",
        precombine_field="ts",
        max_rows_per_file=10,
    )
    builder.write(trip_rows(0, 40), operation="insert")
    builder.write(trip_rows(40, 20), operation="insert")
    updated = trip_rows(0, 6)
    for row in updated:
        row["fare"] = float(row["fare"]) + 100  # type: ignore[arg-type]
    builder.write(updated)
    builder.delete(["trip-00007"])
    if builder.is_mor:
        builder.run_compaction(builder.schedule_compaction())
    builder.write(trip_rows(60, 12), operation="insert")
    late = trip_rows(10, 3)
    for row in late:
        row["rider"] = "rider-late"
    builder.write(late)
    return builder
