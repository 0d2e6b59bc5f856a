"""The shared webhook endpoint routes (gateway/common/webhooks.py) served over HTTP with the helpdesk's profile, which
offers every operation photo does not (update, test) and takes an optional secret and http targets: a key's scopes,
create, list, update, delete and a test delivery that reaches a real receiver as the helpdesk's contract says.

The helpdesk's gateway comes with the service; here the routes sit in an app of their own, made by the same factory
as every gateway, behind a real key look-up in the key store. Every test uses a service name of its own."""

from __future__ import annotations

import asyncio
import dataclasses
import uuid
from collections.abc import AsyncIterator, Iterator
from datetime import datetime
from typing import Any, cast

import httpx
import msgspec
import pytest
from cryptography.fernet import Fernet, MultiFernet
from litestar.connection import ASGIConnection
from sqlalchemy.engine import Connection

from gateway.common.app import ApiDocument, GatewayApp
from gateway.common.auth import KeyAuthenticator, KeyHeader, Principal, Refusal, Scopes
from gateway.common.errors import ServiceError, exception_handlers, field_of, readable
from gateway.common.openapi import error_responses
from gateway.common.webhooks import EndpointRoutes, endpoint_routes
from operations.common.webhooks import Endpoints, Trial, Words
from processors.common.webhooks import WebhookDeliverer
from storage.common import keys
from storage.common.db import Database
from storage.common.webhooks.endpoints import Endpoint
from tests.peers.receiver import WebhookReceiver, verify_helpdesk
from topics import helpdesk
from wire.timestamps import iso

KEY_HEADER = KeyHeader("Authorization", scheme="bearer", prefixes=("hd_live_",))


class Error(msgspec.Struct):
    code: str
    message: str


class Envelope(msgspec.Struct):
    error: Error


class RestError(ServiceError):
    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(status, Envelope(Error(code, message)), message)


class Errors:
    """The helpdesk REST envelope `{"error": {"code", "message"}}`, as its decisions say."""

    def not_found(self) -> RestError:
        return RestError(404, "not_found", "no such resource")

    def method_not_allowed(self, method: str, allowed: Any) -> RestError:
        error = RestError(405, "method_not_allowed", f"method {method} is not allowed here")
        error.headers.update(allowed)
        return error

    def bad_request(self, status: int, message: str, details: Any = None) -> RestError:
        return RestError(status, "bad_request", message)

    def invalid_body(self, message: str) -> RestError:
        return RestError(
            400, "bad_request", readable(message) + (f" ({field_of(message)})" if field_of(message) else "")
        )

    def not_json(self, message: str) -> RestError:
        return RestError(400, "bad_request", f"the body is not JSON: {message}")

    def internal(self) -> RestError:
        return RestError(500, "internal_error", "an internal error occurred")


def refused(status: int, message: str) -> RestError:
    """An operation's refusal (operations.common.webhooks) in the envelope."""
    return RestError(status, {400: "bad_request", 404: "not_found", 409: "conflict"}[status], message)


WORDS = Words(
    not_found="no such resource", limit_reached="at most {limit} webhooks", inactive="the webhook is disabled"
)


