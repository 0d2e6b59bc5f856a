"""The helpdesk's mail through a real local SMTP server (tests/peers/smtp.py): plain, STARTTLS and TLS, with a user
and password, the certificate checked; and a sign-in link that arrives by SMTP and works."""

from __future__ import annotations

import re
import secrets
import ssl
from typing import Any, cast

import httpx
import pytest

from gateway.common.limits import RateLimits
from gateway.helpdesk.accounts import signin
from gateway.helpdesk.accounts.credentials import AccessTokens, PasswordCost, Passwords
from gateway.helpdesk.accounts.sessions import Sessions
from gateway.helpdesk.accounts.signin import limits_unavailable, sign_in_limited
from net.smtp import SmtpRefused
from operations.common.mail import SmtpMail, SmtpServer
from storage.common.db import Database
from tests.helpdesk_stack import helpdesk_app
from tests.peers.smtp import SmtpPeer

SENDER = "Helpdesk <helpdesk@example.test>"
LOGIN = ("helpdesk@example.test", "p@ss:w/rd")


@pytest.mark.parametrize(("mode", "login"), [("plain", None), ("starttls", LOGIN), ("tls", LOGIN)])
async def test_a_mail_is_delivered_over_each_kind_of_connection(mode: Any, login: Any) -> None:
    with SmtpPeer(mode, login=login) as smtp:
        mailer = SmtpMail(SmtpServer.parse(smtp.url), SENDER, tls_context=smtp.client_context)
        await mailer.send("agent@example.com", "Your sign-in link", "Open https://helpdesk.test/auth/link?token=x\n")
    (received,) = smtp.received
    assert received.rcpt_tos == ["agent@example.com"]
    message = received.message
    assert (message["From"], message["To"], message["Subject"]) == (SENDER, "agent@example.com", "Your sign-in link")
    assert message["Auto-Submitted"] == "auto-generated"
    assert message["Message-ID"].endswith("@example.test>")
    assert message.get_content().splitlines() == ["Open https://helpdesk.test/auth/link?token=x"]


async def test_a_wrong_password_is_refused_by_the_server() -> None:
    with SmtpPeer("starttls", login=LOGIN) as smtp:
        server = SmtpServer.parse(smtp.url.replace("p%40ss", "wrong"))
        with pytest.raises(SmtpRefused, match=r"^535 "):
            await SmtpMail(server, SENDER, tls_context=smtp.client_context).send("a@example.com", "s", "b")
    assert smtp.received == []


async def test_a_server_whose_certificate_is_not_trusted_gets_no_mail() -> None:
    with SmtpPeer("tls", login=LOGIN) as smtp, pytest.raises(ssl.SSLError):
        await SmtpMail(SmtpServer.parse(smtp.url), SENDER).send("a@example.com", "s", "b")  # the system's CAs
    assert smtp.received == []


def test_the_url_names_the_connection_and_its_credentials() -> None:
    assert SmtpServer.parse("smtp://mail.example.test") == SmtpServer("mail.example.test", 25, False, False, None, None)
    assert SmtpServer.parse("smtps://u:p%3Aw@mail.example.test") == SmtpServer(
        "mail.example.test", 465, True, False, "u", "p:w"
    )
    assert SmtpServer.parse("smtp+starttls://mail.example.test:2525").starttls
    for bad in ("http://mail.example.test", "smtp://", "mail.example.test:25"):
        with pytest.raises(ValueError, match="smtp://"):
            SmtpServer.parse(bad)


async def test_a_sign_in_link_arrives_by_smtp_and_signs_in(db: Database) -> None:
    with SmtpPeer("starttls", login=LOGIN) as smtp:
        deps = signin.Accounts(
            db=db,
            sessions=Sessions(db, AccessTokens(secrets.token_bytes(32)), secure=False),
            passwords=Passwords(PasswordCost(memory_kib=64, passes=1, lanes=1)),
            limits=RateLimits(None, limited=sign_in_limited, unavailable=limits_unavailable),
            mailer=SmtpMail(SmtpServer.parse(smtp.url), SENDER, tls_context=smtp.client_context),
            public_url="http://helpdesk.test",
        )
        transport = httpx.ASGITransport(app=cast(Any, helpdesk_app(deps)))
        async with httpx.AsyncClient(transport=transport, base_url="http://helpdesk.test") as browser:
            asked = await browser.post("/api/trpc/auth.signInWithEmail", json={"json": {"email": "ada@example.com"}})
            assert asked.status_code == 200
            (mail,) = smtp.received
            found = re.search(r"http://helpdesk\.test(/auth/link\?token=\S+)", mail.message.get_content())
            assert found
            assert (await browser.get(found.group(1))).status_code == 303
            user = await browser.get("/api/trpc/auth.getUser")
            assert user.json()["result"]["data"]["json"]["email"] == "ada@example.com"
