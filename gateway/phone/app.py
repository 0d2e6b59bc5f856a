"""The phone gateway app: `POST /v1/verify`, `GET /v1/requests/{id}`, `GET /v1/usage`."""

from __future__ import annotations

import re
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Annotated, Any

import msgspec
import phonenumbers
import structlog
from litestar import Controller, Litestar, Request, Response, get, post
from litestar.di import NamedDependency, Provide
from litestar.openapi import OpenAPIConfig, ResponseSpec
from litestar.openapi.plugins import ScalarRenderPlugin
from litestar.openapi.spec import Components, Link, OpenAPIFormat, OpenAPIType, Schema, SecurityScheme
from litestar.openapi.spec import Example as OpenAPIExample
from litestar.params import Parameter
from litestar.types import ASGIApp

from gateway.common.auth import KeyAuthenticator
from gateway.common.http import ReadinessCheck, complete_allow, health_routes, observe
from gateway.common.idempotency import IdempotencyRules, body_hash
from gateway.common.limits import seconds_to_next_month
from gateway.common.openapi import (
    MsgspecSchemaPlugin,
    documented_body,
    documented_operation,
    error_responses,
    example,
    header,
    query,
    response,
    retry_after,
)
from gateway.common.waiter import ResultWaiter, within
from gateway.phone.auth import authorize
from gateway.phone.enforcement import Enforcement
from gateway.phone.errors import EXCEPTION_HANDLERS, STATUS, ErrorEnvelope, PhoneError, invalid_body
from gateway.phone.schemas import (
    ERROR_EXAMPLES,
    FAILURE_EXAMPLE,
    PENDING_EXAMPLE,
    USAGE_EXAMPLE,
    VERIFY_REQUEST_EXAMPLES,
    VERIFY_RESULT_EXAMPLES,
    Pending,
    Period,
    SkuUsage,
    UsageSummary,
    VerifyRequest,
)
from storage.common.batching import GroupCommit
from storage.common.db import Database
from storage.phone import requests
from storage.phone.models import PhoneRequest
from storage.phone.tenants import KeyOwner
from topics.phone import SKU, StoredRequestFailure, VerificationRequested, VerifyResult
from wire.timestamps import iso

log = structlog.get_logger("signalyard.gateway.phone")

API_VERSION = "2026-10-15.2"
MAX_BODY_BYTES = 16 * 1024
"""The largest valid verify body is under 1 KiB; a longer one answers 413 before its excess is read."""
Publish = Callable[[VerificationRequested], Awaitable[None]]
Accept = Callable[[dict[str, Any]], Awaitable[bool]]
JSON = "application/json"

_decode_verify = msgspec.json.Decoder(VerifyRequest).decode
_pending = msgspec.json.Encoder().encode


@dataclass(frozen=True, slots=True)
class PhoneGateway:
    """Everything the phone routes need, wired once by the launcher."""

    db: Database
    auth: KeyAuthenticator[KeyOwner]
    enforcement: Enforcement
    waiter: ResultWaiter
    publish: Publish
    accept: Accept
    """Store a new pending request (batched with concurrent callers); False when its key or number is taken."""
    wait_s: float
    """How long `POST /verify` waits for its result before answering 202 (SIGNALYARD_PHONE_WAIT_MS)."""


def batched_accept(db: Database) -> Accept:
    """Accept new requests in group commits: one INSERT for everything that arrived during the previous one."""

    async def insert(rows: list[dict[str, Any]]) -> list[bool]:
        inserted = await db.run(lambda connection: requests.insert_pending(connection, rows), write=True)
        return [row["id"] in inserted for row in rows]

    return GroupCommit(insert).submit


def parse_us_number(text: str) -> phonenumbers.PhoneNumber:
    """US numbers only, decided by phonenumbers: other NANP regions (CA, JM, PR, ...) are unsupported countries."""
    try:
        number = phonenumbers.parse(text, "US")
    except phonenumbers.NumberParseException as error:
        raise PhoneError("invalid_phone", f"not a phone number: {error}", details={"field": "phone"}) from error
    region = phonenumbers.region_code_for_number(number)
    if not phonenumbers.is_valid_number(number):
        if number.country_code != 1 and phonenumbers.is_possible_number(number):
            raise PhoneError("unsupported_country", "only US numbers are supported", details={"field": "phone"})
        raise PhoneError("invalid_phone", "not a valid US phone number", details={"field": "phone"})
    if region != "US":
        raise PhoneError(
            "unsupported_country", f"only US numbers are supported (this one is {region})", details={"field": "phone"}
        )
    return number


