"""The helpdesk's inbound calls as its gateway and processors read them (docs/helpdesk.md, "Inbound channels"): the
provider kinds and the channel kinds, each declared here once, and each provider's payload as msgspec Structs."""

from __future__ import annotations

from typing import Literal, get_args

Provider = Literal[
    "email_a",
    "email_b",
    "email_c",
    "email_d",
    "sms",
    "business_messaging",
    "page_messaging",
    "voice",
    "commerce",
    "commerce_privacy",
    "payments",
    "payments_connect",
    "chat",
    "email_provider",
    "marketplace",
]
"""The provider kind of an inbound event: the endpoint, and the shape of the call it took. A stored event's
`provider`, the processors' handler of it, `GET /api/v1/inbound-messages`'s `provider`."""
PROVIDERS: tuple[Provider, ...] = get_args(Provider)

ChannelKindName = Literal[
    "email",
    "sms",
    "business_messaging",
    "page_messaging",
    "voice",
    "commerce",
    "payments",
    "chat",
    "email_provider",
    "marketplace",
]
"""A kind of channel (storage/helpdesk/channels.py says what each is made of)."""
CHANNEL_KINDS: tuple[ChannelKindName, ...] = get_args(ChannelKindName)
