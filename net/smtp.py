"""An SMTP client (RFC 5321) for mail sent in numbers: a session kept open for many mails, each one transaction, its
commands pipelined where the server offers PIPELINING (RFC 2920), as every common relay does: MAIL, RCPT and DATA
written at once and their answers read together, then the message; two writes and two waits a mail where a client
that awaits each answer makes four of each. aiosmtplib, the client it replaced, awaits each answer and cannot
pipeline: it reads one answer from each packet and drops what follows. Measured with bench/breakdown.py replies:
its exchange took a third of the reply sender's CPU, most of it in the socket writes (bench/smtp_client.py: 0.22 of
its CPU a mail). The reply sender and the services' own mail (operations/common/mail.py) both speak SMTP through it.

`Session.open` connects (plain, TLS from the first byte, or upgraded by STARTTLS), greets with EHLO and logs in
(AUTH PLAIN, else LOGIN); `send` makes one transaction. A refusal (an answer other than the one expected) raises
SmtpRefused with the server's code and words, and leaves the session usable; a lost connection, a protocol error or
a timeout closes it and raises ConnectionError or TimeoutError."""

from __future__ import annotations

import asyncio
import base64
import collections
import contextlib
import functools
import io
import re
import socket
import ssl
from collections.abc import Sequence
from email.generator import BytesGenerator
from email.message import EmailMessage
from email.policy import EmailPolicy
from typing import Any, cast

from net.guard import tls_context as default_tls_context

MAX_LINE = 2048
"""The longest answer line taken (RFC 5321 4.5.3.1.5: 512 octets); a longer one is a protocol error."""
_LONE_LINE_END = re.compile(rb"\r(?!\n)|(?<!\r)\n")


class SmtpRefused(Exception):
    """The server answered `code` where another answer was expected: 5xx is final, 4xx may pass."""

    def __init__(self, code: int, message: str) -> None:
        super().__init__(f"{code} {message}")
        self.code = code
        self.message = message

    @property
    def permanent(self) -> bool:
        return self.code >= 500


