"""How the helpdesk's REST API is documented (`/docs/openapi.json`): each route's operation with every status and real
error examples. The procedures (`/api/trpc/...`) speak tRPC and are described in docs/helpdesk.md instead."""

from __future__ import annotations

from typing import Any

from litestar.openapi import ResponseSpec
from litestar.openapi.spec import OpenAPIFormat, OpenAPIMediaType, OpenAPIType, Reference, RequestBody, Schema

from gateway.common import openapi
from gateway.common.app import ApiDocument
from gateway.helpdesk.auth import KEY_HEADER
from gateway.helpdesk.errors import CODES, ErrorBody, Problem
from gateway.helpdesk.schemas import (
    ChannelCreated,
    ChannelList,
    ChannelObject,
    Conversation,
    ConversationList,
    Customer,
    CustomerList,
    Deleted,
    Event,
    EventList,
    InboundMessageList,
    Invitation,
    InvitationList,
    Member,
    MemberList,
    SearchResults,
    Ticket,
    TicketList,
    Upload,
)
from operations.helpdesk.attachments import MAX_UPLOAD_BYTES
from operations.helpdesk.channels import SMTP_URL, ChangeChannel, CreateChannel
from operations.helpdesk.conversations import AddConversation, EditConversation
from operations.helpdesk.customers import CreateCustomer, MergeCustomerInto, UpdateCustomer
from operations.helpdesk.team import ChangeRole, Deactivate, Invite
from operations.helpdesk.tickets import CreateTicket, MergeTicketInto, UpdateTicket
from storage.helpdesk import channels
from wire.text import LINE, TEXT

DOCUMENT = ApiDocument(
    "signalyard helpdesk",
    "2026-11",
    "The helpdesk's external REST API: tickets, their conversations (replies and internal notes), customers, the "
    "activity log and outgoing webhooks, for one organization per key. Keys (`hd_live_...`) are made by an admin "
    "(procedure `apiKeys.create`, or `signalyard helpdesk keys create`) with the scopes they grant; a write scope "
    "implies its read, `<resource>:*` grants both and `*` everything.",
    ("bearer", KEY_HEADER.security_scheme("`Authorization: Bearer hd_live_...`")),
)

ERRORS: dict[int, tuple[str, list[tuple[str, str]]]] = {
    400: (
        "A body or parameter that does not fit: the message names the field",
        [
            ("invalid_field", "Expected `str` of length <= 255, got `str` of length 300 (field `subject`)"),
        ],
    ),
    401: (
        "No key, or an unknown or revoked one",
        [
            ("missing_key", "Missing API key: send it as Authorization: Bearer hd_live_..."),
            ("invalid_key", "Invalid API key: unknown or revoked"),
        ],
    ),
    403: ("The key lacks the route's scope", [("scope", "This key lacks the scope tickets:write")]),
    404: (
        "No such object in this organization; a cursor that names no item of the listing",
        [
            ("not_found", "No ticket with that id in this organization"),
            ("stale_cursor", "cursor names no ticket of this listing"),
            ("unknown_assignee", "assignee_id names no active member of this organization"),
        ],
    ),
    409: (
        "The object conflicts with another: a customer's address taken; webhooks at their limit or disabled; a "
        "channel's address routing to another channel already; a merge into a merged ticket; the last active admin",
        [
            ("email_taken", "Another customer of this organization has the address ada@example.com"),
            ("too_many", "An organization can have at most 16 webhook subscriptions; delete one first"),
            ("last_admin", "An organization keeps at least one active admin: make another member an admin first"),
        ],
    ),
    413: (
        "A file or a body over its documented size: nothing was kept",
        [("too_large", "A file is at most 10 MiB; this one is 12582912 bytes")],
    ),
    429: (
        "The key's per-minute or per-hour budget is spent: nothing was done",
        [("rate_limited", "Rate limit reached: 600 per 1 minute for this key")],
    ),
    500: ("A failure of ours; it has been logged", [("internal", "Internal error; it has been logged")]),
    503: (
        "The key store or the rate-limit store does not answer: retry",
        [("unavailable", "Authentication is unavailable for a moment; retry")],
    ),
}


def errors(*statuses: int) -> dict[int, ResponseSpec]:
    return openapi.error_responses(
        ErrorBody,
        {
            status: (
                ERRORS[status][0],
                [openapi.example(i, text, ErrorBody(Problem(CODES[status], text))) for i, text in ERRORS[status][1]],
            )
            for status in sorted(set(statuses))
        },
    )


