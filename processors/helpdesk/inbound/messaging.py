"""Business messaging (WhatsApp Cloud API's shape) and page messaging (Messenger's shape): each stored item (one
message, status, postback or receipt: gateway/helpdesk/inbound/messaging.py) becomes a customer's message on their
thread, or a delivery state of our own message.

- A message of any type (text, image, document, audio, video, location, contacts, interactive, ...) or a postback is
  the sender's message on their thread (`whatsapp:<wa_id>`, `messenger:<page-scoped id>`, threaded as SMS are:
  processors/helpdesk/inbound/sms.py), from the customer known by identity `whatsapp` or `messenger` (made on the
  first message, named by the profile name when the call gives one). Media are attachment references, not
  downloaded: a business medium by its media id (`{"media_id", "content_type", "type"}`), a page attachment by its
  URL (`{"url", "content_type": null, "type"}`).
- A business `status` (sent, delivered, read, failed) and a page `read` or `delivery` receipt are the delivery state of
  our own message: recorded in the event's outcome (with the ticket of that message where we know it), no ticket.
- An echo of the page's own message, and what this version does not know, make no ticket; they stay stored."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy.engine import Connection

from processors.helpdesk.inbound.service import Apply, Context
from processors.helpdesk.inbound.sms import to_thread
from storage.helpdesk import customers, tickets
from storage.helpdesk.inbound import Outcome

DELIVERY_STATE = "delivery_state"
MEDIA = ("image", "document", "audio", "video", "sticker")


@dataclass(frozen=True, slots=True)
class Content:
    """What a customer's message says, as a conversation: its text and its attachment references."""

    text: str
    attachments: list[dict[str, Any]] = field(default_factory=list)


