"""Tickets and their conversations. Every change writes, in its own transaction, its activity-log events (section 6.2)
and its outgoing webhook events (section 6.1), so neither exists without the change nor the change without them.

Which operation writes what (docs/helpdesk.md, "Events"):

| operation | activity events (ticket / conversation) | webhook events |
|---|---|---|
| create a ticket | `created`, then `assigned` and `tagged` if given | `ticket.created`, `ticket.assigned` if assigned |
| change status | `status_changed` | `ticket.status_changed`, `ticket.updated` |
| change priority | `priority_changed` | `ticket.priority_changed`, `ticket.updated` |
| assign / unassign | `assigned` / `unassigned` | `ticket.assigned` (assign only), `ticket.updated` |
| add tags / remove tags / subject | `tagged` / `updated` / `updated` | `ticket.updated` |
| add a reply or a note | conversation `created` | `conversation.created` |
| edit / delete a reply or a note | conversation `updated` / `deleted` | none (6.1 has no such event) |
| merge into another ticket | the merged one's `status_changed`, `merged` | its `ticket.status_changed`, `.updated` |
| delete a ticket | `deleted` | none (6.1 has no such event) |

An update that changes several fields writes each field's events and one `ticket.updated`; one that changes nothing
writes nothing."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Literal, cast, get_args

from sqlalchemy import ColumnElement, Table, bindparam, case, func, insert, select, update
from sqlalchemy import delete as delete_rows
from sqlalchemy.engine import Connection

from storage.common import later
from storage.common.models import json_list_has
from storage.common.paging import newest_first
from storage.common.webhooks.events import record_events
from storage.helpdesk import customers, events
from storage.helpdesk.accounts import USERS
from storage.helpdesk.models import Conversation, Outbound, Ticket
from storage.helpdesk.workspaces import ORGANIZATIONS
from topics.helpdesk import WEBHOOKS
from wire.ids import new_uuid

TICKETS = cast(Table, Ticket.__table__)
CONVERSATIONS = cast(Table, Conversation.__table__)
OUTBOUND = cast(Table, Outbound.__table__)
STATUSES = ("open", "pending", "resolved", "closed")
PRIORITIES = ("low", "normal", "high", "urgent")
CHANNELS = ("api", "email", "sms", "chat", "voice", "web", "messaging", "social", "commerce", "marketplace")
PREVIEW_CHARACTERS = 140
"""Of a conversation's body, in its `created` event's `content_preview`."""
AuthorType = Literal["agent", "customer"]


class UnknownAssignee(Exception):
    """The assignee is no user of the organization (400)."""


class UnknownCustomer(Exception):
    """The customer is none of the organization's (400)."""


@dataclass(frozen=True, slots=True)
class TicketRecord:
    id: str
    organization_id: str
    number: int
    subject: str
    status: str
    priority: str
    channel: str
    customer_id: str
    customer_email: str | None
    assignee_id: str | None
    tags: list[str]
    created_at: datetime
    updated_at: datetime
    thread_key: str | None = None
    """For a channel that threads by sender: the ticket that sender's next message goes to (models.Ticket)."""
    merged_into_id: str | None = None


@dataclass(frozen=True, slots=True)
class Delivery:
    """A reply's message to the customer, as its conversation shows it (storage/helpdesk/outbound.py)."""

    medium: str
    recipient: str
    state: str
    provider_message_id: str | None
    last_error: str | None
    note: str | None
    attempts: int
    updated_at: datetime
    parts: int = 1
    """How many messages it went as: more than one for an SMS past the provider's longest body."""
    body: str | None = None
    """The text the customer was sent (or will be): it stays what it was when the reply is edited afterwards."""


@dataclass(frozen=True, slots=True)
class ConversationRecord:
    id: str
    ticket_id: str
    author_type: str
    author_id: str | None
    body: str
    internal: bool
    created_at: datetime
    message_id: str | None = None
    attachments: list[dict[str, Any]] = field(default_factory=list)
    edited_at: datetime | None = None
    delivery: Delivery | None = None
    """An agent's reply: its message to the customer, where it has one (read by `conversations`, `conversation`)."""


@dataclass(frozen=True, slots=True)
class Changes:
    """What an update asks for; None: unchanged. `assignee_id` "" removes the assignee."""

    subject: str | None = None
    status: str | None = None
    priority: str | None = None
    assignee_id: str | None = None
    tags: Sequence[str] | None = None
    reason: str | None = None
    """Why, where it is not a person's change (REOPENED_BY_INBOUND): in the `status_changed` event's data."""


