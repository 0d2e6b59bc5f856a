"""Business messaging (WhatsApp Cloud API's shape) and page messaging (Messenger's shape): each stored item (one
message, status, postback or receipt: gateway/helpdesk/inbound/messaging.py) becomes a customer's message on their
thread, or a delivery state of our own message.

- A message of any type (text, image, document, audio, video, location, contacts, interactive, ...) or a postback is
  the sender's message on their thread (`whatsapp:<wa_id>`, `messenger:<page-scoped id>`, threaded as SMS are:
  processors/helpdesk/inbound/sms.py), from the customer known by identity `whatsapp` or `messenger` (made on the
  first message, named by the profile name when the call gives one). Media are fetched and kept beside the provider's
  reference (media.py): a business medium by its media id (`{"media_id", "content_type", "type"}`: looked up at the
  Graph API, then fetched, with the channel's `access_token`), a page attachment by its URL (`{"url",
  "content_type": null, "type"}`: a public CDN's, fetched with no credentials).
- A business `status` (sent, delivered, read, failed) and a page `read` or `delivery` receipt are the delivery state of
  our own message: it moves the delivery of the reply it names forward (storage/helpdesk/outbound.py: a business
  status by the message's id, a page receipt by its mids and by its watermark, every message sent the customer up to
  that time), and is recorded in the event's outcome; no ticket.
- An echo of the page's own message, and what this version does not know, make no ticket; they stay stored."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import msgspec
from sqlalchemy.engine import Connection

from processors.helpdesk.inbound.media import Medium, file_name, kept
from processors.helpdesk.inbound.service import Apply, Context
from processors.helpdesk.inbound.sms import to_thread
from storage.helpdesk import customers, outbound, tickets
from storage.helpdesk.inbound import Outcome
from topics.helpdesk.inbound import (
    BUSINESS_INTERACTIVE,
    BUSINESS_ITEM,
    BUSINESS_MEDIA,
    PAGE_ITEM,
    BusinessItem,
    BusinessLocation,
    BusinessMedium,
    BusinessMessage,
    PageAttachmentPayload,
    PageEvent,
    PageItem,
    PageReceipt,
)

DELIVERY_STATE = "delivery_state"
BUSINESS_STATES: dict[str, outbound.State] = {
    "sent": "sent",
    "delivered": "delivered",
    "read": "read",
    "failed": "failed",
}
"""A business status as a reply's delivery state."""


@dataclass(frozen=True, slots=True)
class Content:
    """What a customer's message says, as a conversation: its text and its attachment references."""

    text: str
    attachments: list[dict[str, Any]] = field(default_factory=list)


def _join(*parts: Any) -> str:
    return ", ".join(str(part) for part in parts if part not in (None, ""))


def business_content(message: BusinessMessage) -> Content:
    """A business message of any type, as text and attachment references."""
    kind = message.type or "unknown"
    if kind == "text":
        return Content((message.text.body if message.text else None) or "(empty message)")
    if kind in BUSINESS_MEDIA:
        medium = message.medium or BusinessMedium()
        reference = {"media_id": medium.id, "content_type": medium.mime_type, "type": kind}
        described = {"filename": medium.filename, "caption": medium.caption, "sha256": medium.sha256}
        reference |= {name: value for name, value in described.items() if value}
        text = medium.caption or (f"({kind}: {medium.filename})" if medium.filename else f"({kind})")
        return Content(text, [reference])
    if kind == "location":
        place = message.location or BusinessLocation()
        where = _join(place.name, place.address)
        return Content(f"Location: {where + ' ' if where else ''}({place.latitude}, {place.longitude})")
    if kind == "contacts":
        cards = [
            _join(
                card.name.formatted_name if card.name else None,
                *(phone.phone for phone in card.phones),
                *(email.email for email in card.emails),
            )
            for card in message.contacts
        ]
        return Content("Contact: " + ("; ".join(card for card in cards if card) or "(empty)"))
    if kind == "interactive":
        given = message.interactive or msgspec.Raw(b"{}")
        answer = BUSINESS_INTERACTIVE.decode(given)
        reply = answer.button_reply or answer.list_reply
        chosen = _join(reply.title, reply.description) if reply else ""
        return Content(f"Chose: {chosen or json.dumps(msgspec.json.decode(answer.nfm_reply or given))}")
    if kind == "button":
        return Content((message.button.text if message.button else None) or "(button)")
    if kind == "reaction":
        return Content(f"Reacted {(message.reaction.emoji if message.reaction else None) or '(removed)'}")
    return Content(f"({kind} message)")


