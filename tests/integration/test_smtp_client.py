"""net/smtp.py, the SMTP client of the helpdesk's replies and the services' own mail, against real local servers:
aiosmtpd (tests/peers/smtp.py) with and without PIPELINING and 8BITMIME, and a server that answers a pipelined group
only once it has all of it."""

from __future__ import annotations

import asyncio
from email import policy
from email.message import EmailMessage

import pytest

from net.smtp import Session, SmtpRefused
from tests.helpers import until
from tests.peers.smtp import SmtpPeer


async def session_to(peer: SmtpPeer) -> Session:
    return await Session.open("localhost", peer.port, tls_context=peer.client_context, timeout_s=5)


@pytest.mark.parametrize("pipelining", [True, False], ids=["pipelined", "one-by-one"])
async def test_mails_go_one_transaction_each_over_one_session_whole_and_dots_kept(pipelining: bool) -> None:
    with SmtpPeer(pipelining=pipelining) as peer:
        session = await session_to(peer)
        assert ("pipelining" in session.extensions) is pipelining
        for n in range(3):
            await session.send(
                "desk@example.test",
                f"customer{n}@example.com",
                f"Subject: Reply {n}\r\n\r\nFirst line.\r\n.\r\n..two dots\r\nLast line.\r\n".encode(),
            )
        await session.quit()
    assert [(mail.mail_from, mail.rcpt_tos, mail.message["Subject"]) for mail in peer.received] == [
        ("desk@example.test", [f"customer{n}@example.com"], f"Reply {n}") for n in range(3)
    ]
    assert {mail.peer for mail in peer.received} == {peer.received[0].peer}, "one connection"
    for mail in peer.received:
        assert mail.message.get_content().splitlines() == ["First line.", ".", "..two dots", "Last line."]


async def test_a_server_that_answers_only_once_it_has_the_whole_group_gets_mail_from_one_write() -> None:
    """RFC 2920: MAIL, RCPT and DATA go at once. The server withholds its answers until it has read all three, so a
    client that awaited MAIL's answer before writing RCPT would wait until its timeout."""
    received: list[bytes] = []

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"220 strict ESMTP\r\n")
        await reader.readline()  # EHLO
        writer.write(b"250-strict\r\n250-PIPELINING\r\n250 8BITMIME\r\n")
        group = [await reader.readline() for _ in range(3)]
        assert [line.split(b":")[0].split()[0] for line in group] == [b"MAIL", b"RCPT", b"DATA"]
        writer.write(b"250 sender ok\r\n250 recipient ok\r\n354 go ahead\r\n")
        received.append(await reader.readuntil(b"\r\n.\r\n"))
        writer.write(b"250 queued\r\n")
        await reader.readline()  # QUIT
        writer.write(b"221 bye\r\n")
        writer.close()

    server = await asyncio.start_server(serve, "127.0.0.1", 0)
    async with server:
        port = server.sockets[0].getsockname()[1]
        session = await Session.open("127.0.0.1", port, timeout_s=5)
        await session.send("desk@example.test", "ada@example.com", b"Subject: Hi\r\n\r\nHello.\r\n")
        await session.quit()
    assert received == [b"Subject: Hi\r\n\r\nHello.\r\n.\r\n"]


async def test_a_refusal_raises_with_the_server_s_words_and_the_session_carries_the_next_mail() -> None:
    with SmtpPeer() as peer:
        peer.refuse["gone@example.com"] = "550 5.1.1 No such mailbox"
        peer.refuse["busy@example.com"] = "451 4.3.0 Try again later"
        session = await session_to(peer)
        with pytest.raises(SmtpRefused, match=r"5\.1\.1 No such mailbox") as gone:
            await session.send("desk@example.test", "gone@example.com", b"Subject: a\r\n\r\na\r\n")
        with pytest.raises(SmtpRefused, match="Try again later") as busy:
            await session.send("desk@example.test", "busy@example.com", b"Subject: b\r\n\r\nb\r\n")
        assert (gone.value.code, gone.value.permanent, busy.value.code, busy.value.permanent) == (550, True, 451, False)
        assert session.usable
        await session.send("desk@example.test", "ada@example.com", b"Subject: c\r\n\r\nc\r\n")
    assert [(mail.rcpt_tos, mail.message["Subject"]) for mail in peer.received] == [(["ada@example.com"], "c")]
    assert peer.transactions == 3


