"""A mail server on a real local socket (aiosmtpd) for tests of the helpdesk's mail: plain SMTP, STARTTLS or TLS from
the first byte (certificate from a test CA made by `trustme`), with a user and password when given. Every message it
accepts is recorded, parsed; recipients put in `refuse` are refused with the answer given there.

Usage::

    with SmtpPeer("starttls", login=("helpdesk", "s3cret")) as smtp:
        url = smtp.url          # smtp+starttls://helpdesk:s3cret@localhost:PORT
        context = smtp.client_context   # trusts the test CA
        ...
        [mail] = smtp.received
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass
from email import message_from_bytes, policy
from email.message import EmailMessage
from typing import Any, Literal, Self, cast
from urllib.parse import quote

import trustme
from aiosmtpd.controller import Controller
from aiosmtpd.smtp import AuthResult, LoginPassword

from signalyard.embedded_broker import free_port

Mode = Literal["plain", "starttls", "tls"]
SCHEMES = {"plain": "smtp", "starttls": "smtp+starttls", "tls": "smtps"}


@dataclass(frozen=True, slots=True)
class Received:
    mail_from: str
    rcpt_tos: list[str]
    message: EmailMessage
    peer: tuple[str, int]
    """The client's end of the connection it came over."""


class SmtpPeer:
    def __init__(
        self,
        mode: Mode = "plain",
        *,
        login: tuple[str, str] | None = None,
        idle_timeout_s: float = 300,
        pipelining: bool = True,
        eight_bit: bool = True,
        smtputf8: bool = True,
    ) -> None:
        """`idle_timeout_s`: how long a connection may idle before the server closes it (aiosmtpd's `timeout`);
        `pipelining`: whether its EHLO offers PIPELINING, as the common relays' do (aiosmtpd reads pipelined
        commands, but does not say so); `eight_bit`: whether it offers 8BITMIME (else a client must send 7-bit
        data); `smtputf8`: whether it offers SMTPUTF8 (addresses in UTF-8)."""
        self.mode = mode
        self.pipelining = pipelining
        self.eight_bit = eight_bit
        self.transactions = 0
        """MAIL commands it answered, taken or refused."""
        self.login = login
        self.received: list[Received] = []
        self.refuse: dict[str, str] = {}
        """Recipients it refuses, each with its answer to RCPT TO (`550 5.1.1 No such mailbox`, `451 4.3.0 Try
        later`)."""
        self.ca = trustme.CA()
        self.port = free_port()
        certificate = self.ca.issue_cert("localhost")
        # contexts of their own, not ssl.create_default_context(): that loads the system's CAs (20 ms of CPU each),
        # and the client trusts the test CA alone
        server_context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        certificate.configure_cert(server_context)
        self.client_context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        self.ca.configure_trust(self.client_context)
        options: dict[str, Any] = {"timeout": idle_timeout_s, "enable_SMTPUTF8": smtputf8}
        if mode == "starttls":
            options |= {"tls_context": server_context, "require_starttls": True}
        elif mode == "tls":
            options |= {"ssl_context": server_context}
        if login is not None:
            # over STARTTLS, AUTH only once upgraded; over TLS from the first byte aiosmtpd cannot tell, so it is told
            options |= {"authenticator": self._authenticate, "auth_require_tls": mode == "starttls"}
        self.controller = Controller(self, hostname="localhost", port=self.port, server_hostname="localhost", **options)

    @property
    def url(self) -> str:
        user = f"{quote(self.login[0], safe='')}:{quote(self.login[1], safe='')}@" if self.login else ""
        return f"{SCHEMES[self.mode]}://{user}localhost:{self.port}"

    def __enter__(self) -> Self:
        self.controller.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.controller.stop()

    async def handle_EHLO(  # aiosmtpd calls it by this name
        self, _server: Any, session: Any, _envelope: Any, hostname: str, responses: list[str]
    ) -> list[str]:
        session.host_name = hostname
        offered = [line for line in responses[:-1] if self.eight_bit or line != "250-8BITMIME"]
        return [*offered, *(["250-PIPELINING"] if self.pipelining else []), responses[-1]]

    async def handle_MAIL(  # aiosmtpd calls it by this name
        self, _server: Any, _session: Any, envelope: Any, address: str, options: list[str]
    ) -> str:
        self.transactions += 1
        envelope.mail_from = address
        envelope.mail_options.extend(options)
        return "250 OK"

    async def handle_RCPT(  # aiosmtpd calls it by this name
        self, _server: Any, _session: Any, envelope: Any, address: str, _options: list[str]
    ) -> str:
        if address.lower() in self.refuse:
            return self.refuse[address.lower()]
        envelope.rcpt_tos.append(address)
        return "250 OK"

    async def handle_DATA(self, _server: Any, _session: Any, envelope: Any) -> str:  # aiosmtpd calls it by this name
        message = cast(EmailMessage, message_from_bytes(envelope.content, policy=policy.default))
        self.received.append(Received(envelope.mail_from, list(envelope.rcpt_tos), message, tuple(_session.peer)[:2]))
        return "250 OK"

    def _authenticate(self, _server: Any, _session: Any, _envelope: Any, _mechanism: str, data: Any) -> AuthResult:
        given = (data.login.decode(), data.password.decode()) if isinstance(data, LoginPassword) else None
        return AuthResult(success=given == self.login, handled=False)  # aiosmtpd answers 235 or 535 itself
