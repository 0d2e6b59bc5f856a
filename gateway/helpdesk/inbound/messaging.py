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
from typing import Any

from litestar import Request, Response, get, post
from litestar.di import NamedDependency

from gateway.common.auth import NO_AUTHENTICATION
from gateway.helpdesk.inbound.common import Inbound, equal, refused
from storage.helpdesk import channels
from storage.helpdesk.channels import Routed
from topics.helpdesk.inbound import Provider

BUSINESS_PATH = "/api/webhooks/messaging-business"
PAGE_PATH = "/api/webhooks/messaging-page"
MAX_BODY_BYTES = 4 * 1024 * 1024
"""A call's body, at most (a batch of messages: media come as ids or URLs, not bytes)."""
JSON = "application/json"


class Malformed(ValueError):
    """What is wrong with a call's body, in words for its sender (400)."""


@dataclass(frozen=True, slots=True)
class Item:
    """One message, status, postback or receipt of a call: stored as its own inbound event."""

    address: str
    """The phone_number_id or page id it came to: what routes it."""
    kind: str
    """message | status (business); message | postback | read | delivery (page); or what else it is."""
    dedup_key: str
    sender: str
    """The customer's id (wa_id, page-scoped id): its events are processed in order."""
    stored: dict[str, Any]

    def body(self) -> bytes:
        return json.dumps(self.stored, ensure_ascii=False, separators=(",", ":")).encode()


def _digest(value: Any) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def _entries(payload: Any) -> list[dict[str, Any]]:
    entries = payload.get("entry") if isinstance(payload, dict) else None
    if not isinstance(entries, list) or not entries or not all(isinstance(entry, dict) for entry in entries):
        raise Malformed("The body has no entry[] of objects")
    return entries


def _list_of_objects(value: Any, what: str) -> list[dict[str, Any]]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise Malformed(f"{what} is not a list of objects")
    return value


def _text(value: Any) -> str:
    return str(value).strip() if isinstance(value, str | int) and not isinstance(value, bool) else ""


# Business messaging (WhatsApp Cloud API's shape) ----------------------------------------------------------------


def _message_changes(payload: Any) -> list[tuple[str, dict[str, Any]]]:
    """(phone_number_id, value) of every `messages` change."""
    found = []
    for entry in _entries(payload):
        for change in _list_of_objects(entry.get("changes"), "entry[].changes"):
            if change.get("field") != "messages":
                continue
            value = change.get("value")
            metadata = value.get("metadata") if isinstance(value, dict) else None
            phone_number_id = _text(metadata.get("phone_number_id")) if isinstance(metadata, dict) else ""
            if not isinstance(value, dict) or not phone_number_id:
                raise Malformed("A messages change names no value.metadata.phone_number_id")
            found.append((phone_number_id, value))
    if not found:
        raise Malformed("The body has no change of field messages")
    return found


def business_addresses(payload: Any) -> list[str]:
    return list(dict.fromkeys(address for address, _ in _message_changes(payload)))


def business_items(payload: Any) -> list[Item]:
    items: list[Item] = []
    for address, value in _message_changes(payload):
        metadata = value["metadata"]
        contacts = {
            _text(contact.get("wa_id")): contact for contact in _list_of_objects(value.get("contacts"), "contacts")
        }
        messages = _list_of_objects(value.get("messages"), "messages")
        statuses = _list_of_objects(value.get("statuses"), "statuses")
        for message in messages:
            wamid, sender = _text(message.get("id")), _text(message.get("from"))
            if not wamid or not sender:
                raise Malformed("A message has no id or no from")
            stored = {"metadata": metadata, "contact": contacts.get(sender), "message": message}
            items.append(Item(address, "message", wamid, sender, stored))
        for status in statuses:
            wamid, state = _text(status.get("id")), _text(status.get("status"))
            if not wamid or not state:
                raise Malformed("A status has no id or no status")
            recipient = _text(status.get("recipient_id")) or wamid
            items.append(
                Item(address, "status", f"{wamid}:{state}", recipient, {"metadata": metadata, "status": status})
            )
        if not messages and not statuses:  # an error notice, or what this version does not know: kept all the same
            key = f"change:{_digest(value)}"
            items.append(Item(address, "other", key, address, {"metadata": metadata, "value": value}))
    return items