IDEMPOTENCY = IdempotencyRules(
    required=True,
    missing=lambda: PhoneError("missing_idempotency_key", "the Idempotency-Key header is required"),
    malformed=lambda reason: PhoneError("invalid_request", reason, details={"field": "Idempotency-Key"}),
    conflict=lambda original: PhoneError(
        "idempotency_conflict", "this Idempotency-Key was used with a different body", request_id=original.id
    ),
)
"""Phone's keys: required, scoped to the key's tenant and environment (the request row's unique index)."""


def idempotency_key_of(request: Request[Any, Any, Any]) -> str:
    key = IDEMPOTENCY.key_in(request.headers)
    assert key is not None  # required: a missing key has raised
    return key


def answer_for(row: requests.StoredRequest, *, replay_failure_as_error: bool) -> Response[Any]:
    """What the API answers for a stored request: its result, its failure, or 202 while pending."""
    if row.state == "pending":
        return Response(_pending(Pending(row.id)), status_code=202, media_type=JSON)
    if row.state in requests.RESULT_STATES:
        return Response(row.result, media_type=JSON)
    failure = requests.failure_of(row)
    if not replay_failure_as_error:
        return Response(msgspec.json.encode(failure), media_type=JSON)
    retry_after = seconds_to_next_month(datetime.now(UTC)) if row.error_code == "spend_cap_reached" else None
    return PhoneError(failure.error.code, failure.error.message, request_id=row.id, retry_after=retry_after).response()


# The OpenAPI document (`/docs/openapi.json`). The routes read their headers, query and body themselves, in the order
# the contract fixes; what they read is declared here for the document only (gateway.common.openapi).

_ERROR_DESCRIPTIONS = {
    400: "`invalid_request` (`details.field` names the offending body property, header or parameter) or "
    "`missing_idempotency_key`",
    401: "`unauthorized`: no API key, or an unknown, revoked or expired one",
    403: "`tenant_suspended`, `forbidden_scope` (the key lacks the route's scope) or `forbidden_sku`",
    404: "`not_found`",
    409: "`idempotency_conflict`: the Idempotency-Key was used with a different body, or the number has a check "
    "still pending or awaiting reconciliation (`request_id` names it)",
    413: "`invalid_request`: the body is over the size limit",
    422: "`invalid_phone` or `unsupported_country` (US numbers only)",
    429: "`rate_limited` or `spend_cap_reached`; wait `Retry-After` seconds",
    500: "`internal_error`: a failure of ours (no internals are shown; the details go to our log)",
    502: "`provider_unavailable`: the provider failed after retries; not billed, stored as a failed request",
    503: "`enforcement_unavailable`, `provider_unconfigured` or `ledger_unavailable`",
}


def _errors(*example_ids: str, statuses: tuple[int, ...] = ()) -> dict[int, ResponseSpec]:
    """Error responses of a route: the statuses of these examples (and `statuses` without one), each example under
    the status of its code (`too_large`: 413)."""
    by_status: dict[int, list[str]] = {status: [] for status in statuses}
    for example_id in example_ids:
        code = ERROR_EXAMPLES[example_id][1].error.code
        by_status.setdefault(413 if example_id == "too_large" else STATUS[code], []).append(example_id)
    return error_responses(
        ErrorEnvelope,
        {
            status: (
                _ERROR_DESCRIPTIONS[status],
                [example(i, ERROR_EXAMPLES[i][0], ERROR_EXAMPLES[i][1]) for i in ids],
            )
            for status, ids in sorted(by_status.items())
        },
    )


