"""Inbound channels (docs/helpdesk.md, "Inbound channels"): where an organization's customers reach it. A channel
has a kind, the addresses that route a provider's call to it (an inbound address, a phone number, a messaging app's
id, a shop), settings, and secrets sealed with the platform's stored-secrets cipher. An address routes to one live
channel at a time; a deleted channel routes nothing, and its addresses are free again."""

from __future__ import annotations

import hashlib
import json
import secrets
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, cast

from sqlalchemy import Table, bindparam, delete, insert, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from storage.common.secrets import Cipher, seal, unseal
from storage.helpdesk.models import Channel, ChannelAddress
from topics.helpdesk.inbound import CHANNEL_KINDS, ChannelKindName
from wire.ids import new_uuid

CHANNELS = cast(Table, Channel.__table__)
ADDRESSES = cast(Table, ChannelAddress.__table__)


@dataclass(frozen=True, slots=True)
class ChannelKind:
    """What a kind of channel is made of: the kind of address that routes a call to it, the secrets the helpdesk
    generates for it (shown once, at creation), the secrets its provider issues (given at creation), and its
    settings."""

    address_kind: str
    generated: tuple[str, ...] = ()
    given: tuple[str, ...] = ()
    settings: tuple[str, ...] = ()
    routed_by_secret: tuple[str, ...] = ()
    """Secrets that also route a call to the channel, for a provider call that carries nothing else (a messaging
    app's subscription check carries only its verify token): each by its SHA-256 (`secret_route`), so that the
    secret is kept nowhere in the clear; such routes are not listed among the channel's addresses."""


KINDS: dict[ChannelKindName, ChannelKind] = {
    # inbound mail of the four provider kinds: D's forwarder secret and C's token are made here; A's signing key and
    # B's public key come from the provider
    # replies go through the helpdesk's SMTP server, or the channel's own (`smtp_url`)
    # its settings: the texts of the automatic mail it sends, when they are set (docs/helpdesk.md, "Automatic mail")
    "email": ChannelKind(
        "email",
        generated=("forwarder_secret", "inbound_token"),
        given=("signing_key", "public_key", "smtp_url"),
        settings=("acknowledgement", "resolved_notice"),
    ),
    # the auth token checks the provider's calls and, with the account sid, sends the replies
    "sms": ChannelKind("sms_number", given=("auth_token", "account_sid"), settings=("auto_reply",)),
    # the app secret checks the provider's calls; the access token sends the replies and fetches the media
    "business_messaging": ChannelKind(
        "phone_number_id",
        generated=("verify_token",),
        given=("app_secret", "access_token"),
        routed_by_secret=("verify_token",),
    ),
    "page_messaging": ChannelKind(
        "page_id",
        generated=("verify_token",),
        given=("app_secret", "page_access_token"),
        routed_by_secret=("verify_token",),
    ),
    "voice": ChannelKind("voice_number", generated=("webhook_secret",)),
    # the webhook secret checks the shop's events, the api secret its privacy topics (both the app's secret when the
    # store was connected by its app install); the access token is the one the install gave (docs: "Commerce")
    "commerce": ChannelKind("shop", given=("webhook_secret", "api_secret", "access_token")),
    "payments": ChannelKind("account"),
    # the signing secret checks the chat's calls; the bot token posts the replies and fetches the files
    "chat": ChannelKind("team", given=("signing_secret", "bot_token")),
    "email_provider": ChannelKind("token", generated=("token",), given=("public_key",)),
    "marketplace": ChannelKind("topic_arn"),
}
"""What every kind of channel is made of (docs/helpdesk.md, "Inbound channels")."""


class AddressTaken(Exception):
    """An address of the new channel routes to another live channel already (409)."""

    def __init__(self, kind: str, address: str) -> None:
        super().__init__(f"{kind} {address} already routes to another channel")
        self.kind = kind
        self.address = address


@dataclass(frozen=True, slots=True)
class ChannelRecord:
    """A channel as its organization sees it: never its secrets, only their names."""

    id: str
    organization_id: str
    kind: str
    name: str
    settings: dict[str, Any]
    addresses: list[tuple[str, str]]
    """(kind, address) pairs that route to it."""
    secret_names: list[str]
    created_at: datetime


