"""Reading an operation's typed input."""

from __future__ import annotations

from typing import Any

import msgspec


def given_fields(given: msgspec.Struct, struct: type[msgspec.Struct]) -> dict[str, Any]:
    """The fields of `struct` that `given` (a `struct`, or an input that extends it) sets: an absent field (UNSET)
    stays as it is."""
    return {name: value for name in struct.__struct_fields__ if (value := getattr(given, name)) is not msgspec.UNSET}
