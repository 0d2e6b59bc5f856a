"""The helpdesk test stack: a running helpdesk gateway and processors, and what its users do: a browser that signs in
by a mailed link and completes signup, procedures called over the tRPC wire, REST calls with a bearer key. Its fixtures
(`helpdesk_stack`, `helpdesk_gateway_only`, `plain_receiver`) are registered by the root conftest. `helpdesk_app`
serves the helpdesk's app in process, for tests of its account procedures alone."""

from __future__ import annotations

import asyncio
import json
import re
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import httpx
import pytest
from cryptography.fernet import Fernet, MultiFernet
from litestar.types import ASGIApp

from gateway.helpdesk.accounts.signin import Accounts
from gateway.helpdesk.app import create_helpdesk_app
from gateway.helpdesk.auth import HelpdeskAuthenticator
from gateway.helpdesk.deps import HelpdeskGateway
from gateway.helpdesk.inbound.common import Inbound
from net.guard import tls_context
from operations.helpdesk.billing import Billing
from operations.helpdesk.desk import Helpdesk
from signalyard.registry import helpdesk
from signalyard.service import Service
from storage.common import mail as mail_store
from storage.common.webhooks.endpoints import create_endpoint
from storage.common.webhooks.events import first_attempt, record_event
from tests.conftest import KEEP_ALIVE_BELOW_THE_SERVER_S, ServiceStack, SharedStacks, running_stack, stack_settings
from tests.peers.commerce import CommercePlatform
from tests.peers.graph import GraphPeer
from tests.peers.receiver import WebhookReceiver
from tests.peers.sms import SmsPeer
from topics.common.webhooks import event_message
from topics.helpdesk import WEBHOOKS, HelpdeskTopics

LINK = re.compile(r"https?://[^/\s]+(/auth/(?:link|reset)\?token=hd_link_[\w-]+)")
INVITATION_LINK = re.compile(r"https?://[^/\s]+(/auth/invite\?token=hd_invite_[\w-]+)")
NO_INPUT = {"json": None, "meta": {"values": ["undefined"], "v": 1}}


def helpdesk_app(accounts_deps: Accounts, *, billing: Billing | None = None) -> ASGIApp:
    """The helpdesk gateway's app around `accounts_deps`, as the launcher assembles it, without a broker: webhook
    events stay in their outbox (nothing announces them)."""

    async def announce(_organization_id: str, _event_id: str) -> None:
        return None

    async def publish(_messages: Any) -> None:
        return None

    db = accounts_deps.db
    cipher = MultiFernet([Fernet(Fernet.generate_key())])
    gateway = HelpdeskGateway(
        desk=Helpdesk(db, announce, cipher, allow_private_targets=True, billing=billing),
        accounts=accounts_deps,
        inbound=Inbound(db, cipher, publish),
    )
    return create_helpdesk_app(gateway, HelpdeskAuthenticator(db, None), {})


def data(answer: httpx.Response) -> Any:
    """A lone procedure call's result, which must be a success."""
    assert answer.status_code == 200, answer.text
    return answer.json()["result"]["data"]["json"]


def trpc_error(answer: httpx.Response) -> tuple[int, str]:
    """A lone procedure call's (HTTP status, tRPC error code)."""
    return answer.status_code, answer.json()["error"]["json"]["data"]["code"]


def new_email(who: str = "agent") -> str:
    return f"{who}.{uuid.uuid4().hex[:10]}@example.com"


