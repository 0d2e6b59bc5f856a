"""`GET /v1/images/{verification_id}`: a stored image, served to whoever holds its signed, expiring `image_url`."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, Response, get
from litestar.di import NamedDependency
from litestar.openapi.spec import OpenAPIType, Schema

from gateway.common.auth import NO_AUTHENTICATION
from gateway.common.openapi import documented_operation, query, response
from gateway.photo import docs
from gateway.photo.deps import PhotoGateway
from gateway.photo.errors import PhotoError
from storage.common.blobs import BlobNotFound
from storage.photo import verifications

IMAGES_PATH = "/v1/images"
"""Where `image_url`s point."""
REFUSALS = {
    "unsigned": "This image URL is not signed",
    "forged": "This image URL's signature is not valid",
    "expired": "This image URL has expired: fetch the verification again for a fresh one",
}

_SIGNED_URL = documented_operation(
    parameters=[
        query(
            "expires",
            Schema(type=OpenAPIType.STRING, pattern=r"^[0-9]+$"),
            "When the URL stops working, in UNIX seconds (part of the signed URL)",
            example="1795514400",
            required=True,
        ),
        query(
            "signature",
            Schema(type=OpenAPIType.STRING, pattern=r"^[0-9a-f]{64}$"),
            "The URL's signature (part of the signed URL)",
            example="5b6c0f1e8a4d2c9b7e3f1a0d6c5b4a39281706f5e4d3c2b1a09f8e7d6c5b4a39",
            required=True,
        ),
    ],
    never_answered=[400],
    keyless=True,
)


class ImagesController(Controller):
    path = IMAGES_PATH
    tags = ["verify"]

    @get(
        "/{verification_id:str}",
        operation_id="getImage",
        summary="The image of a verification, by the signed URL in its `image_url` (no API key)",
        media_type="image/jpeg",
        opt=NO_AUTHENTICATION,
        operation_class=_SIGNED_URL,
        responses={
            200: response(bytes, "The image, as it was submitted", media_type="image/*"),
            **docs.errors(403, 404, 500),
        },
    )
    async def image(
        self, request: Request[Any, Any, Any], photo: NamedDependency[PhotoGateway], verification_id: str
    ) -> Response[bytes]:
        expires, signature = request.query_params.get("expires"), request.query_params.get("signature")
        if (refusal := photo.urls.refusal(verification_id, expires, signature)) is not None:
            raise PhotoError(403, REFUSALS[refusal])
        row = (await photo.db.read(verifications.load, [verification_id])).get(verification_id)
        if row is None or row.image_key is None:
            raise PhotoError(404, "This image has been deleted")
        try:
            image = await photo.blobs.get(row.image_key)
        except BlobNotFound:
            raise PhotoError(404, "This image has been deleted") from None
        return Response(image, media_type=row.image_type, headers={"Cache-Control": "private, max-age=300"})
