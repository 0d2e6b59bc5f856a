"""Sections 2.3, 4.3, 5 and 8: both body forms, the type decided from the bytes, the 10 MB limit, unknown policies and
missing fields, a missing or invalid key, X-Request-Id on every answer, idempotency per route, account and environment
and the Idempotency-Key's format, the signed image URL, and the verdicts of a compliant portrait and a blank image
with the checks behind them."""

from __future__ import annotations

import asyncio
import base64
import io
import uuid
from typing import Any

import pytest
from PIL import Image

from storage.photo import customers
from tests.photo_stack import CustomerKeys, PhotoStack, jpeg
from tests.unit import photos

VERIFICATION_FIELDS = {
    "id", "status", "is_compliant", "confidence", "policy", "category", "violation_reasons", "feedback", "image_url",
}  # fmt: skip


def encoded(kind: str, size: tuple[int, int] = (600, 600)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, (235, 235, 235)).save(out, kind)
    return out.getvalue()


def assert_verification(body: dict, policy: str) -> None:
    assert set(body) >= VERIFICATION_FIELDS
    assert body["id"].startswith("ver_")
    assert body["status"] == "completed"
    assert isinstance(body["is_compliant"], bool)
    assert 0 <= body["confidence"] <= 1
    assert body["policy"] == policy
    assert isinstance(body["category"], str)
    assert body["category"]
    assert isinstance(body["violation_reasons"], list)
    assert body["feedback"]
    assert body["image_url"].startswith("http")


@pytest.mark.parametrize("policy", ["us_passport", "icao", "profile_photo"])
async def test_multipart_upload_answers_the_verification(photo_stack: PhotoStack, customer: CustomerKeys, policy):
    response = await photo_stack.verify(customer.test_key, jpeg(), policy)
    assert response.status_code == 200, response.text
    assert_verification(response.json(), policy)
    assert response.json()["is_compliant"] is False  # a blank image has no face
    assert "no_face" in response.json()["violation_reasons"]


async def test_json_body_with_raw_base64(photo_stack: PhotoStack, customer: CustomerKeys) -> None:
    response = await photo_stack.verify(customer.test_key, jpeg(), "icao", as_json=True, metadata={"order": 7})
    assert response.status_code == 200, response.text
    assert_verification(response.json(), "icao")
    assert response.json()["metadata"] == {"order": 7}


async def test_json_body_with_a_data_url(photo_stack: PhotoStack, customer: CustomerKeys) -> None:
    data_url = "data:image/jpeg;base64," + base64.b64encode(jpeg()).decode()
    response = await photo_stack.client.post(
        "/v1/verify", json={"image": data_url, "policy": "icao"}, headers={"X-API-Key": customer.test_key}
    )
    assert response.status_code == 200, response.text


@pytest.mark.parametrize(("kind", "media_type"), [("PNG", "image/png"), ("WEBP", "image/webp"), ("JPEG", "image/jpeg")])
async def test_the_type_is_decided_from_the_bytes(photo_stack: PhotoStack, customer: CustomerKeys, kind, media_type):
    """Every image is declared a JPEG named .jpg; the bytes decide, and the image is served back as what it is."""
    image = encoded(kind)
    response = await photo_stack.verify(customer.test_key, image, declared_type="image/jpeg")
    assert response.status_code == 200, response.text
    served = await photo_stack.client.get(response.json()["image_url"])
    assert served.status_code == 200
    assert served.content == image
    assert served.headers["content-type"] == media_type


@pytest.mark.parametrize(
    "image",
    [encoded("GIF"), encoded("BMP"), b"%PDF-1.7 not an image", b"\xff\xd8\xff\xe0 truncated jpeg header"],
    ids=["gif", "bmp", "pdf", "broken-jpeg"],
)
async def test_other_types_are_400_whatever_they_are_declared(photo_stack, customer: CustomerKeys, image: bytes):
    response = await photo_stack.verify(customer.test_key, image, declared_type="image/png")
    assert response.status_code == 400
    assert response.json() == {"error": "Image type not supported: send a JPEG, PNG or WebP image"}


def padded(size: int) -> bytes:
    """A valid JPEG of exactly `size` bytes (data after the end marker is ignored by decoders)."""
    image = jpeg()
    return image + b"\0" * (size - len(image))


