"""What a phone data provider tells us about one number, in provider-neutral terms."""

from __future__ import annotations

from typing import Protocol

import msgspec

from topics.phone import ProviderName


class CarrierAnswer(msgspec.Struct, frozen=True, kw_only=True):
    """One provider answer. Raw strings are kept as the provider sent them; mapping happens later."""

    valid: bool | None
    """The provider's validity flag; False means not allocated / invalid (result_state `unavailable`)."""
    line_type_raw: str | None = None
    """The provider's own line type word (Twilio: mobile, landline, fixedVoip, ...)."""
    carrier_name: str | None = None
    mobile_country_code: str | None = None
    mobile_network_code: str | None = None
    line_type_error_code: str | None = None
    caller_name: str | None = None
    """The registered caller-ID (CNAM) string, untouched."""
    caller_type: str | None = None
    """BUSINESS, CONSUMER or None."""
    caller_name_error_code: str | None = None
    ported: bool | None = None


class ProviderUnavailable(Exception):
    """The provider did not answer usefully after bounded retries (timeouts, 5xx, refused credentials)."""


class ProviderUnconfigured(Exception):
    """No credentials are configured for the live provider."""


class ProviderUninterpretable(Exception):
    """The provider answered, but with something that cannot be interpreted (result_state `error`)."""


class Provider(Protocol):
    """A source of carrier and caller-ID data for US numbers in E.164 form."""

    name: ProviderName
    """`sandbox` or `carrier_lookup`, as it appears in a result's provenance."""

    async def lookup(self, e164: str) -> CarrierAnswer: ...