@dataclass(frozen=True, slots=True)
class Routed:
    """What a provider's call reached: the channel, and its secrets opened for the check of the call's signature."""

    channel_id: str
    organization_id: str
    kind: str
    settings: dict[str, Any]
    secrets: dict[str, str] = field(repr=False)


SECRET_ROUTE = "_sha256"
"""The suffix of the address kind of a route by a secret (`verify_token_sha256`)."""


def secret_route(secret_name: str, secret: str) -> tuple[str, str]:
    """The (address kind, address) by which a channel's secret routes to it: the secret's SHA-256, in hex."""
    return f"{secret_name}{SECRET_ROUTE}", hashlib.sha256(secret.encode()).hexdigest()


def normalized(kind: str, address: str) -> str:
    """Addresses compare without regard to case (an email address's domain, a shop's host); ids stay as they are."""
    return address.strip().lower() if kind in ("email", "shop") else address.strip()


def create(
    connection: Connection,
    cipher: Cipher,
    organization_id: str,
    *,
    kind: str,
    name: str,
    addresses: Sequence[tuple[str, str]],
    secrets: Mapping[str, str],
    settings: Mapping[str, Any] | None = None,
    now: datetime,
) -> ChannelRecord:
    """A new channel of the organization; AddressTaken when one of its addresses routes to a live channel."""
    channel_id = new_uuid()
    connection.execute(
        insert(CHANNELS).values(
            id=channel_id,
            organization_id=organization_id,
            kind=kind,
            name=name,
            settings=dict(settings or {}),
            secrets_sealed=seal(cipher, json.dumps(dict(secrets))),
            created_at=now,
        )
    )
    routes = [(address_kind, normalized(address_kind, address)) for address_kind, address in addresses]
    by_secret = KINDS[kind].routed_by_secret if kind in CHANNEL_KINDS else ()
    hidden = [secret_route(name, secrets[name]) for name in by_secret if secrets.get(name)]
    for address_kind, address in routes + hidden:
        try:
            connection.execute(insert(ADDRESSES).values(kind=address_kind, address=address, channel_id=channel_id))
        except IntegrityError:
            raise AddressTaken(address_kind, address) from None
    return ChannelRecord(channel_id, organization_id, kind, name, dict(settings or {}), routes, sorted(secrets), now)


_ROUTE = (
    select(CHANNELS)
    .join(ADDRESSES, ADDRESSES.c.channel_id == CHANNELS.c.id)
    .where(
        ADDRESSES.c.kind == bindparam("kind"),
        ADDRESSES.c.address == bindparam("address"),
        CHANNELS.c.deleted_at.is_(None),
    )
)


def route(connection: Connection, cipher: Cipher, kind: str, address: str) -> Routed | None:
    """The live channel an address routes to, with its secrets opened; None when it routes nowhere."""
    row = connection.execute(_ROUTE, {"kind": kind, "address": normalized(kind, address)}).first()
    if row is None:
        return None
    return Routed(
        row.id, row.organization_id, row.kind, dict(row.settings), json.loads(unseal(cipher, row.secrets_sealed))
    )


def _records(connection: Connection, rows: Sequence[Any], cipher: Cipher) -> list[ChannelRecord]:
    ids = [row.id for row in rows]
    addresses: dict[str, list[tuple[str, str]]] = {channel_id: [] for channel_id in ids}
    for address in connection.execute(
        select(ADDRESSES).where(ADDRESSES.c.channel_id.in_(ids)).order_by(ADDRESSES.c.kind, ADDRESSES.c.address)
    ):
        if not address.kind.endswith(SECRET_ROUTE):
            addresses[address.channel_id].append((address.kind, address.address))
    return [
        ChannelRecord(
            row.id,
            row.organization_id,
            row.kind,
            row.name,
            dict(row.settings),
            addresses[row.id],
            sorted(json.loads(unseal(cipher, row.secrets_sealed))),
            row.created_at,
        )
        for row in rows
    ]


def listing(connection: Connection, cipher: Cipher, organization_id: str) -> list[ChannelRecord]:
    """The organization's live channels, oldest first."""
    rows = list(
        connection.execute(
            select(CHANNELS)
            .where(CHANNELS.c.organization_id == organization_id, CHANNELS.c.deleted_at.is_(None))
            .order_by(CHANNELS.c.created_at, CHANNELS.c.id)
        )
    )
    return _records(connection, rows, cipher)