_RESULTS = [example(i, summary, result) for i, (summary, result) in VERIFY_RESULT_EXAMPLES.items()]
_PENDING = [example("pending", "Still being processed: poll GET /requests/{id}", PENDING_EXAMPLE)]
_TO_REQUEST = {
    "getRequest": Link(
        operation_id="getRequest",
        parameters={"request_id": "$response.body#/request_id"},
        description="The request, by the id of this answer: how a pending request is polled",
    )
}
_VERIFY_DOCS = documented_operation(
    parameters=[
        header(
            "Idempotency-Key",
            Schema(
                type=OpenAPIType.STRING,
                min_length=1,
                max_length=128,
                pattern=r"^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$",
            ),
            "Unique per logical request: 1 to 128 printable ASCII characters (HTTP drops spaces at either end). "
            "Sending the same key and body again returns the original answer and is never billed twice; the same "
            "key with another body is 409 `idempotency_conflict`.",
            required=True,
            example="order-7731-phone-check",
        )
    ],
    body_examples=[example(i, summary, body) for i, (summary, body) in VERIFY_REQUEST_EXAMPLES.items()],
    response_headers={429: retry_after("Seconds to wait: the rate limit's window, or the time to the next UTC month")},
    links={200: _TO_REQUEST, 202: _TO_REQUEST},
)
_USAGE_DOCS = documented_operation(
    parameters=[
        query(
            "from",
            Schema(type=OpenAPIType.STRING, format=OpenAPIFormat.DATE),
            "Inclusive start date (UTC). Defaults to the first day of the month of `to` when only `to` is given, "
            "else to the first day of the current month. Must not be after `to` (today when `to` is absent).",
            example="2026-11-01",
        ),
        query(
            "to",
            Schema(type=OpenAPIType.STRING, format=OpenAPIFormat.DATE),
            "Inclusive end date (UTC). Defaults to today.",
            example="2026-11-30",
        ),
    ]
)


