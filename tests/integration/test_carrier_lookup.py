"""The carrier_lookup client against a fake Twilio Lookup v2 over real HTTP, the sandbox, and the line type table."""

from __future__ import annotations

import asyncio
import socket
import time

import httpx
import phonenumbers
import pytest

from processors.phone import providers
from processors.phone.lookup import (
    CarrierAnswer,
    ProviderUnavailable,
    ProviderUnconfigured,
    ProviderUninterpretable,
)
from processors.phone.providers import (
    LINE_TYPE_TABLE,
    SANDBOX_NUMBERS,
    CarrierLookup,
    Sandbox,
    carrier_type,
    line_type,
    sandbox_entry,
    toll_free,
    voip_or_virtual,
)
from tests.peers.twilio import TwilioLookupServer

SID = "AC0123456789abcdef0123456789abcdef"
TOKEN = "s3cr3t-auth-token"
NUMBER = "+14155550100"


@pytest.fixture(scope="module")
def shared_server():
    with TwilioLookupServer(SID, TOKEN) as server:
        yield server


@pytest.fixture
def twilio(shared_server: TwilioLookupServer) -> TwilioLookupServer:
    shared_server.reset()
    return shared_server


@pytest.fixture
async def provider(twilio: TwilioLookupServer):
    client = CarrierLookup(twilio.base_url, SID, TOKEN, timeout_s=1.0, retries=2, backoff_s=0.01)
    yield client
    await client.aclose()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# ------------------------------------------------------------------------------------------------
# CarrierLookup over HTTP
# ------------------------------------------------------------------------------------------------


async def test_maps_every_field_of_a_realistic_body(twilio: TwilioLookupServer, provider: CarrierLookup):
    twilio.answer(
        NUMBER,
        line_type="mobile",
        carrier="T-Mobile USA, Inc.",
        mobile_country_code="310",
        mobile_network_code="160",
        caller_name="SMITH JOHN",
        caller_type="CONSUMER",
    )
    assert await provider.lookup(NUMBER) == CarrierAnswer(
        valid=True,
        line_type_raw="mobile",
        carrier_name="T-Mobile USA, Inc.",
        mobile_country_code="310",
        mobile_network_code="160",
        line_type_error_code=None,
        caller_name="SMITH JOHN",
        caller_type="CONSUMER",
        caller_name_error_code=None,
        ported=None,
    )


async def test_error_codes_become_strings(twilio: TwilioLookupServer, provider: CarrierLookup):
    twilio.answer(
        NUMBER,
        line_type=None,
        carrier=None,
        caller_name=None,
        caller_type=None,
        line_type_error_code=60600,
        caller_name_error_code=60608,
    )
    answer = await provider.lookup(NUMBER)
    assert answer.valid is True
    assert answer.line_type_raw is None
    assert answer.line_type_error_code == "60600"
    assert answer.caller_name is None
    assert answer.caller_name_error_code == "60608"


@pytest.mark.parametrize("raw", list(LINE_TYPE_TABLE))
async def test_each_line_type_passes_through(twilio: TwilioLookupServer, provider: CarrierLookup, raw: str | None):
    twilio.answer(NUMBER, line_type=raw)
    assert (await provider.lookup(NUMBER)).line_type_raw == raw


async def test_business_caller_type_passes_through(twilio: TwilioLookupServer, provider: CarrierLookup):
    twilio.answer(NUMBER, line_type="landline", carrier="AT&T", caller_name="ACME INC", caller_type="BUSINESS")
    answer = await provider.lookup(NUMBER)
    assert (answer.line_type_raw, answer.caller_name, answer.caller_type) == ("landline", "ACME INC", "BUSINESS")


async def test_valid_false(twilio: TwilioLookupServer, provider: CarrierLookup):
    twilio.answer(NUMBER, valid=False)
    assert await provider.lookup(NUMBER) == CarrierAnswer(valid=False)


async def test_404_means_invalid(twilio: TwilioLookupServer, provider: CarrierLookup):
    twilio.not_found(NUMBER)
    assert await provider.lookup(NUMBER) == CarrierAnswer(valid=False)
    assert twilio.count(NUMBER) == 1


async def test_request_carries_auth_fields_and_number(twilio: TwilioLookupServer, provider: CarrierLookup):
    twilio.answer(NUMBER)
    await provider.lookup(NUMBER)
    [request] = twilio.requests
    assert request.method == "GET"
    assert request.path == f"/v2/PhoneNumbers/{NUMBER}"
    assert request.raw_path == "/v2/PhoneNumbers/%2B14155550100"
    assert request.number == NUMBER
    assert request.query == {"Fields": ["line_type_intelligence,caller_name"]}
    assert request.fields == {"line_type_intelligence", "caller_name"}
    assert request.auth_present
    assert request.authorized


