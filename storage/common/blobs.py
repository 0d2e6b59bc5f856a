"""The blob store every service keeps its images in (a directory by default, an S3 bucket when configured)."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import uuid
from collections.abc import Iterator, Mapping
from concurrent.futures import ThreadPoolExecutor
from datetime import datetime
from functools import partial
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import SplitResult, parse_qs, urlsplit

__all__ = ["BlobNotFound", "BlobStore", "DirectoryBlobs", "InvalidBlobKey", "S3Blobs", "check_key", "open_blobs"]

_KEY = re.compile(r"[A-Za-z0-9_./-]+")
MAX_KEY_LENGTH = 1024
"""S3's own limit on object keys; the directory store keeps to it so a key is valid on both."""
_TEMP_SUFFIX = ".tmp"
_DELETE_BATCH = 1000
"""The most keys one S3 DeleteObjects request takes."""


class BlobNotFound(KeyError):
    """No blob is stored under the key."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key

    def __str__(self) -> str:
        return f"no blob stored under {self.key!r}"


class InvalidBlobKey(ValueError):
    """The key is not one the store accepts (see `check_key`)."""


class BlobStore(Protocol):
    """Where images live; a message carries the key, never the bytes."""

    async def put(self, key: str, data: bytes, content_type: str) -> None:
        """Store `data` under `key`, replacing what was there; readers see the old blob or the new one, whole."""

    async def get(self, key: str) -> bytes:
        """The blob under `key`; `BlobNotFound` when there is none."""

    async def delete(self, key: str) -> None:
        """Forget the blob under `key`; a missing blob is not an error."""

    async def delete_older_than(self, cutoff: datetime) -> int:
        """Delete every blob last written before `cutoff` (timezone-aware) and return how many were deleted."""

    async def close(self) -> None:
        """Release connections and threads; the store is not used afterwards."""


def check_key(key: str) -> str:
    """Return `key` if it is a valid blob key, else raise `InvalidBlobKey`.

    A key is `/`-separated segments of `[A-Za-z0-9_.-]`, at most 1024 characters, e.g. ``photo/cus_x/ver_y``.
    Segments may not be empty or start with a dot: that refuses ``..``, absolute paths and trailing slashes, and
    keeps the directory store's temporary files (dot-names) out of the key space."""
    if not isinstance(key, str) or not key or len(key) > MAX_KEY_LENGTH or not _KEY.fullmatch(key):
        raise InvalidBlobKey(f"blob key {key!r} is not valid: expected 1-1024 characters of [A-Za-z0-9_./-]")
    if any(not segment or segment.startswith(".") for segment in key.split("/")):
        raise InvalidBlobKey(f"blob key {key!r} is not valid: segments must be non-empty and not start with '.'")
    return key


def _aware(cutoff: datetime) -> datetime:
    if cutoff.tzinfo is None or cutoff.utcoffset() is None:
        raise ValueError("delete_older_than needs a timezone-aware cutoff (e.g. datetime.now(UTC) - timedelta(...))")
    return cutoff


