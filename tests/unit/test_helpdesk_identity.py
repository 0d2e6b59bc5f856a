"""The helpdesk's secrets about people: argon2id password hashes, 15-minute signed access tokens, opaque tokens kept
only as their SHA-256."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from datetime import timedelta

import jwt
import pytest

from gateway.helpdesk.accounts.credentials import AccessTokens, PasswordCost, Passwords
from wire.tokens import digest, opaque

CHEAP = PasswordCost(memory_kib=64, passes=1, lanes=1)


async def test_a_password_is_stored_as_an_argon2id_hash_and_checked_against_it() -> None:
    passwords = Passwords(CHEAP)
    stored = await passwords.hash("correct horse")
    assert stored.startswith("$argon2id$")
    assert "correct horse" not in stored
    assert await passwords.check(stored, "correct horse")
    assert not await passwords.check(stored, "correct hors")
    assert not await passwords.check(None, "correct horse")  # a user without a password
    assert not await passwords.check("not a hash", "correct horse")


def test_the_default_cost_is_owasps_and_a_hash_made_cheaper_is_outdated() -> None:
    assert PasswordCost() == PasswordCost(memory_kib=19_456, passes=2, lanes=1)
    cheap = Passwords(CHEAP)
    stored = cheap._hasher.hash("pw")
    assert not cheap.outdated(stored)
    assert Passwords(PasswordCost(memory_kib=128, passes=1, lanes=1)).outdated(stored)


def test_an_access_token_names_the_user_and_session_and_lives_15_minutes() -> None:
    now = [1_000_000.0]
    tokens = AccessTokens(b"k" * 32, clock=lambda: now[0])
    token = tokens.issue("user-1", "session-1")
    access = tokens.read(token)
    assert access is not None
    assert (access.user_id, access.session_id, access.expires_at) == ("user-1", "session-1", 1_000_900.0)
    now[0] += timedelta(minutes=15).total_seconds() - 1
    assert tokens.read(token) is not None
    now[0] += 1
    assert tokens.read(token) is None


@pytest.mark.parametrize(
    "forge",
    [
        lambda token: token[:-2] + ("AA" if not token.endswith("AA") else "BB"),  # tampered signature
        lambda _: jwt.encode({"iss": AccessTokens.ISSUER, "sub": "u", "sid": "s", "exp": 2e9}, b"x" * 32, "HS256"),
        lambda _: jwt.encode({"iss": "someone-else", "sub": "u", "sid": "s", "exp": 2e9}, b"k" * 32, "HS256"),
        lambda _: jwt.encode({"iss": AccessTokens.ISSUER, "sub": "u", "exp": 2e9}, b"k" * 32, "HS256"),  # no session
        lambda _: jwt.encode({"iss": AccessTokens.ISSUER, "sub": "u", "sid": "s", "exp": 2e9}, "", "none"),
        lambda _: "not a token",
    ],
)
def test_a_token_not_ours_or_not_intact_is_nothing(forge: Callable[[str], str]) -> None:
    tokens = AccessTokens(b"k" * 32)
    assert tokens.read(forge(tokens.issue("u", "s"))) is None


def test_opaque_tokens_are_random_prefixed_and_kept_as_sha256() -> None:
    first, second = opaque("link"), opaque("link")
    assert first != second
    assert re.fullmatch(r"hd_link_[A-Za-z0-9_-]{43}", first)
    assert digest(first) == hashlib.sha256(first.encode()).hexdigest()
