"""The inbound processors' handler of each provider kind (`InboundReceived.provider`)."""

from __future__ import annotations

from processors.helpdesk.inbound import email
from processors.helpdesk.inbound.service import Handler

HANDLERS: dict[str, Handler] = {"email_d": email.handle}
