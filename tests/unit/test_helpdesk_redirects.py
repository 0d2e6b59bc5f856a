"""The helpdesk's safe local paths (`redirectPath` of auth.completeSignup, `redirectTo` of sign-in links): a path of
this site passes; anything a browser could read as another site, however it is dressed, does not."""

from __future__ import annotations

import pytest

from gateway.helpdesk.accounts.redirects import MAX_LENGTH, is_safe_local_path


@pytest.mark.parametrize(
    "path",
    [
        "/",
        "/dashboard",
        "/tickets/42?tab=activity#note-3",
        "/signup/complete?plan=pro",
        "/search?q=a%20b",  # encoded once, for a reason
        "/caf%C3%A9",
        "/@team/settings",  # an at sign in a path is no host
        "/a/../b",
    ],
)
def test_a_path_of_this_site_is_safe(path: str) -> None:
    assert is_safe_local_path(path)


@pytest.mark.parametrize(
    "path",
    [
        "",
        "dashboard",  # relative
        "https://evil.example/",
        "javascript:alert(1)",
        "//evil.example",  # protocol-relative
        "///evil.example",
        "/\\evil.example",  # browsers read a backslash as a slash
        "\\\\evil.example",
        "/\t/evil.example",  # browsers drop tabs and newlines
        "/\n/evil.example",
        "/\x00",
        "/ dashboard",
        "/%2F%2Fevil.example",  # encoded tricks, once or twice
        "/%2f/evil.example",
        "/%5Cevil.example",
        "/%252F%252Fevil.example",
        "/%09/evil.example",
        "/%250A/evil.example",
        "/dashb\u043erd",  # not ASCII (a Cyrillic o)
        "/\uff0fevil.example",  # a fullwidth solidus
        "/" + "a" * MAX_LENGTH,
        "/%25252525252F",  # still encoded after four passes
    ],
)
def test_anything_else_is_not(path: str) -> None:
    assert not is_safe_local_path(path)