@pytest.mark.parametrize("as_json", [False, True], ids=["multipart", "json"])
async def test_an_image_of_10_mb_is_accepted(photo_stack: PhotoStack, customer: CustomerKeys, as_json: bool) -> None:
    response = await photo_stack.verify(customer.test_key, padded(10 * 1024 * 1024), as_json=as_json)
    assert response.status_code == 200, response.text


@pytest.mark.parametrize("as_json", [False, True], ids=["multipart", "json"])
async def test_an_image_over_10_mb_is_400(photo_stack: PhotoStack, customer: CustomerKeys, as_json: bool) -> None:
    response = await photo_stack.verify(customer.test_key, padded(10 * 1024 * 1024 + 1), as_json=as_json)
    assert response.status_code == 400
    assert response.json() == {"error": "Image too large: the limit is 10 MB"}


async def test_a_huge_upload_is_refused_before_it_is_read(photo_stack: PhotoStack, customer: CustomerKeys) -> None:
    """A declared length over the limit is answered at once: the client has sent only the headers."""
    host, port = photo_stack.base_url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    writer.write(
        (
            f"POST /v1/verify HTTP/1.1\r\nHost: {host}\r\nX-API-Key: {customer.test_key}\r\n"
            f"Content-Type: multipart/form-data; boundary=b\r\nContent-Length: {200 * 1024 * 1024}\r\n\r\n"
        ).encode()
    )
    await writer.drain()
    head = await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 10)
    writer.close()
    assert head.startswith(b"HTTP/1.1 400 ")
    assert b"x-request-id: req_" in head.lower()


async def test_huge_dimensions_are_400(photo_stack: PhotoStack, customer: CustomerKeys) -> None:
    response = await photo_stack.verify(customer.test_key, encoded("PNG", (8000, 8000)))
    assert response.status_code == 400
    assert "dimensions" in response.json()["error"]


async def test_unknown_policy_is_400(photo_stack: PhotoStack, customer: CustomerKeys) -> None:
    for as_json in (False, True):
        response = await photo_stack.verify(customer.test_key, jpeg(), "drivers_license", as_json=as_json)
        assert response.status_code == 400
        assert response.json() == {
            "error": "Unknown policy 'drivers_license': use one of us_passport, icao, profile_photo"
        }


async def test_missing_fields_are_400(photo_stack: PhotoStack, customer: CustomerKeys) -> None:
    headers = {"X-API-Key": customer.test_key}
    cases: list[tuple[dict[str, Any], str]] = [
        ({"data": {"policy": "icao"}, "files": {"other": ("a", b"x")}}, "Missing field: image"),
        ({"files": {"image": ("a.jpg", jpeg(), "image/jpeg")}}, "Missing field: policy"),
        ({"json": {"policy": "icao"}}, "Missing field: image"),
        ({"json": {"image": base64.b64encode(jpeg()).decode()}}, "Missing field: policy"),
    ]
    for kwargs, message in cases:
        response = await photo_stack.client.post("/v1/verify", headers=headers, **kwargs)
        assert response.status_code == 400, kwargs
        assert response.json() == {"error": message}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"content": b"{not json", "headers": {"Content-Type": "application/json"}}, "not valid JSON"),
        ({"json": {"image": "@@@", "policy": "icao"}}, "not valid base64"),
        ({"json": {"image": "data:text/plain;base64,AAAA", "policy": "icao"}}, "data URL"),
        ({"json": {"image": 5, "policy": "icao"}}, "image"),
        ({"json": {"image": "AAAA", "policy": "icao", "metadata": [1]}}, "metadata"),
        ({"content": b"image", "headers": {"Content-Type": "text/plain"}}, "multipart/form-data"),
    ],
)
async def test_malformed_bodies_are_400(photo_stack: PhotoStack, customer: CustomerKeys, kwargs, message: str):
    kwargs = dict(kwargs)  # the parametrized dict is shared by every database's run
    headers = {"X-API-Key": customer.test_key, **kwargs.pop("headers", {})}
    response = await photo_stack.client.post("/v1/verify", headers=headers, **kwargs)
    assert response.status_code == 400
    assert message in response.json()["error"]


