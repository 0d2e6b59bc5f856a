"""Webhook endpoints, events, deliveries and attempts of every service, and the queries of the delivery engine.

Every function takes the service's `WebhookProfile` (wire/webhooks.py) where the service's rules apply: the endpoint
operations its gateway offers (create, list, update, delete, a test delivery), the body an event is delivered as,
secrets, ids, the endpoint limit. A service records an event in its own transaction (`record_event`), publishes
`event_message(...)` after its commit, and the engine fans the event out into one delivery per subscribed endpoint,
claims due deliveries under a lease and records each attempt. Signing secrets are stored encrypted (Fernet) beside
their SHA-256, never in plain; an endpoint of a profile whose secret is optional may have none."""

from __future__ import annotations

import secrets
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal, cast

import msgspec
from sqlalchemy import (
    JSON,
    BigInteger,
    ColumnElement,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    Select,
    String,
    Table,
    Text,
    UniqueConstraint,
    and_,
    bindparam,
    func,
    insert,
    literal,
    select,
    text,
    update,
)
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Mapped, mapped_column

from storage.common import later
from storage.common.models import Base, UtcDateTime, json_list_has
from storage.common.secrets import Cipher, fingerprint, seal
from topics.common.asyncapi import Channel
from wire.ids import is_id, new_id
from wire.webhooks import Operation, WebhookProfile

EVENTS_TOPIC = "webhook.events"
"""Under `<prefix><service>.`: one message per recorded event, which the service's fan-out turns into deliveries."""
ACTIVE = "active"
DISABLED = "disabled"
"""The status of an endpoint its owner disabled (update with enabled=false); a profile's failure status may be the
same word."""
DELIVERY_STATES = ("pending", "delivered", "failed", "canceled")
"""pending: due at `next_attempt_at` (or leased until then); delivered: a 2xx came back; failed: every attempt of the
schedule failed; canceled: its endpoint was deleted or disabled before it was delivered."""
RESPONSE_BODY_LIMIT = 1024
"""Bytes of a receiver's response body kept in the attempt log."""

AutoId = BigInteger().with_variant(Integer(), "sqlite")
"""An auto-incrementing key on both backends (SQLite only auto-increments an INTEGER PRIMARY KEY)."""


