"""The photo service's operator tasks: the bodies of its `signalyard` commands (their arguments are in
`signalyard/registry/photo.py`), on the database alone: nothing of the gateway, the processors or the broker is
imported to run one."""

from __future__ import annotations

import argparse

from sqlalchemy.engine import Connection

from signalyard.service import Task
from signalyard.tasks.mail import print_kept_mails
from storage.common.db import Database
from storage.photo import customers


def _new_customer(connection: Connection, args: argparse.Namespace) -> tuple[str, str, str]:
    """A customer with its first sandbox and live keys: (customer id, sandbox key, live key)."""
    customer_id = customers.create_customer(
        connection,
        args.name,
        plan=args.plan,
        monthly_cap=args.monthly_cap,
        subscription_active=not args.no_subscription,
    )
    _, sandbox = customers.create_key(connection, customer_id, "test", name="sandbox key")
    _, live = customers.create_key(connection, customer_id, "live", name="live key")
    return customer_id, sandbox, live


async def customers_create(db: Database, args: argparse.Namespace) -> None:
    customer_id, sandbox, live = await db.write(_new_customer, args)
    print(f"customer {customer_id}")
    print(f"sandbox key {sandbox}")
    print(f"live key {live}")


async def customers_list(db: Database, _: argparse.Namespace) -> None:
    print("id\tplan\tmonthly_cap\tsubscription\tname\temail")
    for customer in await db.read(customers.list_customers):
        active = "active" if customer.subscription_active else "no-subscription"
        row = (customer.id, customer.plan, customer.monthly_cap, active, customer.name, customer.email or "")
        print("\t".join(str(value) for value in row))


async def customers_set_plan(db: Database, args: argparse.Namespace) -> None:
    if args.plan not in customers.PLANS and args.monthly_cap is None:
        raise ValueError(f"unknown plan {args.plan!r}: one of {', '.join(customers.PLANS)}, or give --monthly-cap")
    cap = args.monthly_cap if args.monthly_cap is not None else customers.PLANS[args.plan]
    if not await db.write(customers.update_customer, args.customer_id, plan=args.plan, monthly_cap=cap):
        raise LookupError(f"no customer {args.customer_id}")
    print(f"customer {args.customer_id}: plan {args.plan}, monthly cap {cap}")


def _subscription(active: bool) -> Task:
    async def run(db: Database, args: argparse.Namespace) -> None:
        if not await db.write(customers.update_customer, args.customer_id, subscription_active=active):
            raise LookupError(f"no customer {args.customer_id}")
        print(f"customer {args.customer_id}: subscription {'active' if active else 'inactive'}")

    return run


async def customers_key_limits(db: Database, args: argparse.Namespace) -> None:
    if not await db.write(customers.set_key_limits, args.key_id, args.per_minute, args.per_hour):
        raise LookupError(f"no photo key {args.key_id}")
    print(f"key {args.key_id}: {args.per_minute}/minute, {args.per_hour}/hour")


async def customers_mails(db: Database, args: argparse.Namespace) -> None:
    await print_kept_mails(db, customers.SERVICE, args.to, args.limit)


TASKS: dict[str, Task] = {
    "customers_mails": customers_mails,
    "customers_create": customers_create,
    "customers_list": customers_list,
    "customers_set_plan": customers_set_plan,
    "customers_activate": _subscription(True),
    "customers_deactivate": _subscription(False),
    "customers_key_limits": customers_key_limits,
}
