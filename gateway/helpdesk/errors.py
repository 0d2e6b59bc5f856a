"""The helpdesk's two error envelopes in one app, chosen by path: procedures (`/api/trpc/...`) answer tRPC's
(section 7), everything else the REST API's `{"error": {"code": "...", "message": "..."}}` with the statuses of
docs/helpdesk.md ("REST errors")."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import msgspec
from litestar import Request, Response

from gateway.common.errors import ServiceError, exception_handlers, field_of, readable
from gateway.helpdesk.procedures.wire import TRPC_BASE, ProcedureError, error_response

CODES = {
    400: "invalid_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    412: "precondition_failed",
    413: "payload_too_large",
    415: "unsupported_media_type",
    429: "rate_limited",
    500: "internal_error",
    503: "unavailable",
}
"""The REST error `code` of each status."""


class Problem(msgspec.Struct):
    code: str
    message: str


class ErrorBody(msgspec.Struct):
    error: Problem


class HelpdeskError(ServiceError):
    """A REST API error: its status, `{"error": {"code", "message"}}`, and `Retry-After` where given."""

    def __init__(self, status: int, message: str, *, retry_after: int | None = None) -> None:
        super().__init__(
            status,
            ErrorBody(Problem(CODES[status], message)),
            message,
            {"Retry-After": str(retry_after)} if retry_after is not None else None,
        )


class HelpdeskErrors:
    """The REST API's answers where no route decided (`ErrorStyle`)."""

    def not_found(self) -> HelpdeskError:
        return HelpdeskError(404, "No such route")

    def method_not_allowed(self, method: str, allowed: Mapping[str, str]) -> HelpdeskError:
        error = HelpdeskError(405, f"Method {method} is not allowed here")
        error.headers.update(allowed)
        return error

    def bad_request(self, status: int, message: str, details: Any = None) -> HelpdeskError:
        if isinstance(details, list) and details and all(isinstance(d, dict) and "key" in d for d in details):
            # Litestar's "Validation failed for GET <url>" says neither which parameter is wrong nor why
            message = "; ".join(f"{d.get('message', 'Invalid value')} (parameter `{d['key']}`)" for d in details)
        return HelpdeskError(status if status in CODES else 400, message)

    def invalid_body(self, message: str) -> HelpdeskError:
        field = field_of(message)
        text = readable(message)
        return HelpdeskError(400, text if field is None or field in text else f"{text} (field `{field}`)")

    def not_json(self, message: str) -> HelpdeskError:
        return HelpdeskError(400, f"The body is not valid JSON: {message}")

    def internal(self) -> HelpdeskError:
        return HelpdeskError(500, "Internal error; it has been logged")


ERRORS = HelpdeskErrors()
_REST = exception_handlers(ERRORS, HelpdeskError)
_PROCEDURE_CODES = {404: "NOT_FOUND", 405: "METHOD_NOT_SUPPORTED", 413: "PAYLOAD_TOO_LARGE"}


def _by_path(kind: Any) -> Any:
    rest = _REST[kind]

    def handle(request: Request[Any, Any, Any], error: Exception) -> Response[Any]:
        if not request.url.path.startswith(TRPC_BASE + "/"):
            return rest(request, error)  # type: ignore[no-any-return]
        status = getattr(error, "status_code", getattr(error, "status", 500))
        code = _PROCEDURE_CODES.get(status, "BAD_REQUEST" if 400 <= status < 500 else "INTERNAL_SERVER_ERROR")
        message = str(getattr(error, "detail", "")) or "The request could not be served"
        if code == "INTERNAL_SERVER_ERROR":
            rest(request, error)  # logs it
            message = "The procedure failed; it has been logged"
        path = request.url.path.removeprefix(TRPC_BASE + "/")
        return error_response(ProcedureError(code, message), path)  # type: ignore[arg-type]

    return handle


EXCEPTION_HANDLERS = {kind: _by_path(kind) for kind in _REST}
