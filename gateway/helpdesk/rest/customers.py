"""Customers (contacts) over REST (`/api/v1/customers`): list, get, create, update; one per address in an
organization. A create fires `customer.created`, a change `customer.updated`."""

from __future__ import annotations

from typing import Annotated, Any

import msgspec
from litestar import Controller, Request, Response, delete, get, patch, post
from litestar.di import NamedDependency
from litestar.params import FromPath, Parameter

from gateway.common.auth import requires
from gateway.common.errors import decode_body
from gateway.helpdesk import docs
from gateway.helpdesk.auth import HelpdeskPrincipal, actor_of
from gateway.helpdesk.errors import ERRORS
from gateway.helpdesk.rest.paging import Cursor, Limit
from gateway.helpdesk.schemas import Customer, CustomerList, Deleted
from operations.helpdesk import customers
from operations.helpdesk.customers import CreateCustomer, ListCustomers, MergeCustomerInto, UpdateCustomer
from operations.helpdesk.desk import Helpdesk

_decode_create = msgspec.json.Decoder(CreateCustomer).decode
_decode_update = msgspec.json.Decoder(UpdateCustomer).decode
_decode_merge = msgspec.json.Decoder(MergeCustomerInto).decode


class CustomersController(Controller):
    path = "/api/v1/customers"
    tags = ["customers"]

    @get("/", guards=[requires("customers:read")], **docs.LIST_CUSTOMERS)
    async def list_customers(
        self,
        *,
        request: Request[HelpdeskPrincipal, Any, Any],
        desk: NamedDependency[Helpdesk],
        email: Annotated[str | None, Parameter(max_length=320, description="The customer with this address")] = None,
        limit: Limit = 20,
        cursor: Cursor = None,
    ) -> CustomerList:
        page = await customers.listing(desk, actor_of(request), ListCustomers(email=email, limit=limit, cursor=cursor))
        data = [Customer.of(customer) for customer in page.items]
        return CustomerList(data=data, has_more=page.has_more, next_cursor=page.next_cursor)

    @post("/", guards=[requires("customers:write")], **docs.CREATE_CUSTOMER)
    async def create_customer(
        self, request: Request[HelpdeskPrincipal, Any, Any], desk: NamedDependency[Helpdesk]
    ) -> Response[Customer]:
        given = decode_body(_decode_create, await request.body(), ERRORS)
        return Response(Customer.of(await customers.create(desk, actor_of(request), given)), status_code=201)

    @get("/{customer_id:str}", guards=[requires("customers:read")], **docs.GET_CUSTOMER)
    async def get_customer(
        self, request: Request[HelpdeskPrincipal, Any, Any], desk: NamedDependency[Helpdesk], customer_id: FromPath[str]
    ) -> Customer:
        return Customer.of(await customers.get(desk, actor_of(request), customer_id))

    @patch("/{customer_id:str}", guards=[requires("customers:write")], **docs.UPDATE_CUSTOMER)
    async def update_customer(
        self, request: Request[HelpdeskPrincipal, Any, Any], desk: NamedDependency[Helpdesk], customer_id: FromPath[str]
    ) -> Customer:
        given = decode_body(_decode_update, await request.body(), ERRORS)
        return Customer.of(await customers.change(desk, actor_of(request), customer_id, given))

    @delete("/{customer_id:str}", guards=[requires("customers:write")], **docs.DELETE_CUSTOMER)
    async def delete_customer(
        self, request: Request[HelpdeskPrincipal, Any, Any], desk: NamedDependency[Helpdesk], customer_id: FromPath[str]
    ) -> Deleted:
        await customers.delete(desk, actor_of(request), customer_id)
        return Deleted(id=customer_id)

    @post("/{customer_id:str}/merge", guards=[requires("customers:write")], **docs.MERGE_CUSTOMER)
    async def merge_customer(
        self, request: Request[HelpdeskPrincipal, Any, Any], desk: NamedDependency[Helpdesk], customer_id: FromPath[str]
    ) -> Customer:
        given = decode_body(_decode_merge, await request.body(), ERRORS)
        return Customer.of(await customers.merge(desk, actor_of(request), customer_id, given))