# Page messaging (Messenger's shape) ----------------------------------------------------------------------------


def _page_id(entry: dict[str, Any]) -> str:
    page_id = _text(entry.get("id"))
    if not page_id:
        raise Malformed("An entry has no id (the page id)")
    return page_id


def page_addresses(payload: Any) -> list[str]:
    return list(dict.fromkeys(_page_id(entry) for entry in _entries(payload)))


def _party(event: dict[str, Any], role: str) -> str:
    party = event.get(role)
    return _text(party.get("id")) if isinstance(party, dict) else ""


def _page_item(page_id: str, entry: dict[str, Any], event: dict[str, Any]) -> Item:
    sender, recipient = _party(event, "sender"), _party(event, "recipient")
    stored = {"page_id": page_id, "time": entry.get("time"), "event": event}
    message, postback = event.get("message"), event.get("postback")
    if isinstance(message, dict):
        mid = _text(message.get("mid"))
        if not mid:
            raise Malformed("A message has no mid")
        # an echo of what the page sent: its customer is the recipient
        customer = recipient if message.get("is_echo") else sender
        return Item(page_id, "message", mid, customer or page_id, stored)
    if isinstance(postback, dict):
        key = _text(postback.get("mid")) or f"postback:{sender}:{_text(event.get('timestamp'))}"
        return Item(page_id, "postback", key, sender or page_id, stored)
    for receipt in ("read", "delivery"):
        if isinstance(event.get(receipt), dict):
            watermark = _text(event[receipt].get("watermark")) or _digest(event[receipt])
            return Item(page_id, receipt, f"{receipt}:{sender}:{watermark}", sender or page_id, stored)
    kind = next((name for name in event if name not in ("sender", "recipient", "timestamp")), "other")
    return Item(page_id, kind[:32], f"{kind}:{_digest(event)}", sender or page_id, stored)


def page_items(payload: Any) -> list[Item]:
    items: list[Item] = []
    for entry in _entries(payload):
        page_id = _page_id(entry)
        events = _list_of_objects(entry.get("messaging"), "entry[].messaging")
        items.extend(_page_item(page_id, entry, event) for event in events)
        if not events:  # no messaging event (a field this version does not know): kept all the same
            items.append(
                Item(page_id, "other", f"entry:{_digest(entry)}", page_id, {"page_id": page_id, "entry": entry})
            )
    return items


# The endpoints --------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Endpoint:
    kind: Provider
    """The channel kind, and the inbound events' provider."""
    address_kind: str
    thread: str
    """The prefix of a sender's thread (`whatsapp`, `messenger`)."""
    addresses: Callable[[Any], list[str]]
    items: Callable[[Any], list[Item]]


BUSINESS = Endpoint("business_messaging", "phone_number_id", "whatsapp", business_addresses, business_items)
PAGE = Endpoint("page_messaging", "page_id", "messenger", page_addresses, page_items)


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


async def deliver(request: Request[Any, Any, Any], inbound: Inbound, endpoint: Endpoint) -> Response[dict[str, Any]]:
    body = await request.body()
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    if media_type != JSON:
        raise refused(415, f"Content-Type {media_type or '(none)'} is not {JSON}")
    try:
        payload = json.loads(body)
        addresses = endpoint.addresses(payload)
    except Malformed as malformed:
        raise refused(400, str(malformed)) from None
    except ValueError:  # UnicodeDecodeError and JSONDecodeError
        raise refused(400, "The body is no JSON") from None
    routed: dict[str, Routed] = {}
    for address in addresses:
        channel = await inbound.route(endpoint.address_kind, address)
        if not hub_signed(body, channel.secrets.get("app_secret", ""), request.headers.get("x-hub-signature-256", "")):
            raise refused(401, "x-hub-signature-256 is not the HMAC-SHA256 of the body with this channel's app secret")
        routed[address] = channel
    try:
        items = endpoint.items(payload)
    except Malformed as malformed:
        raise refused(400, str(malformed)) from None
    stored = await asyncio.gather(
        *(
            inbound.accept(
                routed[item.address],
                endpoint.kind,
                dedup_key=item.dedup_key,
                body=item.body(),
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