_FILE = Schema(type=OpenAPIType.STRING, format=OpenAPIFormat.BINARY)
MANAGEMENT = (401, 403, 429, 500, 503)
"""What every route may answer besides its own."""
_RETRY = openapi.retry_after("Seconds to wait before the key's budget allows another request")
READ = openapi.documented_operation(response_headers={429: _RETRY})
WRITE = openapi.documented_operation(response_headers={429: _RETRY})


def _route(
    operation_id: str,
    summary: str,
    status: int,
    answer: ResponseSpec,
    *errors_of: int,
    body: type | None = None,
    description: str | None = None,
) -> dict[str, Any]:
    return openapi.route_docs(
        operation_id,
        summary,
        {status: answer, **errors(*errors_of, *MANAGEMENT)},
        body=body,
        description=description,
        operation=WRITE if body is not None else READ,
        status_code=status,
    )


LIST_TICKETS = _route(
    "listTickets",
    "The organization's tickets, newest first, filtered",
    200,
    openapi.response(TicketList, "A page of tickets; `next_cursor` continues it"),
    400,
    404,
)
CREATE_TICKET = _route(
    "createTicket",
    "Open a ticket for a customer (by id, or by address: a new address makes the customer)",
    201,
    openapi.response(Ticket, "The new ticket, numbered next in the organization"),
    400,
    404,
    body=CreateTicket,
    description="Writes the ticket's activity events and its `ticket.created` webhook event in the same transaction.",
)
GET_TICKET = _route("getTicket", "One ticket", 200, openapi.response(Ticket, "The ticket"), 400, 404)
UPDATE_TICKET = _route(
    "updateTicket",
    "Change a ticket's subject, status, priority, assignee or tags",
    200,
    openapi.response(Ticket, "The ticket as it now is"),
    400,
    404,
    body=UpdateTicket,
    description="Each changed field writes its activity event; a change fires `ticket.updated` and, as the case may "
    "be, `ticket.status_changed`, `ticket.priority_changed` or `ticket.assigned`. An update that changes nothing "
    "writes nothing.",
)
LIST_CONVERSATIONS = _route(
    "listConversations",
    "A ticket's replies and internal notes, newest first",
    200,
    openapi.response(ConversationList, "A page of the ticket's conversations"),
    400,
    404,
)
ADD_CONVERSATION = _route(
    "addConversation",
    "Add a reply or an internal note to a ticket",
    201,
    openapi.response(Conversation, "The new reply or note"),
    400,
    404,
    409,
    413,
    body=AddConversation,
)
ADD_CONVERSATION["operation_class"] = openapi.documented_operation(
    response_headers={429: _RETRY},
    request_body=RequestBody(
        required=True,
        description=f"{AddConversation.__doc__} As JSON, or as multipart/form-data with its files (`file`, repeated, "
        f"each at most {MAX_UPLOAD_BYTES // (1024 * 1024)} MiB, 25 MiB in all): an agent's reply or note",
        content={
            openapi.JSON: OpenAPIMediaType(schema=Reference(ref="#/components/schemas/AddConversation")),
            "multipart/form-data": OpenAPIMediaType(
                schema=Schema(
                    type=OpenAPIType.OBJECT,
                    required=["body"],
                    additional_properties=False,
                    properties={
                        "body": Schema(type=OpenAPIType.STRING, min_length=1, max_length=65536, pattern=TEXT),
                        "internal": Schema(type=OpenAPIType.BOOLEAN),
                        "file": Schema(type=OpenAPIType.ARRAY, items=_FILE, max_items=10),
                    },
                )
            ),
        },
    ),
)
LIST_TICKET_EVENTS = _route(
    "listTicketEvents",
    "A ticket's activity events and its conversations', newest first",
    200,
    openapi.response(EventList, "A page of events"),
    400,
    404,
)
LIST_CUSTOMERS = _route(
    "listCustomers",
    "The organization's customers, newest first",
    200,
    openapi.response(CustomerList, "A page of customers"),
    400,
    404,
)
CREATE_CUSTOMER = _route(
    "createCustomer",
    "Add a customer (a contact); one per address",
    201,
    openapi.response(Customer, "The new customer"),
    400,
    409,
    body=CreateCustomer,
)
GET_CUSTOMER = _route("getCustomer", "One customer", 200, openapi.response(Customer, "The customer"), 400, 404)
UPDATE_CUSTOMER = _route(
    "updateCustomer",
    "Change a customer's address, name or phone",
    200,
    openapi.response(Customer, "The customer as it now is"),
    400,
    404,
    409,
    body=UpdateCustomer,
)
LIST_EVENTS = _route(
    "listEvents",
    "The activity events of one entity, newest first",
    200,
    openapi.response(EventList, "A page of events"),
    400,
    404,
)
GET_EVENT = _route("getEvent", "One activity event", 200, openapi.response(Event, "The event"), 400, 404)
LIST_CHANNELS = _route(
    "listChannels",
    "The organization's inbound channels (never their secrets)",
    200,
    openapi.response(ChannelList, "The channels"),
)


