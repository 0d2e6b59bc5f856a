"""The query parameters every REST listing takes: a page size and the cursor of the previous page."""

from __future__ import annotations

from typing import Annotated

from litestar.params import Parameter

from operations.helpdesk.fields import UUID_PATTERN

Limit = Annotated[int, Parameter(ge=1, le=100, description="Page size, 1 to 100")]
Cursor = Annotated[
    str | None,
    Parameter(description="The `next_cursor` of the previous page: the page starts after it", pattern=UUID_PATTERN),
]
UuidFilter = Annotated[str | None, Parameter(pattern=UUID_PATTERN, description="A uuid")]
