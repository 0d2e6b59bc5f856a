"""The phone service's operator tasks: the bodies of its `signalyard` commands (their arguments are in
`signalyard/registry/phone.py`), on the database alone: nothing of the gateway, the processors or the broker is
imported to run one."""

from __future__ import annotations

import argparse

from signalyard.service import Task
from storage.common.db import Database
from storage.phone import tenants


async def tenants_create(db: Database, args: argparse.Namespace) -> None:
    tenant_id = await db.write(
        tenants.create_tenant, args.name, skus=args.sku, spend_cap_microdollars=args.spend_cap_microdollars
    )
    print(tenant_id)


def _tenant_update(**values: object) -> Task:
    async def run(db: Database, args: argparse.Namespace) -> None:
        if not await db.write(tenants.update_tenant, args.tenant_id, **values):
            raise LookupError(f"no tenant {args.tenant_id}")
        print(f"tenant {args.tenant_id}: {values}")

    return run


async def tenants_set_cap(db: Database, args: argparse.Namespace) -> None:
    if not await db.write(tenants.update_tenant, args.tenant_id, spend_cap_microdollars=args.microdollars):
        raise LookupError(f"no tenant {args.tenant_id}")
    print(f"tenant {args.tenant_id}: monthly spend cap {args.microdollars} microdollars")


async def tenants_list(db: Database, _: argparse.Namespace) -> None:
    print("id\tstatus\tname")
    for tenant in await db.read(tenants.list_tenants):
        print(f"{tenant.id}\t{tenant.status}\t{tenant.name}")


async def keys_create(db: Database, args: argparse.Namespace) -> None:
    scopes = list(dict.fromkeys(args.scope)) if args.scope else None
    _, key = await db.write(tenants.create_key, args.tenant, args.env, scopes)
    print(key)


async def keys_revoke(db: Database, args: argparse.Namespace) -> None:
    if not await db.write(tenants.revoke_key, args.key):
        raise LookupError("no such active key")
    print("revoked")


async def prices_set(db: Database, args: argparse.Namespace) -> None:
    await db.write(tenants.set_price, args.tenant, args.sku, args.microdollars)
    print(f"{args.sku} for tenant {args.tenant}: {args.microdollars} microdollars")


async def requests_reconcile(db: Database, args: argparse.Namespace) -> None:
    # the decision is the processors' rule, imported by this command alone: with it, phonenumbers' geodata and the
    # name matcher's tables (1.5 s of CPU) would load for every phone command
    from processors.phone.service import reconcile

    state = await reconcile(db, args.request_id, args.outcome)
    print(f"request {args.request_id}: {state}")


TASKS: dict[str, Task] = {
    "tenants_create": tenants_create,
    "tenants_suspend": _tenant_update(status="suspended"),
    "tenants_activate": _tenant_update(status="active"),
    "tenants_set_cap": tenants_set_cap,
    "tenants_list": tenants_list,
    "keys_create": keys_create,
    "keys_revoke": keys_revoke,
    "prices_set": prices_set,
    "requests_reconcile": requests_reconcile,
}
