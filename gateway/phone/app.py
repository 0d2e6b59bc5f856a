"""The phone gateway app: `POST /v1/verify`, `GET /v1/requests/{id}`, `GET /v1/usage`."""

from __future__ import annotations

import hashlib
import re
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from typing import Any

import msgspec
import phonenumbers
import structlog
from litestar import Controller, Litestar, Request, Response, get, post
from litestar.di import NamedDependency, Provide
from litestar.openapi import OpenAPIConfig, ResponseSpec
from litestar.openapi.plugins import ScalarRenderPlugin
from litestar.openapi.spec import Components, SecurityScheme
from litestar.params import FromPath
from litestar.types import ASGIApp

from gateway.phone.auth import Authenticator, authorize
from gateway.phone.enforcement import Enforcement, seconds_to_next_month
from gateway.phone.errors import EXCEPTION_HANDLERS, ErrorEnvelope, PhoneError, error_response, invalid_body
from gateway.phone.schemas import Pending, Period, SkuUsage, UsageSummary, VerifyRequest
from gateway.phone.waiter import ResultWaiter, within
from gateway.platform import ReadinessCheck, health_routes, observe
from storage import phone as requests
from storage.batching import GroupCommit
from storage.db import Database
from storage.models import PhoneRequest
from storage.tenants import KeyOwner
from topics.phone import SKU, StoredRequestFailure, VerificationRequested, VerifyResult

log = structlog.get_logger("signalyard.gateway.phone")

API_VERSION = "2026-10-15.2"
Publish = Callable[[VerificationRequested], Awaitable[None]]
Accept = Callable[[dict[str, Any]], Awaitable[bool]]
JSON = "application/json"

_decode_verify = msgspec.json.Decoder(VerifyRequest).decode
_canonical = msgspec.json.Encoder(order="sorted").encode
_pending = msgspec.json.Encoder().encode


@dataclass(frozen=True, slots=True)
class PhoneGateway:
    """Everything the phone routes need, wired once by the launcher."""

    db: Database
    auth: Authenticator
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


def idempotency_key_of(request: Request[Any, Any, Any]) -> str:
    key = request.headers.get("idempotency-key")
    if key is None:
        raise PhoneError("missing_idempotency_key", "the Idempotency-Key header is required")
    if not 1 <= len(key) <= 128 or not all(" " <= char <= "~" for char in key):
        raise PhoneError(
            "invalid_request",
            "Idempotency-Key must be 1 to 128 printable characters",
            details={"field": "Idempotency-Key"},
        )
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
    return error_response(
        PhoneError(failure.error.code, failure.error.message, request_id=row.id, retry_after=retry_after)
    )


_ERRORS = {status: ResponseSpec(ErrorEnvelope, description="Error envelope") for status in (400, 401, 403, 404)}


