"""Customers (contacts) over REST (`/api/v1/customers`): list, get, create, update; one per address in an
organization. A create fires `customer.created`, a change `customer.updated`."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar import Controller, Request, Response, get, patch, post
from litestar.di import NamedDependency
from litestar.params import FromPath, Parameter

from gateway.common.auth import requires
from gateway.common.errors import decode_body
from gateway.helpdesk import docs
from gateway.helpdesk.auth import HelpdeskPrincipal
from gateway.helpdesk.deps import HelpdeskGateway
from gateway.helpdesk.errors import ERRORS, HelpdeskError
from gateway.helpdesk.events import is_uuid
from gateway.helpdesk.schemas import CreateCustomer, Customer, CustomerList, UpdateCustomer
from gateway.helpdesk.tickets import Cursor, Limit, next_cursor
from storage.common.paging import CursorNotFound
from storage.helpdesk import customers
from wire.timestamps import iso

_decode_create = msgspec.json.Decoder(CreateCustomer).decode
_decode_update = msgspec.json.Decoder(UpdateCustomer).decode


def customer_object(customer: customers.CustomerRecord) -> Customer:
    return Customer(
        id=customer.id,
        email=customer.email,
        name=customer.name,
        phone=customer.phone,
        bouncing=customer.bouncing,
        created_at=iso(customer.created_at, "milliseconds"),
        updated_at=iso(customer.updated_at, "milliseconds"),
    )


def _taken(email: str) -> HelpdeskError:
    return HelpdeskError(409, f"Another customer of this organization has the address {email.lower()}")


async def _own(helpdesk: HelpdeskGateway, organization_id: str, customer_id: str) -> customers.CustomerRecord:
    customer = await helpdesk.db.read(customers.get, organization_id, customer_id) if is_uuid(customer_id) else None
    if customer is None:
        raise HelpdeskError(404, "No customer with that id in this organization")
    return customer


class CustomersController(Controller):
    path = "/api/v1/customers"
    tags = ["customers"]

    @get("/", guards=[requires("customers:read")], **docs.LIST_CUSTOMERS)
    async def list_customers(
        self,
        *,
        request: Request[HelpdeskPrincipal, Any, Any],
        helpdesk: NamedDependency[HelpdeskGateway],
        email: Annotated[str | None, Parameter(max_length=320, description="The customer with this address")] = None,
        limit: Limit = 20,
        cursor: Cursor = None,
    ) -> CustomerList:
        try:
            found, has_more = await helpdesk.db.read(
                customers.listing, request.user.owner_id, email=email, limit=limit, cursor=cursor
            )
        except CursorNotFound:
            raise HelpdeskError(404, "cursor names no customer of this listing") from None
        data = [customer_object(customer) for customer in found]
        return CustomerList(data=data, has_more=has_more, next_cursor=next_cursor([c.id for c in data], has_more))

    @post("/", guards=[requires("customers:write")], **docs.CREATE_CUSTOMER)
    async def create_customer(
        self, request: Request[HelpdeskPrincipal, Any, Any], helpdesk: NamedDependency[HelpdeskGateway]
    ) -> Response[Customer]:
        body = decode_body(_decode_create, await request.body(), ERRORS)
        organization_id = request.user.owner_id
        try:
            customer = await helpdesk.change(
                organization_id, customers.create, organization_id, email=body.email, name=body.name, phone=body.phone
            )
        except customers.EmailTaken:
            raise _taken(body.email) from None
        return Response(customer_object(customer), status_code=201)

    @get("/{customer_id:str}", guards=[requires("customers:read")], **docs.GET_CUSTOMER)
    async def get_customer(
        self,
        request: Request[HelpdeskPrincipal, Any, Any],
        helpdesk: NamedDependency[HelpdeskGateway],
        customer_id: FromPath[str],
    ) -> Customer:
        return customer_object(await _own(helpdesk, request.user.owner_id, customer_id))

    @patch("/{customer_id:str}", guards=[requires("customers:write")], **docs.UPDATE_CUSTOMER)
    async def update_customer(
        self,
        request: Request[HelpdeskPrincipal, Any, Any],
        helpdesk: NamedDependency[HelpdeskGateway],
        customer_id: FromPath[str],
    ) -> Customer:
        body = decode_body(_decode_update, await request.body(), ERRORS)
        organization_id = request.user.owner_id
        await _own(helpdesk, organization_id, customer_id)
        given = {name: value for name, value in msgspec.structs.asdict(body).items() if value is not msgspec.UNSET}
        try:
            customer = await helpdesk.change(
                organization_id, customers.update_customer, organization_id, customer_id, given
            )
        except customers.EmailTaken:
            raise _taken(str(given.get("email", ""))) from None
        if customer is None:
            raise HelpdeskError(404, "No customer with that id in this organization")
        return customer_object(customer)