@pytest.mark.parametrize("status", [500, 502, 503, 429])
async def test_retries_then_succeeds(twilio: TwilioLookupServer, provider: CarrierLookup, status: int):
    twilio.answer(NUMBER, caller_name="DOE JANE")
    twilio.fail(NUMBER, status=status, times=2, retry_after=0 if status == 429 else None)
    assert (await provider.lookup(NUMBER)).caller_name == "DOE JANE"
    assert twilio.count(NUMBER) == 3


async def test_retry_after_is_capped(twilio: TwilioLookupServer, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(providers, "RETRY_AFTER_CAP_S", 0.05)
    twilio.answer(NUMBER)
    twilio.fail(NUMBER, status=429, times=1, retry_after=3600)
    async with CarrierLookup(twilio.base_url, SID, TOKEN, retries=1, backoff_s=0.0) as client:
        started = time.monotonic()
        assert (await client.lookup(NUMBER)).valid is True
    assert 0.05 <= time.monotonic() - started < 1.0
    assert twilio.count(NUMBER) == 2


async def test_retries_exhausted(twilio: TwilioLookupServer, provider: CarrierLookup):
    twilio.fail(NUMBER, status=503, times=None)
    with pytest.raises(ProviderUnavailable, match="HTTP 503") as caught:
        await provider.lookup(NUMBER)
    assert "3 attempt" in str(caught.value)
    assert TOKEN not in str(caught.value)
    assert SID not in str(caught.value)
    assert twilio.count(NUMBER) == 3


async def test_no_retries_when_configured_so(twilio: TwilioLookupServer):
    twilio.fail(NUMBER, status=500, times=None)
    async with CarrierLookup(twilio.base_url, SID, TOKEN, retries=0) as client:
        with pytest.raises(ProviderUnavailable):
            await client.lookup(NUMBER)
    assert twilio.count(NUMBER) == 1


async def test_timeout(twilio: TwilioLookupServer):
    twilio.hang(NUMBER, 3.0)
    async with CarrierLookup(twilio.base_url, SID, TOKEN, timeout_s=0.2, retries=1, backoff_s=0.01) as client:
        started = time.monotonic()
        with pytest.raises(ProviderUnavailable, match="timed out"):
            await client.lookup(NUMBER)
    assert time.monotonic() - started < 2.0
    assert twilio.count(NUMBER) == 2


async def test_timeout_once_then_answer(twilio: TwilioLookupServer):
    twilio.answer(NUMBER, line_type="landline")
    twilio.hang(NUMBER, 3.0, times=1)
    async with CarrierLookup(twilio.base_url, SID, TOKEN, timeout_s=0.2, retries=1, backoff_s=0.01) as client:
        assert (await client.lookup(NUMBER)).line_type_raw == "landline"
    assert twilio.count(NUMBER) == 2


async def test_connection_refused():
    async with CarrierLookup(f"http://127.0.0.1:{_free_port()}", SID, TOKEN, retries=1, backoff_s=0.01) as client:
        with pytest.raises(ProviderUnavailable, match="could not be reached"):
            await client.lookup(NUMBER)


async def test_wrong_credentials_are_not_retried(twilio: TwilioLookupServer):
    twilio.answer(NUMBER)
    async with CarrierLookup(twilio.base_url, SID, "wrong-token", retries=2) as client:
        with pytest.raises(ProviderUnavailable) as caught:
            await client.lookup(NUMBER)
    assert str(caught.value) == "carrier lookup rejected the configured credentials"
    [request] = twilio.requests
    assert request.auth_present
    assert not request.authorized


async def test_forbidden_is_not_retried(twilio: TwilioLookupServer, provider: CarrierLookup):
    twilio.raw(NUMBER, 403, {"code": 20403, "message": "Forbidden", "status": 403})
    with pytest.raises(ProviderUnavailable, match="rejected the configured credentials"):
        await provider.lookup(NUMBER)
    assert twilio.count(NUMBER) == 1


async def test_other_client_errors_are_not_retried(twilio: TwilioLookupServer, provider: CarrierLookup):
    twilio.raw(NUMBER, 400, {"code": 20001, "message": "Bad request", "status": 400})
    with pytest.raises(ProviderUnavailable, match="HTTP 400"):
        await provider.lookup(NUMBER)
    assert twilio.count(NUMBER) == 1


async def test_garbage_is_uninterpretable(twilio: TwilioLookupServer, provider: CarrierLookup):
    twilio.garbage(NUMBER)
    with pytest.raises(ProviderUninterpretable):
        await provider.lookup(NUMBER)
    assert twilio.count(NUMBER) == 1


@pytest.mark.parametrize(
    "body",
    [
        {"phone_number": NUMBER, "url": "https://lookups.twilio.com/v2/PhoneNumbers/x"},
        {"valid": "yes"},
        {"valid": True, "line_type_intelligence": {"type": 7}},
        {"valid": True, "caller_name": "SMITH JOHN"},
        [NUMBER],
        "",
    ],
    ids=["no-valid-no-lti", "valid-not-bool", "type-not-str", "caller-name-not-object", "list", "empty"],
)
async def test_wrong_shape_is_uninterpretable(twilio: TwilioLookupServer, provider: CarrierLookup, body):
    twilio.raw(NUMBER, 200, body)
    with pytest.raises(ProviderUninterpretable):
        await provider.lookup(NUMBER)


@pytest.mark.parametrize(("sid", "token"), [(None, TOKEN), (SID, None), ("", ""), (None, None)])
async def test_missing_credentials(twilio: TwilioLookupServer, sid: str | None, token: str | None):
    twilio.answer(NUMBER)
    async with CarrierLookup(twilio.base_url, sid, token) as client:
        assert not client.configured
        with pytest.raises(ProviderUnconfigured):
            await client.lookup(NUMBER)
    assert twilio.count() == 0


async def test_reuses_one_connection_and_leaves_a_given_client_open(twilio: TwilioLookupServer):
    twilio.answer(NUMBER)
    async with httpx.AsyncClient() as http:
        client = CarrierLookup(twilio.base_url, SID, TOKEN, client=http)
        await asyncio.gather(*(client.lookup(NUMBER) for _ in range(3)))
        await client.aclose()
        assert not http.is_closed
    assert twilio.count(NUMBER) == 3


async def test_fake_server_honours_fields(twilio: TwilioLookupServer):
    twilio.answer(NUMBER)
    async with httpx.AsyncClient(auth=(SID, TOKEN)) as http:
        response = await http.get(f"{twilio.base_url}/v2/PhoneNumbers/%2B14155550100?Fields=line_type_intelligence")
        unauthorised = await http.get(f"{twilio.base_url}/v2/PhoneNumbers/{NUMBER}", auth=(SID, "nope"))
    body = response.json()
    assert body["line_type_intelligence"]["type"] == "mobile"
    assert body["caller_name"] is None
    assert unauthorised.status_code == 401
    assert unauthorised.json()["code"] == 20003


# ------------------------------------------------------------------------------------------------
# Sandbox
# ------------------------------------------------------------------------------------------------


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*_args, **_kwargs):
        raise AssertionError("the sandbox touched the network")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket.socket, "connect_ex", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    monkeypatch.setattr(socket, "getaddrinfo", refuse)


