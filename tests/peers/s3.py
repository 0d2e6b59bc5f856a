"""A local S3-compatible server on a real socket (moto's, speaking the S3 wire protocol), for blob store tests.

Usage::

    with S3Server() as server:
        bucket = server.create_bucket()
        blobs = S3Blobs(bucket, endpoint_url=server.endpoint_url, access_key=server.access_key, secret_key=...)
        ...
        assert server.object(bucket, "photo/cus_x/ver_y") == (b"...", "image/jpeg")

The server runs in a daemon thread of the test process and keeps its buckets in memory until it stops. It takes any
credentials. Its own reads (`object`, `keys`) go through a client of their own, over the same wire.
"""

from __future__ import annotations

import functools
import logging
import uuid
from types import TracebackType
from typing import Any, Self

import boto3
from moto.server import ThreadedMotoServer

__all__ = ["S3Server"]


class S3Server:
    region = "us-east-1"
    access_key = "test-access-key"
    secret_key = "test-secret-key"

    def __init__(self) -> None:
        self._server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
        self.endpoint_url = ""

    def __enter__(self) -> Self:
        # werkzeug logs every request to stderr; failures show in the tests' own assertions instead.
        logging.getLogger("werkzeug").setLevel(logging.ERROR)
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.endpoint_url = f"http://{host}:{port}"
        return self

    def __exit__(self, *exc: type[BaseException] | BaseException | TracebackType | None) -> None:
        self._server.stop()

    @functools.cached_property
    def client(self) -> Any:
        """One client for the peer's own calls: making a boto3 client loads its service model (tens of ms of CPU)."""
        return boto3.session.Session().client(
            "s3",
            endpoint_url=self.endpoint_url,
            region_name=self.region,
            aws_access_key_id=self.access_key,
            aws_secret_access_key=self.secret_key,
        )

    def create_bucket(self) -> str:
        """A new, empty bucket with a fresh name."""
        name = f"blobs-{uuid.uuid4().hex[:16]}"
        self.client.create_bucket(Bucket=name)
        return name

    def object(self, bucket: str, object_key: str) -> tuple[bytes, str] | None:
        """The bytes and content type the server holds under `object_key`, or None."""
        client = self.client
        try:
            response = client.get_object(Bucket=bucket, Key=object_key)
        except client.exceptions.NoSuchKey:
            return None
        return response["Body"].read(), response["ContentType"]

    def keys(self, bucket: str) -> list[str]:
        """Every object key in `bucket`, sorted."""
        pages = self.client.get_paginator("list_objects_v2").paginate(Bucket=bucket)
        return sorted(item["Key"] for page in pages for item in page.get("Contents", ()))
