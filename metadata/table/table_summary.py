"""What a table is, in plain values: its summary and its timeline's rows
(the CLI's `table show`/`table timeline` and the service's table pages)."""

from __future__ import annotations

from typing import Any

from metadata.table.hudi_table import HudiTable


def table_summary(t: HudiTable) -> dict[str, Any]:
    latest = t.timeline.latest_completed()
    return {
        "name": t.name,
        "base_uri": t.base_uri,
        "table_type": t.config.table_type.value,
        "table_version": t.config.version,
        "timeline_layout": t.config.timeline_layout_version,
        "partition_fields": list(t.config.partition_fields),
        "record_key_fields": list(t.config.record_key_fields),
        "metadata_partitions": list(t.config.metadata_partitions),
        "instants": len(t.timeline.instants),
        "latest_completed": latest.requested_time if latest else None,
    }


def timeline_rows(t: HudiTable) -> list[dict[str, Any]]:
    return [
        {"requested_time": i.requested_time, "action": i.action.value, "state": i.state.name, "completion_time": i.completion_time}
        for i in t.timeline.instants
    ]
