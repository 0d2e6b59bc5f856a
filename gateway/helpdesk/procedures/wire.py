"""Typed procedures over HTTP, as a stock `@trpc/client` v11 with the `superjson` transformer speaks them.

- A query is a GET of `/api/trpc/<procedure>?input=<superjson>`; a mutation a POST of the superjson as its body, with
  a JSON content type (a cross-site form cannot send one without the browser asking first).
- A batch names several procedures in one path (`a,b`, with `?batch=1`), its inputs keyed "0", "1", ..., and answers
  one result each, in order; its status is theirs when they agree, else 207.
- Success is `{"result": {"data": {"json": ..., "meta": ...}}}`; an error `{"error": {"json": {"message", "code",
  "data": {"code", "httpStatus", "path"}}}}` with tRPC's numbers, except the rate limit's -32600 (helpdesk section 7).
- A query's `input` is superjson (`{"json": ..., "meta": ...}`, as the stock client sends it) or, as section 4.1 has
  it, the URL-encoded JSON of the input itself: an object whose keys are only `json` and `meta` is superjson.

Each procedure declares who may call it (`access`): nobody in particular, anyone signed in, a member of an
organization, or one of its admins. The wire admits the call before the procedure runs, in one place (`Admit`), and
answers what an operation refuses (operations.common.errors) with its tRPC code. An input is an operation's typed
input (snake_case, as REST takes it), read here in camelCase, as the contract's procedures are.

Only what the wire needs of superjson is read and written: dates (`Date`) and absent values (`undefined`). No Python
package implements superjson (PyPI's `superjson` is an unrelated library), so these few rules live here.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, Generic, Literal, TypeVar

import msgspec
import structlog
from litestar import Request, Response, route
from litestar.datastructures import Cookie
from litestar.exceptions import HTTPException
from litestar.handlers import HTTPRouteHandler
from litestar.params import FromPath

from gateway.common.auth import NO_AUTHENTICATION
from gateway.common.errors import readable
from gateway.helpdesk.accounts.sessions import SignedIn
from operations.common.actors import Actor
from operations.common.errors import Kind, NotFound, OperationError
from operations.common.pages import Identified, Page

log = structlog.get_logger("signalyard.gateway.helpdesk")

# tRPC's JSON-RPC numbers and HTTP statuses (@trpc/server's TRPC_ERROR_CODES_BY_KEY and JSONRPC2_TO_HTTP_CODE).
CODES: Mapping[str, tuple[int, int]] = {
    "PARSE_ERROR": (-32700, 400),
    "BAD_REQUEST": (-32600, 400),
    "UNAUTHORIZED": (-32001, 401),
    "FORBIDDEN": (-32003, 403),
    "NOT_FOUND": (-32004, 404),
    "METHOD_NOT_SUPPORTED": (-32005, 405),
    "CONFLICT": (-32009, 409),
    "PRECONDITION_FAILED": (-32012, 412),
    "PAYLOAD_TOO_LARGE": (-32013, 413),
    "UNSUPPORTED_MEDIA_TYPE": (-32015, 415),
    "TOO_MANY_REQUESTS": (-32600, 429),  # the contract's number (section 7); tRPC's own is -32029
    "INTERNAL_SERVER_ERROR": (-32603, 500),
}
Code = Literal[
    "PARSE_ERROR",
    "BAD_REQUEST",
    "UNAUTHORIZED",
    "FORBIDDEN",
    "NOT_FOUND",
    "METHOD_NOT_SUPPORTED",
    "CONFLICT",
    "PRECONDITION_FAILED",
    "PAYLOAD_TOO_LARGE",
    "UNSUPPORTED_MEDIA_TYPE",
    "TOO_MANY_REQUESTS",
    "INTERNAL_SERVER_ERROR",
]
REFUSED: Mapping[Kind, Code] = {
    "invalid": "BAD_REQUEST",
    "not_found": "NOT_FOUND",
    "forbidden": "FORBIDDEN",
    "conflict": "CONFLICT",
    "precondition": "PRECONDITION_FAILED",
    "too_large": "PAYLOAD_TOO_LARGE",
    "stale_cursor": "BAD_REQUEST",
    "provider": "INTERNAL_SERVER_ERROR",
}
"""An operation's refusal as a procedure answers it; another organization's entity (`NotFound.elsewhere`) is
FORBIDDEN, as section 7 has it for the events procedures."""
_ABSENT_INPUT = msgspec.UNSET
"""An input the client did not send (as opposed to one it sent as null)."""
# More calls than this in one batch is a client gone wrong (@trpc/client's own batches are as long as a page's calls).
MAX_BATCH = 20


class ProcedureError(Exception):
    """What a procedure answers instead of a result: one of CODES, a message for the caller, and response headers
    (`Retry-After` with TOO_MANY_REQUESTS) that a lone call carries."""

    def __init__(self, code: Code, message: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.headers = dict(headers or {})

    @property
    def status(self) -> int:
        return CODES[self.code][1]


Access = Literal["public", "signed_in", "member", "admin"]
"""Who may call a procedure: anyone; anyone signed in (a session, with or without an organization); a member of an
organization; an admin of one."""


@dataclass(slots=True)
class Call:
    """One procedure call as its procedure sees it: the HTTP request it came in, the cookies it sets, and who it was
    admitted as."""

    request: Request[Any, Any, Any]
    path: str
    cookies: list[Cookie] = field(default_factory=list)
    session: SignedIn | None = None
    """Set for every procedure but a public one."""
    member: Actor | None = None
    """Set for a member's or an admin's procedure."""

    @property
    def actor(self) -> Actor:
        """The member the call acts for (a procedure whose access is `member` or `admin`)."""
        assert self.member is not None, "the wire admits members before their procedure runs"
        return self.member

    @property
    def signed_in(self) -> SignedIn:
        assert self.session is not None, "the wire admits sessions before their procedure runs"
        return self.session


Admit = Callable[[Call, Access], Awaitable[None]]
"""admit(call, access): admits a call to a procedure of `access`, setting `call.session` and `call.member`, or raises
the ProcedureError that refuses it (UNAUTHORIZED without a session, FORBIDDEN without the role)."""


@dataclass(frozen=True, slots=True)
class Procedure:
    """A query (GET) or mutation (POST). `input` is the msgspec Struct its input is read as (in camelCase), or None
    for a procedure that takes none; `run` answers with a Struct (datetimes become Dates). `access`: who may call it."""

    kind: Literal["query", "mutation"]
    input: type[msgspec.Struct] | None
    run: Callable[[Call, Any], Awaitable[Any]]
    access: Access = "member"
    camel_case: bool = True
    """The input's fields are read in camelCase; False: as they are named (the contract's `auth.updateProfile` takes
    `avatar_url`)."""


T = TypeVar("T")
R = TypeVar("R", bound=Identified)


class Listing(msgspec.Struct, Generic[T]):
    """A page of a list procedure: its items, the id of the last (the next page's `cursor`) when more follow."""

    items: list[T]
    nextCursor: str | None  # camelCase, as the contract's events.list pages are
    hasMore: bool

    @classmethod
    def of(cls, page: Page[R], view: Callable[[R], T]) -> Listing[T]:
        return cls([view(item) for item in page.items], page.next_cursor, page.has_more)


TRPC_BASE = "/api/trpc"


def trpc_route(procedures: Mapping[str, Procedure], admit: Admit, base: str = TRPC_BASE) -> HTTPRouteHandler:
    """The one route that serves every procedure under `base`."""

    @route(f"{base}/{{path:path}}", http_method=["GET", "POST"], include_in_schema=False, opt=NO_AUTHENTICATION)
    async def serve(request: Request[Any, Any, Any], path: FromPath[str]) -> Response[bytes]:
        return await _serve(request, path.lstrip("/"), procedures, admit)

    return serve


async def _serve(
    request: Request[Any, Any, Any], path: str, procedures: Mapping[str, Procedure], admit: Admit
) -> Response[bytes]:
    batch = request.query_params.get("batch") in ("1", "true")
    names = path.split(",") if batch else [path]
    try:
        inputs = await _inputs(request, batch, len(names))
    except ProcedureError as error:
        refused = [_error_body(error, name) for name in names]
        return _response(refused if batch else refused[0], error.status, error.headers)
    kind = "query" if request.method == "GET" else "mutation"
    bodies: list[Any] = []
    statuses: list[int] = []
    headers: dict[str, str] = {}
    cookies: list[Cookie] = []
    for index, name in enumerate(names):
        call = Call(request, name)
        try:
            data = await _call(procedures.get(name), kind, call, inputs.get(index, _ABSENT_INPUT), admit)
        except ProcedureError as error:
            bodies.append(_error_body(error, name))
            statuses.append(error.status)
            headers.update(error.headers)
        else:
            bodies.append({"result": {"data": data}})
            statuses.append(200)
        cookies.extend(call.cookies)
    status = statuses[0] if len(set(statuses)) == 1 else 207
    return _response(bodies if batch else bodies[0], status, headers if not batch else {}, cookies)


async def _inputs(request: Request[Any, Any, Any], batch: bool, count: int) -> dict[int, Any]:
    """The raw (superjson) input of each call, by its index; a call without one is absent."""
    if batch and count > MAX_BATCH:
        raise ProcedureError("BAD_REQUEST", f"A batch holds at most {MAX_BATCH} calls; this one holds {count}")
    if request.method == "GET":
        text = request.query_params.get("input")
        raw: Any = _ABSENT_INPUT if text is None else _superjson(_parse(text.encode()), batch)
    else:
        content_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
        if content_type != "application/json":
            raise ProcedureError(
                "UNSUPPORTED_MEDIA_TYPE", "A mutation's body must be JSON, sent with Content-Type: application/json"
            )
        try:
            body = await request.body()
        except HTTPException as error:
            if error.status_code == 413:
                raise ProcedureError("PAYLOAD_TOO_LARGE", "The request body is too large") from error
            raise
        raw = _parse(body) if body else _ABSENT_INPUT
    if not batch:
        return {} if raw is _ABSENT_INPUT else {0: raw}
    if raw is _ABSENT_INPUT:
        return {}
    if not isinstance(raw, dict) or not all(isinstance(key, str) and key.isdigit() for key in raw):
        raise ProcedureError("BAD_REQUEST", 'A batch\'s input must be an object keyed by call index ("0", "1", ...)')
    return {int(key): value for key, value in raw.items()}


def _superjson(value: Any, batch: bool) -> Any:
    """A query's input as superjson: the stock client's form, or the plain input section 4.1 describes, wrapped."""
    if batch and isinstance(value, dict):
        return {key: _superjson(item, False) for key, item in value.items()}
    if isinstance(value, dict) and "json" in value and set(value) <= {"json", "meta"}:
        return value
    return {"json": value}


def _parse(data: bytes) -> Any:
    try:
        return msgspec.json.decode(data)
    except msgspec.DecodeError as error:
        raise ProcedureError("PARSE_ERROR", f"The input is not valid JSON: {error}") from error


async def _call(procedure: Procedure | None, kind: str, call: Call, raw: Any, admit: Admit) -> dict[str, Any]:
    """The call's answer as superjson (`json` and `meta`), or its ProcedureError."""
    if procedure is None:
        raise ProcedureError("NOT_FOUND", f'No procedure "{call.path}"')
    if procedure.kind != kind:
        method = "GET" if procedure.kind == "query" else "POST"
        wrong = call.request.method
        raise ProcedureError("METHOD_NOT_SUPPORTED", f'"{call.path}" is a {procedure.kind}: use {method}, not {wrong}')
    await admit(call, procedure.access)
    value = None if raw is _ABSENT_INPUT else deserialize(raw)
    argument: Any = None
    if procedure.input is not None:
        argument = read_input({} if value is None else value, procedure.input, camel_case=procedure.camel_case)
    try:
        return serialize(await procedure.run(call, argument))
    except ProcedureError:
        raise
    except OperationError as refused:
        elsewhere = isinstance(refused, NotFound) and refused.elsewhere
        raise ProcedureError("FORBIDDEN" if elsewhere else REFUSED[refused.kind], refused.message) from None
    except Exception:
        log.exception("procedure_failed", procedure=call.path)
        raise ProcedureError("INTERNAL_SERVER_ERROR", "The procedure failed; it has been logged") from None


def read_input(value: Any, struct: type[msgspec.Struct], *, camel_case: bool = True) -> Any:
    """`value` (camelCase) as the operation's input `struct` (snake_case); BAD_REQUEST naming the field it got wrong."""
    try:
        given = msgspec.convert(value, _camel_case(struct) if camel_case else struct)
    except msgspec.ValidationError as error:
        raise ProcedureError("BAD_REQUEST", f"Invalid input: {readable(str(error))}") from error
    return struct(**{name: getattr(given, name) for name in struct.__struct_fields__})


@functools.cache
def _camel_case(struct: type[msgspec.Struct]) -> type[msgspec.Struct]:
    """The same fields and rules, named in camelCase (a field already so named stays as it is)."""
    fields: list[Any] = []
    for info in msgspec.structs.fields(struct):
        if info.default is not msgspec.NODEFAULT:
            fields.append((info.name, info.type, info.default))
        elif info.default_factory is not msgspec.NODEFAULT:
            fields.append((info.name, info.type, msgspec.field(default_factory=info.default_factory)))
        else:
            fields.append((info.name, info.type))
    return msgspec.defstruct(struct.__name__, fields, rename="camel", forbid_unknown_fields=True, kw_only=True)


def _error_body(error: ProcedureError, path: str) -> dict[str, Any]:
    number, status = CODES[error.code]
    shape = {"message": error.message, "code": number, "data": {"code": error.code, "httpStatus": status, "path": path}}
    return {"error": {"json": shape}}


_encoder = msgspec.json.Encoder()


def error_response(error: ProcedureError, path: str) -> Response[bytes]:
    """A lone call's error, for what fails before the procedure route is reached (a method it does not serve)."""
    return _response(_error_body(error, path), error.status, error.headers)


def _response(
    body: Any, status: int, headers: Mapping[str, str], cookies: list[Cookie] | None = None
) -> Response[bytes]:
    return Response(
        _encoder.encode(body),
        status_code=status,
        media_type="application/json",
        headers=dict(headers),
        cookies=cookies or [],
    )


# superjson ------------------------------------------------------------------------------------------------------------


def serialize(value: Any) -> dict[str, Any]:
    """`{"json": ...}` for `value`, with `meta` naming where dates are: superjson's `serialize`, for the types our
    procedures answer with (msgspec's builtins, where a datetime becomes a JavaScript Date)."""
    plain = msgspec.to_builtins(value, builtin_types=(datetime,))
    dates: dict[str, list[str]] = {}
    json = _dates_out(plain, [], dates)
    if not dates:
        return {"json": json}
    values: Any = dates.pop("") if "" in dates else dates
    return {"json": json, "meta": {"values": values, "v": 1}}


def _dates_out(value: Any, path: list[str], dates: dict[str, list[str]]) -> Any:
    if isinstance(value, datetime):
        dates[_path(path)] = ["Date"]
        return _iso(value)
    if isinstance(value, dict):
        return {key: _dates_out(item, [*path, str(key)], dates) for key, item in value.items()}
    if isinstance(value, list):
        return [_dates_out(item, [*path, str(index)], dates) for index, item in enumerate(value)]
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError("a procedure answered with a number JSON cannot carry")
    return value


def _iso(moment: datetime) -> str:
    """JavaScript's `Date.prototype.toISOString`: UTC, milliseconds, `Z`."""
    utc = (moment if moment.tzinfo else moment.replace(tzinfo=UTC)).astimezone(UTC)
    return utc.strftime("%Y-%m-%dT%H:%M:%S.") + f"{utc.microsecond // 1000:03d}Z"


def _path(path: list[str]) -> str:
    return ".".join(key.replace("\\", "\\\\").replace(".", "\\.") for key in path)


def deserialize(payload: Any) -> Any:
    """The input a client meant from its superjson `{"json": ..., "meta": ...}`: `undefined` values dropped (the
    input's default then applies), dates left as their ISO text (msgspec converts them where a field is a datetime).
    Anything else superjson can carry (Map, Set, BigInt, classes, ...) is refused: no procedure takes it."""
    if not isinstance(payload, dict) or "json" not in payload:
        raise ProcedureError("BAD_REQUEST", 'The input must be superjson: an object with "json" (and "meta")')
    value = payload["json"]
    meta = payload.get("meta")
    annotations = meta.get("values") if isinstance(meta, dict) else None
    if annotations is None:
        return value
    if isinstance(annotations, list):  # the value itself is annotated
        return _annotated(value, annotations, "input")
    if not isinstance(annotations, dict):
        raise ProcedureError("BAD_REQUEST", "The input's superjson meta is malformed")
    for key, annotation in annotations.items():
        value = _apply(value, _split(key), annotation)
    return value


def _annotated(value: Any, annotation: Any, where: str) -> Any:
    kind = annotation[0] if isinstance(annotation, list) and annotation else annotation
    if kind == "undefined":
        return None
    if kind == "Date" and isinstance(value, str):
        return value
    raise ProcedureError("BAD_REQUEST", f"{where}: a superjson {kind!r} value is not accepted here")


def _apply(value: Any, path: list[str], annotation: Any) -> Any:
    """`value` with the annotation at `path` applied (an `undefined` member removed)."""
    if not path:
        return _annotated(value, annotation, "input")
    key, rest = path[0], path[1:]
    if isinstance(value, dict) and key in value:
        if not rest and _annotated(value[key], annotation, key) is None:
            return {k: v for k, v in value.items() if k != key}
        return value | {key: _apply(value[key], rest, annotation)}
    if isinstance(value, list) and key.isdigit() and int(key) < len(value):
        index = int(key)
        return [*value[:index], _apply(value[index], rest, annotation), *value[index + 1 :]]
    raise ProcedureError("BAD_REQUEST", f"The input's superjson meta names {key!r}, which the input does not hold")


def _split(key: str) -> list[str]:
    """A superjson path (`a.b\\.c.0`: `\\` escapes a dot or itself) as its segments."""
    segments: list[str] = []
    segment, escaped = "", False
    for char in key:
        if escaped:
            segment, escaped = segment + char, False
        elif char == "\\":
            escaped = True
        elif char == ".":
            segments, segment = [*segments, segment], ""
        else:
            segment += char
    return [*segments, segment]