def webhook_data(ticket: TicketRecord) -> dict[str, Any]:
    """`data` of every ticket.* delivery (section 2.5)."""
    return {
        "ticketId": ticket.id,
        "ticketNumber": ticket.number,
        "subject": ticket.subject,
        "status": ticket.status,
        "priority": ticket.priority,
        "customerId": ticket.customer_id,
        "customerEmail": ticket.customer_email,
    }


def selected() -> Any:
    """Tickets with their customer's address, as `record` reads them (a caller may add columns and joins)."""
    return select(TICKETS, customers.CUSTOMERS.c.email.label("customer_email")).join(
        customers.CUSTOMERS, customers.CUSTOMERS.c.id == TICKETS.c.customer_id
    )


def record(row: Any) -> TicketRecord:
    """The ticket of a row `selected` read."""
    return TicketRecord(
        row.id,
        row.organization_id,
        row.number,
        row.subject,
        row.status,
        row.priority,
        row.channel,
        row.customer_id,
        row.customer_email,
        row.assignee_id,
        list(row.tags),
        row.created_at,
        row.updated_at,
        row.thread_key,
        row.merged_into_id,
    )


# Statements on a change's path are built once: building them per call was most of a ticket create's storage time
# (measured: bench/helpdesk.py).
_LIVE = TICKETS.c.deleted_at.is_(None)
_GET = selected().where(
    TICKETS.c.organization_id == bindparam("organization_id"), TICKETS.c.id == bindparam("id"), _LIVE
)
_ASSIGNEE_NAME = select(USERS.c.name).where(
    USERS.c.id == bindparam("user_id"),
    USERS.c.organization_id == bindparam("organization_id"),
    USERS.c.deactivated_at.is_(None),
)
_NEXT_NUMBER = (
    update(ORGANIZATIONS)
    .where(ORGANIZATIONS.c.id == bindparam("organization_id"))
    .values(last_ticket_number=ORGANIZATIONS.c.last_ticket_number + 1)
    .returning(ORGANIZATIONS.c.last_ticket_number)
)
_SET_NUMBER = (
    update(ORGANIZATIONS)
    .where(ORGANIZATIONS.c.id == bindparam("organization_id"))
    .values(last_ticket_number=bindparam("number"))
)
_INSERT = insert(TICKETS)
_INSERT_CONVERSATION = insert(CONVERSATIONS)
_NOW = bindparam("now", type_=TICKETS.c.updated_at.type)
_TOUCH = (
    update(TICKETS)
    .where(TICKETS.c.id == bindparam("ticket_id"))
    .values(updated_at=case((TICKETS.c.updated_at < _NOW, _NOW), else_=TICKETS.c.updated_at))
)
"""The ticket's `updated_at` moved forward to `now` (never back: later.touch)."""


_TICKET_COLUMNS = [name for name in TicketRecord.__slots__ if name != "customer_email"]  # type: ignore[attr-defined]


def get(connection: Connection, organization_id: str, ticket_id: str) -> TicketRecord | None:
    """The organization's ticket, merged ones included; a deleted one is None."""
    row = connection.execute(_GET, {"organization_id": organization_id, "id": ticket_id}).first()
    return record(row) if row else None


def _assignee_name(connection: Connection, organization_id: str, user_id: str) -> str:
    name = connection.execute(
        _ASSIGNEE_NAME, {"user_id": user_id, "organization_id": organization_id}
    ).scalar_one_or_none()
    if name is None:
        raise UnknownAssignee(user_id)
    return str(name)


def _next_number(connection: Connection, organization_id: str) -> int:
    """The organization's next ticket number. The increment locks the organization's row until the transaction ends,
    so concurrent creates take turns: no number is given twice, and a rolled-back create gives its number back. A
    round of inbound events (a deferring transaction) takes the number once and counts on in memory."""
    params = {"organization_id": organization_id}
    return later.count(
        connection,
        ("ticket number", organization_id),
        lambda: int(connection.execute(_NEXT_NUMBER, params).scalar_one()),
        lambda number: connection.execute(_SET_NUMBER, params | {"number": number}),
    )


