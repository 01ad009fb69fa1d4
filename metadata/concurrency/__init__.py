"""Sharing a table with Hudi's own writers: their options (`options`), who is
writing now (`activity`: heartbeats and pending instants) and Hudi's lock
providers (`locks`). Whatever writes the metadata table goes through these."""

from metadata.concurrency.activity import LiveInstant, WriterActivity
from metadata.concurrency.locks import HudiLock, LockProvider, hudi_lock
from metadata.concurrency.options import WriterOptions

__all__ = ["HudiLock", "LiveInstant", "LockProvider", "WriterActivity", "WriterOptions", "hudi_lock"]
