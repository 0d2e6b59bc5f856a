"""The inbound processors' handler of each provider kind (`InboundReceived.provider`)."""

from __future__ import annotations

from processors.helpdesk.inbound import (
    chat,
    commerce,
    email,
    email_provider,
    marketplace,
    messaging,
    payments,
    sms,
    voice,
)
from processors.helpdesk.inbound.service import Handler
from topics.helpdesk.inbound import Provider

HANDLERS: dict[Provider, Handler] = {
    "email_a": email.handle,
    "email_b": email.handle,
    "email_c": email.handle,
    "email_d": email.handle,
    "sms": sms.handle,
    "sms_status": sms.handle_status,
    "business_messaging": messaging.handle,
    "page_messaging": messaging.handle,
    "voice": voice.handle,
}
HANDLERS |= {
    "commerce": commerce.handle,
    "commerce_privacy": commerce.handle,
    "payments": payments.handle,
    "payments_connect": payments.handle,
    "chat": chat.handle,
    "email_provider": email_provider.handle,
    "marketplace": marketplace.handle,
}
