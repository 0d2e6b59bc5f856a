"""Each service's webhook profile against its contract: the body an endpoint receives, the target URLs accepted at
creation, the retry schedule, and what a failing endpoint becomes."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pytest

from topics.helpdesk import WEBHOOKS as HELPDESK
from topics.photo import WEBHOOKS as PHOTO
from wire.addresses import TargetUrlRefused
from wire.webhooks import WebhookProfile, id_type_created_at

T0 = datetime(2026, 11, 23, 14, 0, tzinfo=UTC)


def test_a_photo_body_is_id_type_created_at_and_data() -> None:
    body = PHOTO.envelope("evt_1", "verification.completed", T0, {"verification_id": "ver_1"})
    assert json.loads(body) == {
        "id": "evt_1",
        "type": "verification.completed",
        "created_at": "2026-11-23T14:00:00.000000Z",
        "data": {"verification_id": "ver_1"},
    }


def test_a_helpdesk_body_is_event_timestamp_and_data() -> None:
    body = HELPDESK.envelope("evt_1", "ticket.created", T0, {"ticket": {"id": 7}})
    assert json.loads(body) == {
        "event": "ticket.created",
        "timestamp": "2026-11-23T14:00:00.000000Z",
        "data": {"ticket": {"id": 7}},
    }
    assert datetime.fromisoformat(json.loads(body)["timestamp"]) == T0


@pytest.mark.parametrize("url", ["http://hooks.example.com/in", "https://hooks.example.com/in"])
def test_the_helpdesk_accepts_http_and_https_targets(url: str) -> None:
    assert HELPDESK.check_url(url, allow_private=False) == url


def test_photo_accepts_https_targets_only() -> None:
    assert PHOTO.check_url("https://hooks.example.com/in", allow_private=False) == "https://hooks.example.com/in"
    with pytest.raises(TargetUrlRefused, match="url must be an HTTPS URL"):
        PHOTO.check_url("http://hooks.example.com/in", allow_private=False)


@pytest.mark.parametrize("profile", [PHOTO, HELPDESK], ids=["photo", "helpdesk"])
def test_every_profile_refuses_other_schemes_and_private_literals(profile: WebhookProfile) -> None:
    with pytest.raises(TargetUrlRefused, match="url must be an"):
        profile.check_url("ftp://hooks.example.com/in", allow_private=False)
    with pytest.raises(TargetUrlRefused, match="private, loopback or reserved"):
        profile.check_url("https://169.254.169.254/latest", allow_private=False)


def test_photo_retries_ten_times_over_about_three_days() -> None:
    assert PHOTO.max_attempts == 10
    assert PHOTO.window == timedelta(hours=71, minutes=36)
    assert PHOTO.next_attempt(1, T0) == T0 + timedelta(minutes=1)
    assert PHOTO.next_attempt(9, T0) == T0 + timedelta(hours=24)
    assert PHOTO.next_attempt(10, T0) is None


def test_the_helpdesk_retries_five_times_at_1_min_5_min_30_min_2_h_24_h() -> None:
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
    assert HELPDESK.next_attempt(6, at) is None


def test_what_a_failed_endpoint_becomes() -> None:
    assert (PHOTO.disabled_status, PHOTO.spare_recently_delivered) == ("disabled", True)
    assert (HELPDESK.disabled_status, HELPDESK.spare_recently_delivered) == ("failed", False)


def test_the_attempt_timeouts_secrets_and_operations_of_each_contract() -> None:
    assert (PHOTO.timeout_s, HELPDESK.timeout_s) == (10, 30)
    assert (PHOTO.secret, PHOTO.secret_prefix, PHOTO.id_prefix) == ("generated", "whsec_", "whk")
    assert HELPDESK.secret == "optional"
    assert PHOTO.operations == {"create", "list", "delete"}
    assert HELPDESK.operations == {"create", "list", "update", "delete", "test"}
    assert HELPDESK.test_event == "webhook.test"


def test_a_schedule_with_a_wait_that_is_not_positive_is_refused() -> None:
    with pytest.raises(ValueError, match="positive"):
        WebhookProfile(
            service="x", events=("a",), envelope=id_type_created_at, signature_header="S", schedule=(timedelta(0),)
        )


def test_the_test_event_cannot_be_subscribed_to() -> None:
    with pytest.raises(ValueError, match="test event"):
        WebhookProfile(
            service="x",
            events=("webhook.test",),
            envelope=id_type_created_at,
            signature_header="S",
            schedule=(timedelta(minutes=1),),
        )
