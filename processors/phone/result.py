"""Turning a provider's answer into the contract's VerifyResult: pure functions, no I/O."""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache

import msgspec
import phonenumbers
import us
from phonenumbers import geocoder

from processors.phone import providers
from processors.phone.lookup import CarrierAnswer
from processors.phone.name_match import CallerId, NameMatch, match_name, read_caller_id
from topics.common.environment import Environment
from topics.phone import (
    SKU,
    Billing,
    CallerIdView,
    Checks,
    NameMatchView,
    Phone,
    Provenance,
    ProviderName,
    RateCenter,
    ResultState,
    Signals,
    Subject,
    SubjectType,
    VerifyResult,
)
from wire.timestamps import iso

PRODUCT_VERSION = "core_phone-2026-10-15.2"
RULE_VERSION = "name_match-2026-11"
FREE_RECHECK_WARNING = "free_recheck_within_24h"
UNINTERPRETABLE_ERROR_CODE = "provider_response_uninterpretable"


class StoredLookup(msgspec.Struct, frozen=True, kw_only=True):
    """A provider answer kept with the request, so a free re-check can reuse it without a new lookup."""

    provider: ProviderName
    attempted_at: datetime
    answer: CarrierAnswer | None
    """None when the provider's answer could not be interpreted (result_state `error`)."""


class Request(msgspec.Struct, frozen=True, kw_only=True):
    """The fields of an accepted request that a result echoes."""

    request_id: str
    environment: Environment
    created_at: datetime
    phone_e164: str
    subject_type: SubjectType
    supplied_name: str
    reference_id: str | None


@lru_cache(maxsize=4096)
def national_format(phone_e164: str) -> str:
    return phonenumbers.format_number(phonenumbers.parse(phone_e164), phonenumbers.PhoneNumberFormat.NATIONAL)


def rate_center(phone_e164: str) -> RateCenter | None:
    """The number's rate-center location from phonenumbers' offline geocoding ("City, ST" or a state name)."""
    return _rate_center_of_prefix(phone_e164[:8])


@lru_cache(maxsize=16384)
def _rate_center_of_prefix(prefix: str) -> RateCenter | None:
    # US geocoding depends on the NPA-NXX alone (+1 and six digits): one look-up serves the whole exchange.
    place = geocoder.description_for_number(phonenumbers.parse(prefix + "0000"), "en")
    if not place:
        return None
    city, _, state = place.rpartition(", ")
    if city and len(state) == 2:
        return RateCenter(city=city, state=state)
    if place == "Washington D.C.":  # the one place the geocoder names by neither "City, ST" nor a state
        return RateCenter(city="Washington", state="DC")
    found = us.states.lookup(place)
    return RateCenter(city=None, state=found.abbr if found else None)


def build_result(
    request: Request,
    lookup: StoredLookup,
    *,
    completed_at: datetime,
    cache_hit: bool,
    billable: bool,
    unit_price_microdollars: int,
) -> VerifyResult:
    """The VerifyResult for one request, from the provider's answer (fresh, or reused on a free re-check)."""
    answer = lookup.answer
    state: ResultState
    caller_id: CallerId
    if answer is None:
        state = "error"
        caller_id = read_caller_id(None, UNINTERPRETABLE_ERROR_CODE)
    elif answer.valid is False:
        state = "unavailable"
        caller_id = read_caller_id(None)
    else:
        state = "completed"
        caller_id = read_caller_id(answer.caller_name, answer.caller_name_error_code)
    match: NameMatch = match_name(
        request.supplied_name,
        caller_id,
        request.subject_type,
        answer.caller_type if answer else None,
    )
    raw = answer.line_type_raw if answer and answer.valid is not False else None
    return VerifyResult(
        request_id=request.request_id,
        environment=request.environment,
        created_at=iso(request.created_at),
        completed_at=iso(completed_at),
        product_version=PRODUCT_VERSION,
        rule_version=RULE_VERSION,
        result_state=state,
        subject=Subject(
            phone_e164=request.phone_e164,
            phone_national=national_format(request.phone_e164),
            subject_type=request.subject_type,
            supplied_name=request.supplied_name,
            reference_id=request.reference_id,
        ),
        checks=Checks(requested=[SKU], completed=[SKU] if state == "completed" else []),
        phone=Phone(
            valid=answer.valid if answer else None,
            country="US",
            line_type=providers.line_type(raw),
            line_type_raw=raw,
            carrier_name=answer.carrier_name if answer and answer.valid is not False else None,
            carrier_type=providers.carrier_type(raw),
            ported=answer.ported if answer else None,
            rate_center=rate_center(request.phone_e164),
        ),
        caller_id=CallerIdView(state=caller_id.state, name=caller_id.name, error_code=caller_id.error_code),
        name_match=NameMatchView(state=match.state, score=match.score, reasons=list(match.reasons)),
        signals=Signals(voip_or_virtual=providers.voip_or_virtual(raw), toll_free=providers.toll_free(raw)),
        provenance=[
            Provenance(
                provider=lookup.provider,
                sku=SKU,
                cache_hit=cache_hit,
                attempted_at=iso(lookup.attempted_at),
            )
        ],
        billing=Billing(
            disposition="billable" if billable else "not_billable",
            sku=SKU,
            unit_price_microdollars=unit_price_microdollars if billable else 0,
            cache_hit=cache_hit,
        ),
        warnings=[FREE_RECHECK_WARNING] if cache_hit else [],
    )
