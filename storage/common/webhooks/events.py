"""Recording a service's webhook events in the transaction of the change they report (the body every endpoint receives
encoded once, by the profile's envelope), a test event for one endpoint, and how its first attempt went. The service
announces a recorded event once committed (operations.common.changes); the engine fans it out."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    bindparam,
    insert,
    select,
)
from sqlalchemy.engine import Connection

from storage.common import later
from storage.common.webhooks.endpoints import EndpointInactive, find_endpoint, offered
from storage.common.webhooks.models import ACTIVE, ATTEMPTS, DELIVERIES, ENDPOINTS, EVENTS
from wire.ids import new_id
from wire.webhooks import WebhookProfile

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
    offered(profile, "test")
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
