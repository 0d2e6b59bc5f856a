"""Where the helpdesk may send a browser after sign-in or signup: a path on this site, and nothing a browser could
read as another site (`redirectPath` of `auth.completeSignup`, `redirectTo` of the sign-in links)."""

from __future__ import annotations

from urllib.parse import unquote, urlsplit

MAX_LENGTH = 2048


def is_safe_local_path(value: str) -> bool:
    """A path of this site: it begins with one `/`, holds only printable ASCII (no control character, space or
    backslash, which browsers drop or read as `/`), has no scheme or host, and stays so however often it is
    percent-decoded (`/%2F%2Fevil.example`, `/%5Cevil.example`, `%2509`...; a decoded space or letter is fine)."""
    if not value or len(value) > MAX_LENGTH or any(not 0x21 <= ord(char) <= 0x7E for char in value):
        return False
    seen = value
    for _ in range(4):  # each pass undoes one layer of percent-encoding; four is more than any client sends
        if not _plainly_local(seen):
            return False
        decoded = unquote(seen)
        if decoded == seen:
            return True
        seen = decoded
    return False  # still encoded after four passes: nobody needs that


def _plainly_local(path: str) -> bool:
    if not path.startswith("/") or path.startswith("//"):
        return False
    if any(ord(char) < 0x20 or ord(char) == 0x7F or char == "\\" for char in path):
        return False
    parts = urlsplit(path)
    return not parts.scheme and not parts.netloc