@dataclass
class Browser:
    """One browser at the helpdesk: its own cookie jar."""

    stack: HelpdeskStack
    client: httpx.AsyncClient
    email: str = ""

    async def call(self, procedure: str, given: Any = None) -> httpx.Response:
        """A mutation (POST)."""
        body = {"json": given} if given is not None else NO_INPUT
        return await self.client.post(f"/api/trpc/{procedure}", json=body)

    async def query(self, procedure: str, given: Any = None) -> httpx.Response:
        """A query (GET), its input in the query string."""
        params = {"input": json.dumps({"json": given})} if given is not None else {}
        return await self.client.get(f"/api/trpc/{procedure}", params=params)

    async def sign_in(self, email: str | None = None) -> None:
        """Sign in by a mailed link taken from the development outbox (the account is made on first sign-in)."""
        self.email = email or new_email()
        data(await self.call("auth.signInWithEmail", {"email": self.email}))
        opened = await self.client.get(await self.stack.mailed_link(self.email))
        assert opened.status_code == 303, opened.text

    async def sign_up(self, organization: str = "Acme Support", email: str | None = None) -> dict[str, Any]:
        """Sign in, then complete signup on the free plan: the user becomes the admin of a new organization."""
        await self.sign_in(email)
        return dict(
            data(await self.call("auth.completeSignup", {"name": "Ada Admin", "organizationName": organization}))
        )

    async def api_key(self, *scopes: str) -> str:
        """A REST key of the signed-in admin's organization, made by `apiKeys.create`."""
        created = data(await self.call("apiKeys.create", {"name": "test key", "scopes": list(scopes)}))
        return str(created["key"])

    async def accept_invitation(self, path: str) -> dict[str, Any]:
        """Follow a mailed invitation link (its `path`): the browser is signed in as the new member (both cookies, 303
        to `/`); answers the member as `auth.getUser` does."""
        opened = await self.client.get(path)
        assert opened.status_code == 303, opened.text
        user = dict(data(await self.query("auth.getUser")))
        self.email = str(user["email"])
        return user


@dataclass
class HelpdeskStack(ServiceStack):
    """A running helpdesk gateway and processors on the session broker, with a client at the host root."""

    service: ClassVar[Service] = helpdesk.SERVICE

    @property
    def topics(self) -> HelpdeskTopics:
        return HelpdeskTopics(self.settings.platform.topic_prefix)

    async def mailed_link(self, email: str) -> str:
        """The path of the newest link mailed to `email` (the development outbox keeps every mail)."""
        (mail, *_) = await self.db.read(mail_store.kept_mails, "helpdesk", email)
        found = LINK.search(mail.body)
        assert found, mail.body
        return found.group(1)

    async def mailed_invitation(self, email: str) -> str:
        """The path of the newest invitation link mailed to `email` (`/auth/invite?token=...`)."""
        (mail, *_) = await self.db.read(mail_store.kept_mails, "helpdesk", email)
        found = INVITATION_LINK.search(mail.body)
        assert found, mail.body
        return found.group(1)

    @asynccontextmanager
    async def browser(self) -> AsyncIterator[Browser]:
        """A new browser (its own cookies)."""
        async with httpx.AsyncClient(
            base_url=self.base_url, timeout=60, limits=KEEP_ALIVE_BELOW_THE_SERVER_S, verify=tls_context()
        ) as client:
            yield Browser(self, client)

    async def rest(self, key: str | None, method: str, path: str, **kwargs: Any) -> httpx.Response:
        headers = {"Authorization": f"Bearer {key}"} if key is not None else {}
        return await self.client.request(method, f"/api/v1{path}", headers=headers, **kwargs)

    async def wait_for_processors(self) -> None:
        """The fan-out's consumer group takes a few seconds to join: a warm-up event, to an endpoint that refuses the
        connection, tells when an announced event gets its delivery attempted."""
        owner = f"warm-up-{uuid.uuid4().hex}"  # owner ids are at most 40 characters
        cipher = MultiFernet([Fernet(Fernet.generate_key())])

        def record(connection: Any) -> str:
            create_endpoint(
                connection,
                WEBHOOKS,
                cipher,
                owner_id=owner,
                url="http://127.0.0.1:9/warm-up",
                events=["ticket.created"],
            )
            event_id = record_event(connection, WEBHOOKS, owner, "ticket.created", {"warm": "up"})
            assert event_id is not None, "the endpoint subscribes to it"
            return event_id

        event_id = await self.db.write(record)
        prefix = self.settings.platform.topic_prefix
        for _ in range(120):
            await self.platform.publish(*event_message(WEBHOOKS.service, owner, event_id, prefix))
            for _ in range(10):
                if await self.db.read(first_attempt, event_id) is not None:
                    return
                await asyncio.sleep(0.05)
        raise RuntimeError("the helpdesk processors never delivered")