def _channel_body(*, change: bool = False) -> RequestBody:
    """`CreateChannel` (or, with `change`, `ChangeChannel`), as each kind of channel takes it: its kind, the addresses
    that route to it (none for a kind routed by a token the helpdesk makes), the secrets its provider issued and its
    settings, by name; a change takes no addresses, the secrets made for it to make anew, and an empty value
    removing a secret or a setting."""

    def text(low: int, high: int, pattern: str = LINE) -> Schema:
        return Schema(type=OpenAPIType.STRING, min_length=low, max_length=high, pattern=pattern)

    least = 0 if change else 1
    kinds = []
    for kind, spec in channels.KINDS.items():
        routed_by_token = spec.address_kind in spec.generated
        named: dict[str, Schema | Reference] = {
            name: text(least, 4096, SMTP_URL if least else f"^$|{SMTP_URL}")
            if name == "smtp_url"
            else text(least, 4096)
            for name in spec.given
        }
        settings: dict[str, Schema | Reference] = {name: text(0, 1600, TEXT) for name in spec.settings}
        properties: dict[str, Schema | Reference] = {
            "kind": Schema(type=OpenAPIType.STRING, const=kind),
            "name": text(1, 255),
            "secrets": Schema(type=OpenAPIType.OBJECT, properties=named, additional_properties=False),
            "settings": Schema(type=OpenAPIType.OBJECT, properties=settings, additional_properties=False),
        }
        if change:
            made = Schema(type=OpenAPIType.STRING, enum=list(spec.generated)) if spec.generated else text(1, 64)
            properties["rotate"] = Schema(type=OpenAPIType.ARRAY, items=made, max_items=len(spec.generated))
            required = ["kind"]
        else:
            properties["addresses"] = Schema(
                type=OpenAPIType.ARRAY,
                items=text(1, 320),
                min_items=0 if routed_by_token else 1,
                max_items=0 if routed_by_token else 20,
                description=f"each a {spec.address_kind.replace('_', ' ')}",
            )
            required = ["kind", "name"] if routed_by_token else ["kind", "name", "addresses"]
        kinds.append(
            Schema(
                type=OpenAPIType.OBJECT,
                title=f"a {kind} channel",
                required=required,
                additional_properties=False,
                properties=properties,
            )
        )
    return RequestBody(
        required=True,
        description=(ChangeChannel if change else CreateChannel).__doc__,
        content={openapi.JSON: OpenAPIMediaType(schema=Schema(one_of=kinds))},
    )


