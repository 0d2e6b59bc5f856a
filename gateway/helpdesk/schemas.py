"""The bodies the helpdesk answers with, over REST (`/api/v1`, docs/helpdesk.md "REST API") and from its procedures:
snake_case fields as the contract's resources (section 2) have them, each made from its storage record (`of`). What
operations take as input is theirs (operations/helpdesk)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

import msgspec

from operations.common.webhooks import Trial
from operations.helpdesk import attachments
from operations.helpdesk.desk import Helpdesk
from operations.helpdesk.fields import Channel, Priority, Status, Uuid
from storage.common.webhooks.endpoints import Endpoint
from storage.helpdesk import channels, customers, events, inbound, outbound, search, team, tickets, uploads
from topics.helpdesk.inbound import ChannelKindName, Provider
from wire.timestamps import iso

Timestamp = Annotated[
    str, msgspec.Meta(extra_json_schema={"format": "date-time", "examples": ["2026-11-25T10:15:02Z"]})
]


def _iso(moment: datetime) -> str:
    return iso(moment, "milliseconds")


class Customer(msgspec.Struct, kw_only=True):
    id: Uuid
    email: str | None
    """None for a customer known only by a phone number or a messaging app's id."""
    name: str
    phone: str | None
    bouncing: bool
    """Mail to the address bounced: nothing automatic is mailed there."""
    created_at: Timestamp
    updated_at: Timestamp

    @classmethod
    def of(cls, customer: customers.CustomerRecord) -> Customer:
        return cls(
            id=customer.id,
            email=customer.email,
            name=customer.name,
            phone=customer.phone,
            bouncing=customer.bouncing,
            created_at=_iso(customer.created_at),
            updated_at=_iso(customer.updated_at),
        )


class CustomerList(msgspec.Struct, kw_only=True):
    data: list[Customer]
    has_more: bool
    next_cursor: str | None


class Ticket(msgspec.Struct, kw_only=True):
    id: Uuid
    number: Annotated[int, msgspec.Meta(examples=[42])]
    subject: str
    status: Status
    priority: Priority
    channel: Channel
    customer_id: Uuid
    customer_email: str | None
    assignee_id: Uuid | None
    tags: list[str]
    merged_into_id: Uuid | None
    """The ticket this one was merged into (it is closed)."""
    created_at: Timestamp
    updated_at: Timestamp

    @classmethod
    def of(cls, ticket: tickets.TicketRecord) -> Ticket:
        return cls(
            id=ticket.id,
            number=ticket.number,
            subject=ticket.subject,
            status=ticket.status,  # type: ignore[arg-type]
            priority=ticket.priority,  # type: ignore[arg-type]
            channel=ticket.channel,  # type: ignore[arg-type]
            customer_id=ticket.customer_id,
            customer_email=ticket.customer_email,
            assignee_id=ticket.assignee_id,
            tags=ticket.tags,
            merged_into_id=ticket.merged_into_id,
            created_at=_iso(ticket.created_at),
            updated_at=_iso(ticket.updated_at),
        )


class TicketList(msgspec.Struct, kw_only=True):
    data: list[Ticket]
    has_more: bool
    next_cursor: str | None


class Attachment(msgspec.Struct, kw_only=True):
    """What came with a message or was attached to it: a stored `file`, fetched from its `url` (signed, valid for a
    few minutes: read the conversation again for a fresh one); a provider's `link`; or a file `refused` for good
    (`refused` says why)."""

    kind: Literal["file", "link", "refused"]
    name: str | None
    content_type: str | None
    size: int | None
    url: str | None
    refused: str | None = None


class ReplyDelivery(msgspec.Struct, kw_only=True):
    """An agent's reply on its way to the customer (docs/helpdesk.md, "Replies to customers")."""

    medium: outbound.Medium
    recipient: str
    """The customer's address, number, WhatsApp id or page-scoped id, or the chat thread (`<channel>:<thread ts>`)."""
    state: outbound.State
    provider_message_id: str | None
    """A mail's Message-ID (ours), an SMS's sid, a business message's `wamid`, a page message's `mid`, a chat
    message's `ts`."""
    last_error: str | None
    note: str | None
    """`kept locally: ...` when no SMTP server is configured: the mail is in the kept-mail outbox."""
    attempts: int
    updated_at: Timestamp
    parts: int
    """How many messages it went as: a text past its provider's longest (1,600 characters by SMS) goes as several (the
    state is the part furthest behind, `provider_message_id` the first part's)."""
    body: str | None
    """The text the customer was sent, or will be: editing the reply afterwards does not change it."""

    @classmethod
    def of(cls, delivery: tickets.Delivery | None) -> ReplyDelivery | None:
        if delivery is None:
            return None
        return cls(
            medium=delivery.medium,  # type: ignore[arg-type]
            recipient=delivery.recipient,
            state=delivery.state,  # type: ignore[arg-type]
            provider_message_id=delivery.provider_message_id,
            last_error=delivery.last_error,
            note=delivery.note,
            attempts=delivery.attempts,
            updated_at=_iso(delivery.updated_at),
            parts=delivery.parts,
            body=delivery.body,
        )


