"""Webhook signing and retry schedules: the headers of a delivery, a known HMAC vector, the schedule arithmetic, and
the receiver check docs/photo.md shows."""

from __future__ import annotations

import hashlib
import hmac
from datetime import UTC, datetime, timedelta

import pytest

from processors.common.webhooks import BACKOFF_OVER_3_DAYS, FIVE_RETRIES_OVER_A_DAY, WebhookProfile
from tests.peers.receiver import verify_delivery

PHOTO = WebhookProfile(
    service="photo",
    signature_header="X-Verify-Signature",
    timestamp_header="X-Verify-Timestamp",
    schedule=BACKOFF_OVER_3_DAYS,
)
HELPDESK = WebhookProfile(
    service="helpdesk", signature_header="X-Helpdesk-Signature", timestamp_header=None, schedule=FIVE_RETRIES_OVER_A_DAY
)
T0 = datetime(2026, 11, 23, 14, 0, tzinfo=UTC)


def test_the_signature_is_the_lowercase_hex_hmac_sha256_of_the_raw_body() -> None:
    # RFC 4231, test case 2.
    headers = PHOTO.sign("Jefe", b"what do ya want for nothing?", 1_700_000_000)
    assert headers["X-Verify-Signature"] == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"


def test_a_delivery_carries_its_timestamp_content_type_and_user_agent() -> None:
    headers = PHOTO.sign("whsec_abc", b'{"id":"evt_1"}', 1_700_000_123)
    assert headers["X-Verify-Timestamp"] == "1700000123"
    assert headers["Content-Type"] == "application/json"
    assert headers["User-Agent"].startswith("signalyard-webhooks/")
    expected = hmac.new(b"whsec_abc", b'{"id":"evt_1"}', hashlib.sha256).hexdigest()
    assert headers["X-Verify-Signature"] == expected


def test_a_profile_without_a_timestamp_header_sends_none() -> None:
    headers = HELPDESK.sign("whsec_abc", b"{}", 1)
    assert set(headers) == {"Content-Type", "User-Agent", "X-Helpdesk-Signature"}


def test_photo_retries_ten_times_over_about_three_days() -> None:
    assert PHOTO.max_attempts == 10
    assert PHOTO.window == timedelta(hours=71, minutes=36)


@pytest.mark.parametrize(
    ("attempt", "wait"),
    [(1, timedelta(minutes=1)), (2, timedelta(minutes=5)), (3, timedelta(minutes=30)), (9, timedelta(hours=24))],
)
def test_the_next_attempt_waits_the_schedule_entry_of_the_failed_attempt(attempt: int, wait: timedelta) -> None:
    assert PHOTO.next_attempt(attempt, T0) == T0 + wait


def test_after_the_last_attempt_there_is_no_next() -> None:
    assert PHOTO.next_attempt(10, T0) is None
    assert HELPDESK.next_attempt(6, T0) is None


def test_helpdesk_retries_at_1_min_5_min_30_min_2_h_24_h() -> None:
    at, times = T0, []
    for attempt in range(1, HELPDESK.max_attempts):
        at = HELPDESK.next_attempt(attempt, at) or at
        times.append(at - T0)
    assert times == [
        timedelta(minutes=1),
        timedelta(minutes=6),
        timedelta(minutes=36),
        timedelta(hours=2, minutes=36),
        timedelta(hours=26, minutes=36),
    ]


def test_a_schedule_with_a_wait_that_is_not_positive_is_refused() -> None:
    with pytest.raises(ValueError, match="positive"):
        WebhookProfile(service="x", signature_header="S", timestamp_header=None, schedule=(timedelta(0),))


# The receiver check of docs/photo.md, as tests/peers/receiver.py runs it.

BODY = b'{"id":"evt_1","type":"verification.completed","created_at":"2026-11-23T14:00:00.000000Z","data":{}}'


def signed(secret: str, body: bytes, at: int) -> tuple[str, str]:
    headers = PHOTO.sign(secret, body, at)
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
