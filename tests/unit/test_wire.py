"""The pure layer every other one uses: target URLs, timestamps, signatures and signed URLs."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

from wire.addresses import TargetUrlRefused, check_target_url
from wire.ids import is_id, new_id
from wire.signatures import hex_hmac_sha256, same
from wire.signed_urls import SignedUrls
from wire.timestamps import is_fresh, iso

REFUSED = "url must not point at a private, loopback or reserved address"


@pytest.mark.parametrize(
    ("url", "schemes", "reason"),
    [
        ("http://hooks.example.com/x", ("https",), "url must be an HTTPS URL"),
        ("ftp://hooks.example.com/x", ("http", "https"), "url must be an HTTP or HTTPS URL"),
        ("https:///path", ("https",), "url must name a host"),
        ("https://user:pw@hooks.example.com/", ("https",), "url must not carry credentials"),
        ("https://hooks.example.com:99999/", ("https",), "url has an invalid port"),
        ("https://10.0.0.8/hook", ("https",), REFUSED),
        ("https://127.0.0.1:8443/hook", ("https",), REFUSED),
        (
            "http://169.254.169.254/x",
            ("http", "https"),
            "url must not point at a private, loopback or reserved address",
        ),
        ("https://[::1]/hook", ("https",), REFUSED),
    ],
)
def test_a_target_url_the_policy_refuses_says_why(url: str, schemes: tuple[str, ...], reason: str) -> None:
    with pytest.raises(TargetUrlRefused) as refused:
        check_target_url(url, schemes=schemes, allow_private=False)
    assert str(refused.value) == reason


@pytest.mark.parametrize(
    ("url", "schemes"),
    [
        ("https://hooks.example.com/photo", ("https",)),
        ("http://hooks.example.com/helpdesk", ("http", "https")),
        ("HTTPS://8.8.8.8:8443/x", ("https",)),
        ("https://localhost/x", ("https",)),  # a name: resolved and checked at every delivery instead
    ],
)
def test_a_public_or_named_target_is_accepted(url: str, schemes: tuple[str, ...]) -> None:
    assert check_target_url(url, schemes=schemes, allow_private=False) == url


def test_private_literals_are_accepted_when_an_operator_allows_them() -> None:
    assert check_target_url("https://127.0.0.1:9443/x", schemes=("https",), allow_private=True)


def test_iso_writes_utc_with_a_z_at_the_precision_asked() -> None:
    at = datetime(2026, 11, 24, 10, 15, 2, 118_456, tzinfo=timezone(timedelta(hours=2)))
    assert iso(at) == "2026-11-24T08:15:02.118456Z"
    assert iso(at, "milliseconds") == "2026-11-24T08:15:02.118Z"
    assert iso(at.replace(microsecond=0), "microseconds") == "2026-11-24T08:15:02.000000Z"
    assert iso(at.replace(microsecond=0)) == "2026-11-24T08:15:02Z"


@pytest.mark.parametrize(
    ("sent_at", "fresh"),
    [("1000", True), ("700", True), ("1300", True), ("699", False), ("1301", False), ("10e2", False), ("", False)],
)
def test_a_signed_timestamp_is_fresh_within_the_tolerance_either_side(sent_at: str, fresh: bool) -> None:
    assert is_fresh(sent_at, now=1000.0, tolerance_s=300) is fresh


def test_signatures_compare_equal_only_when_equal() -> None:
    signature = hex_hmac_sha256(b"whsec_x", b'{"a":1}')
    assert signature == "11515c78185d4a04d2abe8240f4aa3419b03f6ffeb3fffc68a455edc9e9460e5"
    assert same(signature, signature.encode())
    assert not same(signature, signature[:-1] + ("0" if signature[-1] != "0" else "1"))


def test_a_signed_url_is_served_until_it_expires_and_never_when_altered() -> None:
    urls = SignedUrls("https://photo.example.com/", "/v1/images", b"key", ttl_s=60)
    url = urls.url("ver_1", now=1_000)
    assert url.startswith("https://photo.example.com/v1/images/ver_1?expires=1060&signature=")
    signature = url.rsplit("=", 1)[1]
    assert urls.refusal("ver_1", "1060", signature, now=1_060) is None
    assert urls.refusal("ver_1", "1060", signature, now=1_061) == "expired"
    assert urls.refusal("ver_2", "1060", signature, now=1_000) == "forged"
    assert urls.refusal("ver_1", "1061", signature, now=1_000) == "forged"
    assert urls.refusal("ver_1", None, signature) == "unsigned"
    assert urls.refusal("ver_1", "-5", signature) == "unsigned"


def test_an_id_has_its_prefix_and_32_lowercase_hex_digits() -> None:
    made = new_id("hook")
    assert is_id(made, "hook")
    assert not is_id(made, "whk")
    for text in ("hook_nothing", "hook_" + "0" * 31, "hook_" + "A" * 32, "hook_" + "0" * 32 + "\x00", "", "hook"):
        assert not is_id(text, "hook"), text
