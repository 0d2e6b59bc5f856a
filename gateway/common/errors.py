"""The error-envelope mechanism: a service's contract errors are one exception type, rendered by one set of handlers.

A service subclasses `ServiceError` for its envelope and says, in an `ErrorStyle`, what its contract answers for
the situations every HTTP API meets (no such route, a method not allowed, a malformed request, a bug)."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Protocol, TypeVar

import msgspec
import structlog
from litestar import Request, Response
from litestar.exceptions import HTTPException, ValidationException

from operations.common.errors import Kind, OperationError

log = structlog.get_logger("signalyard.gateway")
T = TypeVar("T")


class ServiceError(Exception):
    """A contract error: raising it anywhere in a route answers with `body` and `status` (plus `headers`)."""

    def __init__(self, status: int, body: Any, message: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.body = body
        self.headers = dict(headers or {})

    def response(self) -> Response[Any]:
        return Response(self.body, status_code=self.status, headers=self.headers)


class ErrorStyle(Protocol):
    """What a service's contract answers where no route of its own decided."""

    def not_found(self) -> ServiceError: ...
    def method_not_allowed(self, method: str, allowed: Mapping[str, str]) -> ServiceError: ...
    def bad_request(self, status: int, message: str, details: Any = None) -> ServiceError: ...
    def invalid_body(self, message: str) -> ServiceError:
        """A JSON body that does not fit its type; `message` is msgspec's (see `field_of` and `readable`)."""
        ...

    def not_json(self, message: str) -> ServiceError: ...
    def internal(self) -> ServiceError: ...


REFUSED: Mapping[Kind, int] = {
    "invalid": 400,
    "not_found": 404,
    "forbidden": 403,
    "conflict": 409,
    "precondition": 412,
    "too_large": 413,
    "stale_cursor": 404,
    "provider": 502,
}
"""The HTTP status of each kind of refusal an operation raises (operations.common.errors)."""


def exception_handlers(style: ErrorStyle, refused: Callable[[int, str], ServiceError] | None = None) -> dict[Any, Any]:
    """Litestar exception handlers that answer every error in the service's envelope; a 500 never shows internals.
    `refused(status, message)`: the envelope of an operation's refusal, for a service whose routes call operations."""

    def on_service_error(_: Request[Any, Any, Any], error: ServiceError) -> Response[Any]:
        return error.response()

    def on_refused(request: Request[Any, Any, Any], error: OperationError) -> Response[Any]:
        if refused is None:
            return on_unexpected(request, error)
        return refused(REFUSED[error.kind], error.message).response()

    def on_unexpected(request: Request[Any, Any, Any], error: Exception) -> Response[Any]:
        log.exception("unhandled_error", path=request.url.path, error_type=type(error).__name__)
        return style.internal().response()

    def on_http_exception(request: Request[Any, Any, Any], error: HTTPException) -> Response[Any]:
        """Litestar's own errors (unknown route, wrong method, bad parameter) in the service's envelope."""
        if isinstance(error, ValidationException):
            return style.bad_request(400, str(error.detail), error.extra).response()
        if error.status_code == 404:
            return style.not_found().response()
        if error.status_code == 405:
            return style.method_not_allowed(request.method, error.headers or {}).response()
        if error.status_code < 500:
            return style.bad_request(error.status_code, str(error.detail)).response()
        return on_unexpected(request, error)

    return {
        ServiceError: on_service_error,
        OperationError: on_refused,
        HTTPException: on_http_exception,
        Exception: on_unexpected,
    }


def decode_body(
    decode: Callable[[bytes], T],
    body: bytes,
    style: ErrorStyle,
    explain: Callable[[str], ServiceError] | None = None,
) -> T:
    """A JSON body as its Struct, or the service's error: `not_json` for what is not JSON, and `invalid_body` (or
    `explain`, where a route words some fields' errors itself) for what does not fit the Struct."""
    try:
        return decode(body)
    except msgspec.ValidationError as error:
        raise (explain or style.invalid_body)(str(error)) from error
    except msgspec.DecodeError as error:
        raise style.not_json(str(error)) from error


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


def readable(message: str) -> str:
    """A msgspec validation message with its JSON-path noise removed (`$.name` -> `name`)."""
    return message.replace("`$.", "`").replace(" - at `$`", "")