@pytest.mark.parametrize(
    ("key", "message"),
    [
        (None, "Missing API key: send it in the X-API-Key header"),
        ("", "Missing API key: send it in the X-API-Key header"),
        ("pc_live_0000000000000000000000000000000000000000", "Invalid API key"),
        ("pc_test_0000000000000000000000000000000000000000", "Invalid API key"),
        ("not-a-key", "Invalid API key"),
    ],
)
async def test_verify_without_a_valid_key_is_401(photo_stack: PhotoStack, key: str | None, message: str) -> None:
    response = await photo_stack.verify(key, jpeg())
    assert response.status_code == 401
    assert response.json() == {"error": message}


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "/v1/verify"), ("GET", "/api/v1/api-keys"), ("GET", "/nowhere"), ("GET", "/v1/images/ver_x")],
)
async def test_every_answer_carries_a_request_id(photo_stack: PhotoStack, customer: CustomerKeys, method, path):
    for key in (None, customer.test_key):
        response = await photo_stack.call(key, method, path)
        assert response.headers["x-request-id"].startswith("req_")
        assert len(response.headers["x-request-id"]) > 8
    assert (await photo_stack.verify(customer.test_key, jpeg())).headers["x-request-id"].startswith("req_")


async def test_same_idempotency_key_and_body_replays_without_rerunning(photo_stack, customer: CustomerKeys) -> None:
    image = jpeg(colour=(200, 210, 220))
    first = await photo_stack.verify(customer.live_key, image, idempotency_key="retry-1")
    again = await photo_stack.verify(customer.live_key, image, idempotency_key="retry-1")
    as_json = await photo_stack.verify(customer.live_key, image, idempotency_key="retry-1", as_json=True)
    assert first.status_code == again.status_code == as_json.status_code == 200
    assert first.json()["id"] == again.json()["id"] == as_json.json()["id"]
    assert first.json()["completed_at"] == again.json()["completed_at"]  # judged once
    assert first.headers["x-request-id"] != again.headers["x-request-id"]
    used = await photo_stack.db.read(customers.usage, customer.id, customers.month_of(_now()))
    assert used == 1  # billed once


async def test_same_idempotency_key_with_another_body_is_422(photo_stack: PhotoStack, customer: CustomerKeys):
    await photo_stack.verify(customer.test_key, jpeg(), "icao", idempotency_key="k-422")
    for image, policy in ((jpeg(colour=(1, 2, 3)), "icao"), (jpeg(), "us_passport")):
        response = await photo_stack.verify(customer.test_key, image, policy, idempotency_key="k-422")
        assert response.status_code == 422
        assert response.json() == {"error": "Idempotency-Key reused with a different request body"}


async def test_idempotency_keys_are_per_account(photo_stack: PhotoStack, customer: CustomerKeys) -> None:
    other = await photo_stack.new_customer()
    key = f"shared-{uuid.uuid4()}"
    mine = await photo_stack.verify(customer.test_key, jpeg(), idempotency_key=key)
    theirs = await photo_stack.verify(other.test_key, jpeg(colour=(9, 9, 9)), idempotency_key=key)
    assert mine.status_code == theirs.status_code == 200
    assert mine.json()["id"] != theirs.json()["id"]


async def test_idempotency_keys_are_per_environment(photo_stack: PhotoStack, customer: CustomerKeys) -> None:
    key = f"shared-{uuid.uuid4()}"
    sandbox = await photo_stack.verify(customer.test_key, jpeg(), idempotency_key=key)
    live = await photo_stack.verify(customer.live_key, jpeg(), idempotency_key=key)
    assert sandbox.status_code == live.status_code == 200
    assert sandbox.json()["id"] != live.json()["id"]
    assert (sandbox.json()["environment"], live.json()["environment"]) == ("test", "live")


@pytest.mark.parametrize(
    "idempotency_key", ["k" * 256, "", "retry\t1", "café".encode()], ids=["256", "empty", "tab", "utf8"]
)
async def test_a_malformed_idempotency_key_is_400(photo_stack: PhotoStack, customer: CustomerKeys, idempotency_key):
    headers = {"X-API-Key": customer.test_key, "Idempotency-Key": idempotency_key}
    body = {"image": base64.b64encode(jpeg()).decode(), "policy": "icao"}
    response = await photo_stack.client.post("/v1/verify", json=body, headers=headers)
    assert response.status_code == 400
    assert response.json() == {"error": "Idempotency-Key must be 1 to 255 printable characters"}