class _Log:
    """One change's events: activity rows and webhook events, written together when it closes, in the change's
    transaction (one statement per table)."""

    def __init__(
        self, connection: Connection, ticket: TicketRecord, actor_id: str | None, now: datetime, recorded: list[str]
    ) -> None:
        self.connection, self.ticket, self.actor_id, self.now = connection, ticket, actor_id, now
        self.recorded = recorded
        self.activities: list[dict[str, Any]] = []
        self.hooks: dict[str, dict[str, Any] | None] = {}
        """event type -> its data; None: the ticket's, as it is when the change closes."""

    def activity(
        self, event_type: str, data: dict[str, Any], aggregate: tuple[events.AggregateType, str] | None = None
    ) -> None:
        """An activity event of the ticket, or of `aggregate` on the ticket (a conversation)."""
        self.activities.append(
            events.row(
                self.ticket.organization_id,
                aggregate or ("ticket", self.ticket.id),
                event_type,
                data,
                actor_id=self.actor_id,
                now=self.now,
                ticket_id=self.ticket.id,
            )
        )

    def hook(self, event_type: str, data: dict[str, Any] | None = None) -> None:
        self.hooks.setdefault(event_type, data)

    def close(self, ticket: TicketRecord) -> None:
        events.record_rows(self.connection, self.activities)
        hooks = [(kind, webhook_data(ticket) if data is None else data) for kind, data in self.hooks.items()]
        self.recorded += record_events(self.connection, WEBHOOKS, ticket.organization_id, hooks, now=self.now)


def create(
    connection: Connection,
    organization_id: str,
    *,
    subject: str,
    customer: customers.CustomerRecord | None = None,
    customer_id: str | None = None,
    customer_email: str | None = None,
    customer_name: str | None = None,
    priority: str = "normal",
    status: str = "open",
    channel: str = "api",
    assignee_id: str | None = None,
    tags: Sequence[str] = (),
    message: str | None = None,
    message_id: str | None = None,
    attachments: Sequence[dict[str, Any]] = (),
    thread_key: str | None = None,
    actor_id: str | None,
    now: datetime,
    recorded: list[str],
) -> TicketRecord:
    """A ticket for a customer given as read in this transaction, by id, or by address (made when new), numbered next in
    its organization, with its first message as a customer reply when `message` is given (with its mail's Message-ID
    and its attachments)."""
    if customer is None and customer_id is not None:
        customer = customers.get(connection, organization_id, customer_id)
        if customer is None:
            raise UnknownCustomer(customer_id)
    if customer is None:
        assert customer_email is not None
        customer = customers.find_or_create(
            connection, organization_id, email=customer_email, name=customer_name, now=now, recorded=recorded
        )
    assignee_name = _assignee_name(connection, organization_id, assignee_id) if assignee_id else None
    unique_tags = list(dict.fromkeys(tags))
    ticket = TicketRecord(
        new_uuid(),
        organization_id,
        _next_number(connection, organization_id),
        subject,
        status,
        priority,
        channel,
        customer.id,
        customer.email,
        assignee_id,
        unique_tags,
        now,
        now,
        thread_key,
    )
    values = {name: getattr(ticket, name) for name in _TICKET_COLUMNS}
    connection.execute(_INSERT, values)
    log = _Log(connection, ticket, actor_id, now, recorded)
    log.activity("created", {"subject": subject, "priority": priority, "channel": channel})
    log.hook("ticket.created")
    if assignee_id:
        log.activity("assigned", {"assignee_id": assignee_id, "assignee_name": assignee_name})
        log.hook("ticket.assigned")
        notify(connection, ticket, assignee_id, NOTIFY_ASSIGNED, actor_id=actor_id, now=now)
    if unique_tags:
        log.activity("tagged", {"tags": unique_tags})
    if message:
        _conversation(
            log,
            author_type="customer",
            author_id=customer.id,
            body=message,
            internal=False,
            message_id=message_id,
            attachments=attachments,
        )
    log.close(ticket)
    return ticket


def change(
    connection: Connection,
    organization_id: str,
    ticket_id: str,
    changes: Changes,
    *,
    actor_id: str | None,
    now: datetime,
    recorded: list[str],
) -> TicketRecord | None:
    """Apply `changes` with their events (the table in this module's docstring); None when there is no such ticket."""
    current = get(connection, organization_id, ticket_id)
    if current is None:
        return None
    log = _Log(connection, current, actor_id, now, recorded)
    values: dict[str, Any] = {}
    if changes.subject is not None and changes.subject != current.subject:
        values["subject"] = changes.subject
        log.activity("updated", {"subject": changes.subject})
    if changes.status is not None and changes.status != current.status:
        values["status"] = changes.status
        reason = {"reason": changes.reason} if changes.reason else {}
        log.activity("status_changed", {"old_status": current.status, "new_status": changes.status} | reason)
        log.hook("ticket.status_changed")
    if changes.priority is not None and changes.priority != current.priority:
        values["priority"] = changes.priority
        log.activity("priority_changed", {"old_priority": current.priority, "new_priority": changes.priority})
        log.hook("ticket.priority_changed")
    if changes.assignee_id is not None and (changes.assignee_id or None) != current.assignee_id:
        if changes.assignee_id:
            name = _assignee_name(connection, organization_id, changes.assignee_id)
            values["assignee_id"] = changes.assignee_id
            log.activity("assigned", {"assignee_id": changes.assignee_id, "assignee_name": name})
            notify(connection, current, changes.assignee_id, NOTIFY_ASSIGNED, actor_id=actor_id, now=now)
            log.hook("ticket.assigned")
        else:
            values["assignee_id"] = None
            log.activity("unassigned", {"assignee_id": current.assignee_id})
    if changes.tags is not None:
        tags = list(dict.fromkeys(changes.tags))
        if set(tags) != set(current.tags):
            values["tags"] = tags
            added = [tag for tag in tags if tag not in current.tags]
            if added:
                log.activity("tagged", {"tags": added})
            if any(tag not in tags for tag in current.tags):
                log.activity("updated", {"tags": tags})
    if not values:
        return current
    connection.execute(update(TICKETS).where(TICKETS.c.id == ticket_id).values(**values, updated_at=now))
    log.hook("ticket.updated")
    updated = replace(current, **values, updated_at=now)
    log.close(updated)
    return updated