class WebhookEndpoint(Base):
    __tablename__ = "webhook_endpoints"
    __table_args__ = (Index("ix_webhook_endpoints_owner", "service", "owner_id"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    service: Mapped[str] = mapped_column(String(16))
    owner_id: Mapped[str] = mapped_column(String(40))
    url: Mapped[str] = mapped_column(String(2048))
    events: Mapped[list[str]] = mapped_column(JSON)
    status: Mapped[str] = mapped_column(String(16))
    """`active`; `disabled` when its owner disabled it; the profile's `disabled_status` once a delivery failed its
    whole retry schedule. Only an active endpoint gets deliveries."""
    secret_encrypted: Mapped[str | None] = mapped_column(String(512))
    """The signing secret as a Fernet token; only the engine decrypts it, to sign. NULL: deliveries are unsigned (a
    profile whose secret is optional, created without one)."""
    secret_sha256: Mapped[str | None] = mapped_column(String(64))
    created_at: Mapped[datetime]
    disabled_at: Mapped[datetime | None]
    deleted_at: Mapped[datetime | None]
    last_delivered_at: Mapped[datetime | None]
    """When a delivery last got a 2xx: an endpoint that answered within a failed delivery's window stays active."""


class WebhookEvent(Base):
    """The outbox of webhook events: written `pending` by the service, `fanned_out` once its deliveries exist (at once
    when no endpoint subscribes to it)."""

    __tablename__ = "webhook_events"
    __table_args__ = (Index("ix_webhook_events_state", "state", "published_at"),)

    id: Mapped[str] = mapped_column(String(40), primary_key=True)
    service: Mapped[str] = mapped_column(String(16))
    owner_id: Mapped[str] = mapped_column(String(40))
    type: Mapped[str] = mapped_column(String(64))
    created_at: Mapped[datetime]
    body: Mapped[bytes] = mapped_column(LargeBinary)
    """The exact bytes every endpoint receives (and that are signed)."""
    state: Mapped[str] = mapped_column(String(16))
    published_at: Mapped[datetime]


class WebhookDelivery(Base):
    __tablename__ = "webhook_deliveries"
    __table_args__ = (
        UniqueConstraint("event_id", "endpoint_id", name="uq_webhook_deliveries_event_endpoint"),
        Index("ix_webhook_deliveries_due", "service", "next_attempt_at"),
        Index("ix_webhook_deliveries_endpoint", "endpoint_id", "state"),
    )

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    service: Mapped[str] = mapped_column(String(16))
    event_id: Mapped[str] = mapped_column(String(40), ForeignKey("webhook_events.id"))
    endpoint_id: Mapped[str] = mapped_column(String(40), ForeignKey("webhook_endpoints.id"))
    state: Mapped[str] = mapped_column(String(16))
    attempts: Mapped[int] = mapped_column(Integer)
    """Attempts claimed so far; a claim increments it, so a result carries the attempt it belongs to."""
    next_attempt_at: Mapped[datetime | None]
    """When it is due (or when the lease of the member sending it runs out); NULL once final."""
    created_at: Mapped[datetime]
    finished_at: Mapped[datetime | None]


class WebhookAttempt(Base):
    __tablename__ = "webhook_attempts"
    __table_args__ = (Index("ix_webhook_attempts_delivery", "delivery_id"),)

    id: Mapped[int] = mapped_column(AutoId, primary_key=True, autoincrement=True)
    delivery_id: Mapped[int] = mapped_column(AutoId, ForeignKey("webhook_deliveries.id"))
    attempt: Mapped[int] = mapped_column(Integer)
    attempted_at: Mapped[datetime]
    status_code: Mapped[int | None] = mapped_column(Integer)
    error: Mapped[str | None] = mapped_column(String(500))
    duration_ms: Mapped[int] = mapped_column(Integer)
    response_body: Mapped[str | None] = mapped_column(Text)
    """The first RESPONSE_BODY_LIMIT bytes of the receiver's answer, decoded leniently."""


ENDPOINTS = cast(Table, WebhookEndpoint.__table__)
EVENTS = cast(Table, WebhookEvent.__table__)
DELIVERIES = cast(Table, WebhookDelivery.__table__)
ATTEMPTS = cast(Table, WebhookAttempt.__table__)


# ------------------------------------------------------------------------------------------------ endpoints


class OperationNotOffered(ValueError):
    """The service's API does not offer this endpoint operation (its profile's `operations`)."""


class EndpointLimitReached(ValueError):
    """The owner already has the profile's `max_endpoints` endpoints."""


class EndpointInactive(ValueError):
    """The endpoint is disabled (by its owner, or after a failed delivery): the engine sends it nothing."""


@dataclass(frozen=True, slots=True)
class Endpoint:
    """An endpoint as its owner sees it (never with its secret)."""

    id: str
    service: str
    owner_id: str
    url: str
    events: list[str]
    status: str
    created_at: datetime
    has_secret: bool
    """Whether deliveries are signed: false only for an endpoint created without a secret where that is optional."""

    @property
    def enabled(self) -> bool:
        """Whether it gets deliveries (`active`): false once its owner disabled it or a delivery failed for good."""
        return self.status == ACTIVE


_ENDPOINT_COLUMNS = (
    ENDPOINTS.c.id,
    ENDPOINTS.c.service,
    ENDPOINTS.c.owner_id,
    ENDPOINTS.c.url,
    ENDPOINTS.c.events,
    ENDPOINTS.c.status,
    ENDPOINTS.c.created_at,
    ENDPOINTS.c.secret_sha256.is_not(None).label("has_secret"),
)


def _endpoint(row: Any) -> Endpoint:
    return Endpoint(
        row.id, row.service, row.owner_id, row.url, list(row.events), row.status, row.created_at, bool(row.has_secret)
    )


def _offered(profile: WebhookProfile, operation: Operation) -> None:
    if operation not in profile.operations:
        raise OperationNotOffered(f"{profile.service} webhooks offer no {operation} operation")


def _known(profile: WebhookProfile, events: Sequence[str]) -> list[str]:
    """The event types once each, in the order given; every one must be the profile's."""
    unknown = [event for event in events if event not in profile.events]
    if unknown or not events:
        raise ValueError(f"events must name some of {profile.service}'s event types: {', '.join(profile.events)}")
    return list(dict.fromkeys(events))


def _owner_lock(connection: Connection, service: str, owner_id: str) -> None:
    """Serialise endpoint creation per owner for the limit's count. SQLite has one writer at a time already;
    PostgreSQL takes a transaction-scoped advisory lock on the owner (two creations at once would both count 15)."""
    if connection.dialect.name == "postgresql":
        connection.execute(
            text("SELECT pg_advisory_xact_lock(hashtext(:key))"), {"key": f"webhooks:{service}:{owner_id}"}
        )


def create_endpoint(
    connection: Connection,
    profile: WebhookProfile,
    cipher: Cipher,
    *,
    owner_id: str,
    url: str,
    events: Sequence[str],
    secret: str | None = None,
    enabled: bool = True,
    now: datetime | None = None,
) -> tuple[Endpoint, str | None]:
    """A new endpoint (the caller checked `url` with `profile.check_url`); returns it and its signing secret: the one
    generated for a `generated` profile (shown this once), the one given (or None) for an `optional` one. Raises
    EndpointLimitReached when the owner already has `profile.max_endpoints`."""
    _offered(profile, "create")
    if profile.secret == "generated":
        if secret is not None:
            raise ValueError(f"{profile.service} generates its signing secrets: none can be given")
        secret = profile.secret_prefix + secrets.token_urlsafe(32)
    elif secret == "":
        raise ValueError("a signing secret cannot be empty: give none for unsigned deliveries")
    events = _known(profile, events)
    _owner_lock(connection, profile.service, owner_id)
    if connection.execute(select(func.count()).where(_owned(profile, owner_id))).scalar_one() >= profile.max_endpoints:
        raise EndpointLimitReached(f"an owner may have at most {profile.max_endpoints} {profile.service} endpoints")
    now = now or datetime.now(UTC)
    endpoint = Endpoint(
        new_id(profile.id_prefix),
        profile.service,
        owner_id,
        url,
        events,
        ACTIVE if enabled else DISABLED,
        now,
        secret is not None,
    )
    connection.execute(
        insert(ENDPOINTS).values(
            id=endpoint.id,
            service=profile.service,
            owner_id=owner_id,
            url=url,
            events=endpoint.events,
            status=endpoint.status,
            secret_encrypted=None if secret is None else seal(cipher, secret),
            secret_sha256=None if secret is None else fingerprint(secret),
            created_at=now,
            disabled_at=None if enabled else now,
        )
    )
    return endpoint, secret


def _owned(profile: WebhookProfile, owner_id: str) -> ColumnElement[bool]:
    return and_(
        ENDPOINTS.c.service == profile.service, ENDPOINTS.c.owner_id == owner_id, ENDPOINTS.c.deleted_at.is_(None)
    )


def list_endpoints(connection: Connection, profile: WebhookProfile, owner_id: str) -> list[Endpoint]:
    """The owner's endpoints that are not deleted, newest first."""
    rows = connection.execute(
        select(*_ENDPOINT_COLUMNS)
        .where(_owned(profile, owner_id))
        .order_by(ENDPOINTS.c.created_at.desc(), ENDPOINTS.c.id)
    )
    return [_endpoint(row) for row in rows]


def find_endpoint(connection: Connection, profile: WebhookProfile, owner_id: str, endpoint_id: str) -> Endpoint | None:
    """The owner's endpoint, or None (another owner's is as absent as a made-up id)."""
    if not is_id(endpoint_id, profile.id_prefix):  # nothing else can name one (nor reach the database as it is)
        return None
    row = connection.execute(
        select(*_ENDPOINT_COLUMNS).where(_owned(profile, owner_id), ENDPOINTS.c.id == endpoint_id)
    ).one_or_none()
    return None if row is None else _endpoint(row)


def update_endpoint(
    connection: Connection,
    profile: WebhookProfile,
    owner_id: str,
    endpoint_id: str,
    *,
    events: Sequence[str] | None = None,
    enabled: bool | None = None,
    now: datetime | None = None,
) -> Endpoint | None:
    """Change what the owner's endpoint subscribes to and whether it gets deliveries (None: unchanged); returns it
    as it now is, or None when the owner has no such endpoint. New subscriptions apply to events recorded from now.
    enabled=false makes an active endpoint `disabled` and cancels its pending deliveries in the same transaction (one
    already disabled keeps its status: a `failed` endpoint stays `failed`); enabled=true makes it `active` again, for
    events recorded from now (canceled deliveries stay canceled)."""
    _offered(profile, "update")
    if not is_id(endpoint_id, profile.id_prefix):
        return None
    now = now or datetime.now(UTC)
    mine = and_(_owned(profile, owner_id), ENDPOINTS.c.id == endpoint_id)
    if events is not None:
        changed = connection.execute(update(ENDPOINTS).where(mine).values(events=_known(profile, events)))
        if not changed.rowcount:
            return None
    if enabled is False:
        disabled = connection.execute(
            update(ENDPOINTS).where(mine, ENDPOINTS.c.status == ACTIVE).values(status=DISABLED, disabled_at=now)
        )
        if disabled.rowcount:
            _cancel_pending(connection, endpoint_id, now)
    elif enabled:
        connection.execute(
            update(ENDPOINTS).where(mine, ENDPOINTS.c.status != ACTIVE).values(status=ACTIVE, disabled_at=None)
        )
    return find_endpoint(connection, profile, owner_id, endpoint_id)


def delete_endpoint(
    connection: Connection, profile: WebhookProfile, owner_id: str, endpoint_id: str, *, now: datetime | None = None
) -> bool:
    """Delete the owner's endpoint; its pending deliveries are canceled in the same transaction, so no member sends
    them afterwards. False when the owner has no such endpoint."""
    _offered(profile, "delete")
    if not is_id(endpoint_id, profile.id_prefix):
        return False
    now = now or datetime.now(UTC)
    deleted = connection.execute(
        update(ENDPOINTS).where(_owned(profile, owner_id), ENDPOINTS.c.id == endpoint_id).values(deleted_at=now)
    )
    if not deleted.rowcount:
        return False
    _cancel_pending(connection, endpoint_id, now)
    return True


def _cancel_pending(connection: Connection, endpoint_id: str, now: datetime) -> None:
    connection.execute(
        update(DELIVERIES)
        .where(DELIVERIES.c.endpoint_id == endpoint_id, DELIVERIES.c.state == "pending")
        .values(state="canceled", next_attempt_at=None, finished_at=now)
    )


def endpoint_is_active(connection: Connection, endpoint_id: str) -> bool:
    status = connection.execute(
        select(ENDPOINTS.c.status).where(ENDPOINTS.c.id == endpoint_id, ENDPOINTS.c.deleted_at.is_(None))
    ).scalar_one_or_none()
    return status == ACTIVE


# --------------------------------------------------------------------------------------------------- events


class WebhookEventRecorded(msgspec.Struct, frozen=True, kw_only=True):
    """A service recorded a webhook event (stored `pending` in webhook_events); its fan-out must deliver it."""

    event_id: str
    service: str
    owner_id: str


def events_topic(service: str, prefix: str = "") -> str:
    return f"{prefix}{service}.{EVENTS_TOPIC}"


def events_channel(service: str, prefix: str = "") -> dict[str, Channel]:
    """The service's webhook-events topic, for its `channels(prefix)`."""
    return {
        events_topic(service, prefix): Channel(
            WebhookEventRecorded,
            f"A {service} webhook event was recorded; the {service} processors fan it out into deliveries.",
            "the owner id, so one owner's events are fanned out in order",
        )
    }


def event_message(
    service: str, owner_id: str, event_id: str, prefix: str = ""
) -> tuple[WebhookEventRecorded, str, bytes]:
    """(message, topic, partition key) to publish once the transaction that recorded the event has committed:
    `await platform.publish(*event_message(...))`. A lost publish is repeated by the events sweeper."""
    message = WebhookEventRecorded(event_id=event_id, service=service, owner_id=owner_id)
    return message, events_topic(service, prefix), owner_id.encode()


_INSERT_EVENT = insert(EVENTS)
"""Built once: statements built per call cost a create most of its storage time (measured: bench/helpdesk.py)."""


def _insert_event(
    connection: Connection,
    profile: WebhookProfile,
    owner_id: str,
    event_type: str,
    data: Any,
    *,
    now: datetime | None,
    event_id: str | None,
    state: str,
) -> tuple[str, datetime]:
    now = now or datetime.now(UTC)
    event_id = event_id or new_id("evt")
    connection.execute(
        _INSERT_EVENT, _event_row(profile, owner_id, event_type, data, now=now, event_id=event_id, state=state)
    )
    return event_id, now


def _recordable(profile: WebhookProfile, event_type: str) -> None:
    if event_type not in profile.events:
        raise ValueError(f"{event_type!r} is not one of {profile.service}'s webhook event types")


def _event_row(
    profile: WebhookProfile, owner_id: str, event_type: str, data: Any, *, now: datetime, event_id: str, state: str
) -> dict[str, Any]:
    return {
        "id": event_id,
        "service": profile.service,
        "owner_id": owner_id,
        "type": event_type,
        "created_at": now,
        "body": profile.envelope(event_id, event_type, now, data),
        "state": state,
        "published_at": now,
    }


def record_event(
    connection: Connection,
    profile: WebhookProfile,
    owner_id: str,
    event_type: str,
    data: Any,
    *,
    now: datetime | None = None,
) -> str | None:
    """Store an event in the caller's transaction (so it exists exactly when the change it reports does). Returns its
    id when it waits for its fan-out (announce it once committed), None when none of the owner's active endpoints
    subscribes to its type: it is stored fanned out already, with nothing to deliver and nothing to announce. The
    delivered body is the profile's envelope, encoded once here."""
    announced = record_events(connection, profile, owner_id, [(event_type, data)], now=now)
    return announced[0] if announced else None


def record_events(
    connection: Connection,
    profile: WebhookProfile,
    owner_id: str,
    events: Sequence[tuple[str, Any]],
    *,
    now: datetime | None = None,
) -> list[str]:
    """`record_event` for each (event type, data) of one change, in one statement (written late in a deferring
    transaction: storage/common/later.py): the ids of those that wait for their fan-out, in order."""
    for event_type, _ in events:
        _recordable(profile, event_type)
    if not events:
        return []
    now = now or datetime.now(UTC)
    subscribed = later.once(
        connection,
        ("webhook subscriptions", profile.service, owner_id),
        lambda: _subscribed_types(connection, profile, owner_id),
    )
    rows = [
        _event_row(
            profile,
            owner_id,
            event_type,
            data,
            now=now,
            event_id=new_id("evt"),
            state="pending" if event_type in subscribed else "fanned_out",
        )
        for event_type, data in events
    ]
    later.insert(connection, _INSERT_EVENT, rows)
    return [row["id"] for row in rows if row["state"] == "pending"]


_SUBSCRIPTIONS = select(ENDPOINTS.c.events).where(
    ENDPOINTS.c.service == bindparam("service"),
    ENDPOINTS.c.owner_id == bindparam("owner_id"),
    ENDPOINTS.c.status == ACTIVE,
    ENDPOINTS.c.deleted_at.is_(None),
)


def _subscribed_types(connection: Connection, profile: WebhookProfile, owner_id: str) -> set[str]:
    """The event types the owner's active endpoints subscribe to, as the fan-out would find them: an event of any
    other type would be fanned out to nobody, so it is recorded fanned out (no publish, no fan-out round)."""
    rows = connection.execute(_SUBSCRIPTIONS, {"service": profile.service, "owner_id": owner_id}).scalars()
    return {event_type for types in rows for event_type in types}


def send_test_event(
    connection: Connection, profile: WebhookProfile, owner_id: str, endpoint_id: str, *, now: datetime | None = None
) -> str | None:
    """A `profile.test_event` event for the owner's endpoint alone, whatever it subscribed to, with its one delivery
    due now (the deliverer's next poll sends it: nothing is published, no other endpoint gets it); its data is the
    endpoint (`id`, `url`, `events`). Returns the event id (its delivery id header), or None when the owner has no
    such endpoint; raises EndpointInactive for an endpoint that is not active."""
    _offered(profile, "test")
    endpoint = find_endpoint(connection, profile, owner_id, endpoint_id)
    if endpoint is None:
        return None
    if not endpoint.enabled:
        raise EndpointInactive(f"the endpoint is {endpoint.status}: enable it to send it a test event")
    data = {"id": endpoint.id, "url": endpoint.url, "events": endpoint.events}
    event_id, now = _insert_event(
        connection, profile, owner_id, profile.test_event, data, now=now, event_id=None, state="fanned_out"
    )
    connection.execute(
        insert(DELIVERIES).values(
            service=profile.service,
            event_id=event_id,
            endpoint_id=endpoint.id,
            state="pending",
            attempts=0,
            next_attempt_at=now,
            created_at=now,
        )
    )
    return event_id


@dataclass(frozen=True, slots=True)
class FirstAttempt:
    """How the receiver answered a test delivery's first attempt: its status, or the error that stood for one."""

    status_code: int | None
    error: str | None


def first_attempt(connection: Connection, event_id: str) -> FirstAttempt | None:
    """The first attempt of a test event's one delivery, once it is recorded (None before)."""
    row = connection.execute(
        select(ATTEMPTS.c.status_code, ATTEMPTS.c.error)
        .join(DELIVERIES, DELIVERIES.c.id == ATTEMPTS.c.delivery_id)
        .where(DELIVERIES.c.event_id == event_id)
        .order_by(ATTEMPTS.c.attempt)
        .limit(1)
    ).first()
    return FirstAttempt(row.status_code, row.error) if row else None


def fan_out(connection: Connection, event_ids: Collection[str], *, now: datetime) -> int:
    """One pending delivery, due now, per active subscribed endpoint of each pending event's owner; marks the events
    fanned out. Returns how many deliveries were created. Unique per (event, endpoint): running it again for the
    same events (a redelivered message) creates nothing."""
    if not event_ids:
        return 0
    ids = sorted(event_ids)
    ev, ep = EVENTS, ENDPOINTS
    moment = bindparam("now", now, type_=UtcDateTime())
    source = (
        select(ev.c.service, ev.c.id, ep.c.id, literal("pending"), literal(0), moment, moment)
        .select_from(ev.join(ep, and_(ep.c.service == ev.c.service, ep.c.owner_id == ev.c.owner_id)))
        .where(
            ev.c.id.in_(ids),
            ev.c.state == "pending",
            ep.c.status == ACTIVE,
            ep.c.deleted_at.is_(None),
            json_list_has(connection.dialect.name, ep.c.events, ev.c.type),
        )
    )
    columns = ["service", "event_id", "endpoint_id", "state", "attempts", "next_attempt_at", "created_at"]
    dialect_insert = sqlite.insert if connection.dialect.name == "sqlite" else postgresql.insert
    statement = (
        dialect_insert(DELIVERIES)
        .from_select(columns, source)
        .on_conflict_do_nothing(index_elements=["event_id", "endpoint_id"])
    )
    created = connection.execute(statement).rowcount
    connection.execute(update(ev).where(ev.c.id.in_(ids), ev.c.state == "pending").values(state="fanned_out"))
    return max(created, 0)


# ----------------------------------------------------------------------------------------------- deliveries


@dataclass(frozen=True, slots=True)
class Claimed:
    """A delivery leased to one member for one attempt, with what sending it needs."""

    delivery_id: int
    attempt: int
    """This attempt's number (1 for the first)."""
    endpoint_id: str
    url: str
    secret_encrypted: str | None
    """None: the endpoint has no secret, its deliveries are unsigned."""
    event_id: str
    body: bytes
    created_at: datetime
    """When the delivery was created: the start of its retry window."""


def _due(*, skipping: bool) -> Select[Any]:
    d, ep = DELIVERIES, ENDPOINTS
    due = (
        select(d.c.id, d.c.endpoint_id)
        .select_from(d.join(ep, ep.c.id == d.c.endpoint_id))
        .where(
            d.c.service == bindparam("service"),
            d.c.next_attempt_at <= bindparam("now", type_=UtcDateTime()),
            d.c.state == "pending",
            ep.c.status == ACTIVE,
            ep.c.deleted_at.is_(None),
        )
        .order_by(d.c.next_attempt_at)
        .limit(bindparam("scan"))
    )
    return due.where(d.c.endpoint_id.not_in(bindparam("skip", expanding=True))) if skipping else due


# The claim's statements, built once: a claim runs several times a second per member under load, and building them
# per call was most of its cost (measured: bench/helpdesk.py).
_DUE, _DUE_SKIPPING = _due(skipping=False), _due(skipping=True)
_LEASE = (
    update(DELIVERIES)
    .where(
        DELIVERIES.c.id.in_(bindparam("ids", expanding=True)),
        DELIVERIES.c.state == "pending",
        DELIVERIES.c.next_attempt_at <= bindparam("now", type_=UtcDateTime()),
    )
    .values(next_attempt_at=bindparam("lease_until", type_=UtcDateTime()), attempts=DELIVERIES.c.attempts + 1)
    .returning(DELIVERIES.c.id, DELIVERIES.c.attempts)
)
_CLAIMED = (
    select(
        DELIVERIES.c.id,
        DELIVERIES.c.endpoint_id,
        DELIVERIES.c.created_at,
        ENDPOINTS.c.url,
        ENDPOINTS.c.secret_encrypted,
        EVENTS.c.id.label("event_id"),
        EVENTS.c.body,
    )
    .select_from(
        DELIVERIES.join(ENDPOINTS, ENDPOINTS.c.id == DELIVERIES.c.endpoint_id).join(
            EVENTS, EVENTS.c.id == DELIVERIES.c.event_id
        )
    )
    .where(DELIVERIES.c.id.in_(bindparam("ids", expanding=True)))
    .order_by(DELIVERIES.c.id)
)


def claim_due(
    connection: Connection,
    service: str,
    *,
    now: datetime,
    lease_until: datetime,
    limit: int,
    per_endpoint: int,
    held: Mapping[str, int] | None = None,
    skip_endpoints: Collection[str] = (),
    scan: int | None = None,
) -> list[Claimed]:
    """Lease up to `limit` of the service's due deliveries to active endpoints, oldest first, so that no endpoint
    gets more than `per_endpoint` including the `held` it already has in this member; `skip_endpoints` are not
    looked at. The lease moves `next_attempt_at` to `lease_until` conditionally, so of several members only one
    claims a delivery; one whose member dies is due again when the lease runs out."""
    due = _DUE_SKIPPING if skip_endpoints else _DUE
    parameters = {"service": service, "now": now, "scan": scan or limit * 4, "skip": list(skip_endpoints)}
    taken = dict(held or {})
    chosen: list[int] = []
    for delivery_id, endpoint_id in connection.execute(due, parameters):
        count = taken.get(endpoint_id, 0)
        if count < per_endpoint:
            taken[endpoint_id] = count + 1
            chosen.append(delivery_id)
            if len(chosen) == limit:
                break
    if not chosen:
        return []
    leased = {
        row.id: row.attempts
        for row in connection.execute(_LEASE, {"ids": chosen, "now": now, "lease_until": lease_until})
    }
    if not leased:
        return []
    rows = connection.execute(_CLAIMED, {"ids": list(leased)})
    return [
        Claimed(
            row.id,
            leased[row.id],
            row.endpoint_id,
            row.url,
            row.secret_encrypted,
            row.event_id,
            row.body,
            row.created_at,
        )
        for row in rows
    ]


Outcome = Literal["delivered", "retry", "failed"]


@dataclass(frozen=True, slots=True)
class AttemptResult:
    """What one attempt of a claimed delivery came to, and what happens next."""

    claimed: Claimed
    attempted_at: datetime
    duration_ms: int
    status_code: int | None
    error: str | None
    response_body: str | None
    outcome: Outcome
    next_attempt_at: datetime | None
    """When `outcome` is `retry`."""


def record_attempts(
    connection: Connection,
    results: Sequence[AttemptResult],
    *,
    disabled_status: str,
    spare_recently_delivered: bool,
    now: datetime,
) -> list[bool]:
    """Log every attempt and move each delivery on, conditionally on still holding the attempt it was claimed for
    (a member whose lease ran out loses to the one that claimed it next; a deleted endpoint's delivery stays
    canceled). A delivery whose schedule ran out disables its endpoint (unless `spare_recently_delivered` and the
    endpoint got a 2xx since the delivery was created) and cancels the endpoint's other pending deliveries.
    Returns, per result, whether it disabled its endpoint."""
    if not results:
        return []
    d = DELIVERIES
    connection.execute(
        insert(ATTEMPTS),
        [
            {
                "delivery_id": r.claimed.delivery_id,
                "attempt": r.claimed.attempt,
                "attempted_at": r.attempted_at,
                "status_code": r.status_code,
                "error": r.error,
                "duration_ms": r.duration_ms,
                "response_body": r.response_body,
            }
            for r in results
        ],
    )
    held = and_(d.c.id == bindparam("b_id"), d.c.attempts == bindparam("b_attempt"), d.c.state == "pending")
    delivered = [r for r in results if r.outcome == "delivered"]
    retries = [r for r in results if r.outcome == "retry"]
    if delivered:
        connection.execute(
            update(d)
            .where(held)
            .values(state="delivered", next_attempt_at=None, finished_at=bindparam("b_at", type_=UtcDateTime())),
            [_held(r) | {"b_at": r.attempted_at} for r in delivered],
        )
        latest: dict[str, datetime] = {}
        for r in delivered:
            latest[r.claimed.endpoint_id] = max(r.attempted_at, latest.get(r.claimed.endpoint_id, r.attempted_at))
        connection.execute(
            update(ENDPOINTS)
            .where(ENDPOINTS.c.id == bindparam("b_endpoint"))
            .values(last_delivered_at=bindparam("b_at", type_=UtcDateTime())),
            [{"b_endpoint": endpoint, "b_at": at} for endpoint, at in latest.items()],
        )
    if retries:
        connection.execute(
            update(d).where(held).values(next_attempt_at=bindparam("b_next", type_=UtcDateTime())),
            [_held(r) | {"b_next": r.next_attempt_at} for r in retries],
        )
    disabled = [False] * len(results)
    for index, r in enumerate(results):
        if r.outcome == "failed":
            disabled[index] = _fail(connection, r, disabled_status, spare_recently_delivered, now)
    return disabled


def _held(result: AttemptResult) -> dict[str, Any]:
    return {"b_id": result.claimed.delivery_id, "b_attempt": result.claimed.attempt}


def _fail(connection: Connection, result: AttemptResult, disabled_status: str, spare: bool, now: datetime) -> bool:
    d, ep, claimed = DELIVERIES, ENDPOINTS, result.claimed
    failed = connection.execute(
        update(d)
        .where(d.c.id == claimed.delivery_id, d.c.attempts == claimed.attempt, d.c.state == "pending")
        .values(state="failed", next_attempt_at=None, finished_at=result.attempted_at)
    )
    if not failed.rowcount:
        return False
    disable = update(ep).where(ep.c.id == claimed.endpoint_id, ep.c.status == ACTIVE, ep.c.deleted_at.is_(None))
    if spare:
        disable = disable.where(ep.c.last_delivered_at.is_(None) | (ep.c.last_delivered_at < claimed.created_at))
    if not connection.execute(disable.values(status=disabled_status, disabled_at=now)).rowcount:
        return False
    _cancel_pending(connection, claimed.endpoint_id, now)
    return True
