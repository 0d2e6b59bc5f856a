"""What an operator relies on: health and readiness, Prometheus metrics, request ids, the OpenAPI document, and
logs that never carry an API key."""

from __future__ import annotations

import io
import json
import logging
import re
import uuid
from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager

import httpx
import pytest
import structlog
import swagger_ui_bundle
from prometheus_client import CONTENT_TYPE_LATEST
from prometheus_client.parser import text_string_to_metric_families

from signalyard import logs
from tests.conftest import logging_restored
from tests.contract.phone.helpers import assert_error, assert_result, assert_uuid, person
from tests.integration.faults import ledger_refused
from tests.phone_stack import Stack

Samples = list[tuple[str, dict[str, str], float]]


async def samples(client: httpx.AsyncClient) -> Samples:
    response = await client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    return [
        (sample.name, dict(sample.labels), sample.value)
        for family in text_string_to_metric_families(response.text)
        for sample in family.samples
    ]


async def test_the_metrics_content_type_is_prometheus_text_with_one_charset(stack: Stack) -> None:
    response = await stack.client.get("/metrics")
    assert response.headers["content-type"] == CONTENT_TYPE_LATEST
    assert response.headers["content-type"].count("charset") == 1


async def test_the_docs_page_works_offline_from_assets_the_gateway_serves(stack: Stack) -> None:
    """/docs references no other host (a CDN would fail offline and change under us); every asset it loads is served
    by the gateway itself, without a key."""
    page = await stack.client.get("/docs")
    assert page.status_code == 200
    assert "text/html" in page.headers["content-type"]
    assert not re.findall(r"(?:src|href)=[\"']https?://", page.text), page.text
    assets = re.findall(r"(?:src|href)=[\"'](/docs-assets/[^\"']+)", page.text)
    assert {asset.rsplit("/", 1)[1] for asset in assets} >= {
        "swagger-ui-bundle.js",
        "swagger-ui.css",
        "swagger-ui-standalone-preset.js",
    }
    for asset in assets:
        served = await stack.client.get(asset)
        assert served.status_code == 200, asset
        assert served.content == (swagger_ui_bundle.swagger_ui_path / asset.rsplit("/", 1)[1]).read_bytes()


def value(found: Samples, name: str, **labels: str) -> float:
    return sum(v for n, lab, v in found if n == name and labels.items() <= lab.items())


# ------------------------------------------------------------------------------------------- health and readiness


async def test_healthz_answers_200(stack: Stack) -> None:
    response = await stack.client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


async def test_readyz_answers_200_naming_its_checks(stack: Stack) -> None:
    response = await stack.client.get("/readyz")
    assert response.status_code == 200, response.text
    assert response.json() == {"status": "ok", "checks": ["broker", "database", "rate_limit_store"]}


async def test_readyz_is_503_naming_an_unreachable_rate_limit_store(
    gateway_only: Callable[..., AbstractAsyncContextManager[Stack]],
) -> None:
    async with gateway_only(redis_url="redis://127.0.0.1:1") as gateway:
        response = await gateway.client.get("/readyz")
        assert response.status_code == 503, response.text
        body = response.json()
        assert body["status"] == "unavailable"
        assert set(body["failing"]) == {"rate_limit_store"}

        healthy = await gateway.client.get("/healthz")  # the process itself is fine
        assert healthy.status_code == 200

        tenant = await gateway.new_tenant()  # and with no rate limit store, requests are refused, not unmetered
        assert_error(await gateway.verify(tenant.test_key, person()), 503, "enforcement_unavailable")


# ---------------------------------------------------------------------------------------------------- metrics


