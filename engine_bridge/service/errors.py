"""The service's one error shape: an HTTP status and one line of JSON,
`{"error": {"code": "...", "message": "..."}}`, with a stable code."""

from __future__ import annotations

import logging
import traceback
from typing import Any

from metadata.errors import HudiBridgeError
from metadata.storage.secrets import redact

log = logging.getLogger("hudi_bridge.service")  # the operator's log (`hudi-bridge serve` writes it to stderr)


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
    def of(cls, exc: BaseException, where: str) -> ServiceError:
        """What a failure on `where` answers: itself, the library's refusal (422, its one line), or an error of ours
        (500, its traceback in the operator's log, secrets masked): never a bug told as a refusal."""
        if isinstance(exc, ServiceError):
            return exc
        if isinstance(exc, HudiBridgeError):
            return cls.refused(exc)
        log.error(redact(f"unexpected error on {where}:\n" + "".join(traceback.format_exception(exc))))
        return cls("internal", 500, f"unexpected {type(exc).__name__}: {exc}")

    @classmethod
    def bad_request(cls, message: str) -> ServiceError:
        return cls("bad_request", 400, message)

    def body(self) -> dict[str, Any]:
        return {"error": {"code": self.code, "message": self.message}}

    def headers(self) -> dict[str, str]:
        return {"Retry-After": str(self.retry_after)} if self.retry_after is not None else {}
