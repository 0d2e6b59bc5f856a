"""Phone data providers: the offline sandbox, the live carrier_lookup client, and the line type mapping.

This module owns three things:

* `Sandbox` (provider name ``sandbox``): a deterministic, network-free provider driven by a table of
  magic numbers (`SANDBOX_NUMBERS`, keyed by the last four digits of a US ``555-01XX`` number).
* `CarrierLookup` (provider name ``carrier_lookup``): an HTTP client for Twilio Lookup v2 that asks for
  the ``line_type_intelligence`` and ``caller_name`` packages and turns the answer into a `CarrierAnswer`.
* The mapping of a provider's raw line type word onto the contract's vocabulary (`LINE_TYPE_TABLE` and
  the functions `line_type`, `carrier_type`, `voip_or_virtual`, `toll_free`).
"""

from __future__ import annotations

import asyncio
import hashlib
import math
from dataclasses import dataclass
from typing import NamedTuple, Self
from urllib.parse import quote

import httpx
import msgspec

from net.guard import tls_context
from processors.phone.lookup import (
    CarrierAnswer,
    ProviderUnavailable,
    ProviderUnconfigured,
    ProviderUninterpretable,
)
from topics.phone import CarrierType, LineType, ProviderName

__all__ = [
    "LINE_TYPE_TABLE",
    "SANDBOX_DEFAULT_DESCRIPTION",
    "SANDBOX_NUMBERS",
    "CarrierLookup",
    "LineTypeRow",
    "Sandbox",
    "SandboxEntry",
    "carrier_type",
    "line_type",
    "sandbox_entry",
    "toll_free",
    "voip_or_virtual",
]


# --------------------------------------------------------------------------------------------------
# Line type mapping
# --------------------------------------------------------------------------------------------------


class LineTypeRow(NamedTuple):
    """How one raw provider line type reads in the contract."""

    line_type: LineType
    carrier_type: CarrierType
    voip_or_virtual: bool | None
    toll_free: bool | None


LINE_TYPE_TABLE: dict[str | None, LineTypeRow] = {
    # raw (Twilio Lookup v2 line_type_intelligence.type) -> contract reading
    "mobile": LineTypeRow("mobile", "wireless", False, False),
    "personal": LineTypeRow("mobile", "wireless", False, False),
    "landline": LineTypeRow("landline", "landline", False, False),
    "fixedVoip": LineTypeRow("voip", "voip", True, False),
    "nonFixedVoip": LineTypeRow("voip", "voip", True, False),
    "voicemail": LineTypeRow("voip", "voip", True, False),
    "tollFree": LineTypeRow("toll_free", "unknown", False, True),
    "premium": LineTypeRow("premium", "unknown", False, False),
    "pager": LineTypeRow("pager", "wireless", False, False),
    "sharedCost": LineTypeRow("unknown", "unknown", False, False),
    "uan": LineTypeRow("unknown", "unknown", False, False),
    "unknown": LineTypeRow("unknown", "unknown", False, False),
    None: LineTypeRow("unknown", "unknown", None, None),
}
"""Every raw line type word we know, plus None (no line type in the answer). Anything else reads as
`_UNRECOGNISED`."""

_UNRECOGNISED = LineTypeRow("unknown", "unknown", False, False)


def _row(raw: str | None) -> LineTypeRow:
    return LINE_TYPE_TABLE.get(raw, _UNRECOGNISED)


def line_type(raw: str | None) -> LineType:
    """The contract's line type for a provider's raw line type word."""
    return _row(raw).line_type


def carrier_type(raw: str | None) -> CarrierType:
    """The contract's carrier type (wireless, landline, voip, unknown) for a raw line type word."""
    return _row(raw).carrier_type


def voip_or_virtual(raw: str | None) -> bool | None:
    """True for VoIP-like lines (fixedVoip, nonFixedVoip, voicemail); None when there is no line type."""
    return _row(raw).voip_or_virtual


def toll_free(raw: str | None) -> bool | None:
    """True for tollFree; None when there is no line type."""
    return _row(raw).toll_free


# --------------------------------------------------------------------------------------------------
# Live provider: Twilio Lookup v2
# --------------------------------------------------------------------------------------------------

LOOKUP_FIELDS = "line_type_intelligence,caller_name"
"""The Lookup v2 data packages requested on every call."""

RETRY_AFTER_CAP_S = 2.0
"""Longest wait honoured from a 429's Retry-After header; longer requests are shortened to this."""


