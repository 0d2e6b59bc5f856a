"""Mailed single-use links (sign in, reset a password, ...), the same way for every service: a random token, of which
only the hash is stored with its purpose, address and destination, mailed as `<public URL><path>?token=...`; the
link's route uses it once, within its lifetime."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

from operations.common.mail import Mailer
from storage.common import mail
from storage.common.db import Database
from storage.common.mail import LinkRecord
from wire.tokens import digest, opaque

LINK_LIFETIME = timedelta(minutes=15)


@dataclass(frozen=True, slots=True)
class LinkKind:
    """What a kind of link's mail says (`subject`; `action`: "Sign in to the helpdesk") and where it leads."""

    purpose: str
    path: str
    subject: str
    action: str


@dataclass(frozen=True, slots=True)
class MailedLinks:
    db: Database
    service: str
    mailer: Mailer
    public_url: str
    token_prefix: str = "hd"
    """The links' tokens begin `<token_prefix>_link_` (wire/tokens.py: the log redaction knows each service's)."""
    lifetime: timedelta = LINK_LIFETIME
    clock: Callable[[], datetime] = lambda: datetime.now(UTC)

    async def send(self, kind: LinkKind, email: str, redirect_to: str) -> None:
        """A new link of `kind` for `email`, which goes on to `redirect_to` once used, stored then mailed."""
        token = opaque("link", self.token_prefix)
        await self.db.write(
            mail.create_link,
            self.service,
            digest(token),
            kind.purpose,
            email=email,
            redirect_to=redirect_to,
            now=self.clock(),
            lifetime=self.lifetime,
        )
        link = f"{self.public_url.rstrip('/')}{kind.path}?{urlencode({'token': token})}"
        minutes = int(self.lifetime.total_seconds() // 60)
        await self.mailer.send(
            email.strip().lower(),
            kind.subject,
            f"{kind.action} by opening this link within {minutes} minutes:\n\n{link}\n\n"
            "It works once. If you did not ask for it, ignore this mail.\n",
        )

    async def use(self, kind: LinkKind, token: str) -> LinkRecord | None:
        """The link `token` opens, now used; None when it is unknown, used, expired or of another kind."""
        if not token:
            return None
        return await self.db.write(mail.use_link, self.service, digest(token), kind.purpose, self.clock())
