"""Every inbound endpoint of section 4.6, by the module of its provider kind; and where each kind of channel's provider
is told to call (the agent app's channel settings show them)."""

from __future__ import annotations

from litestar.types import ControllerRouterHandler

from gateway.helpdesk.inbound import chat, commerce, email, email_provider, marketplace, messaging, payments, sms, voice
from topics.helpdesk.inbound import ChannelKindName

ROUTES: list[ControllerRouterHandler] = [*email.ROUTES, *sms.ROUTES, *messaging.ROUTES, *voice.ROUTES]
ROUTES += [*commerce.ROUTES, *payments.ROUTES, *chat.ROUTES, *email_provider.ROUTES, *marketplace.ROUTES]

REGISTER: dict[ChannelKindName, tuple[tuple[str, str], ...]] = {
    "email": (
        (
            email.PATH,
            "inbound mail, kinds A and B (the provider's signature), C (add ?token=<inbound_token>) and D (a "
            "forwarder sending x-forwarder-secret)",
        ),
    ),
    "sms": ((sms.PATH, "incoming messages"), (sms.STATUS_PATH, "status callbacks of the replies")),
    "business_messaging": ((messaging.BUSINESS_PATH, "the app's webhook (with the verify token)"),),
    "page_messaging": ((messaging.PAGE_PATH, "the page's webhook (with the verify token)"),),
    "voice": ((voice.PATH, "calls and voicemail (signed with the webhook secret)"),),
    "commerce": ((commerce.PATH, "orders and customers"), (commerce.PRIVACY_PATH, "privacy requests")),
    "payments": ((payments.PATH, "the platform's events"), (payments.CONNECT_PATH, "connected accounts' events")),
    "chat": ((chat.PATH, "the app's event subscriptions"),),
    "email_provider": ((email_provider.PATH, "add ?token=<token>: the token routes the call to the channel"),),
    "marketplace": ((marketplace.PATH, "the SNS subscription's endpoint"),),
}
"""Each kind of channel: the paths its provider is given (after the gateway's public URL), and what each is for."""
