"""A self-inspection's page, for its recipient (no account, no key: the link is the credential): take the photo with
the device's camera (gateway/common/assets/camera.js) or choose a file, preview each check's feedback while retaking
(never billed, no event), and submit it, which runs the normal verify and fires `inspection.submitted`. A link that
is unknown, used, cancelled or expired says so and stores nothing."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Any

from litestar import get, post
from litestar.datastructures import UploadFile
from litestar.enums import RequestEncodingType
from litestar.params import Body, FromPath
from litestar.response import Template
from litestar.types import ControllerRouterHandler

from gateway.photo.deps import PhotoGateway
from gateway.photo.errors import PhotoError
from gateway.photo.pages.site import PRODUCT, refusal_of
from gateway.photo.submissions import MAX_IMAGE_BYTES, Submitted, image_type
from gateway.photo.verify import owner_for, verify
from operations.common.errors import Invalid, OperationError
from operations.photo import inspections
from operations.photo.inspections import PATH

Upload = Annotated[dict[str, Any], Body(media_type=RequestEncodingType.MULTI_PART)]
MAX_UPLOAD = MAX_IMAGE_BYTES + 64 * 1024


async def _image(data: dict[str, Any]) -> bytes:
    upload = data.get("image")
    if not isinstance(upload, UploadFile):
        raise Invalid("Take a photo, or choose one, first")
    image = await upload.read()
    if not image:
        raise Invalid("The photo is empty: take it again")
    if len(image) > MAX_IMAGE_BYTES:
        raise Invalid("The photo is too large: the limit is 10 MB")
    return image


def routes(photo: PhotoGateway) -> list[ControllerRouterHandler]:
    ops = photo.operations

    def page(template: str, status: int = 200, **values: Any) -> Template:
        return Template(template, context={"product": PRODUCT, **values}, status_code=status)

    def closed(error: OperationError | PhotoError) -> Template:
        refused = refusal_of(error)
        assert refused is not None
        return page("inspect_closed.html", refused[0], message=refused[1])

    async def judged(row: Any, image: bytes, *, preview: bool) -> Any:
        owner = await owner_for(photo, row.customer_id, row.environment, row.key_id)
        submitted = Submitted(image, image_type(image), row.policy, None)
        if preview:
            return await verify(photo, owner, submitted, None, preview=True)
        return await verify(photo, owner, submitted, f"inspection:{row.id}")

    @get(f"{PATH}/{{token:str}}")
    async def inspection(token: FromPath[str]) -> Template:
        try:
            row = await inspections.opened(ops, token, datetime.now(UTC))
        except OperationError as error:
            return closed(error)
        return page("inspect.html", token=token, policy=row.policy, expires_at=row.expires_at)

    @post(f"{PATH}/{{token:str}}/preview", status_code=200, request_max_body_size=MAX_UPLOAD)
    async def preview(token: FromPath[str], data: Upload) -> Template:
        """The feedback on one photo, as a fragment the page shows beside the camera."""
        now = datetime.now(UTC)
        try:
            row = await inspections.opened(ops, token, now)
            image = await _image(data)
            await inspections.may_preview(ops, row, now)
            verdict = await judged(row, image, preview=True)
        except (OperationError, PhotoError) as error:
            refused = refusal_of(error)
            assert refused is not None
            return page("inspect_feedback.html", refused[0], error=refused[1])
        return page("inspect_feedback.html", verdict=verdict)

    @post(f"{PATH}/{{token:str}}/submit", status_code=200, request_max_body_size=MAX_UPLOAD)
    async def submit(token: FromPath[str], data: Upload) -> Template:
        now = datetime.now(UTC)
        try:
            row = await inspections.opened(ops, token, now)
        except OperationError as error:
            return closed(error)
        try:
            verdict = await judged(row, await _image(data), preview=False)
        except (OperationError, PhotoError) as error:
            refused = refusal_of(error)
            assert refused is not None
            return page(
                "inspect.html", refused[0], token=token, policy=row.policy, expires_at=row.expires_at, error=refused[1]
            )
        await inspections.submitted(ops, row, verdict, datetime.now(UTC))
        return page("inspect_done.html", verdict=verdict)

    return [inspection, preview, submit]
