"""`/api/webhooks/messaging-business` (WhatsApp Cloud API's shape) and `/api/webhooks/messaging-page` (Messenger's
shape), GET and POST (section 4.6).

- **GET**, the subscription check: `hub.mode=subscribe`, `hub.verify_token` and `hub.challenge`. The check carries no
  channel address, so the verify token itself routes it: each channel's token is generated (random, unique) and kept
  sealed, and its SHA-256 routes to the channel (storage/helpdesk/channels.py, `routed_by_secret`). A token of a
  channel of this endpoint's kind answers 200 with `hub.challenge` echoed as `text/plain`; anything else is 403.
- **POST**: `x-hub-signature-256: sha256=<hex HMAC-SHA256 of the raw body keyed by the channel's app_secret>`. A
  business call routes by each change's `metadata.phone_number_id`, a page call by each `entry[].id` (the page id);
  every id a call names must route, and the call must be signed with each one's app secret. No timestamp is signed,
  so there is no replay window: a replayed call is a duplicate of what it carried and stores nothing new.

A call may carry several messages: each is stored as its own inbound event, de-duplicated by its own id (a message
by its wamid or mid, a business status by its message id and status, a postback by its mid, a read or delivery
receipt by its sender and watermark, anything else by the SHA-256 of what came), so that a provider's retry stores
nothing new. The stored body is that one item as the provider sent it, in JSON, with what it needs of its envelope:
`{"metadata", "contact", "message"}` or `{"metadata", "status"}` (business), `{"page_id", "time", "event"}`
(page)."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

import msgspec
from litestar import Request, Response, get, post
from litestar.di import NamedDependency

from gateway.common.auth import NO_AUTHENTICATION
from gateway.helpdesk.inbound.common import Inbound, decoded, equal, refused
from storage.helpdesk import channels
from storage.helpdesk.channels import Routed
from topics.helpdesk.inbound import (
    BUSINESS_CALL,
    BUSINESS_CONTACT,
    BUSINESS_MESSAGE,
    BUSINESS_METADATA,
    BUSINESS_STATUS,
    BUSINESS_VALUE,
    PAGE_CALL,
    PAGE_ENTRY,
    PAGE_EVENT,
    BusinessValue,
    PageEntry,
    Provider,
)

BUSINESS_PATH = "/api/webhooks/messaging-business"
PAGE_PATH = "/api/webhooks/messaging-page"
MAX_BODY_BYTES = 4 * 1024 * 1024
"""A call's body, at most (a batch of messages: media come as ids or URLs, not bytes)."""
JSON = "application/json"

Read = TypeVar("Read")


@dataclass(frozen=True, slots=True)
class Part(Generic[Read]):
    """What one address of a call carries (a business `messages` change, a page's entry): read as far as routing
    needs, and as it came."""

    address: str
    """The phone_number_id or page id it came to: what routes it."""
    read: Read
    raw: msgspec.Raw


@dataclass(frozen=True, slots=True)
class Item:
    """One message, status, postback or receipt of a call: stored as its own inbound event."""

    address: str
    kind: str
    """message | status (business); message | postback | read | delivery (page); or what else it is."""
    dedup_key: str
    sender: str
    """The customer's id (wa_id, page-scoped id): its events are processed in order."""
    body: bytes
    """The item as the provider sent it, with what it needs of its envelope."""


