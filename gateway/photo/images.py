"""`GET /v1/images/{verification_id}`: a stored image, served to whoever holds its signed, expiring `image_url`."""

from __future__ import annotations

from typing import Any

from litestar import Controller, Request, Response, get
from litestar.di import NamedDependency
from litestar.params import FromPath

from gateway.common.auth import NO_AUTHENTICATION
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


class ImagesController(Controller):
    path = IMAGES_PATH
    tags = ["verify"]

    @get("/{verification_id:str}", media_type="image/jpeg", opt=NO_AUTHENTICATION, **docs.GET_IMAGE)
    async def image(
        self, request: Request[Any, Any, Any], photo: NamedDependency[PhotoGateway], verification_id: FromPath[str]
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
