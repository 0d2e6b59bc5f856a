"""The blob store on every store under test (a directory, and an S3 bucket on a local S3-compatible server), and the
settings string that picks one.

Every S3 test gets a fresh bucket, every directory test a fresh directory, so the tests never see each other's
blobs.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from storage.common.blobs import (
    BlobNotFound,
    BlobStore,
    DirectoryBlobs,
    InvalidBlobKey,
    S3Blobs,
    check_key,
    open_blobs,
)
from tests.peers.s3 import S3Server

PREFIX = "signalyard-test"
IMAGE = os.urandom(100_000)
"""About the size of a compressed ID photo."""


def s3_store(server: S3Server, bucket: str, **options: Any) -> S3Blobs:
    options.setdefault("endpoint_url", server.endpoint_url)
    return S3Blobs(bucket, access_key=server.access_key, secret_key=server.secret_key, **options)


@dataclass
class StoreUnderTest:
    kind: str
    store: BlobStore
    location: str
    """The directory, or the bucket."""


@pytest.fixture(params=["directory", "s3"])
async def under_test(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[StoreUnderTest]:
    if request.param == "directory":
        under = StoreUnderTest("directory", DirectoryBlobs(tmp_path / "blobs"), str(tmp_path / "blobs"))
    else:
        server: S3Server = request.getfixturevalue("s3_server")
        bucket = server.create_bucket()
        store = s3_store(server, bucket, region=server.region, prefix=PREFIX)
        under = StoreUnderTest("s3", store, bucket)
    yield under
    await under.store.close()


@pytest.fixture
def blobs(under_test: StoreUnderTest) -> BlobStore:
    return under_test.store


async def test_put_then_get_returns_the_same_bytes(blobs: BlobStore) -> None:
    await blobs.put("photo/cus_1/ver_1", IMAGE, "image/jpeg")
    await blobs.put("photo/cus_1/empty", b"", "application/octet-stream")

    assert await blobs.get("photo/cus_1/ver_1") == IMAGE
    assert await blobs.get("photo/cus_1/empty") == b""


async def test_put_again_replaces_the_blob(blobs: BlobStore) -> None:
    await blobs.put("photo/cus_1/ver_1", IMAGE, "image/jpeg")
    await blobs.put("photo/cus_1/ver_1", b"second", "image/png")

    assert await blobs.get("photo/cus_1/ver_1") == b"second"


async def test_missing_key_is_blob_not_found(blobs: BlobStore) -> None:
    with pytest.raises(BlobNotFound) as raised:
        await blobs.get("photo/cus_1/never_stored")

    assert raised.value.key == "photo/cus_1/never_stored"
    assert isinstance(raised.value, KeyError)


async def test_a_key_that_is_only_a_folder_of_others_is_not_found(blobs: BlobStore) -> None:
    await blobs.put("photo/cus_1/ver_1", IMAGE, "image/jpeg")

    with pytest.raises(BlobNotFound):
        await blobs.get("photo/cus_1")
    await blobs.delete("photo/cus_1")
    assert await blobs.get("photo/cus_1/ver_1") == IMAGE


async def test_delete_is_idempotent(blobs: BlobStore) -> None:
    await blobs.put("photo/cus_1/ver_1", IMAGE, "image/jpeg")
    await blobs.put("photo/cus_1/ver_2", IMAGE, "image/jpeg")

    await blobs.delete("photo/cus_1/ver_1")
    await blobs.delete("photo/cus_1/ver_1")
    await blobs.delete("photo/cus_9/never_stored")

    with pytest.raises(BlobNotFound):
        await blobs.get("photo/cus_1/ver_1")
    assert await blobs.get("photo/cus_1/ver_2") == IMAGE


INVALID_KEYS = [
    "",
    "/etc/passwd",
    "../outside",
    "photo/../../outside",
    "photo/./ver_1",
    "photo/..",
    "photo//ver_1",
    "photo/ver_1/",
    "photo/.hidden",
    "photo/ver 1",
    "photo\\ver_1",
    "photo/ver_1\x00",
    "photo/vér_1",
    "photo/ver_1?x=1",
    "x" * 1025,
]


@pytest.mark.parametrize("key", INVALID_KEYS)
async def test_invalid_keys_are_refused(blobs: BlobStore, under_test: StoreUnderTest, key: str) -> None:
    with pytest.raises(InvalidBlobKey):
        await blobs.put(key, b"x", "image/jpeg")
    with pytest.raises(InvalidBlobKey):
        await blobs.get(key)
    with pytest.raises(InvalidBlobKey):
        await blobs.delete(key)
    assert isinstance(InvalidBlobKey("x"), ValueError)
    if under_test.kind == "directory":
        assert not Path(under_test.location).exists() or not any(Path(under_test.location).rglob("*"))


@pytest.mark.parametrize("key", ["photo/cus_x/ver_y", "a", "A-Z_a-z.0-9/x.jpg", "x" * 255, "/".join(["abc"] * 256)])
def test_valid_keys_are_accepted(key: str) -> None:
    assert check_key(key) == key


async def test_delete_older_than_removes_only_blobs_written_before_the_cutoff(blobs: BlobStore) -> None:
    old = [f"photo/cus_1/old_{i}" for i in range(3)]
    new = [f"photo/cus_1/new_{i}" for i in range(2)]
    for key in old:
        await blobs.put(key, IMAGE, "image/jpeg")
    await blobs.put("photo/cus_2/rewritten", b"first", "image/jpeg")
    # S3 keeps last-modified to the second: a margin of more than a second on each side of the cutoff.
    await asyncio.sleep(1.1)
    cutoff = datetime.now(UTC)
    await asyncio.sleep(1.1)
    for key in new:
        await blobs.put(key, IMAGE, "image/jpeg")
    await blobs.put("photo/cus_2/rewritten", b"second", "image/jpeg")

    assert await blobs.delete_older_than(cutoff - timedelta(days=30)) == 0
    assert await blobs.delete_older_than(cutoff) == len(old)
    assert await blobs.delete_older_than(cutoff) == 0

    for key in old:
        with pytest.raises(BlobNotFound):
            await blobs.get(key)
    for key in new:
        assert await blobs.get(key) == IMAGE
    assert await blobs.get("photo/cus_2/rewritten") == b"second"


async def test_delete_older_than_refuses_a_naive_cutoff(blobs: BlobStore) -> None:
    with pytest.raises(ValueError, match="timezone-aware"):
        await blobs.delete_older_than(datetime.now())


async def test_concurrent_puts_all_land(blobs: BlobStore) -> None:
    payloads = {f"photo/cus_{i % 4}/ver_{i}": os.urandom(10_000 + i) for i in range(40)}

    await asyncio.gather(*(blobs.put(key, data, "image/jpeg") for key, data in payloads.items()))

    stored = await asyncio.gather(*(blobs.get(key) for key in payloads))
    assert stored == list(payloads.values())


async def test_concurrent_puts_to_one_key_leave_one_whole_blob(blobs: BlobStore) -> None:
    versions = [bytes([i]) * 50_000 for i in range(12)]

    await asyncio.gather(*(blobs.put("photo/cus_1/ver_1", data, "image/jpeg") for data in versions))

    assert await blobs.get("photo/cus_1/ver_1") in versions


async def test_reads_during_overwrites_see_old_or_new_never_partial(blobs: BlobStore) -> None:
    old, new = b"o" * 200_000, b"n" * 200_000
    await blobs.put("photo/cus_1/ver_1", old, "image/jpeg")

    writes = [blobs.put("photo/cus_1/ver_1", new if i % 2 else old, "image/jpeg") for i in range(10)]
    results = await asyncio.gather(*writes, *(blobs.get("photo/cus_1/ver_1") for _ in range(20)))

    assert all(seen in (old, new) for seen in results[len(writes) :])


# The store's own view of where blobs land.


async def test_directory_store_writes_files_under_root_and_leaves_no_temporary_files(tmp_path: Path) -> None:
    store = DirectoryBlobs(tmp_path / "blobs")
    await asyncio.gather(*(store.put(f"photo/cus_1/ver_{i}", IMAGE, "image/jpeg") for i in range(10)))

    files = sorted(p.relative_to(tmp_path / "blobs").as_posix() for p in (tmp_path / "blobs").rglob("*") if p.is_file())
    assert files == sorted(f"photo/cus_1/ver_{i}" for i in range(10))
    assert (tmp_path / "blobs/photo/cus_1/ver_3").read_bytes() == IMAGE


async def test_directory_sweep_removes_emptied_folders_and_stale_temporary_files(tmp_path: Path) -> None:
    root = tmp_path / "blobs"
    store = DirectoryBlobs(root)
    await store.put("photo/cus_old/ver_1", IMAGE, "image/jpeg")
    await store.put("photo/cus_new/ver_1", IMAGE, "image/jpeg")
    stale_temp = root / "photo/cus_new/.ver_2.abc.tmp"
    stale_temp.write_bytes(b"half")
    an_hour_ago = time.time() - 3600
    for path in (root / "photo/cus_old/ver_1", stale_temp):
        os.utime(path, (an_hour_ago, an_hour_ago))

    deleted = await store.delete_older_than(datetime.now(UTC) - timedelta(minutes=1))

    assert deleted == 1
    assert not (root / "photo/cus_old").exists()
    assert not stale_temp.exists()
    assert (root / "photo/cus_new/ver_1").read_bytes() == IMAGE
    assert root.is_dir()


async def test_directory_sweep_of_a_root_never_written_is_zero(tmp_path: Path) -> None:
    assert await DirectoryBlobs(tmp_path / "nothing").delete_older_than(datetime.now(UTC)) == 0


async def test_s3_store_keeps_objects_under_its_prefix_with_their_content_type(s3_server: S3Server) -> None:
    bucket = s3_server.create_bucket()
    store = s3_store(s3_server, bucket, region="us-east-1", prefix="/a/b/")
    other = s3_store(s3_server, bucket, region="us-east-1", prefix="c")
    try:
        await store.put("photo/cus_1/ver_1", IMAGE, "image/jpeg")
        await other.put("photo/cus_1/ver_1", b"other", "image/png")

        assert s3_server.keys(bucket) == ["a/b/photo/cus_1/ver_1", "c/photo/cus_1/ver_1"]
        assert s3_server.object(bucket, "a/b/photo/cus_1/ver_1") == (IMAGE, "image/jpeg")
        # A sweep never reaches past its own prefix.
        assert await store.delete_older_than(datetime.now(UTC) + timedelta(minutes=1)) == 1
        assert s3_server.keys(bucket) == ["c/photo/cus_1/ver_1"]
    finally:
        await store.close()
        await other.close()


async def test_s3_sweep_deletes_more_than_one_batch(s3_server: S3Server) -> None:
    bucket = s3_server.create_bucket()
    store = s3_store(s3_server, bucket, prefix="p")
    try:
        await asyncio.gather(*(store.put(f"photo/cus_1/ver_{i}", b"x", "image/jpeg") for i in range(1003)))
        assert await store.delete_older_than(datetime.now(UTC) + timedelta(minutes=1)) == 1003
        assert s3_server.keys(bucket) == []
    finally:
        await store.close()


async def test_s3_errors_other_than_a_missing_key_are_raised(s3_server: S3Server) -> None:
    store = s3_store(s3_server, "no-such-bucket")
    try:
        with pytest.raises(Exception, match="NoSuchBucket") as raised:
            await store.put("photo/cus_1/ver_1", IMAGE, "image/jpeg")
        assert not isinstance(raised.value, BlobNotFound)
    finally:
        await store.close()


# The settings string.


def test_empty_url_is_a_directory_under_the_data_dir(tmp_path: Path) -> None:
    store = open_blobs("", tmp_path)
    assert isinstance(store, DirectoryBlobs)
    assert store.root == tmp_path / "blobs"
    assert isinstance(open_blobs("  ", tmp_path), DirectoryBlobs)


@pytest.mark.parametrize("prefix", ["file://", "file://localhost"])
async def test_file_url_is_a_directory_store(tmp_path: Path, prefix: str) -> None:
    store = open_blobs(f"{prefix}{tmp_path}/elsewhere", tmp_path / "data")
    assert isinstance(store, DirectoryBlobs)
    await store.put("photo/cus_1/ver_1", IMAGE, "image/jpeg")
    assert (tmp_path / "elsewhere/photo/cus_1/ver_1").read_bytes() == IMAGE


async def test_s3_url_is_a_bucket_with_credentials_from_the_environment(s3_server: S3Server, tmp_path: Path) -> None:
    bucket = s3_server.create_bucket()
    environ = {
        "AWS_ACCESS_KEY_ID": s3_server.access_key,
        "AWS_SECRET_ACCESS_KEY": s3_server.secret_key,
    }
    store = open_blobs(
        f"s3://{bucket}/sy/photos?endpoint_url={s3_server.endpoint_url}&region=eu-west-1", tmp_path, environ=environ
    )
    try:
        assert isinstance(store, S3Blobs)
        await store.put("photo/cus_1/ver_1", IMAGE, "image/jpeg")
        assert await store.get("photo/cus_1/ver_1") == IMAGE
        assert s3_server.keys(bucket) == ["sy/photos/photo/cus_1/ver_1"]
        assert not (tmp_path / "blobs").exists()
    finally:
        await store.close()


@pytest.mark.parametrize(
    "url",
    [
        "blobs",
        "/var/lib/blobs",
        "file:relative/path",
        "file://otherhost/path",
        "file:///path?x=1",
        "http://127.0.0.1:9000/bucket",
        "s3://",
        "s3:///prefix",
        "s3://Bad_Bucket",
        "s3://bucket:9000/x",
        "s3://bucket/../x",
        "s3://bucket?endpoint=http://127.0.0.1:9000",
        "s3://bucket?endpoint_url=127.0.0.1:9000",
        "s3://bucket?endpoint_url=",
        "s3://bucket?region=a&region=b",
        "s3://bucket#x",
        "s3://[::1",
    ],
)
def test_bad_urls_are_a_one_line_value_error(url: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="blob store URL") as raised:
        open_blobs(url, tmp_path, environ={})
    assert "\n" not in str(raised.value)


def test_credentials_in_the_url_are_refused_without_echoing_them(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="must not hold credentials") as raised:
        open_blobs("s3://AKIAEXAMPLE:hunter2@bucket", tmp_path, environ={})
    assert "hunter2" not in str(raised.value)


def test_half_the_credentials_is_a_value_error(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="AWS_SECRET_ACCESS_KEY"):
        open_blobs("s3://bucket", tmp_path, environ={"AWS_ACCESS_KEY_ID": "x"})