class _CallerNameBody(msgspec.Struct):
    caller_name: str | None = None
    caller_type: str | None = None
    error_code: int | str | None = None


class _LineTypeIntelligenceBody(msgspec.Struct):
    carrier_name: str | None = None
    mobile_country_code: str | int | None = None
    mobile_network_code: str | int | None = None
    type: str | None = None
    error_code: int | str | None = None


class _LookupBody(msgspec.Struct):
    """The parts of a Lookup v2 `GET /v2/PhoneNumbers/{n}` body we read; other fields are ignored."""

    phone_number: str | None = None
    valid: bool | None = None
    validation_errors: list[str] | None = None
    caller_name: _CallerNameBody | None = None
    line_type_intelligence: _LineTypeIntelligenceBody | None = None


def _text(value: str | int | None) -> str | None:
    return None if value is None else str(value)


def _interpret(content: bytes) -> CarrierAnswer:
    try:
        body = msgspec.json.decode(content, type=_LookupBody)
    except msgspec.DecodeError as exc:  # ValidationError is a DecodeError too
        raise ProviderUninterpretable(f"carrier lookup answered 200 with an unreadable body: {exc}") from None
    if body.valid is None and body.line_type_intelligence is None:
        raise ProviderUninterpretable("carrier lookup answered 200 without `valid` or `line_type_intelligence`")
    lti = body.line_type_intelligence or _LineTypeIntelligenceBody()
    cnam = body.caller_name or _CallerNameBody()
    return CarrierAnswer(
        valid=body.valid,
        line_type_raw=lti.type,
        carrier_name=lti.carrier_name,
        mobile_country_code=_text(lti.mobile_country_code),
        mobile_network_code=_text(lti.mobile_network_code),
        line_type_error_code=_text(lti.error_code),
        caller_name=cnam.caller_name,
        caller_type=cnam.caller_type,
        caller_name_error_code=_text(cnam.error_code),
        ported=None,  # Lookup v2 line_type_intelligence does not say
    )


def _retry_after(response: httpx.Response) -> float | None:
    """Seconds from a Retry-After header given in seconds (HTTP-date forms are ignored), capped."""
    value = response.headers.get("retry-after")
    if value is None:
        return None
    try:
        seconds = float(value)
    except ValueError:
        return None
    if not math.isfinite(seconds):
        return None
    return min(max(seconds, 0.0), RETRY_AFTER_CAP_S)


class CarrierLookup:
    """The live provider: Twilio Lookup v2 with the line_type_intelligence and caller_name packages.

    One instance owns one pooled `httpx.AsyncClient` (unless one is passed in, which then stays the
    caller's to close); call `aclose()` when done. Timeouts, connection errors, 429 and 5xx are retried
    `retries` more times with exponential backoff (`backoff_s`, doubled each time; a 429's Retry-After in
    seconds is honoured up to `RETRY_AFTER_CAP_S`), then raise `ProviderUnavailable`. Refused
    credentials (401/403) and other unexpected statuses raise `ProviderUnavailable` at once. A 404 (Twilio's
    answer for a number it cannot parse) is `CarrierAnswer(valid=False)`. A 200 that is not a Lookup
    body raises `ProviderUninterpretable`. Messages never carry the credentials or the number.
    """

    name: ProviderName = "carrier_lookup"

    def __init__(
        self,
        base_url: str,
        account_sid: str | None,
        auth_token: str | None,
        *,
        timeout_s: float = 3.0,
        retries: int = 2,
        backoff_s: float = 0.2,
        client: httpx.AsyncClient | None = None,
    ) -> None:
        self._base_url = base_url.rstrip("/")
        self._auth = httpx.BasicAuth(account_sid, auth_token) if account_sid and auth_token else None
        self._timeout_s = timeout_s
        self._retries = max(0, retries)
        self._backoff_s = backoff_s
        self._owns_client = client is None
        self._client = (
            client if client is not None else httpx.AsyncClient(timeout=httpx.Timeout(timeout_s), verify=tls_context())
        )

    @property
    def configured(self) -> bool:
        """Whether both an account SID and an auth token were given."""
        return self._auth is not None

    async def aclose(self) -> None:
        """Close the connection pool (only if this instance created the client)."""
        if self._owns_client:
            await self._client.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def _url(self, e164: str) -> str:
        return f"{self._base_url}/v2/PhoneNumbers/{quote(e164, safe='')}?Fields={LOOKUP_FIELDS}"

    async def lookup(self, e164: str) -> CarrierAnswer:
        if self._auth is None:
            raise ProviderUnconfigured("carrier lookup has no account SID and auth token configured")
        url = self._url(e164)
        attempts = self._retries + 1
        problem = "did not answer"
        for attempt in range(attempts):
            try:
                response = await self._client.get(url, auth=self._auth, timeout=self._timeout_s)
            except httpx.TimeoutException as exc:
                problem, delay = f"timed out after {self._timeout_s:g}s ({type(exc).__name__})", None
            except httpx.TransportError as exc:
                problem, delay = f"could not be reached ({type(exc).__name__})", None
            else:
                status = response.status_code
                if status == 200:
                    return _interpret(response.content)
                if status == 404:
                    return CarrierAnswer(valid=False)
                if status in (401, 403):
                    raise ProviderUnavailable("carrier lookup rejected the configured credentials")
                if status != 429 and status < 500:
                    raise ProviderUnavailable(f"carrier lookup answered an unexpected HTTP {status}")
                problem = f"answered HTTP {status}"
                delay = _retry_after(response) if status == 429 else None
            if attempt + 1 < attempts:
                await asyncio.sleep(delay if delay is not None else self._backoff_s * 2**attempt)
        raise ProviderUnavailable(f"carrier lookup {problem}; gave up after {attempts} attempt(s)")


