"""The phone contract's error envelope: one exception type, its status table, and the handlers that render it."""

from __future__ import annotations

import re
from typing import Any

import msgspec
import structlog
from litestar import Request, Response
from litestar.exceptions import HTTPException, ValidationException

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
"""HTTP status of every error code (DESIGN.md's decisions for what the contract leaves open)."""

log = structlog.get_logger("signalyard.gateway.phone")


class ErrorBody(msgspec.Struct, omit_defaults=True):
    code: str
    message: str
    request_id: str | None = None
    details: Any = None


class ErrorEnvelope(msgspec.Struct):
    """Every error body: an object with the single property `error`."""

    error: ErrorBody


class PhoneError(Exception):
    """A contract error; raising it anywhere in a phone route answers with the envelope and the code's status."""

    def __init__(
        self,
        code: str,
        message: str,
        *,
        request_id: str | None = None,
        details: Any = None,
        retry_after: int | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.status = STATUS[code]
        self.body = ErrorEnvelope(ErrorBody(code, message, request_id, details))
        self.headers = {"Retry-After": str(retry_after)} if retry_after is not None else {}


def error_response(error: PhoneError) -> Response[ErrorEnvelope]:
    return Response(error.body, status_code=error.status, headers=error.headers)


_FIELD = re.compile(r"`\$\.?([^`]*)`")
_UNKNOWN = re.compile(r"unknown field `([^`]*)`")
_MISSING = re.compile(r"missing required field `([^`]*)`")


def field_of(message: str) -> str | None:
    """The body field a msgspec validation message is about (`$.name`, unknown/missing field names)."""
    for pattern in (_UNKNOWN, _MISSING):
        if found := pattern.search(message):
            path = _FIELD.search(message)
            prefix = path.group(1) + "." if path and path.group(1) else ""
            return prefix + found.group(1)
    path = _FIELD.search(message)
    return path.group(1) or None if path else None


def invalid_body(message: str) -> PhoneError:
    field = field_of(message)
    text = message.replace("`$.", "`").replace(" - at `$`", "")
    return PhoneError("invalid_request", text, details={"field": field} if field else None)


def _on_phone_error(_: Request[Any, Any, Any], error: PhoneError) -> Response[ErrorEnvelope]:
    return error_response(error)


def _on_http_exception(request: Request[Any, Any, Any], error: HTTPException) -> Response[ErrorEnvelope]:
    """Litestar's own errors (unknown route, wrong method, bad path) in the contract's envelope."""
    if isinstance(error, ValidationException):
        return error_response(PhoneError("invalid_request", str(error.detail), details=error.extra))
    if error.status_code == 404:
        return error_response(PhoneError("not_found", "no such resource"))
    if error.status_code == 405:
        return Response(
            ErrorEnvelope(ErrorBody("invalid_request", f"method {request.method} is not allowed here")),
            status_code=405,
            headers=error.headers or {},
        )
    if error.status_code < 500:
        return Response(ErrorEnvelope(ErrorBody("invalid_request", str(error.detail))), status_code=error.status_code)
    return _on_unexpected(request, error)


def _on_unexpected(request: Request[Any, Any, Any], error: Exception) -> Response[ErrorEnvelope]:
    log.exception("unhandled_error", path=request.url.path, error_type=type(error).__name__)
    return error_response(PhoneError("internal_error", "an internal error occurred; it has been logged"))


EXCEPTION_HANDLERS = {PhoneError: _on_phone_error, HTTPException: _on_http_exception, Exception: _on_unexpected}
