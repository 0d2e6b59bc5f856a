"""Mail a service sends of itself (sign-in links, notices): through an SMTP server when the service's SMTP URL is set,
else (the embedded default) kept in storage, where the service's `mails` command prints it. Links are never logged.

The URL takes `smtp://[user:password@]host:port` (plain), `smtp+starttls://...` (upgraded with STARTTLS) or
`smtps://...` (TLS from the first byte); user and password are percent-encoded where they hold `:`, `@` or `/`."""

from __future__ import annotations

import ssl
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email import policy
from email.message import EmailMessage
from email.utils import format_datetime, make_msgid, parseaddr
from typing import Protocol
from urllib.parse import unquote, urlsplit

from net import smtp
from storage.common import mail
from storage.common.db import Database

DEFAULT_PORTS = {"smtp": 25, "smtp+starttls": 587, "smtps": 465}


class Mailer(Protocol):
    async def send(self, recipient: str, subject: str, body: str) -> None: ...


class KeptMail:
    """The development outbox: every mail stored as the service's, none sent."""

    def __init__(self, db: Database, service: str, clock: Callable[[], datetime] = lambda: datetime.now(UTC)) -> None:
        self.db = db
        self.service = service
        self.clock = clock

    async def send(self, recipient: str, subject: str, body: str) -> None:
        await self.db.write(mail.keep_mail, self.service, recipient, subject=subject, body=body, now=self.clock())


@dataclass(frozen=True, slots=True)
class SmtpServer:
    """Where and how to reach the SMTP server, from its URL."""

    host: str
    port: int
    tls: bool
    starttls: bool
    username: str | None
    password: str | None

    @classmethod
    def parse(cls, url: str) -> SmtpServer:
        """Raises ValueError saying what is accepted."""
        parts = urlsplit(url)
        if parts.scheme not in DEFAULT_PORTS or not parts.hostname:
            raise ValueError("smtp://[user:password@]host:port, smtp+starttls://... or smtps://...")
        return cls(
            host=parts.hostname,
            port=parts.port or DEFAULT_PORTS[parts.scheme],
            tls=parts.scheme == "smtps",
            starttls=parts.scheme == "smtp+starttls",
            username=unquote(parts.username) if parts.username else None,
            password=unquote(parts.password) if parts.password else None,
        )

    async def open(self, *, tls_context: ssl.SSLContext | None, timeout_s: float) -> smtp.Session:
        """A session with the server, connected as its URL says, greeted and logged in (net/smtp.py)."""
        return await smtp.Session.open(
            self.host,
            self.port,
            tls=self.tls,
            starttls=self.starttls,
            username=self.username,
            password=self.password,
            tls_context=tls_context,
            timeout_s=timeout_s,
        )


def compose(sender: str, recipient: str, subject: str, body: str, headers: Mapping[str, str] = {}) -> EmailMessage:
    """A mail a service sends of itself, marked against loops: `Auto-Submitted: auto-generated` (RFC 3834: no
    auto-responder answers it) and `X-Auto-Response-Suppress: All` (Exchange's: no out-of-office, no read or delivery
    receipt), and the service's own `headers`."""
    message = EmailMessage(policy=policy.default)
    message["From"] = sender
    message["To"] = recipient
    message["Subject"] = subject
    message["Date"] = format_datetime(datetime.now(UTC))
    message["Message-ID"] = make_msgid(domain=parseaddr(sender)[1].rpartition("@")[2] or None)
    message["Auto-Submitted"] = "auto-generated"
    message["X-Auto-Response-Suppress"] = "All"
    for name, value in headers.items():
        message[name] = value
    message.set_content(body)
    return message


class SmtpMail:
    """Each mail sent at once, from `sender`, as `compose` makes it with `headers`, over a connection of its own
    (net/smtp.py). A failure to send raises (net.smtp.SmtpRefused, ConnectionError, OSError, ssl.SSLError or
    TimeoutError): the caller answers that it failed, and the person may ask again."""

    def __init__(
        self,
        server: SmtpServer,
        sender: str,
        *,
        headers: Mapping[str, str] = {},
        tls_context: ssl.SSLContext | None = None,
        timeout_s: float = 30,
    ) -> None:
        """`tls_context`: whom to trust (default: the system's certificate authorities)."""
        self.server = server
        self.sender = sender
        self.headers = dict(headers)
        self.tls_context = tls_context
        self.timeout_s = timeout_s

    async def send(self, recipient: str, subject: str, body: str) -> None:
        message = compose(self.sender, recipient, subject, body, self.headers)
        session = await self.server.open(tls_context=self.tls_context, timeout_s=self.timeout_s)
        try:
            await session.send_message(parseaddr(self.sender)[1], recipient, message, policy.default)
        finally:
            await session.quit()
