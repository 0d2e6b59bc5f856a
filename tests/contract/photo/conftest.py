"""Fixtures of the photo contract tests: a fresh customer with a sandbox and a live key."""

from __future__ import annotations

import pytest

from tests.photo_stack import CustomerKeys, PhotoStack


@pytest.fixture
async def customer(photo_stack: PhotoStack) -> CustomerKeys:
    return await photo_stack.new_customer()