def listing(
    connection: Connection,
    organization_id: str,
    *,
    status: str | None = None,
    priority: str | None = None,
    assignee_id: str | None = None,
    customer_id: str | None = None,
    tag: str | None = None,
    limit: int,
    cursor: str | None,
) -> tuple[list[TicketRecord], bool]:
    """The organization's tickets, newest first, filtered; `cursor` is the last ticket id of the previous page."""
    t = TICKETS.c
    scope = (t.organization_id == organization_id) & _LIVE
    for column, value in ((t.status, status), (t.priority, priority), (t.assignee_id, assignee_id)):
        if value is not None:
            scope = scope & (column == value)
    if customer_id is not None:
        scope = scope & (t.customer_id == customer_id)
    if tag is not None:
        scope = scope & json_list_has(connection.dialect.name, t.tags, tag)
    rows, more = newest_first(connection, TICKETS, selected(), scope, limit=limit, cursor=cursor)
    return [record(row) for row in rows], more


InboxView = Literal["mine", "unassigned", "open", "pending", "resolved"]
INBOX_VIEWS: tuple[InboxView, ...] = get_args(InboxView)
"""The agent app's inbox views: `mine` (open or pending, assigned to the member), `unassigned` (open or pending, nobody
assigned), `open`, `pending`, and `resolved` (resolved or closed). Merged tickets are in none."""
_WAITING = TICKETS.c.status.in_(("open", "pending"))


def _in_inbox(organization_id: str) -> ColumnElement[bool]:
    """The organization's tickets that any inbox view may hold: live, not merged."""
    return (TICKETS.c.organization_id == organization_id) & _LIVE & TICKETS.c.merged_into_id.is_(None)


def _in_view(view: InboxView, user_id: str | None) -> ColumnElement[bool]:
    t = TICKETS.c
    return {
        "mine": _WAITING & (t.assignee_id == user_id),
        "unassigned": _WAITING & t.assignee_id.is_(None),
        "open": t.status == "open",
        "pending": t.status == "pending",
        "resolved": t.status.in_(("resolved", "closed")),
    }[view]


def inbox(
    connection: Connection,
    organization_id: str,
    user_id: str | None,
    view: InboxView,
    *,
    limit: int,
    cursor: str | None,
) -> tuple[list[TicketRecord], bool]:
    """The tickets of an inbox view, newest first; `cursor` is the last ticket id of the previous page."""
    scope = _in_inbox(organization_id) & _in_view(view, user_id)
    rows, more = newest_first(connection, TICKETS, selected(), scope, limit=limit, cursor=cursor)
    return [record(row) for row in rows], more


def inbox_counts(connection: Connection, organization_id: str, user_id: str | None) -> dict[InboxView, int]:
    """How many tickets each inbox view holds, in one statement."""
    counted = connection.execute(
        select(*(func.count().filter(_in_view(view, user_id)).label(view) for view in INBOX_VIEWS)).where(
            _in_inbox(organization_id)
        )
    ).one()
    return {view: int(getattr(counted, view)) for view in INBOX_VIEWS}


def add_conversation(
    connection: Connection,
    ticket: TicketRecord,
    *,
    author_type: AuthorType,
    author_id: str | None,
    body: str,
    internal: bool,
    now: datetime,
    recorded: list[str],
    actor_id: str | None = None,
    message_id: str | None = None,
    attachments: Sequence[dict[str, Any]] = (),
) -> ConversationRecord:
    """A reply or an internal note on `ticket`, with its conversation `created` event and `conversation.created`.
    `message_id`: the mail's Message-ID, by which replies to it thread."""
    log = _Log(connection, ticket, actor_id, now, recorded)
    conversation = _conversation(
        log,
        author_type=author_type,
        author_id=author_id,
        body=body,
        internal=internal,
        message_id=message_id,
        attachments=attachments,
    )
    later.touch(connection, _TOUCH, {"ticket_id": ticket.id, "now": now})
    log.close(ticket)
    if author_type == "customer" and ticket.assignee_id:
        notify(connection, ticket, ticket.assignee_id, NOTIFY_ANSWERED, actor_id=actor_id, now=now, said=body)
    return conversation


