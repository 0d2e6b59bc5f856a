"""Mail addresses that are no person's: a mail system's role address, one that says answers go nowhere, a mailing
list manager's. Inbound mail is classified by them (processors/helpdesk/inbound/mail.py), and the helpdesk's
automatic mail is never sent to them (storage/helpdesk/outbound.py)."""

from __future__ import annotations

import re

MAIL_SYSTEM = re.compile(r"^(postmaster|mailerdaemon)|(postmaster|mailerdaemon)$")
"""A mail system's role address, on the local part squashed (`squashed`): `post_master`, `MAILER_DAEMON`,
`postmaster-noreply`, `bounces-mailer-daemon2`..."""
NO_REPLY = re.compile(r"no(t)?reply|dontreply")
"""A sender that says answers go nowhere, on the local part squashed: `no-reply`, `noreply`, `do-not-reply`..."""
LIST_MANAGER = re.compile(
    r"^((listserv|listproc|mailman|sympa|majordomo|listmaster|lyris|ezmlm)([-_.+]|$)|owner-)|-(owner|bounces)([-_.+]|$)"
)
"""A list manager's own address, on the local part lower-cased: `LISTSERV`, `mailman`, `sympa`, `<list>-owner`,
`<list>-bounces+<verp>`, `owner-<list>` (with their separator: `owner@` is a shop's owner, `homeowner@` a person)."""


def squashed(address: str) -> str:
    """An address's local part, lower-cased, without the separators and digits that spell one name many ways."""
    return re.sub(r"[\W_\d]+", "", address.rpartition("@")[0].lower())


def machine(address: str) -> str | None:
    """Why no person reads `address` (`a mail system's address`...), or None for an address that may be a person's."""
    if MAIL_SYSTEM.search(squashed(address)):
        return "a mail system's address"
    if NO_REPLY.search(squashed(address)):
        return "an address that takes no answers"
    if LIST_MANAGER.search(address.rpartition("@")[0].lower()):
        return "a mailing list manager's address"
    return None