def page_content(event: PageEvent) -> Content:
    """A page message or postback, as text and attachment references."""
    if event.postback is not None:
        return Content(f"Chose: {_join(event.postback.title, event.postback.payload) or '(postback)'}")
    references, places = [], []
    for attachment in event.message.attachments if event.message else []:
        payload = attachment.payload or PageAttachmentPayload()
        if payload.url:
            references.append({"url": payload.url, "content_type": None, "type": attachment.type})
        if payload.coordinates is not None:
            places.append(f"Location: ({payload.coordinates.lat}, {payload.coordinates.long})")
    text = "\n".join(([event.message.text] if event.message and event.message.text else []) + places)
    if not text:
        count = len(references)
        text = f"({count} attachment{'s' if count != 1 else ''})" if count else "(empty message)"
    return Content(text, references)


def business_media(content: Content) -> list[Medium]:
    """A business message's media: each looked up by its media id, then fetched, with the channel's access token."""
    return [
        Medium(
            reference,
            file_name(reference.get("filename"), None, reference.get("content_type"), str(reference["type"])),
            media_id=reference.get("media_id") or "",
            bearer="access_token",
        )
        for reference in content.attachments
    ]


def page_media(content: Content) -> list[Medium]:
    """A page message's attachments: at their public CDN URLs, fetched with no credentials."""
    return [
        Medium(
            reference, file_name(None, reference["url"], None, str(reference["type"] or "file")), url=reference["url"]
        )
        for reference in content.attachments
    ]


def _our_message(connection: Connection, organization_id: str, message_ids: list[str]) -> str:
    """Where we know our message (a conversation stored with its provider id): ` on ticket #n`."""
    found = tickets.tickets_of_message_ids(connection, organization_id, message_ids)
    for message_id in message_ids:
        ticket = tickets.get(connection, organization_id, found[message_id]) if message_id in found else None
        if ticket is not None:
            return f" on ticket #{ticket.number}"
    return ""


def _moved(count: int) -> str:
    """What a report did to our replies, for its outcome."""
    return f"; moved {count} repl{'y' if count == 1 else 'ies'} forward" if count else ""


def _business(
    item: BusinessItem, kind: str, organization_id: str, channel_id: str, content: Content | None = None
) -> Apply:
    """`content`: the message's, its media fetched (None when the item is no message)."""
    status, message = item.status, item.message

    def apply(connection: Connection, now: datetime, recorded: list[str]) -> Outcome:
        if status is not None:
            where = _our_message(connection, organization_id, [status.id])
            errors = "; ".join(_join(error.code, error.title) for error in status.errors)
            failure = f" ({errors})" if errors else ""
            state = BUSINESS_STATES.get(status.status.lower())
            moved = state is not None and outbound.report(
                connection,
                organization_id,
                status.id,
                state,
                channel_id=channel_id,
                error=f"the provider reported it failed: {errors}" if state == "failed" and errors else None,
                now=now,
            )
            return Outcome(
                f"delivery state {status.status}{failure} of message {status.id}{where}; no ticket{_moved(int(moved))}",
                DELIVERY_STATE,
            )
        if message is None or content is None:
            return Outcome(f"no ticket: a {kind} change", classification=kind)
        wa_id = message.sender
        profile = item.contact.profile if item.contact else None
        name = ((profile.name if profile else None) or "").strip() or None
        phone = f"+{wa_id}" if wa_id.isdigit() else None
        customer = customers.find_or_create_by_identity(
            connection,
            organization_id,
            kind="whatsapp",
            value=wa_id,
            name=name,
            phone=phone,
            now=now,
            recorded=recorded,
        )
        return to_thread(
            connection,
            organization_id,
            thread_key=f"whatsapp:{wa_id}",
            customer_id=customer.id,
            subject=f"WhatsApp message from {name or phone or wa_id}",
            channel="messaging",
            tags=["whatsapp"],
            body=content.text,
            message_id=message.id,
            attachments=content.attachments,
            now=now,
            recorded=recorded,
        )

    return apply


