"""The photo pipeline as operators and callers meet it when something is slow or lost: a verdict past the wait
budget, an image that could not be judged and is run again, images in an S3 bucket, and image retention."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import update

from processors.photo import retention
from storage.common.blobs import open_blobs
from storage.photo import verifications
from tests.conftest import running_stack, stack_settings
from tests.peers.s3 import S3Server
from tests.photo_stack import PhotoStack, jpeg

RETENTION = timedelta(days=30)


@pytest.fixture
def photo_parts(
    broker_bootstrap: str, database_url: str, tmp_path: Path
) -> Callable[..., AbstractAsyncContextManager[PhotoStack]]:
    """A factory of photo stacks on one topic prefix and data directory of the test's own: a gateway alone
    (`processors=False`: its verifications stay pending) and, later, processors that pick up what it published."""
    prefix = f"t{uuid.uuid4().hex[:8]}."

    def start(*, processors: bool, **overrides: Any) -> AbstractAsyncContextManager[PhotoStack]:
        settings = stack_settings(tmp_path, database_url, None, topic_prefix=prefix, **overrides)
        return running_stack(settings, broker_bootstrap, PhotoStack, with_processor=processors)

    return start


async def test_past_the_wait_budget_503_then_the_same_idempotency_key_returns_the_verdict(photo_parts) -> None:
    async with photo_parts(processors=False, photo_wait_ms=200) as gateway:
        customer = await gateway.new_customer()
        image = jpeg(colour=(10, 200, 30))
        late = await gateway.verify(customer.test_key, image, "icao", idempotency_key="late-1")
        assert late.status_code == 503, late.text
        assert late.headers["Retry-After"] == "2"
        assert late.headers["X-Request-Id"].startswith("req_")
        verification_id = late.json()["verification_id"]
        assert late.json()["error"] == (
            "The verification is taking longer than usual; retry with the same Idempotency-Key, or fetch "
            f"GET /api/v1/verifications/{verification_id}"
        )

        pending = await gateway.call(customer.test_key, "GET", f"/api/v1/verifications/{verification_id}")
        assert pending.status_code == 200
        assert (pending.json()["status"], pending.json()["is_compliant"]) == ("pending", None)
        review = await gateway.call(
            customer.test_key, "POST", f"/api/v1/verifications/{verification_id}/review", json={"is_compliant": True}
        )
        assert review.status_code == 409
        assert review.json() == {"error": "Only a completed verification can be reviewed"}

        # The processors start later and take the work order from the topic; the caller retries as told.
        async with photo_parts(processors=True) as processors:
            answered = await processors.verify(customer.test_key, image, "icao", idempotency_key="late-1")
            assert answered.status_code == 200, answered.text
            assert answered.json()["id"] == verification_id
            assert answered.json()["status"] == "completed"
            assert "no_face" in answered.json()["violation_reasons"]

        # Once finished, the first gateway answers the same key at once with the same verdict.
        again = await gateway.verify(customer.test_key, image, "icao", idempotency_key="late-1")
        assert again.status_code == 200
        assert {k: v for k, v in again.json().items() if k != "image_url"} == {
            k: v for k, v in answered.json().items() if k != "image_url"
        }
        history = await gateway.call(customer.test_key, "GET", "/api/v1/verifications")
        assert [item["id"] for item in history.json()["data"]] == [verification_id]  # run once, stored once


async def test_an_image_that_could_not_be_judged_is_500_and_runs_again_on_retry(photo_parts, tmp_path: Path) -> None:
    """The stored image is gone when the processor comes to it: the verification fails (500, not charged). Once the
    image is back, a retry with the same Idempotency-Key judges it and charges the live key once."""
    async with photo_parts(processors=False, photo_wait_ms=200) as gateway:
        customer = await gateway.new_customer(monthly_cap=1)
        image = jpeg(colour=(200, 30, 30))
        late = await gateway.verify(customer.live_key, image, idempotency_key="lost-1")
        assert late.status_code == 503
        verification_id = late.json()["verification_id"]
        blob = tmp_path / "blobs" / "photo" / customer.id / verification_id
        assert blob.read_bytes() == image
        blob.unlink()

        async with photo_parts(processors=True) as processors:
            failed = await processors.verify(customer.live_key, image, idempotency_key="lost-1")
            assert failed.status_code == 500, failed.text
            assert failed.json() == {
                "error": "The image could not be processed; retry with the same Idempotency-Key",
                "verification_id": verification_id,
            }
            stored = await processors.call(customer.live_key, "GET", f"/api/v1/verifications/{verification_id}")
            assert stored.json()["status"] == "failed"

            await _restore(tmp_path, f"photo/{customer.id}/{verification_id}", image)
            retried = await processors.verify(customer.live_key, image, idempotency_key="lost-1")
            assert retried.status_code == 200, retried.text
            assert (retried.json()["id"], retried.json()["status"]) == (verification_id, "completed")

            # The cap of 1 is used by the verification that completed, once: the failures were never charged.
            capped = await processors.verify(customer.live_key, image, idempotency_key="lost-2")
            assert capped.status_code == 429
            assert capped.json()["error"].startswith("Monthly usage cap of 1 verifications reached")


async def test_images_in_an_s3_bucket_go_through_the_pipeline(
    photo_parts, s3_server: S3Server, monkeypatch: pytest.MonkeyPatch
) -> None:
    bucket = s3_server.create_bucket()
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", s3_server.access_key)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", s3_server.secret_key)
    blob_url = f"s3://{bucket}/images?endpoint_url={s3_server.endpoint_url}&region={s3_server.region}"
    async with photo_parts(processors=True, photo_blob_url=blob_url) as stack:
        customer = await stack.new_customer()
        image = jpeg(colour=(30, 30, 200))
        response = await stack.verify(customer.test_key, image, "us_passport")
        assert response.status_code == 200, response.text
        verification_id = response.json()["id"]
        assert "no_face" in response.json()["violation_reasons"]  # the processor read the image from the bucket

        object_key = f"images/photo/{customer.id}/{verification_id}"
        assert s3_server.object(bucket, object_key) == (image, "image/jpeg")
        served = await stack.client.get(response.json()["image_url"])
        assert (served.status_code, served.content) == (200, image)

        await _created_days_ago(stack, verification_id, 31)
        blobs = open_blobs(blob_url, stack.settings.platform.data_dir)
        try:
            assert await retention.expire_images(stack.db, blobs, RETENTION, datetime.now(UTC)) >= 1
        finally:
            await blobs.close()
        assert s3_server.object(bucket, object_key) is None


async def test_images_past_the_retention_are_deleted_and_the_verdicts_stay(photo_stack: PhotoStack) -> None:
    customer = await photo_stack.new_customer()
    old, recent = [(await photo_stack.verify(customer.test_key, jpeg())).json() for _ in range(2)]
    await _created_days_ago(photo_stack, old["id"], 31)
    blobs = open_blobs(photo_stack.settings.services["photo"].blob_url, photo_stack.settings.platform.data_dir)
    root = photo_stack.settings.platform.data_dir / "blobs"
    orphan = root / "photo" / customer.id / "ver_orphan"  # stored by a gateway that stopped before writing its row
    orphan.write_bytes(jpeg())
    written = (datetime.now(UTC) - RETENTION - timedelta(days=1, minutes=1)).timestamp()
    os.utime(orphan, (written, written))

    try:
        assert await retention.expire_images(photo_stack.db, blobs, RETENTION, datetime.now(UTC)) >= 2
    finally:
        await blobs.close()

    expired = (await photo_stack.call(customer.test_key, "GET", f"/api/v1/verifications/{old['id']}")).json()
    assert expired["image_url"] is None
    assert {k: v for k, v in expired.items() if k not in ("image_url", "created_at")} == {
        k: v for k, v in old.items() if k not in ("image_url", "created_at")
    }
    gone = await photo_stack.client.get(old["image_url"])
    assert (gone.status_code, gone.json()) == (404, {"error": "This image has been deleted"})
    assert not orphan.exists()
    kept = await photo_stack.client.get(recent["image_url"])
    assert (kept.status_code, kept.content) == (200, jpeg())


async def _restore(data_dir: Path, key: str, image: bytes) -> None:
    blobs = open_blobs("", data_dir)
    try:
        await blobs.put(key, image, "image/jpeg")
    finally:
        await blobs.close()


async def _created_days_ago(stack: PhotoStack, verification_id: str, days: int) -> None:
    created_at = datetime.now(UTC) - timedelta(days=days)
    moved = (
        update(verifications.VERIFICATIONS)
        .where(verifications.VERIFICATIONS.c.id == verification_id)
        .values(created_at=created_at)
    )
    await stack.db.write(lambda connection: connection.execute(moved))
