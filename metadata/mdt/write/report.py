"""What a metadata-table write did, for the CLI's lines and `--json`."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class IndexReport:
    action: str
    partitions: list[str] = field(default_factory=list)
    instants: list[str] = field(default_factory=list)
    files_indexed: int = 0
    records_written: int = 0
    compacted: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    seconds: float = 0.0
    kept_by_writer: str | None = None  # the latest data instant whose metadata-table commit Hudi's writer made itself

    def to_dict(self) -> dict[str, object]:
        return dict(self.__dict__)