def _dict(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _join(*parts: Any) -> str:
    return ", ".join(str(part) for part in parts if part not in (None, ""))


def business_content(message: dict[str, Any]) -> Content:
    """A business message of any type, as text and attachment references."""
    kind = str(message.get("type") or "unknown")
    if kind == "text":
        return Content(str(_dict(message.get("text")).get("body") or "(empty message)"))
    if kind in MEDIA:
        medium = _dict(message.get(kind))
        reference = {"media_id": medium.get("id"), "content_type": medium.get("mime_type"), "type": kind}
        reference |= {name: medium[name] for name in ("filename", "caption", "sha256") if medium.get(name)}
        text = medium.get("caption") or (f"({kind}: {medium['filename']})" if medium.get("filename") else f"({kind})")
        return Content(str(text), [reference])
    if kind == "location":
        place = _dict(message.get("location"))
        where = _join(place.get("name"), place.get("address"))
        return Content(f"Location: {where + ' ' if where else ''}({place.get('latitude')}, {place.get('longitude')})")
    if kind == "contacts":
        cards = []
        for given in _list(message.get("contacts")):
            card = _dict(given)
            phones = [_dict(phone).get("phone") for phone in _list(card.get("phones"))]
            emails = [_dict(email).get("email") for email in _list(card.get("emails"))]
            cards.append(_join(_dict(card.get("name")).get("formatted_name"), *phones, *emails))
        return Content("Contact: " + ("; ".join(card for card in cards if card) or "(empty)"))
    if kind == "interactive":
        answer = _dict(message.get("interactive"))
        reply = _dict(answer.get("button_reply")) or _dict(answer.get("list_reply"))
        chosen = _join(reply.get("title"), reply.get("description")) or json.dumps(answer.get("nfm_reply") or answer)
        return Content(f"Chose: {chosen}")
    if kind == "button":
        return Content(str(_dict(message.get("button")).get("text") or "(button)"))
    if kind == "reaction":
        return Content(f"Reacted {_dict(message.get('reaction')).get('emoji') or '(removed)'}")
    return Content(f"({kind} message)")


def page_content(event: dict[str, Any]) -> Content:
    """A page message or postback, as text and attachment references."""
    postback = event.get("postback")
    if isinstance(postback, dict):
        return Content(f"Chose: {_join(postback.get('title'), postback.get('payload')) or '(postback)'}")
    message = _dict(event.get("message"))
    references, places = [], []
    for given in _list(message.get("attachments")):
        attachment = _dict(given)
        payload = _dict(attachment.get("payload"))
        if payload.get("url"):
            references.append({"url": payload["url"], "content_type": None, "type": attachment.get("type")})
        point = _dict(payload.get("coordinates"))
        if point:
            places.append(f"Location: ({point.get('lat')}, {point.get('long')})")
    text = "\n".join(([str(message["text"])] if message.get("text") else []) + places)
    if not text:
        count = len(references)
        text = f"({count} attachment{'s' if count != 1 else ''})" if count else "(empty message)"
    return Content(text, references)


def _our_message(connection: Connection, organization_id: str, message_ids: list[str]) -> str:
    """Where we know our message (a conversation stored with its provider id): ` on ticket #n`."""
    found = tickets.tickets_of_message_ids(connection, organization_id, message_ids)
    for message_id in message_ids:
        ticket = tickets.get(connection, organization_id, found[message_id]) if message_id in found else None
        if ticket is not None:
            return f" on ticket #{ticket.number}"
    return ""


def _business(item: dict[str, Any], kind: str, organization_id: str) -> Any:
    def apply(connection: Connection, now: datetime, recorded: list[str]) -> Outcome:
        if kind == "status":
            status = item["status"]
            wamid, state = str(status.get("id")), str(status.get("status"))
            where = _our_message(connection, organization_id, [wamid])
            errors = "; ".join(_join(_dict(e).get("code"), _dict(e).get("title")) for e in _list(status.get("errors")))
            failure = f" ({errors})" if errors else ""
            return Outcome(f"delivery state {state}{failure} of message {wamid}{where}; no ticket", DELIVERY_STATE)
        if kind != "message":
            return Outcome(f"no ticket: a {kind} change", classification=kind)
        message = item["message"]
        wa_id = str(message["from"])
        profile = _dict(_dict(item.get("contact")).get("profile"))
        name = str(profile.get("name") or "").strip() or None
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
        content = business_content(message)
        return to_thread(
            connection,
            organization_id,
            thread_key=f"whatsapp:{wa_id}",
            customer_id=customer.id,
            subject=f"WhatsApp message from {name or phone or wa_id}",
            channel="messaging",
            tags=["whatsapp"],
            body=content.text,
            message_id=str(message["id"]),
            attachments=content.attachments,
            now=now,
            recorded=recorded,
        )

    return apply


def _page(item: dict[str, Any], kind: str, organization_id: str) -> Any:
    event = _dict(item.get("event"))
    sender = str(_dict(event.get("sender")).get("id") or "")

    def apply(connection: Connection, now: datetime, recorded: list[str]) -> Outcome:
        if kind == "read":
            watermark = _dict(event.get("read")).get("watermark")
            return Outcome(f"delivery state read (up to {watermark}) by {sender}; no ticket", DELIVERY_STATE)
        if kind == "delivery":
            delivery = _dict(event.get("delivery"))
            mids = [str(mid) for mid in _list(delivery.get("mids"))]
            where = _our_message(connection, organization_id, mids)
            which = f"messages {', '.join(mids)}" if mids else f"up to {delivery.get('watermark')}"
            return Outcome(f"delivery state delivered of {which}{where}; no ticket", DELIVERY_STATE)
        if kind not in ("message", "postback"):
            return Outcome(f"no ticket: a {kind} event", classification=kind)
        message = _dict(event.get("message"))
        if message.get("is_echo"):
            return Outcome("no ticket: an echo of the page's own message", classification="outbound_copy")
        if not sender:
            return Outcome("no ticket: the event has no sender", classification="invalid")
        customer = customers.find_or_create_by_identity(
            connection, organization_id, kind="messenger", value=sender, name=None, now=now, recorded=recorded
        )
        content = page_content(event)
        mid = message.get("mid") or _dict(event.get("postback")).get("mid")
        return to_thread(
            connection,
            organization_id,
            thread_key=f"messenger:{sender}",
            customer_id=customer.id,
            subject=f"Messenger message from {customer.name}",
            channel="messaging",
            tags=["messenger"],
            body=content.text,
            message_id=str(mid) if mid else None,
            attachments=content.attachments,
            now=now,
            recorded=recorded,
        )

    return apply


async def handle(_context: Context, event: Any) -> Apply:
    item = json.loads(event.body)
    kind = str((event.details or {}).get("kind") or "other")
    if event.provider == "business_messaging":
        apply: Apply = _business(item, kind, event.organization_id)
    else:
        apply = _page(item, kind, event.organization_id)
    return apply