NOTIFY_ASSIGNED, NOTIFY_ANSWERED = "notify_assigned", "notify_customer_replied"
"""A member's preferences (their profile's `preferences`): `false` stops the mail that tells them a ticket was
assigned to them, or that its customer answered a ticket of theirs; on unless set so."""
NOTICE_PREVIEW = 500
"""The characters of the customer's message a notice of their answer quotes."""


def notify(
    connection: Connection,
    ticket: TicketRecord,
    user_id: str,
    preference: str,
    *,
    actor_id: str | None,
    now: datetime,
    said: str = "",
) -> None:
    """A member's notice, by mail (`auto-generated`, from the helpdesk's own address: the reply sender's outbox,
    with no conversation and no channel), of a ticket assigned to them or answered by its customer: unless they did
    it themselves, are deactivated, or turned it off in their preferences. It names the ticket and quotes what was
    said, and carries no customer address."""
    if user_id == actor_id:
        return
    member = connection.execute(
        select(USERS.c.email, USERS.c.preferences, USERS.c.deactivated_at).where(USERS.c.id == user_id)
    ).first()
    if member is None or member.deactivated_at is not None or (member.preferences or {}).get(preference) is False:
        return
    title = f'Ticket #{ticket.number} "{ticket.subject}"'
    if preference == NOTIFY_ASSIGNED:
        body = f"{title} is assigned to you."
    else:
        quoted = said if len(said) <= NOTICE_PREVIEW else said[: NOTICE_PREVIEW - 1] + "…"
        body = f"The customer answered {title}:\n\n" + "\n".join(f"> {line}" for line in quoted.splitlines())
    connection.execute(
        insert(OUTBOUND).values(
            id=new_uuid(),
            organization_id=ticket.organization_id,
            ticket_id=ticket.id,
            conversation_id=None,
            channel_id=None,
            medium="email",
            sender=None,
            recipient=member.email,
            state="queued",
            body=body,
            part=0,
            auto_submitted="auto-generated",
            attempts=0,
            next_attempt_at=now,
            created_at=now,
            updated_at=now,
        )
    )


def _conversation(
    log: _Log,
    *,
    author_type: AuthorType,
    author_id: str | None,
    body: str,
    internal: bool,
    message_id: str | None,
    attachments: Sequence[dict[str, Any]],
) -> ConversationRecord:
    """The conversation, its events in `log`."""
    ticket, now = log.ticket, log.now
    conversation = ConversationRecord(
        new_uuid(), ticket.id, author_type, author_id, body, internal, now, message_id, list(attachments)
    )
    fields = {name: getattr(conversation, name) for name in _CONVERSATION_FIELDS}
    later.insert(log.connection, _INSERT_CONVERSATION, [{"organization_id": ticket.organization_id, **fields}])
    log.activity(
        "created",
        {"content_preview": body[:PREVIEW_CHARACTERS], "internal": internal},
        aggregate=("conversation", conversation.id),
    )
    data = {
        "conversationId": conversation.id,
        "ticketId": ticket.id,
        "ticketNumber": ticket.number,
        "authorType": author_type,
        "authorId": author_id,
        "internal": internal,
        "body": body,
        "attachments": len(conversation.attachments),
        "createdAt": now.isoformat().replace("+00:00", "Z"),
    }
    log.hook("conversation.created", data)
    return conversation


_CONVERSATION_FIELDS = tuple(name for name in ConversationRecord.__slots__ if name != "delivery")  # type: ignore[attr-defined]
_DELIVERIES = (
    select(OUTBOUND)
    .where(OUTBOUND.c.conversation_id.in_(bindparam("ids", expanding=True)))
    .order_by(OUTBOUND.c.conversation_id, OUTBOUND.c.part)
)
_SHOWN_FIRST = {"failed": 0, "bounced": 0, "queued": 1, "sent": 2, "delivered": 3, "read": 4}
"""Of a reply sent as several messages, the state shown is the one furthest behind (a failed part first)."""