class Conversation(msgspec.Struct, kw_only=True):
    id: Uuid
    ticket_id: Uuid
    author_type: Literal["agent", "customer"]
    author_id: Uuid | None
    body: str
    internal: bool
    attachments: list[Attachment]
    created_at: Timestamp
    edited_at: Timestamp | None
    delivery: ReplyDelivery | None
    """An agent's reply: its message to the customer; null for a note, a customer's message, or a reply that could
    not be sent (the organization has no email channel, the customer no address)."""

    @classmethod
    def of(cls, conversation: tickets.ConversationRecord, desk: Helpdesk) -> Conversation:
        return cls(
            id=conversation.id,
            ticket_id=conversation.ticket_id,
            author_type=conversation.author_type,  # type: ignore[arg-type]
            author_id=conversation.author_id,
            body=conversation.body,
            internal=conversation.internal,
            attachments=[
                Attachment(
                    kind=item.kind,  # type: ignore[arg-type]
                    name=item.name,
                    content_type=item.content_type,
                    size=item.size,
                    url=item.url,
                    refused=item.refused,
                )
                for item in attachments.shown(desk, conversation)
            ],
            created_at=_iso(conversation.created_at),
            edited_at=_iso(conversation.edited_at) if conversation.edited_at else None,
            delivery=ReplyDelivery.of(conversation.delivery),
        )


class ConversationList(msgspec.Struct, kw_only=True):
    data: list[Conversation]
    has_more: bool
    next_cursor: str | None


class Event(msgspec.Struct, kw_only=True, omit_defaults=True):
    """Section 2.3."""

    id: Uuid
    aggregate_type: Literal["ticket", "conversation", "user", "organization"]
    aggregate_id: Uuid
    event_type: str
    event_data: dict[str, Any]
    actor_id: Uuid | None
    created_at: Timestamp
    actor: dict[str, Any] | None = None

    @classmethod
    def of(cls, event: events.EventRecord) -> Event:
        return cls(
            id=event.id,
            aggregate_type=event.aggregate_type,  # type: ignore[arg-type]
            aggregate_id=event.aggregate_id,
            event_type=event.event_type,
            event_data=event.event_data,
            actor_id=event.actor_id,
            created_at=_iso(event.created_at),
            actor=event.actor,
        )


class EventList(msgspec.Struct, kw_only=True):
    data: list[Event]
    has_more: bool
    next_cursor: str | None


class Webhook(msgspec.Struct, kw_only=True):
    """Section 2.4, never the secret."""

    id: Annotated[str, msgspec.Meta(examples=["hook_5d2c1b0a9f8e4d7c6b5a4f3e2d1c0b9a"])]
    url: str
    events: list[str]
    enabled: bool
    status: Literal["active", "disabled", "failed"]
    created_at: Timestamp

    @classmethod
    def of(cls, endpoint: Endpoint) -> Webhook:
        return cls(
            id=endpoint.id,
            url=endpoint.url,
            events=endpoint.events,
            enabled=endpoint.enabled,
            status=endpoint.status,  # type: ignore[arg-type]
            created_at=_iso(endpoint.created_at),
        )


class WebhookList(msgspec.Struct, kw_only=True):
    data: list[Webhook]


class WebhookTested(msgspec.Struct, kw_only=True):
    """How the subscription's receiver answered one signed `webhook.test` delivery: `success` for a 2xx, its HTTP
    `status` (null when it gave none: `error` says why, a refused connection or no answer within 35 s), and the
    delivery's event id (its `x-helpdesk-delivery-id`)."""

    id: str
    event_id: str
    success: bool
    status: int | None
    error: str | None

    @classmethod
    def of(cls, tested: Trial) -> WebhookTested:
        outcome = tested.outcome
        if outcome is None:
            return cls(
                id=tested.endpoint_id, event_id=tested.event_id, success=False, status=None, error="no answer yet"
            )
        success = outcome.status_code is not None and 200 <= outcome.status_code < 300
        return cls(
            id=tested.endpoint_id,
            event_id=tested.event_id,
            success=success,
            status=outcome.status_code,
            error=outcome.error,
        )


class ChannelObject(msgspec.Struct, kw_only=True):
    """A channel, never its secrets: only their names."""

    id: Uuid
    kind: ChannelKindName
    name: str
    addresses: list[str]
    settings: dict[str, Any]
    secret_names: list[str]
    created_at: Timestamp

    @classmethod
    def of(cls, channel: channels.ChannelRecord) -> ChannelObject:
        return cls(
            id=channel.id,
            kind=channel.kind,  # type: ignore[arg-type]
            name=channel.name,
            addresses=[address for _, address in channel.addresses],
            settings=channel.settings,
            secret_names=channel.secret_names,
            created_at=_iso(channel.created_at),
        )


