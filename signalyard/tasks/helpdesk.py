"""The helpdesk service's operator tasks: the bodies of its `signalyard` commands (their arguments are in
`signalyard/registry/helpdesk.py`), on the database alone: nothing of the gateway, the processors or the broker is
imported to run one."""

from __future__ import annotations

import argparse
import os
from datetime import UTC, datetime
from typing import Any

from signalyard import secrets
from signalyard.service import Task
from signalyard.settings import PlatformSettings, load
from signalyard.tasks.mail import print_kept_mails
from storage.common import keys as key_store
from storage.common.db import Database
from storage.helpdesk import channels, keys, workspaces


async def mails(db: Database, args: argparse.Namespace) -> None:
    await print_kept_mails(db, keys.SERVICE, args.to, args.limit)


async def organizations(db: Database, _: argparse.Namespace) -> None:
    print("id\tslug\tplan\tbilling\tname")
    for org in await db.read(workspaces.organizations):
        print(f"{org.id}\t{org.slug}\t{org.plan}\t{org.billing_status}\t{org.name}")


async def keys_create(db: Database, args: argparse.Namespace) -> None:
    limits = dict(keys.DEFAULT_RATE_LIMITS)
    for window, given in (("minute", args.per_minute), ("hour", args.per_hour)):
        if given is not None:
            if given < 1:
                raise ValueError(f"--per-{window} must be at least 1")
            limits[window] = given
    row, key = await db.write(
        keys.create_key, args.organization_id, name=args.name, scopes=args.scope, rate_limits=limits
    )
    print(f"key {row.id}")
    print(key)


async def keys_list(db: Database, args: argparse.Namespace) -> None:
    print("id\tprefix\tscopes\tstate\tname")
    for row in await db.read(key_store.owner_keys, keys.SERVICE, args.organization_id):
        state = "revoked" if row.revoked_at is not None else "active"
        print(f"{row.id}\t{row.display_prefix}\t{','.join(row.scopes)}\t{state}\t{row.name or ''}")


async def keys_revoke(db: Database, args: argparse.Namespace) -> None:
    if await db.write(key_store.revoke_key, keys.SERVICE, args.key_id) is None:
        raise LookupError(f"no active helpdesk key {args.key_id}")
    print(f"key {args.key_id}: revoked")


def _pairs(given: list[str], what: str) -> dict[str, str]:
    pairs = {}
    for item in given:
        name, equals, value = item.partition("=")
        if not equals or not name:
            raise ValueError(f"--{what} takes NAME=VALUE, not {item!r}")
        pairs[name] = value
    return pairs


def _cipher() -> Any:
    return secrets.secrets_cipher(load(PlatformSettings, os.environ))


async def channels_create(db: Database, args: argparse.Namespace) -> None:
    channel, generated = await db.write(
        channels.open_channel,
        _cipher(),
        args.organization_id,
        kind=args.kind,
        name=args.name,
        addresses=args.address,
        given=_pairs(args.secret, "secret"),
        settings=_pairs(args.setting, "setting"),
        now=datetime.now(UTC),
    )
    print(f"channel {channel.id}")
    for name, value in generated.items():
        print(f"{name} {value}")


async def channels_list(db: Database, args: argparse.Namespace) -> None:
    print("id\tkind\taddresses\tname")
    for channel in await db.read(channels.listing, _cipher(), args.organization_id):
        print(f"{channel.id}\t{channel.kind}\t{','.join(a for _, a in channel.addresses)}\t{channel.name}")


async def channels_update(db: Database, args: argparse.Namespace) -> None:
    changed = await db.write(
        channels.change,
        _cipher(),
        args.organization_id,
        args.channel_id,
        kind=None,
        name=args.name,
        given=_pairs(args.secret, "secret"),
        rotate=args.rotate,
        settings=_pairs(args.setting, "setting"),
        now=datetime.now(UTC),
    )
    if changed is None:
        raise LookupError(f"no channel {args.channel_id} in organization {args.organization_id}")
    print(f"channel {args.channel_id}: changed")
    for name, value in changed[1].items():
        print(f"{name} {value}")


async def channels_delete(db: Database, args: argparse.Namespace) -> None:
    if not await db.write(channels.remove, args.organization_id, args.channel_id, datetime.now(UTC)):
        raise LookupError(f"no channel {args.channel_id} in organization {args.organization_id}")
    print(f"channel {args.channel_id}: deleted")


TASKS: dict[str, Task] = {
    "mails": mails,
    "organizations": organizations,
    "keys_create": keys_create,
    "keys_list": keys_list,
    "keys_revoke": keys_revoke,
    "channels_create": channels_create,
    "channels_list": channels_list,
    "channels_update": channels_update,
    "channels_delete": channels_delete,
}
