"""What the SMS, messaging and voice endpoint tests share: an organization with a REST key, a channel of it made as
`signalyard helpdesk channels create` makes one, and what its users then see (tickets, conversations, the stored
inbound events and what each became), read through the REST API."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import func, select

from signalyard import secrets
from storage.helpdesk import channels, inbound, tickets
from storage.helpdesk.tickets import ConversationRecord
from tests.helpdesk_stack import HelpdeskStack
from tests.helpers import signed_up, until


def unique_number() -> str:
    """An E.164 number of the fictional 555-01xx range's style, unique per call."""
    return "+1555" + str(uuid.uuid4().int)[:7]


@dataclass
class Desk:
    """An organization, its REST key, and one channel of it."""

    stack: HelpdeskStack
    organization_id: str
    key: str
    channel_id: str = ""

    async def open_channel(
        self,
        kind: str,
        addresses: list[tuple[str, str]],
        channel_secrets: Mapping[str, str],
        settings: Mapping[str, Any] | None = None,
    ) -> str:
        cipher = secrets.secrets_cipher(self.stack.settings.platform)
        channel = await self.stack.db.write(
            channels.create,
            cipher,
            self.organization_id,
            kind=kind,
            name=f"{kind} channel",
            addresses=addresses,
            secrets=channel_secrets,
            settings=settings,
            now=datetime.now(UTC),
        )
        self.channel_id = channel.id
        return channel.id

    async def tickets(self) -> list[dict[str, Any]]:
        answer = await self.stack.rest(self.key, "GET", "/tickets", params={"limit": 100})
        assert answer.status_code == 200, answer.text
        return list(answer.json()["data"])

    async def ticket(self, ticket_id: str) -> dict[str, Any]:
        answer = await self.stack.rest(self.key, "GET", f"/tickets/{ticket_id}")
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    async def conversations(self, ticket_id: str) -> list[ConversationRecord]:
        """The ticket's conversations, oldest first, with their attachments (which REST does not show)."""
        found, _ = await self.stack.db.read(tickets.conversations, ticket_id, limit=100, cursor=None)
        return list(reversed(found))

    async def customer(self, customer_id: str) -> dict[str, Any]:
        answer = await self.stack.rest(self.key, "GET", f"/customers/{customer_id}")
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    async def inbound(self, channel_id: str | None = None) -> list[dict[str, Any]]:
        """The channel's stored inbound events, oldest first, as `GET /api/v1/inbound-messages` lists them."""
        params = {"limit": 100, "channel_id": channel_id or self.channel_id}
        answer = await self.stack.rest(self.key, "GET", "/inbound-messages", params=params)
        assert answer.status_code == 200, answer.text
        return list(reversed(answer.json()["data"]))

    async def processed(self, count: int, channel_id: str | None = None) -> list[dict[str, Any]]:
        """The channel's inbound events once `count` of them are processed."""

        async def done() -> list[dict[str, Any]]:
            events = await self.inbound(channel_id)
            return events if sum(event["state"] == "processed" for event in events) >= count else []

        return await until(done, f"{count} events of the channel processed")

    async def stored(self, channel_id: str | None = None) -> int:
        """How many inbound events the channel has stored (counted in the table: nothing hides there)."""
        count = select(func.count()).where(inbound.EVENTS.c.channel_id == (channel_id or self.channel_id))
        return int(await self.stack.db.read(lambda connection: connection.scalar(count) or 0))


async def desk(stack: HelpdeskStack) -> Desk:
    """A new organization (its admin signed up) with a REST key of scope `*`."""
    async with signed_up(stack) as organization:
        return Desk(stack, organization.id, organization.key)