@pytest.mark.parametrize("last4", list(SANDBOX_NUMBERS))
@pytest.mark.parametrize("area_code", ["415", "212"])
async def test_every_magic_number_gives_its_documented_answer(no_network: None, last4: str, area_code: str):
    e164 = f"+1{area_code}555{last4}"
    entry = SANDBOX_NUMBERS[last4]
    assert sandbox_entry(e164) is entry
    assert entry.description
    assert "\n" not in entry.description
    assert entry.returns
    sandbox = Sandbox(slow_delay_s=0.001)
    if entry.raises is not None:
        with pytest.raises(entry.raises):
            await sandbox.lookup(e164)
    else:
        assert await sandbox.lookup(e164) == entry.answer


@pytest.mark.parametrize("last4", list(SANDBOX_NUMBERS))
def test_magic_numbers_are_valid_us_numbers(last4: str):
    parsed = phonenumbers.parse(f"+1415555{last4}")
    assert phonenumbers.is_valid_number(parsed)
    assert phonenumbers.region_code_for_number(parsed) == "US"


@pytest.mark.parametrize(
    ("last4", "raw", "caller_name", "caller_type"),
    [
        ("0100", "mobile", "SMITH JOHN", "CONSUMER"),
        ("0101", "landline", "ACME INC", "BUSINESS"),
        ("0102", "fixedVoip", "WASHINGTON GEOR", "CONSUMER"),
        ("0103", "mobile", "WIRELESS CALLER", None),
        ("0104", "nonFixedVoip", None, None),
        ("0105", "tollFree", None, None),
        ("0106", "premium", None, None),
        ("0107", "pager", None, None),
        ("0108", "unknown", None, None),
        ("0109", "voicemail", None, None),
        ("0110", "personal", None, None),
    ],
)
async def test_sandbox_line_types_and_caller_ids(
    last4: str, raw: str, caller_name: str | None, caller_type: str | None
):
    answer = await Sandbox().lookup(f"+1415555{last4}")
    assert answer.valid is True
    assert (answer.line_type_raw, answer.caller_name, answer.caller_type) == (raw, caller_name, caller_type)
    assert answer.caller_name_error_code is None