def _delivered(connection: Connection, records: list[ConversationRecord]) -> list[ConversationRecord]:
    """The records, each reply with its message to the customer: for one sent as several messages (a long SMS), the
    state of the part furthest behind, the first part's provider id, and the text of all parts."""
    replies = [record.id for record in records if record.author_type == "agent" and not record.internal]
    if not replies:
        return records
    parts: dict[str, list[Any]] = {}
    for row in connection.execute(_DELIVERIES, {"ids": replies}):
        parts.setdefault(row.conversation_id, []).append(row)
    found = {}
    for conversation_id, rows in parts.items():
        shown = min(rows, key=lambda row: _SHOWN_FIRST.get(row.state, 1))
        found[conversation_id] = Delivery(
            shown.medium,
            shown.recipient,
            shown.state,
            rows[0].provider_message_id,
            shown.last_error,
            shown.note,
            max(row.attempts for row in rows),
            max(row.updated_at for row in rows),
            len(rows),
            "\n".join(row.body for row in rows) if all(row.body is not None for row in rows) else None,
        )
    return [
        dataclasses.replace(record, delivery=found[record.id]) if record.id in found else record for record in records
    ]


def _conversation_record(row: Any) -> ConversationRecord:
    return ConversationRecord(**{name: getattr(row, name) for name in _CONVERSATION_FIELDS})


def conversations(
    connection: Connection, ticket_id: str, *, limit: int, cursor: str | None
) -> tuple[list[ConversationRecord], bool]:
    """A ticket's conversations, newest first."""
    rows, more = newest_first(
        connection,
        CONVERSATIONS,
        select(CONVERSATIONS),
        (CONVERSATIONS.c.ticket_id == ticket_id) & CONVERSATIONS.c.deleted_at.is_(None),
        limit=limit,
        cursor=cursor,
    )
    return _delivered(connection, [_conversation_record(row) for row in rows]), more


# Threading inbound messages (processors/helpdesk/inbound) -----------------------------------------------------------

_BY_MESSAGE_IDS = (
    select(CONVERSATIONS.c.ticket_id, CONVERSATIONS.c.message_id)
    .where(
        CONVERSATIONS.c.organization_id == bindparam("organization_id"),
        CONVERSATIONS.c.message_id.in_(bindparam("message_ids", expanding=True)),
    )
    .order_by(CONVERSATIONS.c.created_at)
)
_ANY = selected().where(TICKETS.c.organization_id == bindparam("organization_id"), TICKETS.c.id == bindparam("id"))
_BY_NUMBER = selected().where(
    TICKETS.c.organization_id == bindparam("organization_id"), TICKETS.c.number == bindparam("number")
)
_BY_THREAD = (
    selected()
    .where(TICKETS.c.organization_id == bindparam("organization_id"), TICKETS.c.thread_key == bindparam("thread_key"))
    .order_by(TICKETS.c.created_at.desc())
    .limit(1)
)


def tickets_of_message_ids(connection: Connection, organization_id: str, message_ids: Sequence[str]) -> dict[str, str]:
    """message id -> the ticket of the conversation stored with that Message-ID (the first, where several are)."""
    if not message_ids:
        return {}
    later.flush_table(connection, CONVERSATIONS)  # a conversation written earlier in this round may be the one
    found: dict[str, str] = {}
    rows = connection.execute(
        _BY_MESSAGE_IDS, {"organization_id": organization_id, "message_ids": list(dict.fromkeys(message_ids))}
    )
    for row in rows:
        found.setdefault(row.message_id, row.ticket_id)
    return found


_CONVERSATION_OF_MESSAGE_ID = (
    select(CONVERSATIONS)
    .where(
        CONVERSATIONS.c.organization_id == bindparam("organization_id"),
        CONVERSATIONS.c.message_id == bindparam("message_id"),
    )
    .order_by(CONVERSATIONS.c.created_at)
    .limit(1)
)


def conversation_of_message_id(
    connection: Connection, organization_id: str, message_id: str
) -> ConversationRecord | None:
    """The (first) conversation stored with this Message-ID: a customer's mail, or one of our own sent replies."""
    later.flush_table(connection, CONVERSATIONS)
    row = connection.execute(
        _CONVERSATION_OF_MESSAGE_ID, {"organization_id": organization_id, "message_id": message_id}
    ).first()
    return _conversation_record(row) if row else None


def by_number(connection: Connection, organization_id: str, number: int) -> TicketRecord | None:
    """The ticket of this number, or the one it was merged into; None when it is deleted."""
    row = connection.execute(_BY_NUMBER, {"organization_id": organization_id, "number": number}).first()
    return _live(connection, row)


def latest_of_thread(connection: Connection, organization_id: str, thread_key: str) -> TicketRecord | None:
    """The newest ticket of a sender's thread (SMS, messaging apps, chat), or the one it was merged into; None when it
    is deleted (the message opens a new ticket of the thread)."""
    row = connection.execute(_BY_THREAD, {"organization_id": organization_id, "thread_key": thread_key}).first()
    return _live(connection, row)


