"""The shapes of the helpdesk's input fields, shared by every operation's input: what a subject, a name, an address
or a tag may be. Checked where input is decoded (msgspec), so an operation receives only what fits."""

from __future__ import annotations

import re
from typing import Annotated, Literal

import msgspec

from wire.text import EMAIL_PATTERN, LINE, TEXT

UUID_PATTERN = r"^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$"
_UUID = re.compile(UUID_PATTERN)
Uuid = Annotated[str, msgspec.Meta(pattern=UUID_PATTERN, examples=["3f1c9a0b-7d2e-4e8a-9c3b-5d6f7a8e9b0c"])]
Status = Literal["open", "pending", "resolved", "closed"]
Priority = Literal["low", "normal", "high", "urgent"]
Channel = Literal["api", "email", "sms", "chat", "voice", "web", "messaging", "social", "commerce", "marketplace"]
Email = Annotated[str, msgspec.Meta(max_length=320, pattern=EMAIL_PATTERN, examples=["ada@example.com"])]
PersonName = Annotated[str, msgspec.Meta(min_length=1, max_length=255, pattern=LINE, examples=["Ada Lovelace"])]
Phone = Annotated[str, msgspec.Meta(max_length=32, pattern=r"^\+?[0-9 ()\-.]{3,31}$", examples=["+14155550100"])]
Subject = Annotated[
    str, msgspec.Meta(min_length=1, max_length=255, pattern=LINE, examples=["My order has not arrived"])
]
Tag = Annotated[str, msgspec.Meta(min_length=1, max_length=64, pattern=r"^[^\x00-\x20\x7f,]+$", examples=["shipping"])]
Tags = Annotated[list[Tag], msgspec.Meta(max_length=20)]
Body = Annotated[str, msgspec.Meta(min_length=1, max_length=65536, pattern=TEXT, examples=["It was due on Monday."])]
Limit = Annotated[int, msgspec.Meta(ge=1, le=100)]
Cursor = Annotated[str, msgspec.Meta(pattern=UUID_PATTERN)]


def is_uuid(text: str) -> bool:
    """Whether `text` can name anything: an id in a path is checked before it reaches the database."""
    return _UUID.match(text) is not None