async def test_sandbox_special_cases():
    sandbox = Sandbox(slow_delay_s=0.001)
    assert len((await sandbox.lookup("+14155550102")).caller_name or "") == 15
    cnam_error = await sandbox.lookup("+14155550111")
    assert (cnam_error.caller_name, cnam_error.caller_name_error_code) == (None, "60608")
    ported = await sandbox.lookup("+14155550112")
    assert ported.ported is True
    assert ported.caller_name == "DOE JANE"
    assert (await sandbox.lookup("+14155550100")).ported is False
    assert await sandbox.lookup("+14155550190") == CarrierAnswer(valid=False)
    with pytest.raises(ProviderUninterpretable):
        await sandbox.lookup("+14155550191")
    with pytest.raises(ProviderUnavailable):
        await sandbox.lookup("+14155550192")


def test_sandbox_reaches_every_contract_line_type():
    raws = {e.answer.line_type_raw for e in SANDBOX_NUMBERS.values() if e.answer is not None}
    assert {"mobile", "landline", "fixedVoip", "nonFixedVoip", "tollFree", "premium", "pager", "unknown"} <= raws
    assert {line_type(r) for r in raws} == {"mobile", "landline", "voip", "toll_free", "premium", "pager", "unknown"}


async def test_slow_number_honours_slow_delay():
    sandbox = Sandbox(slow_delay_s=0.1)
    started = time.monotonic()
    answer = await sandbox.lookup("+14155550199")
    assert time.monotonic() - started >= 0.1
    assert answer == await sandbox.lookup("+14155550100")
    started = time.monotonic()
    await sandbox.lookup("+14155550100")
    assert time.monotonic() - started < 0.1


async def test_other_numbers_get_a_stable_default(no_network: None):
    numbers = [f"+1415867{n:04d}" for n in range(60)] + ["+14155550150", "+14155550200"]
    first = [await Sandbox().lookup(n) for n in numbers]
    again = [await Sandbox().lookup(n) for n in numbers]
    assert first == again
    assert all(a.valid is True for a in first)
    assert {a.line_type_raw for a in first} == {"mobile", "landline", "fixedVoip"}
    assert {a.caller_name for a in first} == {None, "DOE JANE"}
    assert {a.carrier_name for a in first} == {"Sandbox Wireless", "Sandbox Telecom", "Sandbox Voice"}
    assert sandbox_entry("+14155550150") is None


def test_provider_names():
    assert Sandbox.name == "sandbox"
    assert CarrierLookup.name == "carrier_lookup"


# ------------------------------------------------------------------------------------------------
# Line type mapping
# ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("mobile", ("mobile", "wireless", False, False)),
        ("personal", ("mobile", "wireless", False, False)),
        ("landline", ("landline", "landline", False, False)),
        ("fixedVoip", ("voip", "voip", True, False)),
        ("nonFixedVoip", ("voip", "voip", True, False)),
        ("voicemail", ("voip", "voip", True, False)),
        ("tollFree", ("toll_free", "unknown", False, True)),
        ("premium", ("premium", "unknown", False, False)),
        ("pager", ("pager", "wireless", False, False)),
        ("sharedCost", ("unknown", "unknown", False, False)),
        ("uan", ("unknown", "unknown", False, False)),
        ("unknown", ("unknown", "unknown", False, False)),
        (None, ("unknown", "unknown", None, None)),
        ("satellite", ("unknown", "unknown", False, False)),
    ],
)
def test_line_type_mapping(raw: str | None, expected: tuple[str, str, bool | None, bool | None]):
    assert (line_type(raw), carrier_type(raw), voip_or_virtual(raw), toll_free(raw)) == expected


def test_table_only_uses_contract_words():
    assert {row.line_type for row in LINE_TYPE_TABLE.values()} <= {
        "mobile",
        "landline",
        "voip",
        "toll_free",
        "premium",
        "pager",
        "unknown",
    }
    assert {row.carrier_type for row in LINE_TYPE_TABLE.values()} <= {"wireless", "landline", "voip", "unknown"}
