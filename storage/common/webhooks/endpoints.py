"""Webhook endpoints as their owner manages them, in a service's profile (wire/webhooks.py): the endpoint operations its
API offers (create, list, update, delete), target URLs, secrets (stored encrypted, Fernet, beside their SHA-256, never
in plain; an endpoint of a profile whose secret is optional may have none), ids and the endpoint limit."""

from __future__ import annotations

import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    ColumnElement,
    and_,
    func,
    insert,
    select,
    text,
    update,
)
from sqlalchemy.engine import Connection

from storage.common.secrets import Cipher, fingerprint, seal
from storage.common.webhooks.models import ACTIVE, DELIVERIES, DISABLED, ENDPOINTS
from wire.ids import is_id, new_id
from wire.webhooks import Operation, WebhookProfile


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


def offered(profile: WebhookProfile, operation: Operation) -> None:
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
    offered(profile, "create")
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
    offered(profile, "update")
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
            cancel_pending(connection, endpoint_id, now)
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
    offered(profile, "delete")
    if not is_id(endpoint_id, profile.id_prefix):
        return False
    now = now or datetime.now(UTC)
    deleted = connection.execute(
        update(ENDPOINTS).where(_owned(profile, owner_id), ENDPOINTS.c.id == endpoint_id).values(deleted_at=now)
    )
    if not deleted.rowcount:
        return False
    cancel_pending(connection, endpoint_id, now)
    return True


def cancel_pending(connection: Connection, endpoint_id: str, now: datetime) -> None:
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