MAX_MERGES = 16
"""Merges followed from a ticket to its destination, at most (merging into a merged ticket is refused, so a chain
forms only from tickets merged before their target was)."""


def _live(connection: Connection, row: Any) -> TicketRecord | None:
    """Where a message threaded to this ticket goes: along its merges to the ticket that stands; None when that is
    deleted."""
    for _ in range(MAX_MERGES):
        if row is None or row.deleted_at is not None:
            return None
        if row.merged_into_id is None:
            return record(row)
        row = connection.execute(_ANY, {"organization_id": row.organization_id, "id": row.merged_into_id}).first()
    return None


def reopenings_since(connection: Connection, ticket_id: str, since: datetime) -> int:
    """How many times the ticket was reopened by an inbound message since `since` (its activity log says)."""
    later.flush(connection)
    rows = connection.execute(
        select(events.EVENTS.c.event_data).where(
            events.EVENTS.c.ticket_id == ticket_id,
            events.EVENTS.c.aggregate_type == "ticket",
            events.EVENTS.c.event_type == "status_changed",
            events.EVENTS.c.created_at >= since,
        )
    )
    return sum(1 for row in rows if (row.event_data or {}).get("reason") == REOPENED_BY_INBOUND)


REOPENED_BY_INBOUND = "inbound_message"
"""The `reason` in a `status_changed` event's data when a customer's message reopened the ticket."""


# A team's changes: merges and deletions, edited and deleted conversations ------------------------------------------


class MergeRefused(Exception):
    """A merge that cannot be made: a ticket into itself, a merged ticket again, or into a merged one (409)."""


def open_of_assignee(
    connection: Connection, organization_id: str, assignee_id: str, statuses: Sequence[str]
) -> list[str]:
    """The ids of the member's tickets in these statuses."""
    return list(
        connection.scalars(
            select(TICKETS.c.id)
            .where(
                TICKETS.c.organization_id == organization_id,
                TICKETS.c.assignee_id == assignee_id,
                TICKETS.c.status.in_(list(statuses)),
                _LIVE,
            )
            .order_by(TICKETS.c.created_at)
        )
    )


def merge(
    connection: Connection,
    organization_id: str,
    source_id: str,
    target_id: str,
    *,
    actor_id: str | None,
    now: datetime,
    recorded: list[str],
) -> tuple[TicketRecord, TicketRecord] | None:
    """Merge `source` into `target`: the source's conversations (with their events) become the target's, and the
    source is closed with
    its `merged` event (`merged_into_id`); what threads to the source from now on goes to the target. None when the
    source is not a ticket of the organization; MergeRefused for a merge that cannot be made (a target that is none
    of its tickets, or is deleted, included)."""
    source, target = get(connection, organization_id, source_id), get(connection, organization_id, target_id)
    if source is None:
        return None
    if target is None:
        raise MergeRefused(
            "into_id names no ticket of this organization: deleted, or never one; merge into one that is"
        )
    if source.id == target.id:
        raise MergeRefused("A ticket cannot be merged into itself")
    if source.merged_into_id is not None:
        raise MergeRefused(f"Ticket #{source.number} is merged into another ticket already")
    if target.merged_into_id is not None:
        raise MergeRefused(
            f"Ticket #{target.number} is merged into another ticket: merge into the ticket it was merged into"
        )
    later.flush(connection)  # the source's conversations written earlier in this round move too
    connection.execute(update(CONVERSATIONS).where(CONVERSATIONS.c.ticket_id == source.id).values(ticket_id=target.id))
    connection.execute(  # their events go with them: the target's listing combines its conversations' (4.3)
        update(events.EVENTS)
        .where(events.EVENTS.c.ticket_id == source.id, events.EVENTS.c.aggregate_type == "conversation")
        .values(ticket_id=target.id)
    )
    closed = change(
        connection, organization_id, source.id, Changes(status="closed"), actor_id=actor_id, now=now, recorded=recorded
    )
    assert closed is not None
    connection.execute(
        update(TICKETS).where(TICKETS.c.id == source.id).values(merged_into_id=target.id, updated_at=now)
    )
    connection.execute(_TOUCH, {"ticket_id": target.id, "now": now})
    merged = replace(closed, merged_into_id=target.id, updated_at=now)
    log = _Log(connection, merged, actor_id, now, recorded)
    log.activity("merged", {"merged_into_id": target.id})
    log.close(merged)
    return merged, replace(target, updated_at=now)


