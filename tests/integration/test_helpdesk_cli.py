"""The helpdesk's operator commands, run as the operator runs them (a separate process) on the running helpdesk
stack's database: `helpdesk mails [--to]` prints the kept sign-in links; `helpdesk organizations` lists them;
`helpdesk keys create|list|revoke` make a REST key that the gateway takes with its scopes and limits, list it by its
prefix, and revoke it at once."""

from __future__ import annotations

import asyncio
import re
import subprocess
import uuid
from pathlib import Path
from urllib.parse import urlsplit

from tests.helpdesk_stack import HelpdeskStack, data, new_email
from tests.integration.faults import run_cli

KEY = re.compile(r"^hd_live_[0-9a-f]{40}$")


async def cli(stack: HelpdeskStack, _tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """The CLI as the stack's operator runs it: on its database, with its data directory (and so its kept key for
    stored secrets, as SIGNALYARD_SECRET_KEYS would give it)."""
    platform = stack.settings.platform
    return await asyncio.to_thread(run_cli, platform.database_url or "", platform.data_dir, *args)


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert result.returncode == 0, (result.returncode, result.stdout, result.stderr)
    return result.stdout


async def test_mails_prints_the_kept_sign_in_links_newest_first_to_one_address(
    helpdesk_stack: HelpdeskStack, tmp_path: Path
) -> None:
    ada, grace = new_email("ada"), new_email("grace")
    async with helpdesk_stack.browser() as browser:
        for address in (ada, grace, ada):
            data(await browser.call("auth.signInWithEmail", {"email": address}))
    printed = ok(await cli(helpdesk_stack, tmp_path, "helpdesk", "mails", "--to", ada))
    links = re.findall(r"http://\S+/auth/link\?token=hd_link_[\w-]+", printed)
    assert len(links) == 2
    assert grace not in printed
    assert printed.splitlines()[0].endswith(f" to {ada}: Your sign-in link"), printed
    async with helpdesk_stack.browser() as browser:  # the newest link works in a browser
        split = urlsplit(links[0])
        opened = await browser.client.get(f"{split.path}?{split.query}")
    assert opened.status_code == 303
    assert ok(await cli(helpdesk_stack, tmp_path, "helpdesk", "mails", "--to", "nobody@example.com")) == (
        "no kept mail to nobody@example.com\n"
    )


async def test_keys_create_list_and_revoke_act_on_the_gateway_at_once(
    helpdesk_stack: HelpdeskStack, tmp_path: Path
) -> None:
    async with helpdesk_stack.browser() as browser:
        organization = (await browser.sign_up("Operators Inc"))["organization"]
    listed = ok(await cli(helpdesk_stack, tmp_path, "helpdesk", "organizations"))
    assert f"{organization['id']}\t{organization['slug']}\tfree\tnone\tOperators Inc" in listed.splitlines()

    created = ok(
        await cli(
            helpdesk_stack, tmp_path, "helpdesk", "keys", "create", organization["id"], "--scope", "tickets:read",
            "--name", "reporting", "--per-minute", "2",
        )
    )  # fmt: skip
    key_line, key = created.splitlines()
    key_id = key_line.removeprefix("key ")
    assert KEY.match(key), created
    assert (await helpdesk_stack.rest(key, "GET", "/tickets")).status_code == 200
    assert (await helpdesk_stack.rest(key, "POST", "/tickets", json={})).status_code == 403, "tickets:read only"
    assert (await helpdesk_stack.rest(key, "GET", "/tickets")).status_code == 200, "a refusal costs no budget"
    limited = await helpdesk_stack.rest(key, "GET", "/tickets")
    assert (limited.status_code, limited.json()["error"]["code"]) == (429, "rate_limited"), "2 a minute"

    keys = ok(await cli(helpdesk_stack, tmp_path, "helpdesk", "keys", "list", organization["id"])).splitlines()
    assert keys[0] == "id\tprefix\tscopes\tstate\tname"
    assert f"{key_id}\t{key[:12]}\ttickets:read\tactive\treporting" in keys
    assert key not in "\n".join(keys)

    assert ok(await cli(helpdesk_stack, tmp_path, "helpdesk", "keys", "revoke", key_id)) == f"key {key_id}: revoked\n"
    assert (await helpdesk_stack.rest(key, "GET", "/tickets")).status_code == 401
    again = await cli(helpdesk_stack, tmp_path, "helpdesk", "keys", "revoke", key_id)
    assert (again.returncode, again.stderr) == (2, f"signalyard: no active helpdesk key {key_id}\n")


async def test_keys_create_refuses_an_unknown_scope_or_organization(
    helpdesk_stack: HelpdeskStack, tmp_path: Path
) -> None:
    async with helpdesk_stack.browser() as browser:
        organization = (await browser.sign_up())["organization"]["id"]
    unknown_scope = await cli(helpdesk_stack, tmp_path, "helpdesk", "keys", "create", organization, "--scope", "tix:*")
    assert (unknown_scope.returncode, unknown_scope.stderr) == (2, "signalyard: unknown scope 'tix:*'\n")
    nobody = "3f1c9a0b-7d2e-4e8a-9c3b-5d6f7a8e9b0c"
    unknown_org = await cli(helpdesk_stack, tmp_path, "helpdesk", "keys", "create", nobody, "--scope", "*")
    assert (unknown_org.returncode, unknown_org.stderr) == (2, f"signalyard: no organization {nobody}\n")


async def test_channels_create_prints_the_secrets_once_and_the_channel_receives_at_once(
    helpdesk_stack: HelpdeskStack, tmp_path: Path
) -> None:
    async with helpdesk_stack.browser() as browser:
        organization = (await browser.sign_up())["organization"]["id"]
    mailbox = f"cli-{uuid.uuid4().hex[:8]}@acme.example"
    made = ok(
        await cli(
            helpdesk_stack, tmp_path, "helpdesk", "channels", "create", organization, "--kind", "email",
            "--name", "Support", "--address", mailbox,
        )
    )  # fmt: skip
    lines = dict(line.split(" ", 1) for line in made.splitlines())
    assert set(lines) == {"channel", "forwarder_secret", "inbound_token"}
    listed = ok(await cli(helpdesk_stack, tmp_path, "helpdesk", "channels", "list", organization)).splitlines()
    assert listed == ["id\tkind\taddresses\tname", f"{lines['channel']}\temail\t{mailbox}\tSupport"]

    raw = f"From: ada@example.com\r\nTo: {mailbox}\r\nSubject: Hi\r\nMessage-ID: <{uuid.uuid4()}@x>\r\n\r\nHello\r\n"
    headers = {"Content-Type": "message/rfc822", "x-forwarder-secret": lines["forwarder_secret"]}
    sent = await helpdesk_stack.client.post("/api/webhooks/inbound-email", content=raw.encode(), headers=headers)
    assert sent.status_code == 200, "the secret the CLI printed is the channel's"

    rotated = ok(
        await cli(
            helpdesk_stack, tmp_path, "helpdesk", "channels", "update", organization, lines["channel"],
            "--rotate", "forwarder_secret", "--name", "Front desk",
        )
    )  # fmt: skip
    said = rotated.splitlines()
    assert said[0] == f"channel {lines['channel']}: changed"
    assert said[1].startswith("forwarder_secret ")
    new_secret = said[1].split(" ", 1)[1]
    assert new_secret != lines["forwarder_secret"]
    refused = await helpdesk_stack.client.post("/api/webhooks/inbound-email", content=raw.encode(), headers=headers)
    assert refused.status_code == 401, "the old secret stops working at once"
    headers["x-forwarder-secret"] = new_secret
    sent = await helpdesk_stack.client.post("/api/webhooks/inbound-email", content=raw.encode(), headers=headers)
    assert sent.status_code == 200, "the secret the update printed is the channel's"
    listed = ok(await cli(helpdesk_stack, tmp_path, "helpdesk", "channels", "list", organization)).splitlines()
    assert listed[1] == f"{lines['channel']}\temail\t{mailbox}\tFront desk"

    deleted = ok(await cli(helpdesk_stack, tmp_path, "helpdesk", "channels", "delete", organization, lines["channel"]))
    assert deleted == f"channel {lines['channel']}: deleted\n"
    again = await helpdesk_stack.client.post("/api/webhooks/inbound-email", content=raw.encode(), headers=headers)
    assert again.status_code == 404, "a deleted channel receives nothing"
    bad = await cli(helpdesk_stack, tmp_path, "helpdesk", "channels", "create", organization, "--kind", "email",
                    "--name", "X", "--secret", "nonsense")  # fmt: skip
    assert (bad.returncode, bad.stderr) == (2, "signalyard: --secret takes NAME=VALUE, not 'nonsense'\n")
