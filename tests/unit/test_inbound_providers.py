"""Every inbound provider kind has its processors' handler."""

from __future__ import annotations

from processors.helpdesk.inbound.handlers import HANDLERS
from topics.helpdesk.inbound import PROVIDERS


def test_every_provider_kind_has_a_handler() -> None:
    assert sorted(HANDLERS) == sorted(PROVIDERS)
