"""The mail the helpdesk sends of itself (sign-in and reset links, invitations, notices): operations/common/mail.py's,
through `SIGNALYARD_HELPDESK_SMTP_URL` when it is set, else kept for `signalyard helpdesk mails` to print; each marked
as the helpdesk's own (OUR_HEADER) so that a copy coming back through an inbound channel is known."""

from __future__ import annotations

from operations.common.mail import KeptMail, Mailer, SmtpMail, SmtpServer
from storage.common.db import Database
from storage.helpdesk.keys import SERVICE

OUR_HEADER = "X-Signalyard-Helpdesk"
"""The header by which the inbound processors know a copy of the helpdesk's own mail (the same name as
processors/helpdesk/inbound/mail.py OUR_HEADER, which this layer cannot import): the organization's id on an
organization's mail, ACCOUNT_MAIL on the account mail (sign-in and reset links), which belongs to no organization."""
ACCOUNT_MAIL = "account"


def kept_mail(db: Database) -> KeptMail:
    """The helpdesk's kept-mail outbox (the embedded default)."""
    return KeptMail(db, SERVICE)


def account_mailer(db: Database, smtp_url: str | None, sender: str) -> Mailer:
    """The account mail's mailer: SMTP from `sender` when `smtp_url` is set, else the kept-mail outbox."""
    if smtp_url is None:
        return kept_mail(db)
    return SmtpMail(SmtpServer.parse(smtp_url), sender, headers={OUR_HEADER: ACCOUNT_MAIL})
