"""Fixtures of the contract tests: a fresh tenant with a test and a live key, and a fresh live number."""

from __future__ import annotations

import pytest

from tests.contract.phone.helpers import live_number
from tests.phone_stack import Stack, TenantKeys


@pytest.fixture
async def tenant(stack: Stack) -> TenantKeys:
    return await stack.new_tenant()


@pytest.fixture
def number() -> str:
    """A valid US number no other test uses, for the shared local Twilio peer."""
    return live_number()