class _Answers(asyncio.Protocol):
    """The server's answers, parsed as they arrive (several may come in one packet), queued for the session."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.buffer = bytearray()
        self.lines: list[bytes] = []
        self.answers: collections.deque[tuple[int, str]] = collections.deque()
        self.waiter: asyncio.Future[None] | None = None
        self.lost: Exception | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # uvloop's transports are not asyncio's classes

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        start = 0
        while (end := self.buffer.find(b"\n", start)) >= 0:
            line = bytes(self.buffer[start : end + 1])
            start = end + 1
            if len(line) > MAX_LINE or not line[:3].isdigit():
                self._lose(ConnectionError(f"the SMTP server answered what is not SMTP: {line[:80]!r}"))
                return
            self.lines.append(line)
            if line[3:4] != b"-":
                text = "\n".join(part[4:].strip().decode("utf-8", "replace") for part in self.lines)
                self.answers.append((int(line[:3]), text))
                self.lines = []
        del self.buffer[:start]
        if len(self.buffer) > MAX_LINE:
            self._lose(ConnectionError("the SMTP server's answer line is too long"))
        elif self.answers:
            self._wake()

    def eof_received(self) -> bool:
        self._lose(ConnectionError("the SMTP server closed the connection"))
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        self.lost = self.lost or ConnectionError(f"the connection to the SMTP server was lost ({exc or 'closed'})")
        self._wake()

    def _lose(self, error: Exception) -> None:
        self.lost = self.lost or error
        if self.transport is not None:
            self.transport.close()
        self._wake()

    def _wake(self) -> None:
        if self.waiter is not None and not self.waiter.done():
            self.waiter.set_result(None)

    async def next(self) -> tuple[int, str]:
        while not self.answers:
            if self.lost is not None:
                raise self.lost
            self.waiter = asyncio.get_running_loop().create_future()
            await self.waiter
        return self.answers.popleft()


class Session:
    """One connection to an SMTP server, greeted and logged in, for one transaction at a time."""

    def __init__(self, answers: _Answers, host: str, timeout_s: float) -> None:
        self._answers = answers
        self.host = host
        self.timeout_s = timeout_s
        self.extensions: dict[str, str] = {}
        """What the server's EHLO answer offers, by lower-case keyword (`pipelining`, `8bitmime`, `auth`, ...)."""

    @classmethod
    async def open(
        cls,
        host: str,
        port: int,
        *,
        tls: bool = False,
        starttls: bool = False,
        username: str | None = None,
        password: str | None = None,
        tls_context: ssl.SSLContext | None = None,
        timeout_s: float = 30,
    ) -> Session:
        """Connected, greeted and logged in (when given a user); raises SmtpRefused, ConnectionError (also when the
        server offers no STARTTLS or no login this client speaks), OSError, ssl.SSLError or TimeoutError."""
        loop = asyncio.get_running_loop()
        context = tls_context or default_tls_context()
        async with asyncio.timeout(timeout_s):
            _transport, answers = await loop.create_connection(
                _Answers, host, port, ssl=context if tls else None, server_hostname=host if tls else None
            )
            session = cls(answers, host, timeout_s)
            try:
                await session._begin(context, starttls=starttls, username=username, password=password)
            except BaseException:
                session.close()
                raise
        return session

    async def _begin(
        self, context: ssl.SSLContext, *, starttls: bool, username: str | None, password: str | None
    ) -> None:
        """The greeting, EHLO, the upgrade to TLS (when asked for: EHLO again) and the login (when given a user)."""
        await self._expect(220)
        await self._ehlo()
        if starttls:
            if "starttls" not in self.extensions:
                raise ConnectionError("the SMTP server does not offer STARTTLS")
            await self._command(b"STARTTLS", 220)
            answers = self._answers
            plain = cast(asyncio.Transport, answers.transport)
            upgraded = await asyncio.get_running_loop().start_tls(plain, answers, context, server_hostname=self.host)
            if upgraded is None:
                raise ConnectionError("the TLS upgrade failed")
            answers.transport = cast(asyncio.Transport, upgraded)
            await self._ehlo()
        if username is not None and password is not None:
            await self._login(username, password)

    @property
    def usable(self) -> bool:
        """Whether it can carry a transaction: connected, and the server said nothing unasked (a 421 before it
        closes an idle connection)."""
        return self._answers.lost is None and not self._answers.answers and not self._answers.lines

    async def send(self, sender: str, recipient: str, message: bytes, options: Sequence[str] = ()) -> None:
        """One mail, its lines ended by CRLF, to `recipient` from the envelope sender `sender` ("" for none), with
        MAIL FROM's `options` (`BODY=8BITMIME`, `SMTPUTF8`)."""
        if any(character in sender + recipient for character in "\r\n<>"):
            raise ValueError("an address holds a line break or an angle bracket")
        mail = f"MAIL FROM:<{sender}>{''.join(' ' + option for option in options)}\r\n".encode()
        rcpt = f"RCPT TO:<{recipient}>\r\n".encode()
        data = _stuffed(message)
        async with asyncio.timeout(self.timeout_s):
            try:
                if "pipelining" in self.extensions:
                    await self._pipelined(mail, rcpt, data)
                else:
                    await self._command(mail, 250, line=False)
                    await self._command(rcpt, 250, 251, line=False)
                    await self._command(b"DATA", 354)
                    await self._command(data, 250, line=False)
            except SmtpRefused:
                await self._reset()
                raise
            except BaseException:
                self.close()
                raise

    async def send_message(self, sender: str, recipient: str, message: EmailMessage, policy: EmailPolicy[Any]) -> None:
        """`message` written by `policy` as this server takes it: its 8-bit parts as they are where the server offers
        8BITMIME, else in base64; an address in UTF-8 only where it offers SMTPUTF8 (else SmtpRefused 553, which no
        retry mends)."""
        international = not (sender + recipient).isascii()
        if international and "smtputf8" not in self.extensions:
            raise SmtpRefused(553, "the mail server takes no internationalized address (it offers no SMTPUTF8)")
        eight_bit = "8bitmime" in self.extensions
        with io.BytesIO() as out:
            BytesGenerator(out, policy=_on_the_wire(policy, eight_bit, international)).flatten(message)
            written = out.getvalue()
        options = [*(["BODY=8BITMIME"] if eight_bit else []), *(["SMTPUTF8"] if international else [])]
        await self.send(sender, recipient, written, options)

    async def quit(self) -> None:
        """Says goodbye (QUIT) and closes; a server that does not answer is left all the same."""
        with contextlib.suppress(Exception):
            async with asyncio.timeout(self.timeout_s):
                await self._command(b"QUIT", 221)
        self.close()

    async def _pipelined(self, mail: bytes, rcpt: bytes, data: bytes) -> None:
        self._write(mail + rcpt + b"DATA\r\n")
        mailed, recipient, started = [await self._answers.next() for _ in range(3)]
        refused = mailed if mailed[0] != 250 else recipient if recipient[0] not in (250, 251) else None
        if started[0] != 354:
            raise SmtpRefused(*(refused or started))
        # DATA may be taken even though MAIL or RCPT was refused (RFC 2920 3.1): an empty message ends it then
        self._write(data if refused is None else b".\r\n")
        done = await self._answers.next()
        if refused is not None or done[0] != 250:
            raise SmtpRefused(*(refused or done))

    async def _reset(self) -> None:
        """After a refusal, the transaction ended (RSET), so that the session carries the next; closed if it fails."""
        try:
            await self._command(b"RSET", 250)
        except Exception:
            self.close()
        except BaseException:
            self.close()
            raise

    def close(self) -> None:
        if self._answers.transport is not None:
            self._answers.transport.close()
        self._answers.lost = self._answers.lost or ConnectionError("closed")

    async def _ehlo(self) -> None:
        text = await self._command(f"EHLO {_local_hostname()}".encode(), 250)
        self.extensions = {}
        for line in text.split("\n")[1:]:
            keyword, _, value = line.partition(" ")
            self.extensions[keyword.lower()] = value

    async def _login(self, username: str, password: str) -> None:
        mechanisms = self.extensions.get("auth", "").upper().split()
        if "PLAIN" in mechanisms:
            token = base64.b64encode(f"\0{username}\0{password}".encode()).decode()
            await self._command(f"AUTH PLAIN {token}".encode(), 235)
        elif "LOGIN" in mechanisms:
            await self._command(b"AUTH LOGIN", 334)
            await self._command(base64.b64encode(username.encode()), 334)
            await self._command(base64.b64encode(password.encode()), 235)
        else:
            raise ConnectionError(f"the SMTP server offers no login this client speaks (PLAIN, LOGIN): {mechanisms}")

    async def _command(self, command: bytes, *expected: int, line: bool = True) -> str:
        self._write(command + b"\r\n" if line else command)
        return await self._expect(*expected)

    async def _expect(self, *expected: int) -> str:
        code, text = await self._answers.next()
        if code not in expected:
            raise SmtpRefused(code, text)
        return text

    def _write(self, data: bytes) -> None:
        transport = self._answers.transport
        if self._answers.lost is not None or transport is None or transport.is_closing():
            raise self._answers.lost or ConnectionError("the connection to the SMTP server is closed")
        transport.write(data)


@functools.cache
def _on_the_wire(policy: EmailPolicy[Any], eight_bit: bool, utf8: bool) -> EmailPolicy[Any]:
    return policy.clone(linesep="\r\n", cte_type="8bit" if eight_bit else "7bit", utf8=utf8)


def _stuffed(message: bytes) -> bytes:
    """The message as DATA carries it: every line ended by CRLF (a lone CR or LF would let a message hide an end of
    data that another server reads: SMTP smuggling), a line's leading dot doubled, and the lone dot after it."""
    if message.count(b"\n") != message.count(b"\r\n") or message.count(b"\r") != message.count(b"\r\n"):
        message = _LONE_LINE_END.sub(b"\r\n", message)
    if not message.endswith(b"\r\n"):
        message += b"\r\n"
    if message.startswith(b"."):
        message = b"." + message
    return message.replace(b"\r\n.", b"\r\n..") + b".\r\n"


@functools.cache
def _local_hostname() -> str:
    """Our name in EHLO: the host's fully qualified name (as aiosmtplib and smtplib give it)."""
    name = socket.getfqdn()
    return name if name.isascii() and name and " " not in name else "localhost"