async def test_metrics_count_requests_by_route_template_and_status(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    before = await samples(stack.client)
    body = assert_result(await stack.verify(tenant.test_key, person("+14155550100")))
    assert_error(await stack.verify("sy_test_" + "0" * 40, person("+14155550100")), 401, "unauthorized")
    fetched = await stack.get(tenant.test_key, f"/v1/requests/{body['request_id']}")
    assert fetched.status_code == 200
    after = await samples(stack.client)

    name = "signalyard_http_requests_total"
    for status in ("200", "401"):
        grew = value(after, name, service="phone", route="/v1/verify", status=status) - value(
            before, name, service="phone", route="/v1/verify", status=status
        )
        assert grew >= 1, (status, [s for s in after if s[0] == name])
    routes = {labels["route"] for n, labels, _ in after if n == name}
    assert any(route.startswith("/v1/requests/{") for route in routes), routes
    assert not any(body["request_id"] in route for route in routes), "a request id became a label value"
    assert value(after, "signalyard_http_request_seconds_count", service="phone", route="/v1/verify") >= 2


async def test_metrics_expose_the_processor_gauges_and_counters(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    assert_result(await stack.verify(tenant.test_key, person("+14155550100")))
    found = await samples(stack.client)
    names = {name for name, _, _ in found}

    assert value(found, "signalyard_processed_total", service="phone", outcome="completed") >= 1
    assert "signalyard_outbox_pending" in names
    lag = [labels for name, labels, _ in found if name == "signalyard_consumer_lag" and labels["service"] == "phone"]
    assert lag, sorted(n for n in names if n.startswith("signalyard"))
    assert all(labels["partition"].isdigit() for labels in lag)
    assert stack.topics.requested in {labels["topic"] for labels in lag}


# ------------------------------------------------------------------------------------------------- request ids


async def test_every_response_carries_a_request_id(stack: Stack) -> None:
    tenant = await stack.new_tenant()
    headers = {"Authorization": f"Bearer {tenant.test_key}"}
    responses = [
        await stack.client.get("/healthz"),
        await stack.client.get("/readyz"),
        await stack.client.get("/metrics"),
        await stack.client.get("/docs/openapi.json"),
        await stack.verify(tenant.test_key, person("+14155550100")),
        await stack.verify(tenant.test_key, person("+14155550100"), idempotency_key=None),
        await stack.verify(tenant.test_key, {"phone": "+14155550100"}),
        await stack.verify(tenant.test_key, person("+442079460958")),
        await stack.client.post("/v1/verify", json=person()),
        await stack.client.get("/v1/usage", headers=headers),
        await stack.client.get(f"/v1/requests/{uuid.uuid4()}", headers=headers),
        await stack.client.get("/v1/verify", headers=headers),
        await stack.client.get("/v1/no-such-route", headers=headers),
        await stack.client.get("/no-such-route"),
    ]
    assert sorted({r.status_code for r in responses}) == [200, 400, 401, 404, 405, 422]
    missing = [
        (response.request.method, response.request.url.path, response.status_code)
        for response in responses
        if "x-request-id" not in response.headers
    ]
    assert not missing, f"responses without X-Request-Id: {missing}"
    ids = [response.headers["x-request-id"] for response in responses]
    for request_id in ids:
        assert_uuid(request_id)
    assert len(set(ids)) == len(ids)


# ----------------------------------------------------------------------------------------------------- OpenAPI


async def test_the_openapi_document_lists_the_three_operations_and_bearer_auth(stack: Stack) -> None:
    response = await stack.client.get("/docs/openapi.json")
    assert response.status_code == 200
    document = response.json()
    assert document["openapi"].startswith("3.")
    operations = {
        (path, method): operation.get("operationId")
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if method in ("get", "post", "put", "patch", "delete")
    }
    assert operations == {
        ("/v1/verify", "post"): "verify",
        ("/v1/requests/{request_id}", "get"): "getRequest",
        ("/v1/usage", "get"): "getUsage",
    }
    scheme = document["components"]["securitySchemes"]["bearer"]
    assert (scheme["type"], scheme["scheme"]) == ("http", "bearer")
    assert document["security"] == [{"bearer": []}]
    verify = document["paths"]["/v1/verify"]["post"]
    assert {"200", "202", "401", "422", "429"} <= set(verify["responses"])


# --------------------------------------------------------------------------------------------------------- logs


@pytest.fixture
def captured_logs() -> Iterator[io.StringIO]:
    """Every log line written while the test runs, at level info, exactly as `signalyard.logs.configure` renders
    them (our structlog events and the libraries' standard-library records alike)."""
    with logging_restored():
        logs.configure("info")
        stream = io.StringIO()
        capture = logging.StreamHandler(stream)
        capture.setFormatter(logging.getLogger().handlers[0].formatter)
        logging.getLogger().addHandler(capture)
        yield stream


def events(stream: io.StringIO) -> list[dict[str, object]]:
    found = []
    for line in stream.getvalue().splitlines():
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict) and "event" in event:
            found.append(event)
    return found


async def test_no_api_key_appears_in_any_log_line(
    stack: Stack,
    gateway_only: Callable[..., AbstractAsyncContextManager[Stack]],
    captured_logs: io.StringIO,
) -> None:
    tenant = await stack.new_tenant()
    keys = [tenant.test_key, tenant.live_key]

    # The processor logs an exception when the ledger cannot be written.
    async with ledger_refused(stack, tenant.id):
        held = await stack.verify(tenant.test_key, person("+14155550100"))
    assert_error(held, 503, "ledger_unavailable")

    # The gateway logs an exception, inside the request that carries the key, when the broker does not acknowledge.
    async with gateway_only(publish_timeout_s=0.000001) as slow:
        accepted = await slow.verify(tenant.test_key, person("+14155550101"))
        assert accepted.status_code == 202, accepted.text
        # and a refused key on the way
        assert_error(await slow.verify(tenant.test_key[:-1] + "x", person()), 401, "unauthorized")

    logged = events(captured_logs)
    names = {event["event"] for event in logged}
    assert {"ledger_write_failed", "publish_failed"} <= names, names
    publish_failed = next(event for event in logged if event["event"] == "publish_failed")
    assert publish_failed["request_id"] == accepted.json()["request_id"]  # the request's context is bound
    assert "http_request_id" in publish_failed

    output = captured_logs.getvalue()
    assert output.strip()
    for line in output.splitlines():
        for key in [*keys, tenant.test_key[:-1] + "x"]:
            assert key not in line, line
            assert key[len("sy_test_") :] not in line, line
        assert "Bearer" not in line, line


def test_drop_secrets_redacts_fields_named_like_secrets() -> None:
    event = {
        "event": "something",
        "authorization": "Bearer sy_test_" + "a" * 40,
        "key": "sy_live_" + "b" * 40,
        "token": "t0k3n",
        "api_key": "sy_test_" + "c" * 40,
        "password": "hunter2",
        "secret": "s",
        "tenant_id": "kept",
    }
    redacted = logs._drop_secrets(None, "info", dict(event))
    for name in ("authorization", "key", "token", "api_key", "password", "secret"):
        assert redacted[name] == "[redacted]"
    assert redacted["event"] == "something"
    assert redacted["tenant_id"] == "kept"
    assert logs._drop_secrets(None, "info", {"event": "plain"}) == {"event": "plain"}


def test_configured_logs_render_redacted_json(captured_logs: io.StringIO) -> None:
    key = "sy_test_" + "d" * 40
    structlog.get_logger().warning("auth_probe", authorization=f"Bearer {key}", key=key, token=key, tenant_id="t-1")
    (line,) = [line for line in captured_logs.getvalue().splitlines() if "auth_probe" in line]
    assert key not in line
    event = json.loads(line)
    assert event["event"] == "auth_probe"
    assert event["level"] == "warning"
    assert event["authorization"] == event["key"] == event["token"] == "[redacted]"
    assert event["tenant_id"] == "t-1"
    assert event["timestamp"].endswith("Z")