def delete(
    connection: Connection, organization_id: str, ticket_id: str, *, actor_id: str | None, now: datetime
) -> bool:
    """The ticket deleted, with its `deleted` event: from now on it is listed nowhere and absent to every read but
    its activity log's (for admins); what would thread to it opens a new ticket. False when there is no such ticket."""
    deleted = connection.execute(
        update(TICKETS)
        .where(TICKETS.c.organization_id == organization_id, TICKETS.c.id == ticket_id, _LIVE)
        .values(deleted_at=now, updated_at=now)
    )
    if not deleted.rowcount:
        return False
    events.record_rows(
        connection, [events.row(organization_id, ("ticket", ticket_id), "deleted", {}, actor_id=actor_id, now=now)]
    )
    return True


_CONVERSATION = (
    select(CONVERSATIONS)
    .join(TICKETS, TICKETS.c.id == CONVERSATIONS.c.ticket_id)
    .where(
        CONVERSATIONS.c.organization_id == bindparam("organization_id"),
        CONVERSATIONS.c.id == bindparam("id"),
        CONVERSATIONS.c.deleted_at.is_(None),
        _LIVE,
    )
)


def conversation(connection: Connection, organization_id: str, conversation_id: str) -> ConversationRecord | None:
    """The organization's conversation, on a ticket that is not deleted; None for a deleted one."""
    row = connection.execute(_CONVERSATION, {"organization_id": organization_id, "id": conversation_id}).first()
    return _delivered(connection, [_conversation_record(row)])[0] if row else None


def edit_conversation(
    connection: Connection,
    organization_id: str,
    conversation_id: str,
    body: str,
    *,
    actor_id: str | None,
    now: datetime,
) -> ConversationRecord | None:
    """The conversation with its new body and its `updated` event (old and new content); unchanged when the body
    is the same. None when there is no such conversation."""
    current = conversation(connection, organization_id, conversation_id)
    if current is None or current.body == body:
        return current
    connection.execute(
        update(CONVERSATIONS).where(CONVERSATIONS.c.id == conversation_id).values(body=body, edited_at=now)
    )
    data = {"old_content": current.body, "new_content": body}
    _conversation_event(connection, organization_id, current, "updated", data, actor_id=actor_id, now=now)
    return replace(current, body=body, edited_at=now)


def delete_conversation(
    connection: Connection, organization_id: str, conversation_id: str, *, actor_id: str | None, now: datetime
) -> bool:
    """The conversation deleted, with its `deleted` event; False when there is no such conversation. A reply's
    messages not sent yet are not sent (one a sender holds may still go: it is past recall); sent ones stay."""
    current = conversation(connection, organization_id, conversation_id)
    if current is None:
        return False
    connection.execute(update(CONVERSATIONS).where(CONVERSATIONS.c.id == conversation_id).values(deleted_at=now))
    connection.execute(
        delete_rows(OUTBOUND).where(OUTBOUND.c.conversation_id == conversation_id, OUTBOUND.c.state == "queued")
    )
    _conversation_event(connection, organization_id, current, "deleted", {}, actor_id=actor_id, now=now)
    return True


def _conversation_event(
    connection: Connection,
    organization_id: str,
    conversation_: ConversationRecord,
    event_type: str,
    data: dict[str, Any],
    *,
    actor_id: str | None,
    now: datetime,
) -> None:
    row = events.row(
        organization_id,
        ("conversation", conversation_.id),
        event_type,
        data,
        actor_id=actor_id,
        now=now,
        ticket_id=conversation_.ticket_id,
    )
    events.record_rows(connection, [row])


def is_deleted(connection: Connection, organization_id: str, aggregate_type: str, aggregate_id: str) -> bool:
    """Whether this ticket, or the ticket of this conversation, was deleted (a deleted conversation's events stay
    its ticket's history, readable with it)."""
    if aggregate_type == "ticket":
        scope = TICKETS.c.id == aggregate_id
    else:
        ticket_of = select(CONVERSATIONS.c.ticket_id).where(CONVERSATIONS.c.id == aggregate_id).scalar_subquery()
        scope = TICKETS.c.id == ticket_of
    deleted_at = connection.execute(
        select(TICKETS.c.deleted_at).where(TICKETS.c.organization_id == organization_id, scope)
    ).scalar_one_or_none()
    return deleted_at is not None


_ANYWHERE = (
    select(CONVERSATIONS)
    .join(TICKETS, TICKETS.c.id == CONVERSATIONS.c.ticket_id)
    .where(CONVERSATIONS.c.id == bindparam("id"), CONVERSATIONS.c.deleted_at.is_(None), _LIVE)
)


def conversation_anywhere(connection: Connection, conversation_id: str) -> ConversationRecord | None:
    """A conversation by its id alone, for whoever holds a signed URL to one of its attachments."""
    row = connection.execute(_ANYWHERE, {"id": conversation_id}).first()
    return _conversation_record(row) if row else None