class VerifyController(Controller):
    path = "/v1"
    tags = ["phone"]

    @post(
        "/verify",
        operation_id="verify",
        summary="Verify a US phone number against a supplied name",
        status_code=200,
        responses={
            200: ResponseSpec(VerifyResult, description="A completed check, or an explicit unavailable result"),
            202: ResponseSpec(Pending, description="Still being processed: poll GET /requests/{id}"),
            **_ERRORS,
            409: ResponseSpec(ErrorEnvelope, description="Same Idempotency-Key with a different body"),
            422: ResponseSpec(ErrorEnvelope, description="invalid_phone or unsupported_country"),
            429: ResponseSpec(ErrorEnvelope, description="rate_limited or spend_cap_reached, with Retry-After"),
            502: ResponseSpec(ErrorEnvelope, description="provider_unavailable"),
            503: ResponseSpec(ErrorEnvelope, description="enforcement, provider or ledger unavailable"),
        },
    )
    async def verify(self, request: Request[Any, Any, Any], phone: NamedDependency[PhoneGateway]) -> Response[Any]:
        owner = await phone.auth.owner(request.headers.get("authorization"))
        authorize(owner, "verify", SKU)
        idempotency_key = idempotency_key_of(request)
        await phone.enforcement.rate_limit(owner)
        try:
            body = _decode_verify(await request.body())
        except msgspec.ValidationError as error:
            raise invalid_body(str(error)) from error
        except msgspec.DecodeError as error:
            raise PhoneError("invalid_request", f"the body is not valid JSON: {error}") from error
        body_hash = hashlib.sha256(_canonical(body)).hexdigest()
        number = parse_us_number(body.phone)

        if owner.spend_cap_microdollars is not None:
            # A replay is free and must not meet the cap: look for one before enforcing it.
            if (existing := await _find_by_key(phone, owner, idempotency_key)) is not None:
                return await _replay(phone, existing, body_hash)
            await phone.enforcement.spend_cap(owner)

        now = datetime.now(UTC)
        request_id = str(uuid.uuid4())
        phone_e164 = phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164)
        row: dict[str, Any] = {
            "id": request_id,
            "tenant_id": owner.tenant_id,
            "environment": owner.environment,
            "idempotency_key": idempotency_key,
            "body_hash": body_hash,
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
            except Exception:  # the row is the outbox: the sweeper publishes it again
                log.exception("publish_failed")
            stored = await within(completed, phone.wait_s)
        return answer_for(stored or await _stored(phone, request_id), replay_failure_as_error=True)

    @get(
        "/requests/{request_id:str}",
        operation_id="getRequest",
        summary="Fetch a previous request",
        responses={
            200: ResponseSpec(VerifyResult | StoredRequestFailure, description="A result or a stored failure"),  # type: ignore[arg-type]
            202: ResponseSpec(Pending, description="Still pending"),
            **_ERRORS,
        },
    )
    async def get_request(
        self, request: Request[Any, Any, Any], phone: NamedDependency[PhoneGateway], request_id: FromPath[str]
    ) -> Response[Any]:
        owner = await phone.auth.owner(request.headers.get("authorization"))
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
        responses={200: ResponseSpec(UsageSummary, description="Usage summary"), **_ERRORS},
    )
    async def get_usage(
        self, request: Request[Any, Any, Any], phone: NamedDependency[PhoneGateway]
    ) -> Response[UsageSummary]:
        owner = await phone.auth.owner(request.headers.get("authorization"))
        authorize(owner, "usage:read")
        start, end = usage_period(request.query_params.get("from"), request.query_params.get("to"), datetime.now(UTC))
        async with phone.db.read() as session:
            rows = await requests.usage(session, owner.tenant_id, owner.environment, start, end)
        by_sku = [SkuUsage(r.sku, r.billable_requests, r.cache_hits, r.amount_microdollars) for r in rows]
        return Response(
            UsageSummary(
                tenant_id=owner.tenant_id,
                environment=owner.environment,  # type: ignore[arg-type]
                period=Period(from_=_iso(start), to=_iso(end - timedelta(microseconds=1))),
                by_sku=by_sku,
                total_amount_microdollars=sum(usage.amount_microdollars for usage in by_sku),
            )
        )


def usage_period(from_text: str | None, to_text: str | None, now: datetime) -> tuple[datetime, datetime]:
    """Section 4.3: inclusive UTC dates; `to` defaults to today, `from` to the first day of `to`'s month."""
    to_day = _date_param("to", to_text) if to_text else now.date()
    from_day = _date_param("from", from_text) if from_text else to_day.replace(day=1)
    if from_day > to_day:
        raise PhoneError("invalid_request", "`from` is after `to`", details={"field": "from"})
    start = datetime.combine(from_day, datetime.min.time(), tzinfo=UTC)
    end = datetime.combine(to_day + timedelta(days=1), datetime.min.time(), tzinfo=UTC)
    return start, end


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


def _iso(at: datetime) -> str:
    return at.isoformat().replace("+00:00", "Z")


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
    if existing.body_hash != body_hash:
        raise PhoneError(
            "idempotency_conflict",
            "this Idempotency-Key was used with a different body",
            request_id=existing.id,
        )
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
        openapi_config=OpenAPIConfig(
            title="signalyard phone verification",
            version=API_VERSION,
            path="/docs",
            render_plugins=[ScalarRenderPlugin()],
            components=Components(security_schemes={"bearer": SecurityScheme(type="http", scheme="bearer")}),
            security=[{"bearer": []}],
        ),
        logging_config=None,  # the launcher configures logging (JSON lines) for the whole process
        debug=debug,
    )
    return observe("phone")(app)