class VerifyController(Controller):
    path = "/v1"
    tags = ["phone"]

    @post(
        "/verify",
        operation_id="verify",
        summary="Verify a US phone number against a supplied name",
        description="Waits for the result up to a few seconds; past that, answers 202 with a Pending body: poll "
        "`GET /requests/{id}`, or send the same request again with the same Idempotency-Key.",
        status_code=200,
        dependencies=documented_body(VerifyRequest),
        operation_class=_VERIFY_DOCS,
        responses={
            200: response(VerifyResult, "A completed check, or an explicit `unavailable` result", _RESULTS),
            202: response(Pending, "Still being processed: poll `GET /requests/{id}`", _PENDING),
            **_errors(
                "invalid_body",
                "invalid_json",
                "missing_idempotency_key",
                "malformed_idempotency_key",
                "missing_key",
                "invalid_key",
                "forbidden_scope_verify",
                "forbidden_sku",
                "tenant_suspended",
                "idempotency_conflict",
                "open_check",
                "too_large",
                "invalid_phone",
                "unsupported_country",
                "rate_limited",
                "spend_cap_reached",
                "internal_error",
                "provider_unavailable",
                "enforcement_unavailable",
                "provider_unconfigured",
                "ledger_unavailable",
            ),
        },
    )
    async def verify(self, request: Request[Any, Any, Any], phone: NamedDependency[PhoneGateway]) -> Response[Any]:
        owner = await phone.auth.owner(request.headers)
        authorize(owner, "verify", SKU)
        idempotency_key = idempotency_key_of(request)
        await phone.enforcement.rate_limit(owner)
        try:
            body = _decode_verify(await request.body())
        except msgspec.ValidationError as error:
            raise invalid_body(str(error)) from error
        except msgspec.DecodeError as error:
            raise PhoneError("invalid_request", f"the body is not valid JSON: {error}") from error
        body_digest = body_hash(body)
        number = parse_us_number(body.phone)

        if owner.spend_cap_microdollars is not None:
            # A replay is free and must not meet the cap: look for one before enforcing it.
            if (existing := await _find_by_key(phone, owner, idempotency_key)) is not None:
                return await _replay(phone, existing, body_digest)
            await phone.enforcement.spend_cap(owner)

        now = datetime.now(UTC)
        request_id = str(uuid.uuid4())
        phone_e164 = phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)
        row: dict[str, Any] = {
            "id": request_id,
            "tenant_id": owner.tenant_id,
            "environment": owner.environment,
            "idempotency_key": idempotency_key,
            "body_hash": body_digest,
            "phone_e164": phone_e164,
            "subject_type": body.subject_type,
            "supplied_name": body.name,
            "reference_id": body.reference_id,
            "state": "pending",
            "created_at": now,
            "published_at": now,
        }
        if not await phone.accept(row):
            return await _after_insert_conflict(phone, owner, row)
        structlog.contextvars.bind_contextvars(request_id=request_id)
        with phone.waiter.expecting(request_id) as completed:
            try:
                await phone.publish(
                    VerificationRequested(
                        request_id=request_id,
                        tenant_id=owner.tenant_id,
                        environment=owner.environment,  # type: ignore[arg-type]
                        phone_e164=phone_e164,
                    )
                )
            except Exception:  # the row is the outbox: the sweeper publishes it again, later than we would wait
                log.exception("publish_failed")
                return answer_for(await _stored(phone, request_id), replay_failure_as_error=True)
            stored = await within(completed, phone.wait_s)
        return answer_for(stored or await _stored(phone, request_id), replay_failure_as_error=True)

    @get(
        "/requests/{request_id:str}",
        operation_id="getRequest",
        summary="Fetch a previous request",
        operation_class=documented_operation(never_answered=[400]),
        responses={
            200: response(
                VerifyResult | StoredRequestFailure,
                "A verification result, or a stored failure (`status` `failed`, `rejected` or "
                "`pending_reconciliation`, with its `error`)",
                [*_RESULTS, example("failed", "A request the provider failed; not billed", FAILURE_EXAMPLE)],
            ),
            202: response(Pending, "Still pending", _PENDING),
            **_errors(
                "missing_key",
                "invalid_key",
                "forbidden_scope_requests",
                "tenant_suspended",
                "not_found",
                "internal_error",
                statuses=(503,),
            ),
        },
    )
    async def get_request(
        self,
        request: Request[Any, Any, Any],
        phone: NamedDependency[PhoneGateway],
        request_id: Annotated[
            str,
            Parameter(
                description="The `request_id` of a verify answer. Another tenant's or environment's id, or "
                "anything that is not a UUID, is 404 `not_found`.",
                examples=[OpenAPIExample(value="93503244-a401-403e-a9e2-52c209f4f3d5")],
                schema_extra={"format": OpenAPIFormat.UUID},
            ),
        ],
    ) -> Response[Any]:
        owner = await phone.auth.owner(request.headers)
        authorize(owner, "requests:read")
        row = None
        if _is_uuid(request_id):
            async with phone.db.read() as session:
                row = await requests.get_request(session, request_id)
        if row is None or row.tenant_id != owner.tenant_id or row.environment != owner.environment:
            raise PhoneError("not_found", "no request with this id for this key's tenant and environment")
        return answer_for(row, replay_failure_as_error=False)

    @get(
        "/usage",
        operation_id="getUsage",
        summary="Usage summary for the calling key's tenant and environment",
        operation_class=_USAGE_DOCS,
        responses={
            200: response(UsageSummary, "Usage summary", [example("usage", "November so far", USAGE_EXAMPLE)]),
            **_errors(
                "invalid_date",
                "from_after_to",
                "missing_key",
                "invalid_key",
                "forbidden_scope_usage",
                "tenant_suspended",
                "internal_error",
            ),
        },
    )
    async def get_usage(
        self, request: Request[Any, Any, Any], phone: NamedDependency[PhoneGateway]
    ) -> Response[UsageSummary]:
        owner = await phone.auth.owner(request.headers)
        authorize(owner, "usage:read")
        start, end = usage_period(request.query_params.get("from"), request.query_params.get("to"), datetime.now(UTC))
        async with phone.db.read() as session:
            rows = await requests.usage(session, owner.tenant_id, owner.environment, start, end)
        by_sku = [SkuUsage(r.sku, r.billable_requests, r.cache_hits, r.amount_microdollars) for r in rows]
        return Response(
            UsageSummary(
                tenant_id=owner.tenant_id,
                environment=owner.environment,  # type: ignore[arg-type]
                period=Period(from_=iso(start), to=iso(_last_instant_before(end))),
                by_sku=by_sku,
                total_amount_microdollars=sum(usage.amount_microdollars for usage in by_sku),
            )
        )


def usage_period(from_text: str | None, to_text: str | None, now: datetime) -> tuple[datetime, datetime]:
    """Section 4.3: inclusive UTC dates; `to` defaults to today, `from` to the first day of `to`'s month. A parameter
    given empty (`?to=`) is not a date: only an absent one takes its default."""
    to_day = _date_param("to", to_text) if to_text is not None else now.date()
    from_day = _date_param("from", from_text) if from_text is not None else to_day.replace(day=1)
    if from_day > to_day:
        raise PhoneError("invalid_request", "`from` is after `to`", details={"field": "from"})
    start = datetime.combine(from_day, datetime.min.time(), tzinfo=UTC)
    return start, _midnight_after(to_day)


_END_OF_TIME = datetime.max.replace(tzinfo=UTC)


def _midnight_after(day: date) -> datetime:
    """The exclusive end of a UTC day. The last day Python can name (9999-12-31) has no midnight after it: its
    period ends at the last instant Python can name, leaving out that instant alone."""
    if day == date.max:
        return _END_OF_TIME
    return datetime.combine(day + timedelta(days=1), datetime.min.time(), tzinfo=UTC)


