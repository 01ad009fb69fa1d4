"""`hudi-bridge serve`: Hudi scan planning over HTTP for every planner, with one
warm cache per table, and a table-health page (docs/service.md)."""

from engine_bridge.service.app import create_app
from engine_bridge.service.config import Limits, ServiceConfig, ServiceConfigError, TableEntry
from engine_bridge.service.errors import ServiceError

__all__ = ["Limits", "ServiceConfig", "ServiceConfigError", "ServiceError", "TableEntry", "create_app"]