def get(connection: Connection, cipher: Cipher, organization_id: str, channel_id: str) -> ChannelRecord | None:
    rows = list(
        connection.execute(
            select(CHANNELS).where(
                CHANNELS.c.organization_id == organization_id,
                CHANNELS.c.id == channel_id,
                CHANNELS.c.deleted_at.is_(None),
            )
        )
    )
    return _records(connection, rows, cipher)[0] if rows else None


def secrets_of(connection: Connection, cipher: Cipher, channel_id: str) -> dict[str, str] | None:
    """A live channel's secrets by name, opened for the code that uses them (the inbound processors that fetch what
    its provider holds); None when the channel is deleted (or never was). Raises cryptography.fernet.InvalidToken
    when they were sealed with a key the platform no longer has."""
    sealed = connection.scalar(
        select(CHANNELS.c.secrets_sealed).where(CHANNELS.c.id == channel_id, CHANNELS.c.deleted_at.is_(None))
    )
    if sealed is None:
        return None
    opened: dict[str, str] = json.loads(unseal(cipher, sealed))
    return opened


def remove(connection: Connection, organization_id: str, channel_id: str, now: datetime) -> bool:
    """Delete the organization's channel: it routes nothing from now on, and its addresses are free again (its past
    events and tickets stay). False when there is no such live channel."""
    deleted = connection.execute(
        update(CHANNELS)
        .where(
            CHANNELS.c.organization_id == organization_id,
            CHANNELS.c.id == channel_id,
            CHANNELS.c.deleted_at.is_(None),
        )
        .values(deleted_at=now)
    )
    if not deleted.rowcount:
        return False
    connection.execute(delete(ADDRESSES).where(ADDRESSES.c.channel_id == channel_id))
    return True


_ADDRESSES_OF = select(ADDRESSES.c.address).where(
    ADDRESSES.c.channel_id == bindparam("channel_id"), ADDRESSES.c.kind == bindparam("kind")
)


def addresses_of(connection: Connection, channel_id: str, kind: str) -> list[str]:
    """The channel's addresses of one kind (its own inbound mail addresses, say)."""
    return list(connection.scalars(_ADDRESSES_OF, {"channel_id": channel_id, "kind": kind}))


_ORGANIZATION_ADDRESSES = (
    select(ADDRESSES.c.address)
    .join(CHANNELS, CHANNELS.c.id == ADDRESSES.c.channel_id)
    .where(
        CHANNELS.c.organization_id == bindparam("organization_id"),
        CHANNELS.c.deleted_at.is_(None),
        ADDRESSES.c.kind == bindparam("kind"),
    )
)


def organization_addresses(connection: Connection, organization_id: str, kind: str) -> list[str]:
    """The addresses of one kind of every live channel of the organization (all its own inbound mail addresses)."""
    return list(connection.scalars(_ORGANIZATION_ADDRESSES, {"organization_id": organization_id, "kind": kind}))


class InvalidChannel(ValueError):
    """What a new channel's request got wrong, in words for its maker (400)."""


def _known(
    kind: str,
    spec: ChannelKind,
    *,
    given: Collection[str] = (),
    rotate: Collection[str] = (),
    settings: Collection[str] = (),
) -> None:
    """InvalidChannel naming the first secret or setting a channel of `kind` does not have."""
    for names, allowed, what in (
        (given, spec.given, "secret its provider issues"),
        (rotate, spec.generated, "secret the helpdesk makes"),
        (settings, spec.settings, "setting"),
    ):
        unknown = sorted(set(names) - set(allowed))
        if unknown:
            raise InvalidChannel(
                f"a {kind} channel has no {what} {unknown[0]!r} (its own: {', '.join(allowed) or 'none'})"
            )


class OtherKind(ValueError):
    """A change names another kind than the channel's (409)."""