class DirectoryBlobs:
    """Blobs as files under `root`, one per key (``root/photo/cus_x/ver_y``).

    The content type is not kept: nothing reads it back, and a sidecar file would double the writes."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root)

    def __repr__(self) -> str:
        return f"DirectoryBlobs({str(self.root)!r})"

    async def put(self, key: str, data: bytes, content_type: str) -> None:
        path = self.root / check_key(key)
        await asyncio.to_thread(self._write, path, data)

    async def get(self, key: str) -> bytes:
        path = self.root / check_key(key)
        try:
            return await asyncio.to_thread(path.read_bytes)
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError):
            raise BlobNotFound(key) from None

    async def delete(self, key: str) -> None:
        path = self.root / check_key(key)
        await asyncio.to_thread(self._unlink, path)

    async def delete_older_than(self, cutoff: datetime) -> int:
        return await asyncio.to_thread(self._sweep, _aware(cutoff).timestamp())

    async def close(self) -> None:
        return None

    def _write(self, path: Path, data: bytes) -> None:
        # The sweep removes directories it empties, so one may vanish between mkdir and the temporary file's
        # creation: try again rather than fail a put that raced a sweep.
        for attempt in range(3):
            try:
                self._write_once(path, data)
            except FileNotFoundError:
                if attempt == 2:
                    raise
            else:
                return

    @staticmethod
    def _write_once(path: Path, data: bytes) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        temp = path.with_name(f".{path.name}.{uuid.uuid4().hex}{_TEMP_SUFFIX}")
        try:
            with open(temp, "wb") as file:
                file.write(data)
                file.flush()
                # The key is published in a message as soon as put returns: the bytes must outlive a crash.
                os.fsync(file.fileno())
            os.replace(temp, path)
        except BaseException:
            temp.unlink(missing_ok=True)
            raise
        _fsync_directory(path.parent)

    @staticmethod
    def _unlink(path: Path) -> None:
        try:
            path.unlink()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError, PermissionError):
            # PermissionError: unlink of a directory on macOS; a directory is not a blob, so nothing to delete.
            if path.is_file():
                raise

    def _sweep(self, cutoff: float) -> int:
        deleted = 0
        if not self.root.is_dir():
            return 0
        for directory, _subdirectories, files in os.walk(self.root, topdown=False):
            for name in files:
                path = os.path.join(directory, name)
                try:
                    if os.stat(path).st_mtime >= cutoff:
                        continue
                    os.unlink(path)
                except FileNotFoundError:
                    continue
                # A temporary file this old was left by a crash: it goes, but it never was a blob.
                if not (name.startswith(".") and name.endswith(_TEMP_SUFFIX)):
                    deleted += 1
            if directory != str(self.root):
                # Fails when not empty, or when a put is filling it again: either way it stays.
                with contextlib.suppress(OSError):
                    os.rmdir(directory)
        return deleted


def _fsync_directory(directory: Path) -> None:
    # Makes the rename durable; Windows cannot open a directory, and its rename is journalled anyway.
    if os.name != "posix":
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class S3Blobs:
    """Blobs as objects in an S3-compatible bucket, under `prefix` (``prefix/photo/cus_x/ver_y``).

    boto3 is blocking, so every call runs on a thread pool of the store's own, sized to its connection pool: a slow
    bucket then queues S3 calls instead of taking the event loop's default executor from everything else. Without
    `access_key`/`secret_key`, boto3's default chain finds credentials (environment, config files, instance role)."""

    def __init__(
        self,
        bucket: str,
        *,
        endpoint_url: str | None = None,
        region: str | None = None,
        access_key: str | None = None,
        secret_key: str | None = None,
        prefix: str = "",
        session_token: str | None = None,
        max_connections: int = 16,
        timeout_s: float = 30.0,
    ) -> None:
        # Imported here: only a process configured for S3 pays boto3's import (~0.25 s with its first client).
        import boto3
        from botocore.config import Config

        self.bucket = bucket
        self.prefix = f"{check_key(prefix.strip('/'))}/" if prefix.strip("/") else ""
        self.endpoint_url = endpoint_url
        config = Config(
            max_pool_connections=max_connections,
            connect_timeout=timeout_s,
            read_timeout=timeout_s,
            retries={"mode": "standard", "max_attempts": 3},
            # S3-compatible servers (MinIO, Ceph, moto) answer on one host; AWS itself prefers virtual hosts.
            s3={"addressing_style": "path" if endpoint_url else "auto"},
            # botocore's default CRC trailers (since 1.36) are refused by many S3-compatible servers; AWS needs
            # no more than what an operation requires either.
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required",
        )
        session = boto3.session.Session(
            aws_access_key_id=access_key,
            aws_secret_access_key=secret_key,
            aws_session_token=session_token,
            region_name=region,
        )
        self._client: Any = session.client("s3", endpoint_url=endpoint_url, config=config)
        self._executor = ThreadPoolExecutor(max_workers=max_connections, thread_name_prefix="s3-blobs")

    def __repr__(self) -> str:
        where = f" at {self.endpoint_url}" if self.endpoint_url else ""
        return f"S3Blobs(s3://{self.bucket}/{self.prefix}{where})"

    async def put(self, key: str, data: bytes, content_type: str) -> None:
        await self._run(
            self._client.put_object,
            Bucket=self.bucket,
            Key=self.prefix + check_key(key),
            Body=data,
            ContentType=content_type,
        )

    async def get(self, key: str) -> bytes:
        return await self._run(self._read, self.prefix + check_key(key), key)

    async def delete(self, key: str) -> None:
        # S3 answers 204 for a missing key too, so delete is idempotent without a check.
        await self._run(self._client.delete_object, Bucket=self.bucket, Key=self.prefix + check_key(key))

    async def delete_older_than(self, cutoff: datetime) -> int:
        return await self._run(self._sweep, _aware(cutoff))

    async def close(self) -> None:
        await asyncio.to_thread(self._executor.shutdown, wait=True)
        self._client.close()

    async def _run(self, function: Any, *args: Any, **kwargs: Any) -> Any:
        return await asyncio.get_running_loop().run_in_executor(self._executor, partial(function, *args, **kwargs))

    def _read(self, object_key: str, key: str) -> bytes:
        try:
            response = self._client.get_object(Bucket=self.bucket, Key=object_key)
        except self._client.exceptions.NoSuchKey:
            raise BlobNotFound(key) from None
        body = response["Body"]
        try:
            data: bytes = body.read()
        finally:
            body.close()
        return data

    def _old_keys(self, cutoff: datetime) -> Iterator[str]:
        paginator = self._client.get_paginator("list_objects_v2")
        for page in paginator.paginate(Bucket=self.bucket, Prefix=self.prefix):
            for item in page.get("Contents", ()):
                if item["LastModified"] < cutoff:
                    yield item["Key"]

    def _sweep(self, cutoff: datetime) -> int:
        deleted = 0
        batch: list[str] = []
        for object_key in self._old_keys(cutoff):
            batch.append(object_key)
            if len(batch) == _DELETE_BATCH:
                deleted += self._delete_batch(batch)
                batch = []
        if batch:
            deleted += self._delete_batch(batch)
        return deleted

    def _delete_batch(self, object_keys: list[str]) -> int:
        response = self._client.delete_objects(
            Bucket=self.bucket, Delete={"Objects": [{"Key": k} for k in object_keys], "Quiet": True}
        )
        errors = response.get("Errors", [])
        if errors:
            first = errors[0]
            raise OSError(
                f"S3 refused to delete {len(errors)} of {len(object_keys)} blobs, e.g. {first.get('Key')!r}: "
                f"{first.get('Code')} {first.get('Message')}"
            )
        return len(object_keys)