def _last_instant_before(end: datetime) -> datetime:
    """The inclusive end of a period shown to the caller (its last microsecond)."""
    return end if end == _END_OF_TIME else end - timedelta(microseconds=1)


def _date_param(name: str, text: str) -> date:
    """A calendar date in the strict YYYY-MM-DD form (fromisoformat alone also takes 20261101 and 2026-W44-1)."""
    try:
        day = date.fromisoformat(text) if _CALENDAR_DATE.fullmatch(text) else None
    except ValueError:
        day = None
    if day is None:
        raise PhoneError("invalid_request", f"`{name}` must be a date like 2026-11-01", details={"field": name})
    return day


_CALENDAR_DATE = re.compile(r"\d{4}-\d{2}-\d{2}")


def _is_uuid(text: str) -> bool:
    try:
        uuid.UUID(text)
    except ValueError:
        return False
    return True


async def _find_by_key(phone: PhoneGateway, owner: KeyOwner, idempotency_key: str) -> PhoneRequest | None:
    async with phone.db.read() as session:
        return await requests.find_by_idempotency_key(session, owner.tenant_id, owner.environment, idempotency_key)


async def _replay(phone: PhoneGateway, existing: requests.StoredRequest, body_hash: str) -> Response[Any]:
    """Same key again: the original answer (waiting for it while pending), or 409 for a different body."""
    IDEMPOTENCY.check(existing, body_hash)
    if existing.state != "pending":
        return answer_for(existing, replay_failure_as_error=True)
    with phone.waiter.expecting(existing.id) as completed:
        row = await _stored(phone, existing.id)  # it may have finished before we started listening
        if row.state == "pending":
            row = await within(completed, phone.wait_s) or await _stored(phone, existing.id)
    return answer_for(row, replay_failure_as_error=True)


async def _after_insert_conflict(phone: PhoneGateway, owner: KeyOwner, row: dict[str, Any]) -> Response[Any]:
    """The key is taken (a replay), or this number already has an open check (409)."""
    if (existing := await _find_by_key(phone, owner, row["idempotency_key"])) is not None:
        return await _replay(phone, existing, row["body_hash"])
    async with phone.db.read() as session:
        open_check = await requests.find_open_check(session, owner.tenant_id, owner.environment, row["phone_e164"])
    raise PhoneError(
        "idempotency_conflict",
        "a check of this number is still pending or awaiting reconciliation; poll it instead of starting another",
        request_id=open_check,
    )


async def _stored(phone: PhoneGateway, request_id: str) -> Any:
    rows = await phone.db.run(lambda connection: requests.load_requests(connection, [request_id]), write=False)
    return rows[request_id]


def create_phone_app(gateway: PhoneGateway, readiness: Mapping[str, ReadinessCheck], *, debug: bool = False) -> ASGIApp:
    """The phone gateway as an ASGI app. The observing layer sits outside Litestar, whose own middleware never
    sees requests that match no route (they too get a request id, a metric and a log line)."""
    app = Litestar(
        route_handlers=[VerifyController, *health_routes(readiness)],
        dependencies={"phone": Provide(lambda: gateway, use_cache=True, sync_to_thread=False)},
        exception_handlers=EXCEPTION_HANDLERS,  # type: ignore[arg-type]
        request_max_body_size=MAX_BODY_BYTES,
        plugins=[MsgspecSchemaPlugin()],
        openapi_config=OpenAPIConfig(
            title="signalyard phone verification",
            version=API_VERSION,
            description="A US phone number and a supplied name in; carrier, line type, caller-ID name, name match "
            "and billing out. Test keys (`sy_test_...`) run against a deterministic sandbox that never calls a paid "
            "provider; live keys (`sy_live_...`) perform real lookups and are metered.",
            path="/docs",
            render_plugins=[ScalarRenderPlugin()],
            components=Components(
                security_schemes={
                    "bearer": SecurityScheme(
                        type="http",
                        scheme="bearer",
                        description="`Authorization: Bearer sy_test_...` (sandbox) or `Bearer sy_live_...`",
                    )
                }
            ),
            security=[{"bearer": []}],
        ),
        logging_config=None,  # the launcher configures logging (JSON lines) for the whole process
        debug=debug,
    )
    return observe("phone")(complete_allow(app))
