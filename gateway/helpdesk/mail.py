"""Mail the helpdesk sends (sign-in and reset links). With no SMTP server configured, the embedded default, it is kept
in storage instead, and `signalyard helpdesk mails` prints it; its links are never logged."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Protocol

from storage.common.db import Database
from storage.helpdesk import identity


class Mailer(Protocol):
    async def send(self, recipient: str, subject: str, body: str) -> None: ...


class KeptMail:
    """The development outbox: every mail stored, none sent."""

    def __init__(self, db: Database, clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.db = db
        self.clock = clock

    async def send(self, recipient: str, subject: str, body: str) -> None:
        await self.db.write(identity.keep_mail, recipient, subject, body, self.clock())
