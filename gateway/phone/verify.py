"""`POST /v1/verify`: accept a verify request, publish it, and answer with its result when it comes within the wait
(else 202); the same Idempotency-Key again replays the original answer."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import msgspec
import phonenumbers
import structlog
from litestar import Controller, Request, Response, post
from litestar.di import NamedDependency

from gateway.common.auth import requires
from gateway.common.errors import decode_body
from gateway.common.idempotency import IdempotencyRules, body_hash
from gateway.phone import docs
from gateway.phone.auth import VERIFY, PhonePrincipal, sku_scope
from gateway.phone.deps import PhoneGateway
from gateway.phone.errors import ERRORS, PhoneError
from gateway.phone.requests import answer_for
from gateway.phone.schemas import VerifyRequest
from storage.phone import requests
from storage.phone.tenants import KeyOwner
from topics.phone import SKU, VerificationRequested
from wire.ids import new_uuid

MAX_BODY_BYTES = 16 * 1024
"""The largest valid verify body is under 1 KiB; a longer one answers 413 before its excess is read."""

_decode_verify = msgspec.json.Decoder(VerifyRequest).decode

IDEMPOTENCY = IdempotencyRules(
    required=True,
    missing=lambda: PhoneError("missing_idempotency_key", "the Idempotency-Key header is required"),
    malformed=lambda reason: PhoneError("invalid_request", reason, details={"field": "Idempotency-Key"}),
    conflict=lambda original: PhoneError(
        "idempotency_conflict", "this Idempotency-Key was used with a different body", request_id=original.id
    ),
)
"""Phone's keys: required, scoped to the key's tenant and environment (the request row's unique index)."""

_NOT_A_NUMBER = {
    phonenumbers.NumberParseException.INVALID_COUNTRY_CODE: "it starts with a country code that does not exist",
    phonenumbers.NumberParseException.NOT_A_NUMBER: "it is not a phone number",
    phonenumbers.NumberParseException.TOO_SHORT_AFTER_IDD: "it is too short after its international prefix",
    phonenumbers.NumberParseException.TOO_SHORT_NSN: "it has too few digits",
    phonenumbers.NumberParseException.TOO_LONG: "it has too many digits",
}
"""Why phonenumbers could not read a number, in our words (its own messages carry an internal error number)."""


def parse_us_number(text: str) -> phonenumbers.PhoneNumber:
    """US numbers only, decided by phonenumbers: other NANP regions (CA, JM, PR, ...) are unsupported countries."""
    try:
        number = phonenumbers.parse(text, "US")
    except phonenumbers.NumberParseException as error:
        reason = _NOT_A_NUMBER.get(error.error_type, "it is not a phone number")
        raise PhoneError(
            "invalid_phone", f"`phone` cannot be read as a phone number: {reason}", details={"field": "phone"}
        ) from error
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


class VerifyController(Controller):
    path = "/v1/verify"

    @post("/", guards=[requires(VERIFY, sku_scope(SKU))], **docs.VERIFY)
    async def verify(
        self, request: Request[PhonePrincipal, Any, Any], phone: NamedDependency[PhoneGateway]
    ) -> Response[Any]:
        owner = request.user.account
        idempotency_key = IDEMPOTENCY.key_in(request.headers)
        assert idempotency_key is not None  # required: a missing key has raised
        await phone.enforcement.rate_limit(owner)
        body = decode_body(_decode_verify, await request.body(), ERRORS)
        body_digest = body_hash(body)
        number = parse_us_number(body.phone)

        if owner.spend_cap_microdollars is not None:
            # A replay is free and must not meet the cap: look for one before enforcing it.
            if (existing := await _find_by_key(phone, owner, idempotency_key)) is not None:
                return await _replay(phone, existing, body_digest)
            await phone.enforcement.spend_cap(owner)

        now = datetime.now(UTC)
        request_id = new_uuid()
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
        message = VerificationRequested(
            request_id=request_id, tenant_id=owner.tenant_id, environment=owner.environment, phone_e164=phone_e164
        )
        stored = await phone.waiter.outcome(request_id, phone.wait_s, lambda: phone.publish(message))
        return answer_for(stored, replay_failure_as_error=True)


async def _find_by_key(phone: PhoneGateway, owner: KeyOwner, idempotency_key: str) -> Any:
    return await phone.db.read(requests.find_by_idempotency_key, owner.tenant_id, owner.environment, idempotency_key)


async def _replay(phone: PhoneGateway, existing: requests.StoredRequest, body_hash: str) -> Response[Any]:
    """Same key again: the original answer (waiting for it while pending), or 409 for a different body."""
    IDEMPOTENCY.check(existing, body_hash)
    if existing.state != "pending":
        return answer_for(existing, replay_failure_as_error=True)
    return answer_for(await phone.waiter.outcome(existing.id, phone.wait_s), replay_failure_as_error=True)


async def _after_insert_conflict(phone: PhoneGateway, owner: KeyOwner, row: dict[str, Any]) -> Response[Any]:
    """The key is taken (a replay), or this number already has an open check (409)."""
    if (existing := await _find_by_key(phone, owner, row["idempotency_key"])) is not None:
        return await _replay(phone, existing, row["body_hash"])
    open_check = await phone.db.read(requests.find_open_check, owner.tenant_id, owner.environment, row["phone_e164"])
    raise PhoneError(
        "idempotency_conflict",
        "a check of this number is still pending or awaiting reconciliation; poll it instead of starting another",
        request_id=open_check,
    )
