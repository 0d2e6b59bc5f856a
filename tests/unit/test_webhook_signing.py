"""Webhook signing: the headers of a delivery per profile (signature only with a secret, timestamp, delivery id), a
known HMAC vector, and the receiver checks docs/photo.md shows and the helpdesk's contract describes."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from tests.peers.receiver import verify_delivery, verify_helpdesk
from topics.helpdesk import WEBHOOKS as HELPDESK
from topics.photo import WEBHOOKS as PHOTO


def test_the_signature_is_the_lowercase_hex_hmac_sha256_of_the_raw_body() -> None:
    # RFC 4231, test case 2.
    headers = PHOTO.headers("Jefe", b"what do ya want for nothing?", 1_700_000_000, "evt_1")
    assert headers["X-Verify-Signature"] == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
    headers = HELPDESK.headers("Jefe", b"what do ya want for nothing?", 1_700_000_000, "evt_1")
    assert headers["x-helpdesk-signature"] == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"


def test_a_photo_delivery_carries_signature_timestamp_delivery_id_content_type_and_user_agent() -> None:
    headers = PHOTO.headers("whsec_abc", b'{"id":"evt_1"}', 1_700_000_123, "evt_1")
    assert set(headers) == {
        "Content-Type",
        "User-Agent",
        "X-Verify-Signature",
        "X-Verify-Timestamp",
        "X-Verify-Delivery-Id",
    }
    assert headers["X-Verify-Signature"] == hmac.new(b"whsec_abc", b'{"id":"evt_1"}', hashlib.sha256).hexdigest()
    assert headers["X-Verify-Timestamp"] == "1700000123"
    assert headers["X-Verify-Delivery-Id"] == "evt_1"
    assert headers["Content-Type"] == "application/json"
    assert headers["User-Agent"].startswith("signalyard-webhooks/")


def test_a_helpdesk_delivery_with_a_secret_is_signed_and_carries_no_timestamp() -> None:
    body = b'{"event":"ticket.created","timestamp":"2026-11-23T14:00:00.000000Z","data":{}}'
    headers = HELPDESK.headers("s3cret", body, 1_700_000_123, "evt_9")
    assert set(headers) == {"Content-Type", "User-Agent", "x-helpdesk-signature", "x-helpdesk-delivery-id"}
    assert headers["x-helpdesk-signature"] == hmac.new(b"s3cret", body, hashlib.sha256).hexdigest()
    assert headers["x-helpdesk-delivery-id"] == "evt_9"


def test_without_a_secret_no_signature_header_is_sent() -> None:
    headers = HELPDESK.headers(None, b"{}", 1_700_000_123, "evt_9")
    assert set(headers) == {"Content-Type", "User-Agent", "x-helpdesk-delivery-id"}


# The receiver check of docs/photo.md, as tests/peers/receiver.py runs it.

BODY = b'{"id":"evt_1","type":"verification.completed","created_at":"2026-11-23T14:00:00.000000Z","data":{}}'


def signed(secret: str, body: bytes, at: int) -> tuple[str, str]:
    headers = PHOTO.headers(secret, body, at, "evt_1")
    return headers["X-Verify-Signature"], headers["X-Verify-Timestamp"]


def test_the_receiver_example_accepts_a_fresh_signed_delivery() -> None:
    signature, timestamp = signed("whsec_s", BODY, 1_700_000_000)
    assert verify_delivery("whsec_s", BODY, signature, timestamp, now=1_700_000_299)


@pytest.mark.parametrize(
    ("secret", "body", "now"),
    [
        ("whsec_other", BODY, 1_700_000_000),  # another endpoint's secret
        ("whsec_s", BODY.replace(b"evt_1", b"evt_2"), 1_700_000_000),  # altered body
        ("whsec_s", BODY, 1_700_000_301),  # older than 5 minutes: a replay
        ("whsec_s", BODY, 1_699_999_699),  # from more than 5 minutes in the future
    ],
)
def test_the_receiver_example_rejects(secret: str, body: bytes, now: float) -> None:
    signature, timestamp = signed("whsec_s", BODY, 1_700_000_000)
    assert not verify_delivery(secret, body, signature, timestamp, now=now)


def test_the_receiver_example_rejects_a_timestamp_that_is_not_a_number() -> None:
    signature, _ = signed("whsec_s", BODY, 1_700_000_000)
    assert not verify_delivery("whsec_s", BODY, signature, "yesterday", now=1_700_000_000)


def test_a_helpdesk_receiver_accepts_the_signed_body_and_nothing_else() -> None:
    headers = {name.lower(): value for name, value in HELPDESK.headers("s3cret", BODY, 1, "evt_1").items()}
    assert verify_helpdesk("s3cret", BODY, headers, now=0)
    assert not verify_helpdesk("other", BODY, headers, now=0)
    assert not verify_helpdesk("s3cret", BODY.replace(b"evt_1", b"evt_2"), headers, now=0)
    assert not verify_helpdesk("s3cret", BODY, {}, now=0)