def open_channel(
    connection: Connection,
    cipher: Cipher,
    organization_id: str,
    *,
    kind: str,
    name: str,
    addresses: Sequence[str],
    given: Mapping[str, str],
    settings: Mapping[str, Any],
    now: datetime,
) -> tuple[ChannelRecord, dict[str, str]]:
    """A new channel of a kind of KINDS, with the secrets it generates (returned: shown once) beside the ones its
    provider issued (`given`). A kind routed by a generated secret (a URL token) routes by that secret. Raises
    InvalidChannel for an unknown kind, secret or setting, or a channel with no way to route to it, and
    AddressTaken."""
    if kind not in CHANNEL_KINDS:
        raise InvalidChannel(f"kind must be one of {', '.join(CHANNEL_KINDS)}")
    spec = KINDS[kind]
    _known(kind, spec, given=given, settings=settings)
    generated = {secret_name: secrets.token_urlsafe(32) for secret_name in spec.generated}
    routes = [(spec.address_kind, address) for address in addresses if address.strip()]
    if spec.address_kind in generated:
        if routes:
            raise InvalidChannel(f"a {kind} channel is routed by the {spec.address_kind} made for it: give no address")
        routes.append((spec.address_kind, generated[spec.address_kind]))
    if not routes:
        raise InvalidChannel(f"a {kind} channel needs at least one {spec.address_kind.replace('_', ' ')}")
    record = create(
        connection,
        cipher,
        organization_id,
        kind=kind,
        name=name,
        addresses=routes,
        secrets={**given, **generated},
        settings=settings,
        now=now,
    )
    return record, generated


def change(
    connection: Connection,
    cipher: Cipher,
    organization_id: str,
    channel_id: str,
    *,
    kind: str | None,
    name: str | None = None,
    given: Mapping[str, str],
    rotate: Sequence[str],
    settings: Mapping[str, str],
    now: datetime,
) -> tuple[ChannelRecord, dict[str, str]] | None:
    """A live channel renamed, its provider's secrets set (`given`: each replaced, or removed by an empty value), its
    settings likewise, and the secrets the helpdesk made for it made anew (`rotate`: returned, shown this once). A
    made secret that routes to the channel routes by its new value from now on, and the old one routes nothing. None
    when there is no such live channel; OtherKind when it is not of `kind` (None: whichever); InvalidChannel for a
    secret or setting its kind does not have."""
    row = connection.execute(
        select(CHANNELS).where(
            CHANNELS.c.organization_id == organization_id, CHANNELS.c.id == channel_id, CHANNELS.c.deleted_at.is_(None)
        )
    ).first()
    if row is None:
        return None
    if kind is not None and row.kind != kind:
        raise OtherKind(f"this channel is of kind {row.kind}, not {kind}")
    spec = KINDS[row.kind] if row.kind in CHANNEL_KINDS else ChannelKind(row.kind)
    _known(row.kind, spec, given=given, rotate=rotate, settings=settings)
    kept = json.loads(unseal(cipher, row.secrets_sealed))
    made = {secret_name: secrets.token_urlsafe(32) for secret_name in dict.fromkeys(rotate)}
    for secret_name, value in made.items():
        _reroute(connection, channel_id, spec, secret_name, old=kept.get(secret_name), new=value)
    kept = {secret_name: value for secret_name, value in {**kept, **given, **made}.items() if value}
    current = {key: value for key, value in {**dict(row.settings), **settings}.items() if value != ""}
    connection.execute(
        update(CHANNELS)
        .where(CHANNELS.c.id == channel_id)
        .values(name=name or row.name, settings=current, secrets_sealed=seal(cipher, json.dumps(kept)))
    )
    changed = get(connection, cipher, organization_id, channel_id)
    assert changed is not None
    return changed, made


def _reroute(
    connection: Connection, channel_id: str, spec: ChannelKind, secret_name: str, *, old: str | None, new: str
) -> None:
    """A made secret that routes to the channel (as its address, or by its hash) routes by `new` instead of `old`."""
    if secret_name == spec.address_kind:
        route_kind, old_address, new_address = secret_name, old, new
    elif secret_name in spec.routed_by_secret:
        route_kind, new_address = secret_route(secret_name, new)
        old_address = secret_route(secret_name, old)[1] if old else None
    else:
        return
    if old_address is not None:
        connection.execute(
            delete(ADDRESSES).where(
                ADDRESSES.c.channel_id == channel_id,
                ADDRESSES.c.kind == route_kind,
                ADDRESSES.c.address == old_address,
            )
        )
    connection.execute(insert(ADDRESSES).values(kind=route_kind, address=new_address, channel_id=channel_id))