def _digest(value: msgspec.Raw) -> str:
    """What keys an item without an id of its own: the same however a retry writes it (its keys sorted)."""
    canonical = json.dumps(msgspec.json.decode(value), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def _members(value: msgspec.Raw) -> dict[str, msgspec.Raw]:
    """An object's members as they came, in their order."""
    return msgspec.json.decode(value, type=dict[str, msgspec.Raw])


def _stored(**parts: msgspec.Raw | int | str | None) -> bytes:
    return msgspec.json.encode(parts)


# Business messaging (WhatsApp Cloud API's shape) ----------------------------------------------------------------


def business_parts(body: bytes) -> list[Part[BusinessValue]]:
    """Every `messages` change of a call, by the number it came to."""
    parts = []
    for entry in decoded(BUSINESS_CALL, body).entry:
        for change in entry.changes:
            if change.field == "messages":
                value = decoded(BUSINESS_VALUE, change.value or b"null", "A messages change's value")
                metadata = decoded(BUSINESS_METADATA, value.metadata, "A messages change's metadata")
                parts.append(Part(metadata.phone_number_id, value, change.value))
    if not parts:
        raise refused(400, "The body has no change of field messages")
    return parts


def business_items(parts: list[Part[BusinessValue]]) -> list[Item]:
    items: list[Item] = []
    for part in parts:
        value, metadata = part.read, part.read.metadata
        contacts = {decoded(BUSINESS_CONTACT, raw, "A contact").wa_id: raw for raw in value.contacts}
        for raw in value.messages:
            message = decoded(BUSINESS_MESSAGE, raw, "A message")
            stored = _stored(metadata=metadata, contact=contacts.get(message.sender), message=raw)
            items.append(Item(part.address, "message", message.id, message.sender, stored))
        for raw in value.statuses:
            status = decoded(BUSINESS_STATUS, raw, "A status")
            stored = _stored(metadata=metadata, status=raw)
            key = f"{status.id}:{status.status}"
            items.append(Item(part.address, "status", key, status.recipient_id or status.id, stored))
        if not value.messages and not value.statuses:  # an error notice, or what this version does not know: kept
            key = f"change:{_digest(part.raw)}"
            items.append(Item(part.address, "other", key, part.address, _stored(metadata=metadata, value=part.raw)))
    return items


# Page messaging (Messenger's shape) ----------------------------------------------------------------------------


def page_parts(body: bytes) -> list[Part[PageEntry]]:
    """Every entry of a call, by its page."""
    parts = []
    for raw in decoded(PAGE_CALL, body).entry:
        entry = decoded(PAGE_ENTRY, raw, "An entry")
        parts.append(Part(entry.id, entry, raw))
    return parts


def _page_item(part: Part[PageEntry], raw: msgspec.Raw) -> Item:
    event = decoded(PAGE_EVENT, raw, "A messaging event")
    page_id = part.address
    sender = (event.sender.id if event.sender else None) or ""
    recipient = (event.recipient.id if event.recipient else None) or ""
    stored = _stored(page_id=page_id, time=part.read.time, event=raw)
    if event.message is not None:
        # an echo of what the page sent: its customer is the recipient
        customer = recipient if event.message.is_echo else sender
        return Item(page_id, "message", event.message.mid, customer or page_id, stored)
    if event.postback is not None:
        key = event.postback.mid or f"postback:{sender}:{'' if event.timestamp is None else event.timestamp}"
        return Item(page_id, "postback", key, sender or page_id, stored)
    for kind, receipt in (("read", event.read), ("delivery", event.delivery)):
        if receipt is not None:
            watermark = _digest(_members(raw)[kind]) if receipt.watermark is None else str(receipt.watermark)
            return Item(page_id, kind, f"{kind}:{sender}:{watermark}", sender or page_id, stored)
    kind = next((name for name in _members(raw) if name not in ("sender", "recipient", "timestamp")), "other")
    return Item(page_id, kind[:32], f"{kind}:{_digest(raw)}", sender or page_id, stored)


def page_items(parts: list[Part[PageEntry]]) -> list[Item]:
    items: list[Item] = []
    for part in parts:
        items.extend(_page_item(part, raw) for raw in part.read.messaging)
        if not part.read.messaging:  # no messaging event (a field this version does not know): kept all the same
            stored = _stored(page_id=part.address, entry=part.raw)
            items.append(Item(part.address, "other", f"entry:{_digest(part.raw)}", part.address, stored))
    return items


# The endpoints --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Endpoint(Generic[Read]):
    kind: Provider
    """The channel kind, and the inbound events' provider."""
    address_kind: str
    thread: str
    """The prefix of a sender's thread (`whatsapp`, `messenger`)."""
    parts: Callable[[bytes], list[Part[Read]]]
    """The call read as far as routing needs (before its signature is checked)."""
    items: Callable[[list[Part[Read]]], list[Item]]
    """What the call carries (once it is signed)."""


BUSINESS = Endpoint("business_messaging", "phone_number_id", "whatsapp", business_parts, business_items)
PAGE = Endpoint("page_messaging", "page_id", "messenger", page_parts, page_items)


def hub_signed(body: bytes, app_secret: str, header: str) -> bool:
    """`x-hub-signature-256`: `sha256=` and the hex HMAC-SHA256 of the raw body keyed by the app secret."""
    scheme, _, given = header.strip().partition("=")
    if not app_secret or scheme.lower() != "sha256" or not given:
        return False
    return equal(given.lower(), hmac.new(app_secret.encode(), body, hashlib.sha256).hexdigest())


async def verify_subscription(request: Request[Any, Any, Any], inbound: Inbound, kind: Provider) -> Response[str]:
    query = request.query_params
    mode, token, challenge = query.get("hub.mode"), query.get("hub.verify_token"), query.get("hub.challenge")
    if mode == "subscribe" and token and challenge:
        address_kind, address = channels.secret_route("verify_token", token)
        routed = await inbound.db.read(channels.route, inbound.cipher, address_kind, address)
        if routed is not None and routed.kind == kind and equal(token, routed.secrets.get("verify_token", "")):
            return Response(challenge, media_type="text/plain", status_code=200)
    raise refused(403, f"hub.verify_token is no {kind.replace('_', ' ')} channel's verify token")


async def deliver(
    request: Request[Any, Any, Any], inbound: Inbound, endpoint: Endpoint[Read]
) -> Response[dict[str, Any]]:
    body = await request.body()
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type != JSON:
        raise refused(415, f"Content-Type {media_type or '(none)'} is not {JSON}")
    parts = endpoint.parts(body)
    routed: dict[str, Routed] = {}
    for address in dict.fromkeys(part.address for part in parts):
        channel = await inbound.route(endpoint.address_kind, address)
        if not hub_signed(body, channel.secrets.get("app_secret", ""), request.headers.get("x-hub-signature-256", "")):
            raise refused(401, "x-hub-signature-256 is not the HMAC-SHA256 of the body with this channel's app secret")
        routed[address] = channel
    items = endpoint.items(parts)
    stored = await asyncio.gather(
        *(
            inbound.accept(
                routed[item.address],
                endpoint.kind,
                dedup_key=item.dedup_key,
                body=item.body,
                content_type=JSON,
                partition_key=f"{routed[item.address].organization_id}:{endpoint.thread}:{item.sender}",
                details={"kind": item.kind, "to": item.address},
            )
            for item in items
        )
    )
    answer = {"status": "accepted" if any(stored) else "duplicate", "events": len(items), "stored": sum(stored)}
    return Response(answer, status_code=200)


@get(BUSINESS_PATH, opt=NO_AUTHENTICATION, include_in_schema=False)
async def business_subscription(request: Request[Any, Any, Any], inbound: NamedDependency[Inbound]) -> Response[str]:
    return await verify_subscription(request, inbound, BUSINESS.kind)


@post(
    BUSINESS_PATH, opt=NO_AUTHENTICATION, include_in_schema=False, request_max_body_size=MAX_BODY_BYTES, status_code=200
)
async def business_messages(
    request: Request[Any, Any, Any], inbound: NamedDependency[Inbound]
) -> Response[dict[str, Any]]:
    return await deliver(request, inbound, BUSINESS)


@get(PAGE_PATH, opt=NO_AUTHENTICATION, include_in_schema=False)
async def page_subscription(request: Request[Any, Any, Any], inbound: NamedDependency[Inbound]) -> Response[str]:
    return await verify_subscription(request, inbound, PAGE.kind)


@post(PAGE_PATH, opt=NO_AUTHENTICATION, include_in_schema=False, request_max_body_size=MAX_BODY_BYTES, status_code=200)
async def page_messages(request: Request[Any, Any, Any], inbound: NamedDependency[Inbound]) -> Response[dict[str, Any]]:
    return await deliver(request, inbound, PAGE)


ROUTES = [business_subscription, business_messages, page_subscription, page_messages]