CREATE_CHANNEL = _route(
    "createChannel",
    "Add an inbound channel: a mailbox, a phone number, a messaging app's number or page, a shop, ...",
    201,
    openapi.response(ChannelCreated, "The channel, with the secrets the helpdesk made for it, shown this once"),
    400,
    409,
    body=CreateChannel,
)
CREATE_CHANNEL["operation_class"] = openapi.documented_operation(
    response_headers={429: _RETRY}, request_body=_channel_body()
)
UPDATE_CHANNEL = _route(
    "updateChannel",
    "Change a channel: rename it, set its provider's secrets and its settings, make its own secrets anew",
    200,
    openapi.response(ChannelCreated, "The channel, with the secrets made anew (`rotate`), shown this once"),
    400,
    404,
    409,
    body=ChangeChannel,
)
UPDATE_CHANNEL["operation_class"] = openapi.documented_operation(
    response_headers={429: _RETRY}, request_body=_channel_body(change=True)
)
GET_CHANNEL = _route("getChannel", "One channel", 200, openapi.response(ChannelObject, "The channel"), 400, 404)
DELETE_CHANNEL = _route(
    "deleteChannel",
    "Delete a channel: it receives nothing from now on (its past messages and tickets stay)",
    200,
    openapi.response(Deleted, "Deleted"),
    400,
    404,
)
LIST_INBOUND = _route(
    "listInboundMessages",
    "The stored provider calls (mails, SMS, messages, call events, ...), newest first, and what each became",
    200,
    openapi.response(InboundMessageList, "A page of inbound messages"),
    400,
    404,
)
MERGE_TICKET = _route(
    "mergeTicket",
    "Merge the ticket into another: it is closed, its conversations become the other's, and what would thread to it "
    "threads to the other from now on",
    200,
    openapi.response(Ticket, "The ticket merged into, as it now is"),
    400,
    404,
    409,
    body=MergeTicketInto,
)
DELETE_TICKET = _route(
    "deleteTicket",
    "Delete a ticket: it is listed nowhere and answers 404 from now on; its events stay readable to admins",
    200,
    openapi.response(Deleted, "Deleted"),
    400,
    404,
)
UPDATE_CONVERSATION = _route(
    "updateConversation",
    "Edit a reply or a note: its `updated` event keeps the old and the new content",
    200,
    openapi.response(Conversation, "The conversation as it now is"),
    400,
    404,
    body=EditConversation,
)
DELETE_CONVERSATION = _route(
    "deleteConversation", "Delete a reply or a note", 200, openapi.response(Deleted, "Deleted"), 400, 404
)
RESEND_CONVERSATION = _route(
    "resendConversation",
    "Send a failed reply again: its message to the customer is queued anew (a `delivery_changed` event)",
    200,
    openapi.response(Conversation, "The reply, its delivery queued"),
    400,
    404,
    409,
)
MERGE_CUSTOMER = _route(
    "mergeCustomer",
    "Merge a customer into another who is the same person: their tickets, orders and channel identities move to it",
    200,
    openapi.response(Customer, "The customer merged into, as it now is"),
    400,
    404,
    409,
    body=MergeCustomerInto,
)
DELETE_CUSTOMER = _route(
    "deleteCustomer",
    "Delete a customer, erasing their personal data (name, addresses, their tickets' subjects and messages, orders)",
    200,
    openapi.response(Deleted, "Deleted"),
    400,
    404,
)
LIST_USERS = _route("listUsers", "The organization's members", 200, openapi.response(MemberList, "The members"))
GET_USER = _route("getUser", "One member", 200, openapi.response(Member, "The member"), 400, 404)
UPDATE_USER = _route(
    "updateUser",
    "Change a member's role; the organization keeps at least one active admin",
    200,
    openapi.response(Member, "The member as they now are"),
    400,
    404,
    409,
    body=ChangeRole,
)
DEACTIVATE_USER = _route(
    "deactivateUser",
    "Deactivate a member: their sessions end at once, and their open and pending tickets are reassigned or unassigned",
    200,
    openapi.response(Member, "The member as they now are"),
    400,
    404,
    409,
    body=Deactivate,
)
REACTIVATE_USER = _route(
    "reactivateUser", "Reactivate a member", 200, openapi.response(Member, "The member as they now are"), 400, 404
)
LIST_INVITATIONS = _route(
    "listInvitations", "The pending invitations", 200, openapi.response(InvitationList, "The pending invitations")
)
CREATE_INVITATION = _route(
    "createInvitation",
    "Invite a person by email to join as an agent: a single-use link is mailed to them",
    201,
    openapi.response(Invitation, "The invitation"),
    400,
    409,
    body=Invite,
)
DELETE_INVITATION = _route(
    "deleteInvitation", "Revoke a pending invitation", 200, openapi.response(Deleted, "Revoked"), 400, 404
)
GET_ATTACHMENT = openapi.route_docs(
    "getAttachment",
    "A stored attachment, by the signed `url` its conversation lists (no API key: the URL is the credential)",
    {
        200: openapi.response(bytes, "The file, as it was received or uploaded", media_type="application/octet-stream"),
        **errors(400, 403, 404, 500),
    },
    operation=openapi.documented_operation(parameters=openapi.signed_url_parameters(), keyless=True),
)
UPLOAD = _route(
    "uploadFile", "Keep a file to attach to a reply or note", 201, openapi.response(Upload, "The file"), 400, 413
)
UPLOAD["operation_class"] = openapi.documented_operation(
    response_headers={429: _RETRY},
    request_body=RequestBody(
        required=True,
        description=f"One file, at most {MAX_UPLOAD_BYTES // (1024 * 1024)} MiB, as the `file` field",
        content={
            "multipart/form-data": OpenAPIMediaType(
                schema=Schema(type=OpenAPIType.OBJECT, required=["file"], properties={"file": _FILE})
            )
        },
    ),
)
SEARCH = _route(
    "search",
    "Full-text search over the organization's tickets, conversations and customers, best first",
    200,
    openapi.response(SearchResults, "A page of hits; `next_offset` continues it"),
    400,
)