class ChannelCreated(ChannelObject, kw_only=True):
    secrets: dict[str, str]
    """The secrets the helpdesk made for the channel (a forwarder secret, a verify token, a URL token): shown once."""

    @classmethod
    def made(cls, channel: channels.ChannelRecord, generated: dict[str, str]) -> ChannelCreated:
        return cls(**msgspec.structs.asdict(ChannelObject.of(channel)), secrets=generated)


class ChannelList(msgspec.Struct, kw_only=True):
    data: list[ChannelObject]


class InboundMessage(msgspec.Struct, kw_only=True):
    """A provider's call as it was stored, and what it became."""

    id: Uuid
    channel_id: str
    provider: Provider
    dedup_key: str
    state: Literal["pending", "processed"]
    classification: str | None
    ticket_id: Uuid | None
    conversation_id: Uuid | None
    outcome: str | None
    created_at: Timestamp
    processed_at: Timestamp | None

    @classmethod
    def of(cls, event: inbound.EventRecord) -> InboundMessage:
        return cls(
            id=event.id,
            channel_id=event.channel_id,
            provider=event.provider,
            dedup_key=event.dedup_key,
            state=event.state,  # type: ignore[arg-type]
            classification=event.classification,
            ticket_id=event.ticket_id,
            conversation_id=event.conversation_id,
            outcome=event.outcome,
            created_at=_iso(event.created_at),
            processed_at=_iso(event.processed_at) if event.processed_at else None,
        )


class InboundMessageList(msgspec.Struct, kw_only=True):
    data: list[InboundMessage]
    has_more: bool
    next_cursor: str | None


class Member(msgspec.Struct, kw_only=True):
    """A member of the organization (section 2.1's User, as the team sees it)."""

    id: Uuid
    email: str
    name: str
    avatar_url: str | None
    role: Literal["admin", "agent"]
    active: bool
    """False once an admin deactivated them: they cannot sign in or be assigned."""
    created_at: Timestamp
    deactivated_at: Timestamp | None

    @classmethod
    def of(cls, member: team.MemberRecord) -> Member:
        return cls(
            id=member.id,
            email=member.email,
            name=member.name,
            avatar_url=member.avatar_url,
            role=member.role,  # type: ignore[arg-type]
            active=member.active,
            created_at=_iso(member.created_at),
            deactivated_at=_iso(member.deactivated_at) if member.deactivated_at else None,
        )


class MemberList(msgspec.Struct, kw_only=True):
    data: list[Member]


class Invitation(msgspec.Struct, kw_only=True):
    """A pending invitation: its link was mailed to `email` and works until `expires_at`."""

    id: Uuid
    email: str
    role: Literal["agent"]
    invited_by: Uuid | None
    created_at: Timestamp
    expires_at: Timestamp

    @classmethod
    def of(cls, invitation: team.InvitationRecord) -> Invitation:
        return cls(
            id=invitation.id,
            email=invitation.email,
            role=invitation.role,  # type: ignore[arg-type]
            invited_by=invitation.invited_by,
            created_at=_iso(invitation.created_at),
            expires_at=_iso(invitation.expires_at),
        )


class InvitationList(msgspec.Struct, kw_only=True):
    data: list[Invitation]


class Deleted(msgspec.Struct, kw_only=True):
    """What a delete answers: the id of what is gone."""

    id: str
    deleted: bool = True


class Upload(msgspec.Struct, kw_only=True):
    """A file kept for a reply or note: name its `id` in `attachment_ids`."""

    id: Uuid
    name: str
    content_type: str
    size: int
    created_at: Timestamp

    @classmethod
    def of(cls, upload: uploads.UploadRecord) -> Upload:
        return cls(
            id=upload.id,
            name=upload.name,
            content_type=upload.content_type,
            size=upload.size,
            created_at=_iso(upload.created_at),
        )


class SearchHit(msgspec.Struct, kw_only=True):
    """A ticket (`ticket_id`), a reply or note (`conversation_id` and its `ticket_id`) or a customer (`customer_id`)
    that matched, with the text around the match and where the matching words are in it."""

    kind: Literal["ticket", "conversation", "customer"]
    ticket_id: Uuid | None
    conversation_id: Uuid | None
    customer_id: Uuid | None
    rank: float
    """Higher first; comparable within one result list only."""
    snippet: str
    highlights: list[tuple[int, int]]
    """The matching words in `snippet`, as [start, end) character offsets."""

    @classmethod
    def of(cls, hit: search.Hit) -> SearchHit:
        return cls(
            kind=hit.kind,
            ticket_id=hit.ticket_id,
            conversation_id=hit.conversation_id,
            customer_id=hit.customer_id,
            rank=hit.rank,
            snippet=hit.snippet,
            highlights=list(hit.highlights),
        )


class SearchResults(msgspec.Struct, kw_only=True):
    data: list[SearchHit]
    has_more: bool
    next_offset: int | None
    """The `offset` of the next page."""