def _watermark(milliseconds: int | None) -> datetime | None:
    return datetime.fromtimestamp(milliseconds / 1000, UTC) if milliseconds else None


def _page_message(item: PageItem, kind: str) -> PageEvent | None:
    """The item's event, when it is a person's message or postback (what makes a conversation)."""
    event = item.event or PageEvent()
    echo = event.message is not None and event.message.is_echo
    return event if kind in ("message", "postback") and not echo and event.sender and event.sender.id else None


def _page(item: PageItem, kind: str, organization_id: str, channel_id: str, content: Content | None = None) -> Apply:
    """`content`: the message's, its attachments fetched (None when the item is no person's message)."""
    event = item.event or PageEvent()
    sender = (event.sender.id if event.sender else None) or ""

    def until(connection: Connection, state: outbound.State, watermark: int | None, now: datetime) -> int:
        up_to = _watermark(watermark)
        if up_to is None or not sender:
            return 0
        return outbound.report_until(connection, organization_id, channel_id, sender, state, until=up_to, now=now)

    def apply(connection: Connection, now: datetime, recorded: list[str]) -> Outcome:
        if kind == "read":
            watermark = event.read.watermark if event.read else None
            moved = until(connection, "read", watermark, now)
            return Outcome(
                f"delivery state read (up to {watermark}) by {sender}; no ticket{_moved(moved)}", DELIVERY_STATE
            )
        if kind == "delivery":
            delivery = event.delivery or PageReceipt()
            where = _our_message(connection, organization_id, delivery.mids)
            which = f"messages {', '.join(delivery.mids)}" if delivery.mids else f"up to {delivery.watermark}"
            moved = sum(
                outbound.report(
                    connection, organization_id, mid, "delivered", channel_id=channel_id, error=None, now=now
                )
                for mid in delivery.mids
            )
            moved += until(connection, "delivered", delivery.watermark, now)
            return Outcome(f"delivery state delivered of {which}{where}; no ticket{_moved(moved)}", DELIVERY_STATE)
        if kind not in ("message", "postback"):
            return Outcome(f"no ticket: a {kind} event", classification=kind)
        if event.message is not None and event.message.is_echo:
            return Outcome("no ticket: an echo of the page's own message", classification="outbound_copy")
        if not sender or content is None:
            return Outcome("no ticket: the event has no sender", classification="invalid")
        customer = customers.find_or_create_by_identity(
            connection, organization_id, kind="messenger", value=sender, name=None, now=now, recorded=recorded
        )
        mid = (event.message.mid if event.message else None) or (event.postback.mid if event.postback else None)
        return to_thread(
            connection,
            organization_id,
            thread_key=f"messenger:{sender}",
            customer_id=customer.id,
            subject=f"Messenger message from {customer.name}",
            channel="messaging",
            tags=["messenger"],
            body=content.text,
            message_id=mid,
            attachments=content.attachments,
            now=now,
            recorded=recorded,
        )

    return apply


async def handle(context: Context, event: Any) -> Apply:
    kind = str((event.details or {}).get("kind") or "other")
    if event.provider == "business_messaging":
        business = BUSINESS_ITEM.decode(event.body)
        content = None
        if business.status is None and business.message is not None:
            content = business_content(business.message)
            if content.attachments:
                content = Content(content.text, await kept(context, event, business_media(content)))
        return _business(business, kind, event.organization_id, event.channel_id, content)
    page = PAGE_ITEM.decode(event.body)
    message = _page_message(page, kind)
    content = page_content(message) if message is not None else None
    if content is not None and content.attachments:
        content = Content(content.text, await kept(context, event, page_media(content)))
    return _page(page, kind, event.organization_id, event.channel_id, content)
