"""Request and response bodies of the helpdesk's REST API (`/api/v1`, docs/helpdesk.md "REST API"): snake_case fields
as the contract's resources (section 2) have them."""

from __future__ import annotations

from typing import Annotated, Any, ClassVar, Literal

import msgspec

from topics.helpdesk import EventType

Uuid = Annotated[
    str,
    msgspec.Meta(
        pattern=r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$",
        examples=["3f1c9a0b-7d2e-4e8a-9c3b-5d6f7a8e9b0c"],
    ),
]
Timestamp = Annotated[
    str, msgspec.Meta(extra_json_schema={"format": "date-time", "examples": ["2026-11-25T10:15:02Z"]})
]
Status = Literal["open", "pending", "resolved", "closed"]
Priority = Literal["low", "normal", "high", "urgent"]
Channel = Literal["api", "email", "sms", "chat", "voice", "web", "messaging", "social", "commerce", "marketplace"]
LINE = r"^[^\x00-\x1f\x7f]*$"
"""One line of text: no control characters (PostgreSQL stores no NUL in text, and a name or subject holds no
line breaks)."""
TEXT = r"^[^\x00-\x08\x0b\x0c\x0e-\x1f\x7f]*$"
"""Text over lines: tabs and line breaks, no other control character."""
EMAIL_PATTERN = r"^[^@\x00-\x20\x7f]+@[^@\x00-\x20\x7f]+\.[^@\x00-\x20\x7f]+$"
r"""Something, `@`, something with a dot, none of it spaces or control characters (written without `\s`, which
regex engines read differently)."""
Email = Annotated[str, msgspec.Meta(max_length=320, pattern=EMAIL_PATTERN, examples=["ada@example.com"])]
PersonName = Annotated[str, msgspec.Meta(min_length=1, max_length=255, pattern=LINE, examples=["Ada Lovelace"])]
Phone = Annotated[str, msgspec.Meta(max_length=32, pattern=r"^\+?[0-9 ()\-.]{3,31}$", examples=["+14155550100"])]
Subject = Annotated[
    str, msgspec.Meta(min_length=1, max_length=255, pattern=LINE, examples=["My order has not arrived"])
]
Tag = Annotated[str, msgspec.Meta(min_length=1, max_length=64, pattern=r"^[^\x00-\x20\x7f,]+$", examples=["shipping"])]
Tags = Annotated[list[Tag], msgspec.Meta(max_length=20)]
Body = Annotated[str, msgspec.Meta(min_length=1, max_length=65536, pattern=TEXT, examples=["It was due on Monday."])]


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


class CustomerList(msgspec.Struct, kw_only=True):
    data: list[Customer]
    has_more: bool
    next_cursor: str | None