def reply(text: str) -> EmailMessage:
    message = EmailMessage(policy=policy.default)
    message["From"] = "desk@example.test"
    message["To"] = "ada@example.com"
    message["Subject"] = "Grüße"
    message.set_content(text)
    return message


@pytest.mark.parametrize(("eight_bit", "encoding"), [(True, "8bit"), (False, "base64")])
async def test_a_message_is_written_as_the_server_takes_it(eight_bit: bool, encoding: str) -> None:
    with SmtpPeer(eight_bit=eight_bit) as peer:
        session = await session_to(peer)
        await session.send_message("desk@example.test", "ada@example.com", reply("Grüße aus Köln\n"), policy.default)
    [mail] = peer.received
    assert (mail.message["Subject"], mail.message.get_content().splitlines()) == ("Grüße", ["Grüße aus Köln"])
    assert mail.message["Content-Transfer-Encoding"] == encoding


async def test_an_internationalized_address_goes_with_smtputf8_and_is_refused_where_the_server_lacks_it() -> None:
    with SmtpPeer() as peer:
        session = await session_to(peer)
        await session.send_message("desk@example.test", "josé@example.com", reply("Hola\n"), policy.default)
    [mail] = peer.received
    assert (mail.rcpt_tos, mail.message["To"]) == (["josé@example.com"], "ada@example.com")
    with SmtpPeer(smtputf8=False) as peer:
        session = await session_to(peer)
        with pytest.raises(SmtpRefused, match="SMTPUTF8") as refused:
            await session.send_message("desk@example.test", "josé@example.com", reply("Hola\n"), policy.default)
        assert refused.value.permanent
    assert (peer.received, peer.transactions) == ([], 0)


async def test_lone_line_ends_cannot_end_the_data_early() -> None:
    """A bare LF before and after a dot is the end of data to some servers (SMTP smuggling): every line end goes as
    CRLF, so the dot line is doubled and the lines after it stay in the one message."""
    with SmtpPeer() as peer:
        session = await session_to(peer)
        await session.send("desk@example.test", "ada@example.com", b"Subject: x\r\n\r\nfirst\n.\nMAIL FROM:<x@y>\rlast")
    [mail] = peer.received
    assert mail.message.get_content().splitlines() == ["first", ".", "MAIL FROM:<x@y>", "last"]


async def test_starttls_that_the_server_does_not_offer_is_not_skipped() -> None:
    with SmtpPeer() as peer, pytest.raises(ConnectionError, match="does not offer STARTTLS"):
        await Session.open("localhost", peer.port, starttls=True, tls_context=peer.client_context, timeout_s=5)
    assert peer.transactions == 0


async def test_a_server_that_never_greets_times_out_the_connect() -> None:
    async def silent(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        await reader.read()  # says nothing until the client goes
        writer.close()

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    async with server:
        with pytest.raises(TimeoutError):
            await Session.open("127.0.0.1", server.sockets[0].getsockname()[1], timeout_s=0.3)


async def test_a_connection_lost_mid_mail_fails_the_send_and_the_session_is_not_reused() -> None:
    async def hangs_up(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"220 flaky ESMTP\r\n")
        await reader.readline()
        writer.write(b"250-flaky\r\n250 PIPELINING\r\n")
        for _ in range(3):
            await reader.readline()
        writer.write(b"250 ok\r\n250 ok\r\n354 go ahead\r\n")
        await reader.readline()  # the message's first line, then the server goes
        writer.close()

    server = await asyncio.start_server(hangs_up, "127.0.0.1", 0)
    async with server:
        session = await Session.open("127.0.0.1", server.sockets[0].getsockname()[1], timeout_s=5)
        with pytest.raises(ConnectionError):
            await session.send("desk@example.test", "ada@example.com", b"Subject: Hi\r\n\r\nHello.\r\n")
        assert not session.usable


async def test_a_session_the_server_spoke_on_unasked_is_not_reused() -> None:
    """A server about to close an idle connection says so first (421): the session is then not used for a mail."""
    spoke = asyncio.Event()

    async def closing(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        writer.write(b"220 closing ESMTP\r\n")
        await reader.readline()
        writer.write(b"250 closing\r\n")
        writer.write(b"421 4.4.2 idle too long\r\n")
        await writer.drain()
        spoke.set()
        await reader.read()

    server = await asyncio.start_server(closing, "127.0.0.1", 0)
    async with server:
        session = await Session.open("127.0.0.1", server.sockets[0].getsockname()[1], timeout_s=5)
        await spoke.wait()
        await until(lambda: not session.usable, "the 421 arrived")
        session.close()