# --------------------------------------------------------------------------------------------------
# Sandbox provider
# --------------------------------------------------------------------------------------------------

SANDBOX_MCC = "999"
"""Fictional mobile country code (ITU reserves 999 for internal use) used on sandbox mobile answers."""


@dataclass(frozen=True, kw_only=True)
class SandboxEntry:
    """One magic number: what it is for, and the answer, exception or delay it produces."""

    description: str
    """One line for the sandbox table in docs/phone.md."""
    answer: CarrierAnswer | None = None
    """Returned by `Sandbox.lookup` (after `slow_delay_s` when `slow`)."""
    raises: type[Exception] | None = None
    """Raised instead of answering."""
    slow: bool = False

    @property
    def returns(self) -> str:
        """A short human summary of what this entry produces, for the sandbox table in docs/phone.md."""
        prefix = "after `slow_delay_s`: " if self.slow else ""
        if self.raises is not None:
            return f"{prefix}raises {self.raises.__name__}"
        a = self.answer
        assert a is not None
        if a.valid is False:
            return f"{prefix}valid=false"
        parts = [a.line_type_raw or "no line type", a.carrier_name or "no carrier"]
        if a.caller_name is not None:
            parts.append(f'CNAM "{a.caller_name}"' + (f" ({a.caller_type})" if a.caller_type else ""))
        elif a.caller_name_error_code is not None:
            parts.append(f"CNAM error {a.caller_name_error_code}")
        else:
            parts.append("no CNAM")
        if a.ported:
            parts.append("ported")
        return prefix + ", ".join(parts)


def _answer(
    raw: str,
    carrier: str | None,
    caller_name: str | None = None,
    caller_type: str | None = None,
    *,
    caller_name_error_code: str | None = None,
    mnc: str | None = None,
    ported: bool = False,
) -> CarrierAnswer:
    return CarrierAnswer(
        valid=True,
        line_type_raw=raw,
        carrier_name=carrier,
        mobile_country_code=SANDBOX_MCC if mnc else None,
        mobile_network_code=mnc,
        caller_name=caller_name,
        caller_type=caller_type,
        caller_name_error_code=caller_name_error_code,
        ported=ported,
    )


_SMITH_JOHN = _answer("mobile", "Sandbox Wireless", "SMITH JOHN", "CONSUMER", mnc="01")

