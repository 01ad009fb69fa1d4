"""Hudi's writer options that decide how writers share a table: the lock
provider and its settings, the heartbeat and the failed-writes policy.

They are read as Hudi's writers read them: `hoodie.properties` first, then
what the user gives (`--hoodie-option KEY=VALUE`, a properties file), which
wins. Defaults are Hudi's (`HoodieWriteConfig`, `HoodieLockConfig`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import TypeVar

from metadata.errors import HudiBridgeError
from metadata.table.config import parse_java_properties

HEARTBEAT_INTERVAL_MS = "hoodie.client.heartbeat.interval_in_ms"
HEARTBEAT_MISSES = "hoodie.client.heartbeat.tolerable.misses"
FAILED_WRITES_POLICY = "hoodie.cleaner.policy.failed.writes"
CONCURRENCY_MODE = "hoodie.write.concurrency.mode"
LOCK_PROVIDER = "hoodie.write.lock.provider"
LOCK_WAIT_MS = "hoodie.write.lock.wait_time_ms"
LOCK_RETRY_WAIT_MS = "hoodie.write.lock.wait_time_ms_between_retry"
DEFAULT_HEARTBEAT_INTERVAL_MS = 60_000
DEFAULT_HEARTBEAT_MISSES = 2
DEFAULT_LOCK_WAIT_MS = 60_000
DEFAULT_LOCK_RETRY_WAIT_MS = 1_000


E = TypeVar("E", bound=Enum)


class ConcurrencyMode(Enum):
    SINGLE_WRITER = "SINGLE_WRITER"
    OPTIMISTIC_CONCURRENCY_CONTROL = "OPTIMISTIC_CONCURRENCY_CONTROL"
    NON_BLOCKING_CONCURRENCY_CONTROL = "NON_BLOCKING_CONCURRENCY_CONTROL"


class FailedWritesPolicy(Enum):
    """Hudi's `hoodie.cleaner.policy.failed.writes`: EAGER rolls back every
    pending instant at the next write (no heartbeats); LAZY only those whose
    heartbeat expired (multi-writer)."""

    EAGER = "EAGER"
    LAZY = "LAZY"
    NEVER = "NEVER"


class OptionError(HudiBridgeError, ValueError):
    """A Hudi writer option that cannot be read (the message names it)."""


@dataclass(frozen=True)
class WriterOptions:
    """The table's writer options: `hoodie.properties` under what the user gave."""

    values: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, table_config: Mapping[str, str], given: Mapping[str, str] | None = None) -> WriterOptions:
        return cls({**table_config, **(given or {})})

    def get(self, key: str, default: str | None = None) -> str | None:
        value = self.values.get(key)
        return value.strip() if value is not None and value.strip() else default

    def integer(self, key: str, default: int) -> int:
        text = self.get(key)
        if text is None:
            return default
        try:
            return int(text)
        except ValueError:
            raise OptionError(f"{key}={text!r}: not a whole number") from None

    @property
    def heartbeat_window_seconds(self) -> float:
        """How long after its last heartbeat a writer still counts as alive
        (Hudi's interval times its tolerable misses)."""
        interval = self.integer(HEARTBEAT_INTERVAL_MS, DEFAULT_HEARTBEAT_INTERVAL_MS)
        misses = self.integer(HEARTBEAT_MISSES, DEFAULT_HEARTBEAT_MISSES)
        return max(interval, 1_000) * max(misses, 1) / 1000.0

    @property
    def lock_provider(self) -> str | None:
        return self.get(LOCK_PROVIDER)

    def choice(self, key: str, enum: type[E], default: E) -> E:
        """A closed-set option, as Hudi reads it (case aside)."""
        text = (self.get(key) or default.value).upper()
        try:
            return enum(text)
        except ValueError:
            raise OptionError(f"{key}={text!r}: not one of {', '.join(m.value for m in enum)}") from None

    @property
    def concurrency_mode(self) -> ConcurrencyMode:
        return self.choice(CONCURRENCY_MODE, ConcurrencyMode, ConcurrencyMode.SINGLE_WRITER)

    @property
    def failed_writes_policy(self) -> FailedWritesPolicy:
        # Hudi forces LAZY whenever more than one writer may write (OCC, NBCC).
        default = FailedWritesPolicy.EAGER if self.concurrency_mode is ConcurrencyMode.SINGLE_WRITER else FailedWritesPolicy.LAZY
        return self.choice(FAILED_WRITES_POLICY, FailedWritesPolicy, default)

    @property
    def lock_wait_seconds(self) -> float:
        return self.integer(LOCK_WAIT_MS, DEFAULT_LOCK_WAIT_MS) / 1000.0

    @property
    def lock_retry_seconds(self) -> float:
        return max(self.integer(LOCK_RETRY_WAIT_MS, DEFAULT_LOCK_RETRY_WAIT_MS), 50) / 1000.0


def parse_option(text: str) -> tuple[str, str]:
    """`KEY=VALUE` as given on the command line."""
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise OptionError(f"{text!r}: give KEY=VALUE, as in hoodie.write.lock.provider=...")
    return key.strip(), value.strip()


def read_properties_file(path: str, limit: int = 1 << 20) -> dict[str, str]:
    """A Java properties file of writer options (as Hudi users pass with --props), read bounded."""
    try:
        with open(path, "rb") as handle:
            data = handle.read(limit + 1)
    except OSError as exc:
        raise OptionError(f"{path}: cannot read the properties file ({exc.strerror or exc})") from None
    if len(data) > limit:
        raise OptionError(f"{path}: a properties file of more than {limit} bytes")
    return parse_java_properties(data.decode("utf-8", "replace"))