class CreateBody(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    url: str
    events: list[str]
    secret: str | None = None
    enabled: bool = True


class UpdateBody(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    events: list[str] | None = None
    enabled: bool | None = None


class Shown(msgspec.Struct, kw_only=True):
    id: str
    url: str
    events: list[str]
    enabled: bool
    status: str
    has_secret: bool
    created_at: str


class Listed(msgspec.Struct):
    data: list[Shown]


class Deleted(msgspec.Struct):
    id: str
    deleted: bool


class Sent(msgspec.Struct):
    id: str
    event_id: str
    status: int | None


def sent(tested: Trial) -> Sent:
    return Sent(tested.endpoint_id, tested.event_id, tested.outcome.status_code if tested.outcome else None)


def shown(endpoint: Endpoint) -> Shown:
    return Shown(
        id=endpoint.id,
        url=endpoint.url,
        events=endpoint.events,
        enabled=endpoint.enabled,
        status=endpoint.status,
        has_secret=endpoint.has_secret,
        created_at=iso(endpoint.created_at),
    )


class Authenticator:
    """A real key look-up in the key store; the key's scopes are the principal's."""

    def __init__(self, db: Database, service: str) -> None:
        self.service = service
        self.keys = KeyAuthenticator(db, KEY_HEADER, self._owners, self._refuse)

    def _owners(self, connection: Connection, hashes: list[str], now: datetime) -> dict[str, Any]:
        rows = connection.execute(keys.usable_keys(self.service), {"hashes": hashes, "now": now})
        return {row.key_hash: row for row in rows}

    @staticmethod
    def _refuse(reason: Refusal) -> RestError:
        return RestError(503 if reason == "unavailable" else 401, "unauthorized", reason)

    async def authenticate(self, connection: ASGIConnection[Any, Any, Any, Any]) -> Principal[Any]:
        row = await self.keys.owner(connection.headers)
        return Principal(row.owner_id, row.environment, Scopes(row.scopes), "bearer", row.id, row)

    def forbidden(self, principal: Principal[Any], scope: str) -> RestError:
        return RestError(403, "forbidden", f"the key lacks {scope}")

    async def admit(self, principal: Principal[Any]) -> None:
        return None


@dataclasses.dataclass
class Api:
    """One test's helpdesk-like API over HTTP, with its own service name, owner and receiver paths."""

    db: Database
    receiver: WebhookReceiver
    client: httpx.AsyncClient
    cipher: MultiFernet
    profile: Any
    owner: str

    async def key(self, *scopes: str, owner: str | None = None) -> str:
        def create(connection: Connection) -> str:
            _, key = keys.create_key(
                connection,
                service=self.profile.service,
                owner_id=owner or self.owner,
                environment="live",
                prefix="hd",
                scopes=scopes,
            )
            return key

        return await self.db.write(create)

    async def call(self, key: str, method: str, path: str = "", **kwargs: Any) -> httpx.Response:
        return await self.client.request(
            method, f"/api/v1/webhooks{path}", headers={"Authorization": f"Bearer {key}"}, **kwargs
        )

    async def deliver(self) -> int:
        deliverer = WebhookDeliverer(self.db, self.profile, self.cipher, allow_private_targets=True, timeout_s=5)
        try:
            return await deliverer.deliver_due()
        finally:
            await deliverer.aclose(grace_s=1)


@pytest.fixture(scope="module")
def receiver() -> Iterator[WebhookReceiver]:
    with WebhookReceiver(tls=False) as running:
        yield running


@pytest.fixture
async def api(db: Database, receiver: WebhookReceiver) -> AsyncIterator[Api]:
    profile = dataclasses.replace(helpdesk.WEBHOOKS, service=f"t{uuid.uuid4().hex[:10]}", max_endpoints=3)
    cipher = MultiFernet([Fernet(Fernet.generate_key())])
    errors = Errors()
    routes = endpoint_routes(
        EndpointRoutes(
            profile=profile,
            path="/api/v1/webhooks",
            read_scope="webhooks:read",
            write_scope="webhooks:write",
            create_body=CreateBody,
            update_body=UpdateBody,
            shown=shown,
            created=lambda endpoint, _secret: shown(endpoint),
            listed=lambda endpoints: Listed([shown(endpoint) for endpoint in endpoints]),
            deleted=lambda endpoint_id: Deleted(endpoint_id, True),
            tested=sent,
            types={"created": Shown, "listed": Listed, "shown": Shown, "deleted": Deleted, "tested": Sent},
            style=errors,
            explain=None,
            error_responses=lambda *statuses: error_responses(Envelope, {s: (str(s), []) for s in set(statuses)}),
            management=(401, 403, 500, 503),
        )
    )
    authenticator = Authenticator(db, profile.service)
    document = ApiDocument("test", "1", "routes under test", ("bearer", KEY_HEADER.security_scheme("a key")))
    app = GatewayApp(profile.service, [routes], document, exception_handlers(errors, refused), 64 * 1024).build(
        given={"webhook_endpoints": Endpoints(db, profile, cipher, WORDS, allow_private_targets=True)},
        authenticator=authenticator,
        readiness={},
    )
    async with httpx.AsyncClient(
        transport=httpx.ASGITransport(app=cast(Any, app)), base_url="http://gateway"
    ) as client:
        yield Api(db, receiver, client, cipher, profile, f"org_{uuid.uuid4().hex[:12]}")


async def test_a_key_needs_the_webhooks_scope_and_write_implies_read(api: Api) -> None:
    reader, writer, everything, other = (
        await api.key("webhooks:read"),
        await api.key("webhooks:write"),
        await api.key("*"),
        await api.key("tickets:write"),
    )
    body = {"url": api.receiver.url(api.receiver.new_path()), "events": ["ticket.created"]}

    assert (await api.call(reader, "GET")).status_code == 200
    refused = await api.call(reader, "POST", json=body)
    assert (refused.status_code, refused.json()["error"]["code"]) == (403, "forbidden")
    assert (await api.call(writer, "POST", json=body)).status_code == 201
    assert (await api.call(writer, "GET")).status_code == 200  # write implies read
    assert (await api.call(everything, "POST", json=body)).status_code == 201
    assert (await api.call(other, "GET")).status_code == 403
    assert (await api.call("hd_live_" + "0" * 40, "GET")).status_code == 401


async def test_create_takes_an_optional_secret_and_an_http_target_and_never_shows_the_secret(api: Api) -> None:
    key = await api.key("webhooks:*")
    url = api.receiver.url(api.receiver.new_path())
    assert url.startswith("http://")
    signed = await api.call(key, "POST", json={"url": url, "events": ["ticket.created"], "secret": "s3cret"})
    unsigned = await api.call(key, "POST", json={"url": url, "events": ["customer.created"], "enabled": False})

    assert signed.status_code == unsigned.status_code == 201
    assert signed.json()["id"].startswith("hook_")
    assert (signed.json()["has_secret"], signed.json()["enabled"], signed.json()["status"]) == (True, True, "active")
    assert (unsigned.json()["has_secret"], unsigned.json()["enabled"]) == (False, False)
    listed = (await api.call(key, "GET")).json()["data"]
    assert {hook["id"] for hook in listed} == {signed.json()["id"], unsigned.json()["id"]}
    assert "s3cret" not in str(listed) + signed.text


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"url": "ftp://hooks.example.com/x", "events": ["ticket.created"]}, "url must be an HTTP or HTTPS URL"),
        ({"url": "http://user:pw@hooks.example.com/x", "events": ["ticket.created"]}, "must not carry credentials"),
        ({"url": "https://hooks.example.com/x", "events": ["ticket.exploded"]}, "events must name"),
        ({"url": "https://hooks.example.com/x", "events": []}, "events must name"),
        ({"url": "https://hooks.example.com/x", "events": ["ticket.created"], "secret": ""}, "cannot be empty"),
        ({"url": "https://hooks.example.com/x"}, "events"),
    ],
)
async def test_a_target_event_or_secret_the_profile_refuses_is_400_and_creates_nothing(
    api: Api, body: dict[str, Any], message: str | None
) -> None:
    key = await api.key("webhooks:*")
    response = await api.call(key, "POST", json=body)
    assert response.status_code == 400, response.text
    assert message in response.json()["error"]["message"]
    assert (await api.call(key, "GET")).json()["data"] == []


