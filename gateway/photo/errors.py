"""The photo contract's error envelope: `{"error": "<message>"}` with the documented status, raised as one type."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from gateway.common.errors import ServiceError, exception_handlers, field_of, readable


class ErrorBody(msgspec.Struct, omit_defaults=True):
    """Every error body: the message in `error`; a verify that outlived its wait also names its verification."""

    error: str
    verification_id: str | None = None


class PhotoError(ServiceError):
    """A contract error; raising it anywhere in a photo route answers with its status and `{"error": message}`."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        retry_after: int | None = None,
        verification_id: str | None = None,
    ) -> None:
        super().__init__(
            status,
            ErrorBody(message, verification_id),
            message,
            {"Retry-After": str(retry_after)} if retry_after is not None else None,
        )


INVALID_KEY = "Invalid API key"
"""Section 5.5: the exact message for a revoked, expired or unknown key."""


class PhotoErrors:
    """The photo contract's answers where no route decided (`ErrorStyle`)."""

    def not_found(self) -> PhotoError:
        return PhotoError(404, "Not found")

    def method_not_allowed(self, method: str, allowed: Mapping[str, str]) -> PhotoError:
        error = PhotoError(405, f"Method {method} is not allowed here")
        error.headers.update(allowed)
        return error

    def bad_request(self, status: int, message: str, details: Any = None) -> PhotoError:
        if status == 413:  # the contract's answer for an oversized image is 400
            return PhotoError(400, "Image too large: the limit is 10 MB")
        return PhotoError(status, message)

    def invalid_body(self, message: str) -> PhotoError:
        field = field_of(message)
        text = readable(message)
        return PhotoError(400, text if field is None or field in text else f"{text} (field `{field}`)")

    def not_json(self, message: str) -> PhotoError:
        return PhotoError(400, f"The body is not valid JSON: {message}")

    def internal(self) -> PhotoError:
        return PhotoError(500, "Internal error; it has been logged. Retry with the same Idempotency-Key")


ERRORS = PhotoErrors()
EXCEPTION_HANDLERS = exception_handlers(ERRORS, PhotoError)
