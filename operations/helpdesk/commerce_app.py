"""The helpdesk's app at the commerce platform (docs/helpdesk.md, "Commerce"): its credentials, where a shop's admin
answers, and its calls there (Shopify's wire format, `commerce` in the header names): the code exchanged for the shop's
access token, a subscription registered. The rule that uses them is operations/helpdesk/stores.py."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlencode

import httpx

from net.guard import tls_context
from operations.common.errors import ProviderRefused

SCOPES = ("read_orders", "read_customers")
"""What the app asks of the shop: its orders and its customers, read only."""
API_VERSION = "2025-01"
"""The platform's Admin API version the subscriptions are registered with."""
TIMEOUT = httpx.Timeout(10.0)
AGAIN = "connect the store again"


@dataclass(frozen=True)
class CommerceApp:
    """The helpdesk's app at the commerce platform: its credentials, and where a shop's admin API answers
    (`shop_url` with `{shop}` replaced by the shop's domain: `https://{shop}` for the real platform)."""

    client_id: str
    client_secret: str = field(repr=False)
    shop_url: str = "https://{shop}"
    api_version: str = API_VERSION

    def base(self, shop: str) -> str:
        return self.shop_url.replace("{shop}", shop).rstrip("/")

    def authorize_url(self, shop: str, state: str, redirect_uri: str) -> str:
        query = {"client_id": self.client_id, "scope": ",".join(SCOPES), "redirect_uri": redirect_uri, "state": state}
        return f"{self.base(shop)}/admin/oauth/authorize?{urlencode(query)}"

    async def exchange(self, client: httpx.AsyncClient, shop: str, code: str) -> str:
        """The shop's access token for the callback's `code` (which must grant SCOPES)."""
        body = {"client_id": self.client_id, "client_secret": self.client_secret, "code": code}
        answer = await _call(client, "POST", f"{self.base(shop)}/admin/oauth/access_token", shop, json=body)
        found = _json(answer)
        if answer.status_code != 200:
            raise ProviderRefused(
                f"{shop} refused to give the app its access token ({_reason(answer, found)}): {AGAIN}"
            )
        token, scope = found.get("access_token"), found.get("scope")
        if not isinstance(token, str) or not token:
            raise ProviderRefused(f"{shop} gave no access token: {AGAIN}")
        granted = set(scope.split(",")) if isinstance(scope, str) else set()
        missing = [name for name in SCOPES if name not in granted and f"write_{name[5:]}" not in granted]
        if missing:
            raise ProviderRefused(f"{shop} did not grant {', '.join(missing)}: {AGAIN} and accept every permission")
        return token

    async def subscribe(self, client: httpx.AsyncClient, shop: str, token: str, topic: str, address: str) -> None:
        """The shop's subscription of `topic` to `address`; one the shop has already (422, "has already been
        taken") counts as made."""
        body = {"webhook": {"topic": topic, "address": address, "format": "json"}}
        url = f"{self.base(shop)}/admin/api/{self.api_version}/webhooks.json"
        answer = await _call(client, "POST", url, shop, json=body, headers={"X-Commerce-Access-Token": token})
        found = _json(answer)
        if answer.status_code in (200, 201) or (answer.status_code == 422 and "taken" in str(found.get("errors"))):
            return
        raise ProviderRefused(
            f"{shop} refused the subscription to {topic} ({_reason(answer, found)}); nothing was saved: {AGAIN}"
        )


class open_client:
    """The given client, or one of its own for the call."""

    def __init__(self, given: httpx.AsyncClient | None) -> None:
        self.given = given
        self.own: httpx.AsyncClient | None = None

    async def __aenter__(self) -> httpx.AsyncClient:
        if self.given is not None:
            return self.given
        self.own = httpx.AsyncClient(timeout=TIMEOUT, verify=tls_context())
        return self.own

    async def __aexit__(self, *exc_info: object) -> None:
        if self.own is not None:
            await self.own.aclose()


async def _call(client: httpx.AsyncClient, method: str, url: str, shop: str, **kwargs: Any) -> httpx.Response:
    try:
        return await client.request(method, url, **kwargs)
    except httpx.HTTPError as error:
        raise ProviderRefused(
            f"{shop} could not be reached ({str(error) or type(error).__name__}); nothing was saved: {AGAIN}"
        ) from None


def _json(answer: httpx.Response) -> dict[str, Any]:
    try:
        found = answer.json()
    except ValueError:
        return {}
    return found if isinstance(found, dict) else {}


def _reason(answer: httpx.Response, found: dict[str, Any]) -> str:
    said = found.get("errors") or found.get("error_description") or found.get("error")
    return f"HTTP {answer.status_code}" + (f": {str(said)[:200]}" if said else "")