def helpdesk_settings(data_dir: Path, database_url: str, receiver: WebhookReceiver | None, **overrides: Any) -> Any:
    return stack_settings(
        data_dir,
        database_url,
        None,
        webhook_allow_private_targets=True,
        webhook_ca_bundle=str(receiver.ca_bundle) if receiver is not None else None,
        **overrides,
    )


@pytest.fixture(scope="session")
def plain_receiver() -> Iterator[WebhookReceiver]:
    """Customers' webhook receiver on plain HTTP, as the helpdesk allows."""
    with WebhookReceiver(tls=False) as running:
        yield running


SMS_ACCOUNT = "AC" + "5" * 32
SMS_AUTH_TOKEN = "sms-provider-auth-token"


@pytest.fixture(scope="session")
def sms_provider() -> Iterator[SmsPeer]:
    """The SMS provider's Messages API that the shared helpdesk stacks send their SMS replies to (one account: every
    test's SMS channel gives its sid and token)."""
    with SmsPeer(SMS_ACCOUNT, SMS_AUTH_TOKEN) as peer:
        yield peer


GRAPH_TOKEN = "graph-provider-access-token"


@pytest.fixture(scope="session")
def graph_provider() -> Iterator[GraphPeer]:
    """The messaging provider's Graph API that the shared helpdesk stacks send business and page messaging replies
    to (one token: every test's messaging channel gives it)."""
    with GraphPeer(GRAPH_TOKEN) as peer:
        yield peer


COMMERCE_CLIENT_ID = "helpdesk-commerce-app"
COMMERCE_CLIENT_SECRET = "the commerce app's secret"


@pytest.fixture(scope="session")
def commerce_platform() -> Iterator[CommercePlatform]:
    """The commerce platform at which the shared helpdesk stacks' app is registered: admins connect their test shops
    (each test's own) by its app install."""
    with CommercePlatform(COMMERCE_CLIENT_ID, COMMERCE_CLIENT_SECRET) as peer:
        yield peer


@pytest.fixture
async def helpdesk_stack(
    request: pytest.FixtureRequest,
    shared_stacks: SharedStacks,
    broker_bootstrap: str,
    database_url: str,
    tmp_path_factory: pytest.TempPathFactory,
    sms_provider: SmsPeer,
    graph_provider: GraphPeer,
    commerce_platform: CommercePlatform,
) -> AsyncIterator[HelpdeskStack]:
    """The helpdesk stack on the session's database, shared by the tests that use it (`SharedStacks`)."""

    def start() -> running_stack[HelpdeskStack]:
        settings = helpdesk_settings(
            tmp_path_factory.mktemp("helpdesk"),
            database_url,
            None,
            helpdesk_sms_api_url=sms_provider.base_url,
            helpdesk_graph_api_url=graph_provider.base_url,
            helpdesk_commerce_client_id=COMMERCE_CLIENT_ID,
            helpdesk_commerce_client_secret=COMMERCE_CLIENT_SECRET,
            helpdesk_commerce_shop_url=commerce_platform.shop_url,
        )
        return running_stack(settings, broker_bootstrap, HelpdeskStack)

    yield await shared_stacks.use(request, start)
    await shared_stacks.done(request)


HelpdeskGatewayOnly = Callable[..., AbstractAsyncContextManager[HelpdeskStack]]


@pytest.fixture
def helpdesk_gateway_only(broker_bootstrap: str, database_url: str, tmp_path: Path) -> HelpdeskGatewayOnly:
    """A factory of extra helpdesk gateways (no processors) on the session's database, with settings of the test's
    own: `async with helpdesk_gateway_only(helpdesk_stripe_secret_key=...) as alone: ...`."""

    def start(**overrides: Any) -> AbstractAsyncContextManager[HelpdeskStack]:
        settings = helpdesk_settings(tmp_path, database_url, None, **overrides)
        return running_stack(settings, broker_bootstrap, HelpdeskStack, with_processor=False)

    return start
