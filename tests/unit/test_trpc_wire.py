"""The tRPC wire format of the helpdesk's procedures (gateway/helpdesk/trpc.py), spoken with httpx as a client would:
queries, mutations, batches, superjson dates and absent inputs, and every error in the section 7 envelope."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any, cast
from urllib.parse import quote

import httpx
import pytest

from gateway.helpdesk.procedures.wire import MAX_BATCH, serialize
from tests.trpc_router import MOMENT, app

AT = "2026-11-25T06:30:15.123Z"  # MOMENT as JavaScript's Date.toISOString writes it
UNDEFINED = {"json": None, "meta": {"values": ["undefined"], "v": 1}}


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=cast(Any, app()))
    async with httpx.AsyncClient(transport=transport, base_url="http://helpdesk/api/trpc") as client:
        yield client


def query(value: Any) -> str:
    return "input=" + quote(json.dumps(value))


def error(message: str, number: int, code: str, status: int, path: str) -> dict[str, Any]:
    return {
        "error": {
            "json": {"message": message, "code": number, "data": {"code": code, "httpStatus": status, "path": path}}
        }
    }


async def test_a_query_answers_its_result_with_dates_named_in_meta(client: httpx.AsyncClient) -> None:
    answer = await client.get("/greeting.hello?" + query({"json": {"name": "Ada"}}))
    assert answer.status_code == 200
    assert answer.headers["content-type"] == "application/json"
    assert answer.json() == {
        "result": {"data": {"json": {"text": "hello Ada", "at": AT}, "meta": {"values": {"at": ["Date"]}, "v": 1}}}
    }


async def test_a_call_without_input_is_accepted_with_or_without_the_undefined_marker(client: httpx.AsyncClient) -> None:
    for url in ("/clock.now", "/clock.now?" + query(UNDEFINED)):
        answer = await client.get(url)
        assert answer.status_code == 200, url
        assert answer.json()["result"]["data"]["json"] == {"at": AT, "zone": "UTC"}


async def test_an_undefined_member_takes_the_input_default(client: httpx.AsyncClient) -> None:
    given = {"json": {"name": "Ada", "shout": None}, "meta": {"values": {"shout": ["undefined"]}, "v": 1}}
    answer = await client.get("/greeting.hello?" + query(given))
    assert answer.json()["result"]["data"]["json"]["text"] == "hello Ada"


async def test_a_mutation_is_a_json_post_and_its_cookies_reach_the_response(client: httpx.AsyncClient) -> None:
    answer = await client.post("/counter.add", json={"json": {"by": 3}})
    assert answer.status_code == 200
    assert answer.json() == {"result": {"data": {"json": {"total": 3}}}}
    assert "counted=3" in answer.headers["set-cookie"]
    assert "HttpOnly" in answer.headers["set-cookie"]


async def test_a_mutation_posted_as_a_form_or_text_is_refused_before_it_runs(client: httpx.AsyncClient) -> None:
    for content_type in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x"):
        answer = await client.post(
            "/counter.add", content=b'{"json": {"by": 3}}', headers={"content-type": content_type}
        )
        assert answer.status_code == 415
        assert answer.json()["error"]["json"]["data"]["code"] == "UNSUPPORTED_MEDIA_TYPE"
        assert "set-cookie" not in answer.headers
    counted = await client.post("/counter.add", json={"json": {"by": 1}})
    assert counted.json()["result"]["data"]["json"] == {"total": 1}  # none of the refused calls counted


async def test_dates_in_the_input_are_read_and_nested_dates_in_the_output_named(client: httpx.AsyncClient) -> None:
    given = {"json": {"since": AT}, "meta": {"values": {"since": ["Date"]}, "v": 1}}
    answer = await client.get("/events.since?" + query(given))
    assert answer.status_code == 200
    data = answer.json()["result"]["data"]
    assert data["json"] == {"since": AT, "later": ["2026-11-25T07:30:15.123Z"], "dotted.key": AT}
    assert data["meta"] == {"values": {"since": ["Date"], "later.0": ["Date"], "dotted\\.key": ["Date"]}, "v": 1}


async def test_an_error_has_the_section_7_envelope_and_its_http_status(client: httpx.AsyncClient) -> None:
    answer = await client.get("/vault.open")
    assert answer.status_code == 401
    assert answer.json() == error("Sign in first", -32001, "UNAUTHORIZED", 401, "vault.open")


async def test_the_rate_limit_is_code_minus_32600_with_429_and_the_seconds_to_wait(client: httpx.AsyncClient) -> None:
    answer = await client.post("/limits.hit", json=UNDEFINED)
    assert answer.status_code == 429
    assert answer.headers["retry-after"] == "42"
    assert answer.json() == error(
        "Too many attempts; retry in 42 seconds", -32600, "TOO_MANY_REQUESTS", 429, "limits.hit"
    )


async def test_an_unknown_procedure_is_not_found(client: httpx.AsyncClient) -> None:
    answer = await client.get("/nothing.here")
    assert answer.status_code == 404
    assert answer.json() == error('No procedure "nothing.here"', -32004, "NOT_FOUND", 404, "nothing.here")


async def test_a_query_is_not_posted_and_a_mutation_not_fetched(client: httpx.AsyncClient) -> None:
    fetched = await client.get("/counter.add?" + query({"json": {"by": 1}}))
    posted = await client.post("/greeting.hello", json={"json": {"name": "Ada"}})
    assert (fetched.status_code, posted.status_code) == (405, 405)
    assert fetched.json()["error"]["json"]["data"]["code"] == "METHOD_NOT_SUPPORTED"
    assert "use POST" in fetched.json()["error"]["json"]["message"]
    assert "use GET" in posted.json()["error"]["json"]["message"]


async def test_a_query_input_may_be_the_plain_json_of_the_input_as_section_4_1_says(client: httpx.AsyncClient) -> None:
    plain = await client.get("/greeting.hello?" + query({"name": "Ada"}))
    wrapped = await client.get("/greeting.hello?" + query({"json": {"name": "Ada"}}))
    assert plain.status_code == wrapped.status_code == 200, plain.text
    assert plain.json() == wrapped.json()


async def test_a_mutation_body_must_be_superjson(client: httpx.AsyncClient) -> None:
    answer = await client.post("/counter.add", json={"by": 1})
    assert answer.status_code == 400
    assert "superjson" in answer.json()["error"]["json"]["message"]


@pytest.mark.parametrize(
    ("given", "code", "says"),
    [
        ({"json": {"name": ""}}, "BAD_REQUEST", "name"),
        ({"json": {"name": "x" * 21}}, "BAD_REQUEST", "name"),
        ({"json": {"name": "Ada", "extra": 1}}, "BAD_REQUEST", "extra"),
        ({"json": {}}, "BAD_REQUEST", "name"),
        ({"json": {"name": "Ada"}, "meta": {"values": {"name": ["map", {}]}, "v": 1}}, "BAD_REQUEST", "'map'"),
        ({"json": {"name": "Ada"}, "meta": {"values": {"nick": ["undefined"]}, "v": 1}}, "BAD_REQUEST", "nick"),
    ],
)
async def test_invalid_input_is_bad_request_naming_what_is_wrong(
    client: httpx.AsyncClient, given: Any, code: str, says: str
) -> None:
    answer = await client.get("/greeting.hello?" + query(given))
    assert answer.status_code == 400
    body = answer.json()["error"]["json"]
    assert (body["code"], body["data"]["code"]) == (-32600, code)
    assert says in body["message"]


async def test_input_that_is_not_json_is_a_parse_error(client: httpx.AsyncClient) -> None:
    answer = await client.get("/greeting.hello?input=" + quote("{not json"))
    assert answer.status_code == 400
    assert answer.json()["error"]["json"]["code"] == -32700
    assert answer.json()["error"]["json"]["data"]["code"] == "PARSE_ERROR"


async def test_a_failing_procedure_is_an_internal_error_that_shows_nothing_of_it(client: httpx.AsyncClient) -> None:
    answer = await client.get("/broken.boom")
    assert answer.status_code == 500
    assert answer.json()["error"]["json"]["data"]["code"] == "INTERNAL_SERVER_ERROR"
    assert "secret" not in answer.text


async def test_a_batch_answers_one_result_each_in_order(client: httpx.AsyncClient) -> None:
    inputs = {"0": {"json": {"name": "a"}}, "1": UNDEFINED, "2": {"json": {"name": "c", "shout": True}}}
    answer = await client.get("/greeting.hello,clock.now,greeting.hello?batch=1&" + query(inputs))
    assert answer.status_code == 200
    results = [item["result"]["data"]["json"] for item in answer.json()]
    assert results == [{"text": "hello a", "at": AT}, {"at": AT, "zone": "UTC"}, {"text": "HELLO C", "at": AT}]


async def test_a_batch_with_an_error_is_207_with_the_error_in_its_place(client: httpx.AsyncClient) -> None:
    answer = await client.get("/clock.now,vault.open?batch=1")
    assert answer.status_code == 207
    first, second = answer.json()
    assert first["result"]["data"]["json"]["zone"] == "UTC"
    assert second == error("Sign in first", -32001, "UNAUTHORIZED", 401, "vault.open")


async def test_a_batch_of_mutations_runs_them_in_order(client: httpx.AsyncClient) -> None:
    answer = await client.post(
        "/counter.add,counter.add?batch=1", json={"0": {"json": {"by": 2}}, "1": {"json": {"by": 5}}}
    )
    assert answer.status_code == 200
    assert [item["result"]["data"]["json"]["total"] for item in answer.json()] == [2, 7]


async def test_a_batch_too_long_or_keyed_wrongly_is_refused_for_every_call(client: httpx.AsyncClient) -> None:
    names = ",".join(["clock.now"] * (MAX_BATCH + 1))
    too_long = await client.get(f"/{names}?batch=1")
    assert too_long.status_code == 400
    assert len(too_long.json()) == MAX_BATCH + 1
    assert f"at most {MAX_BATCH}" in too_long.json()[0]["error"]["json"]["message"]
    keyed = await client.get("/clock.now?batch=1&" + query([{"json": None}]))
    assert keyed.status_code == 400
    assert "keyed by call index" in keyed.json()[0]["error"]["json"]["message"]


async def test_an_oversized_mutation_body_is_payload_too_large(client: httpx.AsyncClient) -> None:
    answer = await client.post("/counter.add", json={"json": {"by": 1, "padding": "x" * 8000}})
    assert answer.status_code == 413
    assert answer.json()["error"]["json"]["data"]["code"] == "PAYLOAD_TOO_LARGE"


def test_a_date_at_the_root_is_annotated_at_the_root() -> None:
    assert serialize(MOMENT) == {"json": AT, "meta": {"values": ["Date"], "v": 1}}
    assert serialize({"a": 1}) == {"json": {"a": 1}}
