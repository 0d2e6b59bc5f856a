"""Self-inspection sessions (docs/photo.md, "Self-inspection"): a key makes one and gets its single-use link; the
recipient's previews are judged but never billed, listed or announced; the submission runs the normal verify and
fires `inspection.submitted` with its verification (and `verification.completed`, as any verify); a cancelled,
expired or used link says so and stores nothing. The recipient's camera is tested in tests/browser."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
from sqlalchemy import func, select, update

from storage.photo import customers
from storage.photo.inspections import INSPECTIONS as INSPECTION_ROWS
from storage.photo.models import Verification
from tests.judgement.photos import ERIK
from tests.peers.receiver import WebhookReceiver
from tests.photo_stack import CustomerKeys, PhotoStack, jpeg

INSPECTIONS = "/api/v1/inspections"
CSRF = re.compile(r'name="_csrf_token" value="([^"]+)"')


async def create(stack: PhotoStack, key: str, **body: Any) -> httpx.Response:
    return await stack.call(key, "POST", INSPECTIONS, json={"policy": "profile_photo", **body})


class Recipient:
    """The person a link was sent to, in a browser: the page, then its forms (with the page's CSRF token)."""

    def __init__(self, client: httpx.AsyncClient, url: str) -> None:
        self.client, self.url, self.token = client, url, ""

    async def open(self) -> httpx.Response:
        page = await self.client.get(self.url)
        if found := CSRF.search(page.text):
            self.token = found.group(1)
        return page

    async def send(self, action: str, image: bytes) -> httpx.Response:
        if not self.token:
            await self.client.get("/dashboard/sign-in")  # any page sets the CSRF cookie
            self.token = self.client.cookies.get("pc-csrf") or ""
        files = {"image": ("me.jpg", image, "image/jpeg")}
        return await self.client.post(f"{self.url}/{action}", data={"_csrf_token": self.token}, files=files)


async def count(stack: PhotoStack, customer_id: str, **where: Any) -> int:
    def read(connection: Any) -> int:
        table = Verification.__table__
        statement = select(func.count()).select_from(table).where(table.c.customer_id == customer_id)
        for column, value in where.items():
            statement = statement.where(table.c[column] == value)
        return connection.execute(statement).scalar_one()

    return await stack.db.read(read)


async def test_an_inspection_is_made_read_listed_and_cancelled_once(
    photo_stack: PhotoStack, customer: CustomerKeys
) -> None:
    made = await create(photo_stack, customer.test_key, reference="order-7731", metadata={"seat": "12A"})
    assert made.status_code == 201, made.text
    body = made.json()
    assert body["id"].startswith("ins_")
    assert (body["status"], body["policy"], body["reference"], body["metadata"]) == (
        "open",
        "profile_photo",
        "order-7731",
        {"seat": "12A"},
    )
    assert body["url"].startswith(f"{photo_stack.base_url}/inspect/pc_inspect_")
    created, expires = datetime.fromisoformat(body["created_at"]), datetime.fromisoformat(body["expires_at"])
    assert expires - created == timedelta(days=7)
    assert body["verification"] is None

    read = (await photo_stack.call(customer.test_key, "GET", f"{INSPECTIONS}/{body['id']}")).json()
    assert "url" not in read  # the link is shown once
    assert read == {key: value for key, value in body.items() if key != "url"}
    second = (await create(photo_stack, customer.test_key)).json()
    page = (await photo_stack.call(customer.test_key, "GET", f"{INSPECTIONS}?limit=1")).json()
    assert ([item["id"] for item in page["data"]], page["has_more"]) == ([second["id"]], True)
    rest = await photo_stack.call(customer.test_key, "GET", f"{INSPECTIONS}?starting_after={page['next_cursor']}")
    assert body["id"] in [item["id"] for item in rest.json()["data"]]

    cancelled = await photo_stack.call(customer.test_key, "POST", f"{INSPECTIONS}/{body['id']}/cancel")
    assert (cancelled.status_code, cancelled.json()["status"]) == (200, "cancelled")
    again = await photo_stack.call(customer.test_key, "POST", f"{INSPECTIONS}/{body['id']}/cancel")
    assert again.status_code == 409
    assert again.json() == {"error": "Only an open inspection can be cancelled: this one was cancelled"}
    async with httpx.AsyncClient(base_url=photo_stack.base_url) as client:
        page_ = await client.get(body["url"])
    assert page_.status_code == 409
    assert "This inspection was cancelled: nothing more can be sent with this link" in page_.text


async def test_bad_inspections_are_refused_and_another_account_sees_none(
    photo_stack: PhotoStack, customer: CustomerKeys
) -> None:
    for body, said in (
        ({"policy": "drivers_license"}, "policy"),
        ({"expires_in": 60}, "expires_in"),
        ({"reference": "x" * 256}, "reference"),
        ({"colour": "red"}, "colour"),
    ):
        refused = await create(photo_stack, customer.test_key, **body)
        assert refused.status_code == 400, body
        assert said in refused.json()["error"]
    made = (await create(photo_stack, customer.test_key)).json()
    other = await photo_stack.new_customer()
    assert (await photo_stack.call(other.test_key, "GET", f"{INSPECTIONS}/{made['id']}")).status_code == 404
    assert (await photo_stack.call(customer.live_key, "GET", f"{INSPECTIONS}/{made['id']}")).status_code == 404

    def verify_only(connection: Any) -> str:
        return customers.create_key(connection, customer.id, "test", name="uploads", scope="verify_only")[1]

    limited = await photo_stack.db.write(verify_only)
    assert (await create(photo_stack, limited)).status_code == 403


async def test_previews_are_judged_free_and_unlisted_and_the_submission_fires_inspection_submitted(
    photo_stack: PhotoStack, receiver: WebhookReceiver
) -> None:
    await photo_stack.wait_for_processors()
    customer = await photo_stack.new_customer(monthly_cap=5)
    path = await photo_stack.subscribe(customer.live_key, receiver, ["inspection.submitted", "verification.completed"])
    made = (await create(photo_stack, customer.live_key, reference="order-1")).json()
    async with httpx.AsyncClient(base_url=photo_stack.base_url) as client:
        recipient = Recipient(client, made["url"].removeprefix(photo_stack.base_url))
        opened = await recipient.open()
        assert opened.status_code == 200
        assert "Check my photo" in opened.text

        blank = await recipient.send("preview", jpeg())
        assert blank.status_code == 200
        assert "This photo would not pass yet" in blank.text
        face = await recipient.send("preview", ERIK())
        assert "This photo passes every check" in face.text
        assert await count(photo_stack, customer.id, preview=True) == 2
        month = customers.month_of(datetime.now(UTC))
        assert await photo_stack.db.read(customers.usage, customer.id, month) == 0  # previews are never billed
        history = await photo_stack.call(customer.live_key, "GET", "/api/v1/verifications")
        assert history.json()["data"] == []

        sent = await recipient.send("submit", ERIK())
        assert sent.status_code == 200
        assert "Thank you: your photo is sent" in sent.text
        assert await photo_stack.db.read(customers.usage, customer.id, month) == 1

        deliveries = await receiver.wait_for(path, 2)
        by_type = {delivery.json["type"]: delivery.json["data"] for delivery in deliveries}
        assert set(by_type) == {"inspection.submitted", "verification.completed"}
        submitted = by_type["inspection.submitted"]
        assert (submitted["id"], submitted["status"], submitted["reference"]) == (made["id"], "submitted", "order-1")
        assert submitted["verification"]["id"] == by_type["verification.completed"]["id"]
        assert submitted["verification"]["is_compliant"] is True
        assert all(delivery.verified for delivery in deliveries)

        read = (await photo_stack.call(customer.live_key, "GET", f"{INSPECTIONS}/{made['id']}")).json()
        for shown in (read, submitted):  # each read signs the image URL anew
            assert shown["verification"].pop("image_url").startswith(f"{photo_stack.base_url}/v1/images/")
        assert read == submitted
        used = await recipient.send("submit", ERIK())
        assert used.status_code == 409
        assert "This inspection was submitted already" in used.text
        assert (await recipient.open()).status_code == 409
    assert await count(photo_stack, customer.id, preview=False) == 1  # the one submission, nothing more


async def test_an_expired_link_says_so_and_stores_nothing(photo_stack: PhotoStack, customer: CustomerKeys) -> None:
    made = (await create(photo_stack, customer.test_key)).json()

    def expire(connection: Any) -> None:
        table = INSPECTION_ROWS
        past = datetime.now(UTC) - timedelta(minutes=1)
        connection.execute(update(table).where(table.c.id == made["id"]).values(expires_at=past))

    await photo_stack.db.write(expire)
    async with httpx.AsyncClient(base_url=photo_stack.base_url) as client:
        recipient = Recipient(client, made["url"].removeprefix(photo_stack.base_url))
        page = await recipient.open()
        assert page.status_code == 409
        assert "This inspection has expired" in page.text
        refused = await recipient.send("submit", jpeg())
        assert refused.status_code == 409
        unknown = await client.get("/inspect/pc_inspect_made-up")
        assert unknown.status_code == 404
        assert "This link is unknown" in unknown.text
    assert await count(photo_stack, customer.id) == 0
    read = (await photo_stack.call(customer.test_key, "GET", f"{INSPECTIONS}/{made['id']}")).json()
    assert read["status"] == "expired"