class CreateCustomer(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    email: Email
    name: PersonName
    phone: Phone | None = None


class UpdateCustomer(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Absent fields stay as they are; `phone: null` removes the phone number."""

    email: Email | msgspec.UnsetType = msgspec.UNSET
    name: PersonName | msgspec.UnsetType = msgspec.UNSET
    phone: Phone | msgspec.UnsetType | None = msgspec.UNSET


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
    created_at: Timestamp
    updated_at: Timestamp


class TicketList(msgspec.Struct, kw_only=True):
    data: list[Ticket]
    has_more: bool
    next_cursor: str | None


class CreateTicket(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """The customer by `customer_id`, or by `customer_email` (made when new, named `customer_name`)."""

    one_of_required: ClassVar = (("customer_id",), ("customer_email",))
    dependent_required: ClassVar = {"customer_name": ("customer_email",)}

    subject: Subject
    customer_id: Uuid | msgspec.UnsetType = msgspec.UNSET
    customer_email: Email | msgspec.UnsetType = msgspec.UNSET
    customer_name: PersonName | msgspec.UnsetType = msgspec.UNSET
    message: Body | None = None
    """The customer's first message, stored as the ticket's first reply."""
    priority: Priority = "normal"
    status: Status = "open"
    channel: Channel = "api"
    assignee_id: Uuid | None = None
    tags: Tags = msgspec.field(default_factory=list)


class UpdateTicket(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Absent fields stay as they are; `assignee_id: null` unassigns; `tags` replaces the tags."""

    subject: Subject | msgspec.UnsetType = msgspec.UNSET
    status: Status | msgspec.UnsetType = msgspec.UNSET
    priority: Priority | msgspec.UnsetType = msgspec.UNSET
    assignee_id: Uuid | msgspec.UnsetType | None = msgspec.UNSET
    tags: Tags | msgspec.UnsetType = msgspec.UNSET


class Conversation(msgspec.Struct, kw_only=True):
    id: Uuid
    ticket_id: Uuid
    author_type: Literal["agent", "customer"]
    author_id: Uuid | None
    body: str
    internal: bool
    created_at: Timestamp


class ConversationList(msgspec.Struct, kw_only=True):
    data: list[Conversation]
    has_more: bool
    next_cursor: str | None


class AddConversation(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A reply (to the customer) or, with `internal: true`, a note only agents see. `author_type: customer` records
    the customer's own message (an integration relaying it)."""

    never_together: ClassVar = {"author_type": "customer", "internal": True}

    body: Body
    internal: bool = False
    author_type: Literal["agent", "customer"] = "agent"


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


class EventList(msgspec.Struct, kw_only=True):
    data: list[Event]
    has_more: bool
    next_cursor: str | None


WebhookEvent = EventType
Url = Annotated[
    str,
    msgspec.Meta(
        min_length=1,
        max_length=2048,
        pattern=r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[!-~]*)?$",
        description="An http or https URL on a public host",
        examples=["https://hooks.example.com/helpdesk"],
    ),
]


class CreateWebhook(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    url: Url
    events: Annotated[list[WebhookEvent], msgspec.Meta(min_length=1, max_length=8)]
    secret: (
        Annotated[str, msgspec.Meta(min_length=8, max_length=256, pattern=LINE, examples=["s3cr3t-signing-key"])] | None
    ) = None
    enabled: bool = True


class UpdateWebhook(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """Absent fields stay as they are."""

    events: Annotated[list[WebhookEvent], msgspec.Meta(min_length=1, max_length=8)] | None = None
    enabled: bool | None = None


class Webhook(msgspec.Struct, kw_only=True):
    """Section 2.4, never the secret."""

    id: Annotated[str, msgspec.Meta(examples=["hook_5d2c1b0a9f8e4d7c6b5a4f3e2d1c0b9a"])]
    url: str
    events: list[str]
    enabled: bool
    status: Literal["active", "disabled", "failed"]
    created_at: Timestamp


class WebhookList(msgspec.Struct, kw_only=True):
    data: list[Webhook]


class WebhookDeleted(msgspec.Struct, kw_only=True):
    id: str
    deleted: bool


class WebhookTested(msgspec.Struct, kw_only=True):
    """How the subscription's receiver answered one signed `webhook.test` delivery: `success` for a 2xx, its HTTP
    `status` (null when it gave none: `error` says why, a refused connection or no answer within 35 s), and the
    delivery's event id (its `x-helpdesk-delivery-id`)."""

    id: str
    event_id: str
    success: bool
    status: int | None
    error: str | None


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
Address = Annotated[str, msgspec.Meta(min_length=1, max_length=320, pattern=LINE, examples=["support@acme.example"])]


class CreateChannel(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    """A channel of one kind: the addresses that route to it (an inbound address, a phone number, an id), the secrets
    its provider issued, and its settings. The secrets the helpdesk makes for it are in the answer, once."""

    kind: ChannelKindName
    name: PersonName
    addresses: Annotated[list[Address], msgspec.Meta(max_length=20)] = msgspec.field(default_factory=list)
    secrets: dict[
        Annotated[str, msgspec.Meta(max_length=64, pattern=LINE)],
        Annotated[str, msgspec.Meta(min_length=1, max_length=4096, pattern=LINE)],
    ] = msgspec.field(default_factory=dict)
    settings: dict[
        Annotated[str, msgspec.Meta(max_length=64, pattern=LINE)],
        Annotated[str, msgspec.Meta(max_length=1600, pattern=TEXT)],
    ] = msgspec.field(default_factory=dict)


class ChannelObject(msgspec.Struct, kw_only=True):
    """A channel, never its secrets: only their names."""

    id: Uuid
    kind: ChannelKindName
    name: str
    addresses: list[str]
    settings: dict[str, Any]
    secret_names: list[str]
    created_at: Timestamp


class ChannelCreated(ChannelObject, kw_only=True):
    secrets: dict[str, str]
    """The secrets the helpdesk made for the channel (a forwarder secret, a verify token, a URL token): shown once."""


class ChannelList(msgspec.Struct, kw_only=True):
    data: list[ChannelObject]


class ChannelDeleted(msgspec.Struct, kw_only=True):
    id: Uuid
    deleted: bool


class InboundMessage(msgspec.Struct, kw_only=True):
    """A provider's call as it was stored, and what it became."""

    id: Uuid
    channel_id: str
    provider: str
    dedup_key: str
    state: Literal["pending", "processed"]
    classification: str | None
    ticket_id: Uuid | None
    conversation_id: Uuid | None
    outcome: str | None
    created_at: Timestamp
    processed_at: Timestamp | None


class InboundMessageList(msgspec.Struct, kw_only=True):
    data: list[InboundMessage]
    has_more: bool
    next_cursor: str | None
