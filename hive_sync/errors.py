"""Errors of a Hive sync."""

from __future__ import annotations

from metadata.errors import HudiBridgeError


class SyncError(HudiBridgeError):
    """A sync could not be carried out; the message says what and where."""


class SchemaEvolutionError(SyncError):
    """A column changed in a way the metastore cannot follow."""