async def test_an_account_has_at_most_the_profiles_endpoints(api: Api) -> None:
    key = await api.key("webhooks:*")
    body = {"url": "https://hooks.example.com/x", "events": ["ticket.created"]}
    for _ in range(api.profile.max_endpoints):
        assert (await api.call(key, "POST", json=body)).status_code == 201
    over = await api.call(key, "POST", json=body)
    assert (over.status_code, over.json()["error"]["code"]) == (409, "conflict")


async def test_update_changes_the_events_and_enabled_and_only_the_owner_may(api: Api) -> None:
    key, stranger = await api.key("webhooks:*"), await api.key("webhooks:*", owner="org_someone_else")
    created = await api.call(key, "POST", json={"url": "https://hooks.example.com/x", "events": ["ticket.created"]})
    hook = created.json()["id"]

    changed = await api.call(key, "PATCH", f"/{hook}", json={"events": ["ticket.updated", "customer.created"]})
    assert changed.status_code == 200
    assert (changed.json()["events"], changed.json()["enabled"]) == (["ticket.updated", "customer.created"], True)
    disabled = await api.call(key, "PATCH", f"/{hook}", json={"enabled": False})
    assert (disabled.json()["enabled"], disabled.json()["status"]) == (False, "disabled")
    enabled = await api.call(key, "PATCH", f"/{hook}", json={"enabled": True})
    assert (enabled.json()["enabled"], enabled.json()["status"]) == (True, "active")

    assert (await api.call(stranger, "PATCH", f"/{hook}", json={"enabled": False})).status_code == 404
    assert (await api.call(key, "PATCH", "/hook_nothing", json={"enabled": False})).status_code == 404
    assert (await api.call(key, "PATCH", f"/{hook}", json={"events": ["nope"]})).status_code == 400
    assert (await api.call(key, "PATCH", f"/{hook}", json={"url": "https://elsewhere"})).status_code == 400
    [listed] = (await api.call(key, "GET")).json()["data"]
    assert (listed["events"], listed["enabled"]) == (["ticket.updated", "customer.created"], True)


