"""Log redaction: lines rendered by `signalyard.logs.configure` carry no key, token or secret, however it is logged."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterator

import pytest
import structlog

from signalyard import logs
from tests.conftest import logging_restored

TEST_KEY = "sy_test_" + "a1" * 20
LIVE_KEY = "sy_live_" + "b2" * 20
PARTNER_KEY = "pc_test_" + "C3d4" * 8
SIGNING_SECRET = "whsec_" + "E5f6+/" * 6
BEARER = "eyJhbGciOi.eyJzdWIiOi.c2lnbmF0dXJl"
HELPDESK_KEY = "hd_live_" + "G7h8" * 8
SIGN_IN_LINK = "http://127.0.0.1:8003/auth/link?token=hd_link_" + "i9J0-_" * 6
DASHBOARD_LINK = "http://127.0.0.1:8002/dashboard/link?token=pc_link_" + "k1L2-_" * 6
SECRETS = [
    TEST_KEY,
    LIVE_KEY,
    PARTNER_KEY,
    SIGNING_SECRET,
    BEARER,
    HELPDESK_KEY,
    SIGN_IN_LINK,
    "hunter2",
    "s3ss10n",
    "r3fr3sh",
    "Zm9vOmJhcg",
]

Lines = Callable[[], list[dict[str, object]]]


def refuse(key: str) -> None:
    raise PermissionError(f"key {key} is revoked")


@pytest.fixture
def lines(capsys: pytest.CaptureFixture[str]) -> Iterator[Lines]:
    """The JSON lines written to stderr so far, once checked that no secret appears anywhere in them. Each test
    calls `logs.configure` itself: capsys gives every test phase a stderr of its own, and configure's handler keeps the
    one it finds."""

    def read() -> list[dict[str, object]]:
        err = capsys.readouterr().err
        for secret in SECRETS:
            assert secret not in err
        assert err.strip()
        return [json.loads(line) for line in err.splitlines()]

    with logging_restored():
        yield read


def test_fields_named_like_secrets_are_redacted_at_any_depth(lines: Lines) -> None:
    logs.configure("info")
    structlog.get_logger("signalyard.test").info(
        "nested",
        request_id="req-1",
        key_id="key-1",
        idempotency_key="order-42",
        key_prefix=TEST_KEY[:16],
        keys=2,
        api_key=TEST_KEY,
        body={
            "tenant": {"name": "Acme", "client_secret": "hunter2", "Password": "hunter2"},
            "sessions": [{"refresh_token": "r3fr3sh", "id": "s-1"}, {"passwd": "hunter2", "id": "s-2"}],
            "credentials": ({"Signing_Key": SIGNING_SECRET},),
        },
    )
    (line,) = lines()
    assert line["api_key"] == "[redacted]"
    assert line["body"] == {
        "tenant": {"name": "Acme", "client_secret": "[redacted]", "Password": "[redacted]"},
        "sessions": [{"refresh_token": "[redacted]", "id": "s-1"}, {"passwd": "[redacted]", "id": "s-2"}],
        "credentials": [{"Signing_Key": "[redacted]"}],
    }
    assert line["request_id"] == "req-1"
    assert line["key_id"] == "key-1"
    assert line["idempotency_key"] == "order-42"
    assert line["key_prefix"] == TEST_KEY[:16]  # a display prefix is not a key
    assert line["keys"] == 2


def test_header_lists_and_mappings_are_redacted(lines: Lines) -> None:
    logs.configure("info")
    structlog.get_logger("signalyard.test").warning(
        "headers",
        asgi=[
            (b"authorization", f"Bearer {BEARER}".encode()),
            (b"cookie", b"session=s3ss10n"),
            (b"idempotency-key", b"order-42"),
            (b"host", b"api.example.test"),
        ],
        httpx=[("Set-Cookie", "session=s3ss10n"), ("Proxy-Authorization", "Basic Zm9vOmJhcg"), ("X-Api-Key", LIVE_KEY)],
        mapping={"Authorization": f"Bearer {BEARER}", "Cookie": "session=s3ss10n", "X-Request-Id": "req-2"},
    )
    (line,) = lines()
    assert line["asgi"] == [
        [repr(b"authorization"), "[redacted]"],
        [repr(b"cookie"), "[redacted]"],
        [repr(b"idempotency-key"), repr(b"order-42")],
        [repr(b"host"), repr(b"api.example.test")],
    ]
    assert line["httpx"] == [
        ["Set-Cookie", "[redacted]"],
        ["Proxy-Authorization", "[redacted]"],
        ["X-Api-Key", "[redacted]"],
    ]
    assert line["mapping"] == {"Authorization": "[redacted]", "Cookie": "[redacted]", "X-Request-Id": "req-2"}


def test_keys_and_tokens_quoted_in_text_are_scrubbed(lines: Lines) -> None:
    logs.configure("info")
    caller_owned = {"note": f"retried with {LIVE_KEY}"}
    structlog.get_logger("signalyard.test").warning(
        f"refused {TEST_KEY}",
        detail=f"GET /v1/usage?key={PARTNER_KEY} with Authorization: Bearer {BEARER}",
        webhook=[f"signed with {SIGNING_SECRET}"],
        caller_owned=caller_owned,
        error=ValueError(f"bad key {LIVE_KEY}"),
        display=f"key {TEST_KEY[:16]} revoked",
        helpdesk=f"refused {HELPDESK_KEY}; mailed {SIGN_IN_LINK}",
        photo=f"mailed {DASHBOARD_LINK}",
    )
    (line,) = lines()
    assert line["event"] == "refused sy_test_[redacted]"
    assert (
        line["helpdesk"]
        == "refused hd_live_[redacted]; mailed http://127.0.0.1:8003/auth/link?token=hd_link_[redacted]"
    )
    assert line["photo"] == "mailed http://127.0.0.1:8002/dashboard/link?token=pc_link_[redacted]"
    assert line["detail"] == "GET /v1/usage?key=pc_test_[redacted] with Authorization: Bearer [redacted]"
    assert line["webhook"] == ["signed with whsec_[redacted]"]
    assert line["caller_owned"] == {"note": "retried with sy_live_[redacted]"}
    assert line["error"] == "ValueError('bad key sy_live_[redacted]')"
    assert line["display"] == f"key {TEST_KEY[:16]} revoked"
    assert caller_owned == {"note": f"retried with {LIVE_KEY}"}  # the caller's own value is left alone


def test_exception_text_is_scrubbed(lines: Lines) -> None:
    logs.configure("info")
    try:
        refuse(LIVE_KEY)
    except PermissionError:
        structlog.get_logger("signalyard.test").exception("refused", request_id="req-3")
    (line,) = lines()
    assert line["request_id"] == "req-3"
    assert isinstance(line["exception"], str)
    assert "PermissionError: key sy_live_[redacted] is revoked" in line["exception"]


def test_library_records_are_scrubbed(lines: Lines, monkeypatch: pytest.MonkeyPatch) -> None:
    logs.configure("info")
    # uvicorn's own logging config, once applied (tests/peers/twilio.py), keeps its records off the root logger.
    uvicorn = logging.getLogger("uvicorn")
    monkeypatch.setattr(uvicorn, "handlers", [])
    monkeypatch.setattr(uvicorn, "propagate", True)
    monkeypatch.setattr(uvicorn, "disabled", False)
    logging.getLogger("uvicorn.error").error("Invalid HTTP request: Authorization: Bearer %s key=%s", BEARER, TEST_KEY)
    try:
        refuse(SIGNING_SECRET)
    except PermissionError:
        logging.getLogger("aiokafka").error("send failed with %s", PARTNER_KEY, exc_info=True)
    uvicorn_line, aiokafka_line = lines()
    assert uvicorn_line["logger"] == "uvicorn.error"
    assert uvicorn_line["event"] == "Invalid HTTP request: Authorization: Bearer [redacted] key=sy_test_[redacted]"
    assert aiokafka_line["event"] == "send failed with pc_test_[redacted]"
    assert isinstance(aiokafka_line["exception"], str)
    assert "PermissionError: key whsec_[redacted] is revoked" in aiokafka_line["exception"]