_S3_PARAMETERS = {"endpoint_url", "region"}
_S3_FORM = "s3://BUCKET[/PREFIX][?endpoint_url=URL&region=REGION]"


def open_blobs(
    url: str, data_dir: Path, *, directory: str = "blobs", environ: Mapping[str, str] | None = None
) -> BlobStore:
    """The blob store a settings string names.

    * empty: the directory `directory` under `data_dir` (each service its own: photo's retention deletes what is
      old in its store);
    * ``file:///absolute/path``: that directory;
    * ``s3://bucket[/prefix][?endpoint_url=...&region=...]``: an S3-compatible bucket, with credentials from
      ``AWS_ACCESS_KEY_ID`` / ``AWS_SECRET_ACCESS_KEY`` (and ``AWS_SESSION_TOKEN``) in `environ` (default
      `os.environ`), else boto3's default chain; the region defaults to ``AWS_REGION`` / ``AWS_DEFAULT_REGION``,
      then ``us-east-1``.

    Anything else raises ValueError with a one-line message."""
    environ = os.environ if environ is None else environ
    url = url.strip()
    if not url:
        return DirectoryBlobs(Path(data_dir) / directory)
    try:
        parts = urlsplit(url)
    except ValueError as error:
        raise ValueError(f"blob store URL {url!r} is not valid: {error}") from None
    if "@" in parts.netloc:
        # Never echo a URL that carries credentials into a log line.
        raise ValueError("blob store URL must not hold credentials: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
    scheme = parts.scheme.lower()
    if scheme == "file":
        if parts.netloc not in ("", "localhost") or not parts.path.startswith("/") or parts.query or parts.fragment:
            raise ValueError(f"blob store URL {url!r} is not valid: expected file:///ABSOLUTE/PATH")
        return DirectoryBlobs(Path(parts.path))
    if scheme == "s3":
        return _open_s3(url, parts, environ)
    raise ValueError(f"blob store URL {url!r} is not valid: expected empty, file:///ABSOLUTE/PATH or {_S3_FORM}")


def _open_s3(url: str, parts: SplitResult, environ: Mapping[str, str]) -> S3Blobs:
    def invalid(why: str) -> ValueError:
        return ValueError(f"blob store URL {url!r} is not valid: {why} (expected {_S3_FORM})")

    bucket, path, query = parts.netloc, parts.path, parts.query
    # Bucket naming rules, loosely: S3-compatible servers are laxer than AWS, and AWS says no clearly enough.
    if not re.fullmatch(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]", bucket):
        raise invalid("the bucket name must be 3-63 characters of a-z, 0-9, '.' and '-'")
    if parts.fragment:
        raise invalid("it has a '#' part")
    try:
        parameters = parse_qs(query, keep_blank_values=True, strict_parsing=bool(query))
    except ValueError:
        raise invalid("its query string is malformed") from None
    unknown = sorted(set(parameters) - _S3_PARAMETERS)
    if unknown:
        raise invalid(f"unknown parameter {unknown[0]!r}")
    if any(len(values) != 1 or not values[0] for values in parameters.values()):
        raise invalid("each parameter must be given once, with a value")
    endpoint_url = parameters.get("endpoint_url", [None])[0]
    if endpoint_url is not None:
        endpoint = urlsplit(endpoint_url)
        if endpoint.scheme not in ("http", "https") or not endpoint.netloc:
            raise invalid("endpoint_url must be an http:// or https:// URL")
    prefix = path.strip("/")
    if prefix:
        try:
            check_key(prefix)
        except InvalidBlobKey:
            raise invalid("the prefix must be segments of [A-Za-z0-9_.-] separated by '/'") from None
    access_key = environ.get("AWS_ACCESS_KEY_ID") or None
    secret_key = environ.get("AWS_SECRET_ACCESS_KEY") or None
    if (access_key is None) != (secret_key is None):
        raise ValueError(f"blob store URL {url!r} needs both AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or neither")
    region = (
        parameters.get("region", [None])[0]
        or environ.get("AWS_REGION")
        or environ.get("AWS_DEFAULT_REGION")
        or "us-east-1"
    )
    return S3Blobs(
        bucket,
        endpoint_url=endpoint_url,
        region=region,
        access_key=access_key,
        secret_key=secret_key,
        prefix=prefix,
        session_token=(environ.get("AWS_SESSION_TOKEN") or None) if access_key else None,
    )
