"""What every service's `mails` command prints: the mail it kept while no SMTP server is configured, newest first."""

from __future__ import annotations

from storage.common import mail
from storage.common.db import Database


async def print_kept_mails(db: Database, service: str, to: str | None, limit: int) -> None:
    kept = await db.read(mail.kept_mails, service, to, limit)
    if not kept:
        print("no kept mail" + (f" to {to}" if to else ""))
    for found in kept:
        print(f"--- {found.created_at.isoformat()} to {found.recipient}: {found.subject}")
        print(found.body.rstrip())
