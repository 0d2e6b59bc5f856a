"""Outgoing webhook subscriptions (sections 2.4, 4.4, 6.1): the REST routes (`/api/v1/webhooks`, scopes `webhooks:read`
and `webhooks:write`) on the platform's shared endpoint routes, and the procedures `webhooks.list/create/update/
delete/test` for an organization's admins on the session cookie. Both run the same operations on the same store; a
subscription never shows its secret."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any

import msgspec

from gateway.common.webhooks import TEST_GRACE_S, EndpointRoutes, WebhookStore, await_test_delivery, endpoint_routes
from gateway.helpdesk import docs
from gateway.helpdesk.errors import ERRORS, HelpdeskError
from gateway.helpdesk.members import Members
from gateway.helpdesk.schemas import (
    LINE,
    CreateWebhook,
    UpdateWebhook,
    Url,
    Webhook,
    WebhookDeleted,
    WebhookEvent,
    WebhookList,
    WebhookTested,
)
from gateway.helpdesk.trpc import Call, Procedure, ProcedureError
from storage.common import webhooks
from storage.common.webhooks import Endpoint, FirstAttempt
from topics.helpdesk import EVENTS, WEBHOOKS
from wire.addresses import TargetUrlRefused
from wire.timestamps import iso

LIMIT_REACHED = f"An organization can have at most {WEBHOOKS.max_endpoints} webhook subscriptions; delete one first"
INACTIVE = "This webhook subscription is disabled: enable it to send it a test event"
NOT_FOUND = "No webhook subscription with that id in this organization"


def webhook_object(endpoint: Endpoint) -> Webhook:
    return Webhook(
        id=endpoint.id,
        url=endpoint.url,
        events=endpoint.events,
        enabled=endpoint.enabled,
        status=endpoint.status,  # type: ignore[arg-type]
        created_at=iso(endpoint.created_at, "milliseconds"),
    )


def tested_object(endpoint_id: str, event_id: str, outcome: FirstAttempt | None) -> WebhookTested:
    if outcome is None:
        return WebhookTested(id=endpoint_id, event_id=event_id, success=False, status=None, error="no answer yet")
    success = outcome.status_code is not None and 200 <= outcome.status_code < 300
    return WebhookTested(
        id=endpoint_id, event_id=event_id, success=success, status=outcome.status_code, error=outcome.error
    )


def _explain(message: str) -> HelpdeskError:
    if "events" in message and "Expected `array`" not in message and "length" not in message:
        return HelpdeskError(400, "events must name some of: " + ", ".join(EVENTS))
    return ERRORS.invalid_body(message)


class _Errors:
    def invalid(self, message: str) -> HelpdeskError:
        return HelpdeskError(400, message)

    def not_found(self) -> HelpdeskError:
        return HelpdeskError(404, NOT_FOUND)

    def limit_reached(self, limit: int) -> HelpdeskError:
        return HelpdeskError(409, LIMIT_REACHED)

    def inactive(self) -> HelpdeskError:
        return HelpdeskError(409, INACTIVE)


WEBHOOK_ROUTES = endpoint_routes(
    EndpointRoutes(
        profile=WEBHOOKS,
        path="/api/v1/webhooks",
        read_scope="webhooks:read",
        write_scope="webhooks:write",
        create_body=CreateWebhook,
        update_body=UpdateWebhook,
        shown=webhook_object,
        created=lambda endpoint, _secret: webhook_object(endpoint),
        listed=lambda endpoints: WebhookList(data=[webhook_object(endpoint) for endpoint in endpoints]),
        deleted=lambda endpoint_id: WebhookDeleted(id=endpoint_id, deleted=True),
        tested=tested_object,
        types={
            "created": Webhook,
            "listed": WebhookList,
            "shown": Webhook,
            "deleted": WebhookDeleted,
            "tested": WebhookTested,
        },
        errors=_Errors(),
        style=ERRORS,
        explain=_explain,
        error_responses=docs.errors,
        management=docs.MANAGEMENT,
        documented=docs.READ,
        documented_with_body=docs.WRITE,
    )
)

# The procedures (section 4.4), camelCase where the contract is.

HookId = Annotated[str, msgspec.Meta(min_length=1, max_length=64, pattern=LINE)]
Events = Annotated[list[WebhookEvent], msgspec.Meta(min_length=1, max_length=len(EVENTS))]


class CreateInput(msgspec.Struct, forbid_unknown_fields=True):
    url: Url
    events: Events
    secret: Annotated[str, msgspec.Meta(min_length=1, max_length=256, pattern=LINE)] | None = None
    enabled: bool = True


class UpdateInput(msgspec.Struct, forbid_unknown_fields=True):
    id: HookId
    events: Events | None = None
    enabled: bool | None = None


class IdInput(msgspec.Struct, forbid_unknown_fields=True):
    id: HookId


def subscription_view(endpoint: Endpoint) -> dict[str, Any]:
    """A subscription as the procedures show it (section 2.4, never the secret)."""
    return {
        "id": endpoint.id,
        "url": endpoint.url,
        "events": endpoint.events,
        "enabled": endpoint.enabled,
        "status": endpoint.status,
        "created_at": endpoint.created_at,
    }


def procedures(members: Members, store: WebhookStore) -> Mapping[str, Procedure]:
    db = store.db

    async def list_webhooks(call: Call, _: None) -> list[dict[str, Any]]:
        member = await members.admin(call)
        return [subscription_view(e) for e in await db.read(webhooks.list_endpoints, WEBHOOKS, member.organization_id)]

    async def create(call: Call, given: CreateInput) -> dict[str, Any]:
        member = await members.admin(call)
        try:
            url = WEBHOOKS.check_url(given.url, allow_private=store.allow_private_targets)
            endpoint, _ = await db.write(
                webhooks.create_endpoint,
                WEBHOOKS,
                store.cipher,
                owner_id=member.organization_id,
                url=url,
                events=given.events,
                secret=given.secret,
                enabled=given.enabled,
            )
        except webhooks.EndpointLimitReached:
            raise ProcedureError("CONFLICT", LIMIT_REACHED) from None
        except (TargetUrlRefused, ValueError) as refused:
            raise ProcedureError("BAD_REQUEST", str(refused)) from None
        return subscription_view(endpoint)

    async def update(call: Call, given: UpdateInput) -> dict[str, Any]:
        member = await members.admin(call)
        endpoint = await db.write(
            webhooks.update_endpoint,
            WEBHOOKS,
            member.organization_id,
            given.id,
            events=given.events,
            enabled=given.enabled,
        )
        if endpoint is None:
            raise ProcedureError("NOT_FOUND", NOT_FOUND)
        return subscription_view(endpoint)

    async def remove(call: Call, given: IdInput) -> dict[str, Any]:
        member = await members.admin(call)
        if not await db.write(webhooks.delete_endpoint, WEBHOOKS, member.organization_id, given.id):
            raise ProcedureError("NOT_FOUND", NOT_FOUND)
        return {"success": True, "id": given.id}

    async def test(call: Call, given: IdInput) -> dict[str, Any]:
        member = await members.admin(call)
        try:
            event_id = await db.write(webhooks.send_test_event, WEBHOOKS, member.organization_id, given.id)
        except webhooks.EndpointInactive:
            raise ProcedureError("CONFLICT", INACTIVE) from None
        if event_id is None:
            raise ProcedureError("NOT_FOUND", NOT_FOUND)
        outcome = await await_test_delivery(db, event_id, WEBHOOKS.timeout_s + TEST_GRACE_S)
        return msgspec.to_builtins(tested_object(given.id, event_id, outcome))  # type: ignore[no-any-return]

    return {
        "webhooks.list": Procedure("query", None, list_webhooks),
        "webhooks.create": Procedure("mutation", CreateInput, create),
        "webhooks.update": Procedure("mutation", UpdateInput, update),
        "webhooks.delete": Procedure("mutation", IdInput, remove),
        "webhooks.test": Procedure("mutation", IdInput, test),
    }
