"""The phone contract's error envelope: its exception type, the status of every code, and its answers."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec

from gateway.common.errors import ServiceError, exception_handlers, field_of, readable

STATUS = {
    "invalid_request": 400,
    "missing_idempotency_key": 400,
    "unauthorized": 401,
    "forbidden_scope": 403,
    "forbidden_sku": 403,
    "tenant_suspended": 403,
    "not_found": 404,
    "idempotency_conflict": 409,
    "invalid_phone": 422,
    "unsupported_country": 422,
    "rate_limited": 429,
    "spend_cap_reached": 429,
    "internal_error": 500,
    "provider_unavailable": 502,
    "enforcement_unavailable": 503,
    "provider_unconfigured": 503,
    "ledger_unavailable": 503,
}
"""HTTP status of every error code (docs/phone.md, "Error codes")."""


class ErrorBody(msgspec.Struct, omit_defaults=True):
    code: str
    message: str
    request_id: str | None = None
    details: Any = None


class ErrorEnvelope(msgspec.Struct):
    """Every error body: an object with the single property `error`."""

    error: ErrorBody


class PhoneError(ServiceError):
    """A contract error; raising it anywhere in a phone route answers with the envelope and the code's status."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        request_id: str | None = None,
        details: Any = None,
        retry_after: int | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(
            status or STATUS[code],
            ErrorEnvelope(ErrorBody(code, message, request_id, details)),
            message,
            {"Retry-After": str(retry_after)} if retry_after is not None else None,
        )
        self.code = code


class PhoneErrors:
    """The phone contract's answers where no route decided (`ErrorStyle`)."""

    def not_found(self) -> PhoneError:
        return PhoneError("not_found", "no such resource")

    def method_not_allowed(self, method: str, allowed: Mapping[str, str]) -> PhoneError:
        error = PhoneError("invalid_request", f"method {method} is not allowed here", status=405)
        error.headers.update(allowed)
        return error

    def bad_request(self, status: int, message: str, details: Any = None) -> PhoneError:
        return PhoneError("invalid_request", message, details=details, status=status)

    def invalid_body(self, message: str) -> PhoneError:
        field = field_of(message)
        return PhoneError("invalid_request", readable(message), details={"field": field} if field else None)

    def not_json(self, message: str) -> PhoneError:
        return PhoneError("invalid_request", f"the body is not valid JSON: {message}")

    def internal(self) -> PhoneError:
        return PhoneError("internal_error", "an internal error occurred; it has been logged")


ERRORS = PhoneErrors()
EXCEPTION_HANDLERS = exception_handlers(ERRORS)