async def test_a_test_delivery_reaches_the_receiver_signed_in_the_helpdesk_shape(api: Api) -> None:
    key = await api.key("webhooks:*")
    path = api.receiver.new_path(secret="s3cret", verify=verify_helpdesk)
    created = await api.call(
        key, "POST", json={"url": api.receiver.url(path), "events": ["ticket.created"], "secret": "s3cret"}
    )
    hook = created.json()["id"]

    calling = asyncio.ensure_future(api.call(key, "POST", f"/{hook}/test"))
    while not await api.deliver():  # the engine, in a processors process, takes the test delivery up
        await asyncio.sleep(0.05)
    tested = await calling
    assert tested.status_code == 200
    event_id = tested.json()["event_id"]
    assert (tested.json()["id"], tested.json()["status"]) == (hook, 200)

    [delivery] = api.receiver.received(path)
    assert delivery.verified
    assert delivery.headers["x-helpdesk-delivery-id"] == event_id
    assert delivery.json["event"] == "webhook.test"
    assert set(delivery.json) == {"event", "timestamp", "data"}
    assert delivery.json["data"] == {"id": hook, "url": api.receiver.url(path), "events": ["ticket.created"]}


async def test_a_test_delivery_needs_an_enabled_endpoint_of_the_caller(api: Api) -> None:
    key, stranger = await api.key("webhooks:*"), await api.key("webhooks:*", owner="org_someone_else")
    created = await api.call(key, "POST", json={"url": "https://hooks.example.com/x", "events": ["ticket.created"]})
    hook = created.json()["id"]
    assert (await api.call(stranger, "POST", f"/{hook}/test")).status_code == 404
    await api.call(key, "PATCH", f"/{hook}", json={"enabled": False})
    refused = await api.call(key, "POST", f"/{hook}/test")
    assert (refused.status_code, refused.json()["error"]["code"]) == (409, "conflict")


async def test_delete_stops_the_endpoint_and_a_second_delete_is_404(api: Api) -> None:
    key = await api.key("webhooks:*")
    created = await api.call(key, "POST", json={"url": "https://hooks.example.com/x", "events": ["ticket.created"]})
    hook = created.json()["id"]
    deleted = await api.call(key, "DELETE", f"/{hook}")
    assert (deleted.status_code, deleted.json()) == (200, {"id": hook, "deleted": True})
    assert (await api.call(key, "DELETE", f"/{hook}")).status_code == 404
    assert (await api.call(key, "GET")).json()["data"] == []
