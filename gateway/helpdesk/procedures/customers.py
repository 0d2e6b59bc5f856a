"""Customers for a signed-in member: `customers.list`, `customers.get`, `customers.create`, `customers.update`,
`customers.merge` and `customers.delete` (admins), with the REST API's rules (the same operations), answering the same
bodies."""

from __future__ import annotations

from collections.abc import Mapping

import msgspec

from gateway.helpdesk.procedures.wire import Call, Listing, Procedure
from gateway.helpdesk.schemas import Customer, Deleted
from operations.helpdesk import customers
from operations.helpdesk.customers import CreateCustomer, ListCustomers, MergeCustomerInto, UpdateCustomer
from operations.helpdesk.desk import Helpdesk
from operations.helpdesk.fields import Uuid


class CustomerId(msgspec.Struct, forbid_unknown_fields=True, kw_only=True):
    id: Uuid


class UpdateCustomerById(UpdateCustomer, kw_only=True):
    id: Uuid


class MergeCustomer(MergeCustomerInto, kw_only=True):
    id: Uuid


def procedures(desk: Helpdesk) -> Mapping[str, Procedure]:
    async def list_customers(call: Call, given: ListCustomers) -> Listing[Customer]:
        return Listing.of(await customers.listing(desk, call.actor, given), Customer.of)

    async def get_customer(call: Call, given: CustomerId) -> Customer:
        return Customer.of(await customers.get(desk, call.actor, given.id))

    async def create_customer(call: Call, given: CreateCustomer) -> Customer:
        return Customer.of(await customers.create(desk, call.actor, given))

    async def update_customer(call: Call, given: UpdateCustomerById) -> Customer:
        return Customer.of(await customers.change(desk, call.actor, given.id, given))

    async def merge_customer(call: Call, given: MergeCustomer) -> Customer:
        return Customer.of(await customers.merge(desk, call.actor, given.id, given))

    async def delete_customer(call: Call, given: CustomerId) -> Deleted:
        await customers.delete(desk, call.actor, given.id)
        return Deleted(id=given.id)

    return {
        "customers.list": Procedure("query", ListCustomers, list_customers),
        "customers.get": Procedure("query", CustomerId, get_customer),
        "customers.create": Procedure("mutation", CreateCustomer, create_customer),
        "customers.update": Procedure("mutation", UpdateCustomerById, update_customer),
        "customers.merge": Procedure("mutation", MergeCustomer, merge_customer),
        "customers.delete": Procedure("mutation", CustomerId, delete_customer, "admin"),
    }
