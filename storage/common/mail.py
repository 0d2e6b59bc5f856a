"""What every service that mails people keeps: single-use links (sign in, reset, ...) and the mail kept instead of
sent when no SMTP server is configured (each service's `mails` command prints it). Each row says its service; a
service reads only its own.

A link's token arrives here already hashed (wire/tokens.py `digest`). Using a link is a conditional update: of two
requests racing on one token, exactly one wins."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import cast

from sqlalchemy import Index, String, Table, Text, delete, insert, select, update
from sqlalchemy.engine import Connection
from sqlalchemy.orm import Mapped, mapped_column

from storage.common.models import Base
from wire.ids import new_uuid


class MailLink(Base):
    """A mailed single-use link: its token's hash, what it is for and for whom, until when."""

    __tablename__ = "mail_links"

    token_hash: Mapped[str] = mapped_column(String(64), primary_key=True)
    service: Mapped[str] = mapped_column(String(16))
    purpose: Mapped[str] = mapped_column(String(16))
    email: Mapped[str] = mapped_column(String(320))
    redirect_to: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime]
    expires_at: Mapped[datetime]
    used_at: Mapped[datetime | None]


class KeptMail(Base):
    """A mail a service would have sent, kept because no SMTP server is configured (the embedded default)."""

    __tablename__ = "kept_mails"
    __table_args__ = (Index("ix_kept_mails_recipient", "service", "recipient", "created_at"),)

    id: Mapped[str] = mapped_column(String(36), primary_key=True)
    service: Mapped[str] = mapped_column(String(16))
    recipient: Mapped[str] = mapped_column(String(320))
    subject: Mapped[str] = mapped_column(String(255))
    body: Mapped[str] = mapped_column(Text)
    created_at: Mapped[datetime]


LINKS = cast(Table, MailLink.__table__)
MAILS = cast(Table, KeptMail.__table__)


@dataclass(frozen=True, slots=True)
class LinkRecord:
    purpose: str
    email: str
    redirect_to: str


def create_link(
    connection: Connection,
    service: str,
    token_hash: str,
    purpose: str,
    *,
    email: str,
    redirect_to: str,
    now: datetime,
    lifetime: timedelta,
) -> None:
    connection.execute(
        insert(LINKS).values(
            token_hash=token_hash,
            service=service,
            purpose=purpose,
            email=email.strip().lower(),
            redirect_to=redirect_to,
            created_at=now,
            expires_at=now + lifetime,
        )
    )


def use_link(connection: Connection, service: str, token_hash: str, purpose: str, now: datetime) -> LinkRecord | None:
    """The link, now used, when it was the service's, for `purpose`, unused and unexpired; None otherwise (a second
    use included)."""
    used = connection.execute(
        update(LINKS)
        .where(
            LINKS.c.token_hash == token_hash,
            LINKS.c.service == service,
            LINKS.c.purpose == purpose,
            LINKS.c.used_at.is_(None),
            LINKS.c.expires_at > now,
        )
        .values(used_at=now)
        .returning(LINKS.c.purpose, LINKS.c.email, LINKS.c.redirect_to)
    ).first()
    return LinkRecord(used.purpose, used.email, used.redirect_to) if used is not None else None


@dataclass(frozen=True, slots=True)
class MailRecord:
    id: str
    recipient: str
    subject: str
    body: str
    created_at: datetime


def keep_mail(connection: Connection, service: str, recipient: str, *, subject: str, body: str, now: datetime) -> str:
    mail_id = new_uuid()
    connection.execute(
        insert(MAILS).values(
            id=mail_id,
            service=service,
            recipient=recipient.strip().lower(),
            subject=subject,
            body=body,
            created_at=now,
        )
    )
    return mail_id


def kept_mails(connection: Connection, service: str, recipient: str | None = None, limit: int = 50) -> list[MailRecord]:
    """The service's newest kept mails first, to one address or to anyone."""
    query = (
        select(MAILS)
        .where(MAILS.c.service == service)
        .order_by(MAILS.c.created_at.desc(), MAILS.c.id.desc())
        .limit(limit)
    )
    if recipient is not None:
        query = query.where(MAILS.c.recipient == recipient.strip().lower())
    return [
        MailRecord(row.id, row.recipient, row.subject, row.body, row.created_at) for row in connection.execute(query)
    ]


def forget_mails(connection: Connection, service: str, recipients: Collection[str]) -> int:
    """The service's kept mails to these addresses deleted (an erased person's); how many."""
    if not recipients:
        return 0
    statement = delete(MAILS).where(MAILS.c.service == service, MAILS.c.recipient.in_(list(recipients)))
    return connection.execute(statement).rowcount