async def test_an_idempotency_key_of_255_printable_characters_is_accepted(photo_stack, customer: CustomerKeys):
    key = ("a !~" + uuid.uuid4().hex * 8)[:255]
    assert len(key) == 255
    first = await photo_stack.verify(customer.test_key, jpeg(), idempotency_key=key)
    again = await photo_stack.verify(customer.test_key, jpeg(), idempotency_key=key)
    assert first.status_code == again.status_code == 200
    assert first.json()["id"] == again.json()["id"]


async def test_without_an_idempotency_key_each_call_is_new(photo_stack: PhotoStack, customer: CustomerKeys) -> None:
    first = await photo_stack.verify(customer.test_key, jpeg())
    second = await photo_stack.verify(customer.test_key, jpeg())
    assert first.json()["id"] != second.json()["id"]


async def test_image_url_is_signed_and_expiring(photo_stack: PhotoStack, customer: CustomerKeys) -> None:
    image = jpeg(colour=(120, 130, 140))
    url = (await photo_stack.verify(customer.test_key, image)).json()["image_url"]
    assert (await photo_stack.client.get(url)).content == image
    base, _, query = url.partition("?")
    params = dict(part.split("=") for part in query.split("&"))
    tampered = f"{base}?expires={int(params['expires']) + 1}&signature={params['signature']}"
    expired = f"{base}?expires=1000&signature={params['signature']}"
    for bad, message in ((tampered, "signature is not valid"), (expired, "signature is not valid"), (base, "signed")):
        response = await photo_stack.client.get(bad)
        assert response.status_code == 403
        assert message in response.json()["error"]


async def test_a_compliant_passport_photo(photo_stack: PhotoStack, customer: CustomerKeys) -> None:
    image = photos.encode(photos.us_passport_image())
    response = await photo_stack.verify(customer.test_key, image, "us_passport")
    assert response.status_code == 200, response.text
    body = response.json()
    assert_verification(body, "us_passport")
    assert (body["is_compliant"], body["category"], body["violation_reasons"]) == (True, "compliant", [])
    assert body["feedback"] == "The photo meets every check of the US passport policy."
    checks = {check["code"]: check for check in body["checks"]}
    assert all(check["passed"] for check in checks.values())
    assert (checks["image_too_small"]["measured"], checks["image_too_small"]["threshold"]) == (600, ">= 600 px")
    assert (checks["no_face"]["measured"], checks["multiple_faces"]["measured"]) == (1, 1)
    head = checks["head_too_small"]
    assert 0.5 <= head["measured"] <= 0.69
    assert head["threshold"] == ">= 0.5 of image height"


async def test_a_blank_image_is_categorised_no_face(photo_stack: PhotoStack, customer: CustomerKeys) -> None:
    """A grey blank image fails `grayscale` (quality) too, but what to fix first is the missing face."""
    body = (await photo_stack.verify(customer.test_key, jpeg(), "us_passport")).json()
    assert (body["is_compliant"], body["category"]) == (False, "no_face")
    assert body["violation_reasons"] == ["grayscale", "no_face"]
    assert body["feedback"] == (
        "The photo is black and white; please submit a colour photo. "
        "No face could be found; please take a photo that shows your face clearly."
    )
    assert {check["code"]: check["measured"] for check in body["checks"]}["no_face"] == 0


def _now():
    from datetime import UTC, datetime

    return datetime.now(UTC)


async def test_the_image_url_route_is_documented_keyless_with_its_signature_required(photo_stack: PhotoStack) -> None:
    document = (await photo_stack.client.get("/docs/openapi.json")).json()
    image = document["paths"]["/v1/images/{verification_id}"]["get"]
    assert image["security"] == []
    query = {parameter["name"]: parameter for parameter in image["parameters"] if parameter["in"] == "query"}
    assert (query["expires"]["required"], query["signature"]["required"]) == (True, True)
    assert document["security"] == [{"apiKey": []}]  # every other route needs the key