SANDBOX_NUMBERS: dict[str, SandboxEntry] = {
    "0100": SandboxEntry(description="Mobile line with a person's caller-ID", answer=_SMITH_JOHN),
    "0101": SandboxEntry(
        description="Landline with a business caller-ID",
        answer=_answer("landline", "Sandbox Telecom", "ACME INC", "BUSINESS"),
    ),
    "0102": SandboxEntry(
        description="Fixed VoIP line with a caller-ID cut at 15 characters",
        answer=_answer("fixedVoip", "Sandbox Voice", "WASHINGTON GEOR", "CONSUMER"),
    ),
    "0103": SandboxEntry(
        description="Mobile line whose caller-ID is the carrier placeholder WIRELESS CALLER",
        answer=_answer("mobile", "Sandbox Wireless", "WIRELESS CALLER", mnc="01"),
    ),
    "0104": SandboxEntry(
        description="Non-fixed VoIP line with no caller-ID on file",
        answer=_answer("nonFixedVoip", "Sandbox Cloud Voice"),
    ),
    "0105": SandboxEntry(description="Toll-free number (no carrier data)", answer=_answer("tollFree", None)),
    "0106": SandboxEntry(description="Premium-rate number (no carrier data)", answer=_answer("premium", None)),
    "0107": SandboxEntry(description="Pager (no carrier data)", answer=_answer("pager", None)),
    "0108": SandboxEntry(description="Line type the provider cannot tell", answer=_answer("unknown", None)),
    "0109": SandboxEntry(description="Voicemail-only number", answer=_answer("voicemail", None)),
    "0110": SandboxEntry(description="Personal number (reads as mobile)", answer=_answer("personal", None)),
    "0111": SandboxEntry(
        description="Mobile line whose caller-ID lookup failed at the provider (Twilio error 60608)",
        answer=_answer("mobile", "Sandbox Wireless", caller_name_error_code="60608", mnc="01"),
    ),
    "0112": SandboxEntry(
        description="Mobile line ported from another carrier, with a person's caller-ID",
        answer=_answer("mobile", "Sandbox Mobile", "DOE JANE", "CONSUMER", mnc="02", ported=True),
    ),
    "0190": SandboxEntry(
        description="Number not allocated: the provider calls it invalid (result_state unavailable)",
        answer=CarrierAnswer(valid=False),
    ),
    "0191": SandboxEntry(
        description="The provider answers with something unreadable (result_state error)",
        raises=ProviderUninterpretable,
    ),
    "0192": SandboxEntry(
        description="The provider is down after retries (the request fails with HTTP 502)",
        raises=ProviderUnavailable,
    ),
    "0199": SandboxEntry(
        description="Slow provider: answers like 0100 after `slow_delay_s` (exercises the 202 path)",
        answer=_SMITH_JOHN,
        slow=True,
    ),
}
"""Magic numbers, keyed by the last four digits of a US number whose subscriber part is 555-01XX
(any area code: +1 415 555 0100, +1 212 555 0100, ... all mean "0100")."""

SANDBOX_DEFAULT_DESCRIPTION = (
    "Any other number: a valid answer chosen by SHA-256 of the E.164 string (stable per number): "
    "line type mobile (Sandbox Wireless), landline (Sandbox Telecom) or fixedVoip (Sandbox Voice) "
    'by the first digest byte mod 3; caller-ID none or "DOE JANE" (CONSUMER) by the second byte\'s parity; '
    "never ported."
)

_DEFAULT_LINES: tuple[tuple[str, str, str | None], ...] = (
    ("mobile", "Sandbox Wireless", "01"),
    ("landline", "Sandbox Telecom", None),
    ("fixedVoip", "Sandbox Voice", None),
)


def sandbox_entry(e164: str) -> SandboxEntry | None:
    """The magic-number entry for `e164`, or None when it is not a +1 NPA 555-01XX number in the table."""
    if len(e164) != 12 or not e164.startswith("+1") or not e164[1:].isdigit() or e164[5:8] != "555":
        return None
    return SANDBOX_NUMBERS.get(e164[8:])


def _default_answer(e164: str) -> CarrierAnswer:
    digest = hashlib.sha256(e164.encode()).digest()
    raw, carrier, mnc = _DEFAULT_LINES[digest[0] % len(_DEFAULT_LINES)]
    named = digest[1] % 2 == 1
    return _answer(raw, carrier, "DOE JANE" if named else None, "CONSUMER" if named else None, mnc=mnc)


class Sandbox:
    """The offline provider: answers from `SANDBOX_NUMBERS`, else a stable hash-derived default.

    Never opens a socket. Only the slow magic number (0199) waits, for `slow_delay_s` seconds.
    """

    name: ProviderName = "sandbox"

    def __init__(self, slow_delay_s: float = 6.0) -> None:
        self.slow_delay_s = slow_delay_s

    async def lookup(self, e164: str) -> CarrierAnswer:
        entry = sandbox_entry(e164)
        if entry is None:
            return _default_answer(e164)
        if entry.slow:
            await asyncio.sleep(self.slow_delay_s)
        if entry.raises is not None:
            raise entry.raises(f"sandbox number {e164[-4:]}: {entry.description}")
        assert entry.answer is not None
        return entry.answer
