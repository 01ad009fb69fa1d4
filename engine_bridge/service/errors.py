"""The service's one error shape: an HTTP status and one line of JSON,
`{"error": {"code": "...", "message": "..."}}`, with a stable code."""

from __future__ import annotations

from typing import Any

from metadata.errors import HudiBridgeError
from metadata.storage.secrets import redact


class ServiceError(HudiBridgeError):
    """What a request gets instead of an answer; `code` is stable, `message` one line without secrets."""

    def __init__(self, code: str, status: int, message: str, retry_after: int | None = None) -> None:
        self.code = code
        self.status = status
        self.message = redact(" ".join(message.split()))
        self.retry_after = retry_after
        super().__init__(f"{code}: {self.message}")

    @classmethod
    def refused(cls, exc: BaseException) -> ServiceError:
        """A table or request the library refuses (a damaged file, an unknown column): 422 naming what and where."""
        return cls("refused", 422, str(exc) or type(exc).__name__)

    @classmethod
    def bad_request(cls, message: str) -> ServiceError:
        return cls("bad_request", 400, message)

    def body(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message}}

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)} if self.retry_after is not None else {}
