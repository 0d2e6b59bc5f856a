"""Every inbound endpoint of section 4.6, by the module of its provider kind."""

from __future__ import annotations

from litestar.types import ControllerRouterHandler

from gateway.helpdesk.inbound import chat, commerce, email, email_provider, marketplace, messaging, payments, sms, voice

ROUTES: list[ControllerRouterHandler] = [*email.ROUTES, *sms.ROUTES, *messaging.ROUTES, *voice.ROUTES]
ROUTES += [*commerce.ROUTES, *payments.ROUTES, *chat.ROUTES, *email_provider.ROUTES, *marketplace.ROUTES]
