"""Webhook endpoints as their owner manages them (create, list, update, delete, a test delivery), for every service
whose API offers them: the service's profile (wire/webhooks.py) says which operations exist, what a target URL may be
and whether secrets are generated. REST routes, procedures and pages all call these; deliveries are the engine's
(processors.common.webhooks)."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass

from cryptography.fernet import MultiFernet

from operations.common.errors import Conflict, Invalid, NotFound
from storage.common.db import Database
from storage.common.webhooks.deliveries import DeliveryRecord, recent_deliveries
from storage.common.webhooks.endpoints import (
    Endpoint,
    EndpointInactive,
    EndpointLimitReached,
    create_endpoint,
    delete_endpoint,
    find_endpoint,
    list_endpoints,
    update_endpoint,
)
from storage.common.webhooks.events import FirstAttempt, first_attempt, send_test_event
from wire.addresses import TargetUrlRefused
from wire.webhooks import WebhookProfile

TEST_GRACE_S = 5.0
"""How much longer than one attempt's timeout a test waits for the engine to take it up."""


@dataclass(frozen=True, slots=True)
class Trial:
    """A test delivery: its event's id (the delivery id header) and how the receiver answered its first attempt
    (None: no answer within the profile's timeout)."""

    endpoint_id: str
    event_id: str
    outcome: FirstAttempt | None


@dataclass(frozen=True, slots=True)
class Words:
    """How a service names its refusals (photo: endpoints of an account; the helpdesk: subscriptions of an
    organization)."""

    not_found: str
    limit_reached: str
    """With `{limit}`."""
    inactive: str


@dataclass(frozen=True)
class Endpoints:
    """One service's endpoints: `owner_id` is the account that owns them (an organization, a photo customer)."""

    db: Database
    profile: WebhookProfile
    cipher: MultiFernet
    """Encrypts signing secrets: they are stored encrypted, beside their SHA-256."""
    words: Words
    allow_private_targets: bool = False
    """Target URLs may name private, loopback or link-local addresses (development and tests only)."""

    @property
    def not_found(self) -> NotFound:
        return NotFound(self.words.not_found)

    async def create(
        self, owner_id: str, *, url: str, events: Sequence[str], secret: str | None = None, enabled: bool = True
    ) -> tuple[Endpoint, str | None]:
        """A new endpoint and its secret (a generated one is shown this once)."""
        try:
            checked = self.profile.check_url(url, allow_private=self.allow_private_targets)
            return await self.db.write(
                create_endpoint,
                self.profile,
                self.cipher,
                owner_id=owner_id,
                url=checked,
                events=events,
                secret=secret,
                enabled=enabled,
            )
        except EndpointLimitReached:
            raise Conflict(self.words.limit_reached.format(limit=self.profile.max_endpoints)) from None
        except (TargetUrlRefused, ValueError) as refused:
            raise Invalid(str(refused)) from None

    async def listing(self, owner_id: str) -> list[Endpoint]:
        return await self.db.read(list_endpoints, self.profile, owner_id)

    async def deliveries(self, owner_id: str, endpoint_id: str, limit: int = 10) -> list[DeliveryRecord]:
        """The endpoint's newest deliveries, each with its last attempt's answer."""
        if await self.db.read(find_endpoint, self.profile, owner_id, endpoint_id) is None:
            raise self.not_found
        return await self.db.read(recent_deliveries, self.profile.service, endpoint_id, limit)

    async def update(
        self, owner_id: str, endpoint_id: str, *, events: Sequence[str] | None = None, enabled: bool | None = None
    ) -> Endpoint:
        try:
            endpoint = await self.db.write(
                update_endpoint, self.profile, owner_id, endpoint_id, events=events, enabled=enabled
            )
        except ValueError as refused:
            raise Invalid(str(refused)) from None
        if endpoint is None:
            raise self.not_found
        return endpoint

    async def delete(self, owner_id: str, endpoint_id: str) -> None:
        """Its deliveries stop at once; pending retries are dropped."""
        if not await self.db.write(delete_endpoint, self.profile, owner_id, endpoint_id):
            raise self.not_found

    async def test(self, owner_id: str, endpoint_id: str, *, every_s: float = 0.05) -> Trial:
        """Send the endpoint one `profile.test_event` event, whatever it subscribed to, and wait for the engine (in a
        processors process) to record how the receiver answered."""
        try:
            event_id = await self.db.write(send_test_event, self.profile, owner_id, endpoint_id)
        except EndpointInactive:
            raise Conflict(self.words.inactive) from None
        if event_id is None:
            raise self.not_found
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.profile.timeout_s + TEST_GRACE_S
        while (outcome := await self.db.read(first_attempt, event_id)) is None:
            if loop.time() >= deadline:
                break
            await asyncio.sleep(every_s)
        return Trial(endpoint_id, event_id, outcome)
