"""Every inbound endpoint of section 4.6, by the module of its provider kind."""

from __future__ import annotations

from litestar.types import ControllerRouterHandler

from gateway.helpdesk.inbound import email

ROUTES: list[ControllerRouterHandler] = [*email.ROUTES]
