"""What the gateway does with a submitted image: read it from either body form within the size limit, and tell its
type from its bytes."""

from __future__ import annotations

import base64
import binascii
import io
import re
import warnings
from dataclasses import dataclass
from typing import Any

import msgspec
from litestar import Request
from litestar.datastructures import UploadFile
from PIL import Image, UnidentifiedImageError

from gateway.common.errors import decode_body
from gateway.photo.errors import ERRORS, PhotoError
from gateway.photo.schemas import VerifyJson
from topics.photo import POLICIES

MAX_IMAGE_BYTES = 10 * 1024 * 1024
"""Section 8: 10 MB (MiB) of image, however it is sent."""
MAX_PIXELS = 40_000_000
"""Larger images are refused before anything decodes them (a small file can hold a huge, mostly empty image)."""
MAX_BASE64 = 4 * ((MAX_IMAGE_BYTES + 2) // 3)
"""The base64 text of the largest image."""
MAX_JSON_BODY = MAX_BASE64 + 64 * 1024
"""Base64 of the largest image, a data-URL prefix, the policy and up to ~64 KiB of metadata."""
MAX_MULTIPART_BODY = MAX_IMAGE_BYTES + 64 * 1024
FORMATS = {"JPEG": "image/jpeg", "PNG": "image/png", "WEBP": "image/webp"}
TOO_LARGE = "Image too large: the limit is 10 MB"

_decode_json = msgspec.json.Decoder(VerifyJson).decode
_DATA_URL = re.compile(r"data:image/[a-zA-Z0-9.+-]+;base64,")


@dataclass(frozen=True, slots=True)
class Submitted:
    """A verify body, read and checked: the image's bytes and decided type, the policy, the caller's metadata."""

    image: bytes
    content_type: str
    policy: str
    metadata: dict[str, Any] | None


async def read_submission(request: Request[Any, Any, Any]) -> Submitted:
    """Either body form of section 4.3. A declared length over the form's limit is refused before anything is read;
    an undeclared one stops being read at the limit (Litestar's body limit, answered as 400 too)."""
    media_type = request.headers.get("content-type", "").split(";")[0].strip().lower()
    declared = request.headers.get("content-length")
    if media_type == "multipart/form-data":
        if declared is not None and declared.isdigit() and int(declared) > MAX_MULTIPART_BODY:
            raise PhotoError(400, TOO_LARGE)
        image, policy, metadata = await _multipart(request)
    elif media_type == "application/json":
        if declared is not None and declared.isdigit() and int(declared) > MAX_JSON_BODY:
            raise PhotoError(400, TOO_LARGE)
        image, policy, metadata = _json(await request.body())
    else:
        raise PhotoError(400, "Send the image as multipart/form-data or as application/json")
    if len(image) > MAX_IMAGE_BYTES:
        raise PhotoError(400, TOO_LARGE)
    if policy not in POLICIES:
        raise PhotoError(400, f"Unknown policy {policy!r}: use one of {', '.join(POLICIES)}")
    return Submitted(image, image_type(image), policy, metadata)


async def _multipart(request: Request[Any, Any, Any]) -> tuple[bytes, str, dict[str, Any] | None]:
    form = await request.form()
    upload, policy = form.get("image"), form.get("policy")
    if upload is None or (isinstance(upload, str) and not upload):
        raise PhotoError(400, "Missing field: image")
    if not policy or not isinstance(policy, str):
        raise PhotoError(400, "Missing field: policy")
    if not isinstance(upload, UploadFile):
        raise PhotoError(400, "The image field must be a file")
    image = await upload.read()
    await upload.close()
    if not image:
        raise PhotoError(400, "Missing field: image (the file is empty)")
    return image, policy, None


def _json(body: bytes) -> tuple[bytes, str, dict[str, Any] | None]:
    submitted = decode_body(_decode_json, body, ERRORS, _explain)
    text = submitted.image
    if text.startswith("data:"):
        if (prefix := _DATA_URL.match(text)) is None:
            raise PhotoError(400, "The image data URL must look like data:image/<type>;base64,<data>")
        text = text[prefix.end() :]
    if len(text) > MAX_BASE64:
        raise PhotoError(400, TOO_LARGE)
    try:
        image = base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as error:
        raise PhotoError(400, "The image is not valid base64") from error
    if not image:
        raise PhotoError(400, "Missing field: image (it is empty)")
    return image, submitted.policy, submitted.metadata


def _explain(message: str) -> PhotoError:
    if "missing required field" in message:
        return PhotoError(400, "Missing field: " + message.split("`")[1])
    return ERRORS.invalid_body(message)


def image_type(image: bytes) -> str:
    """The media type the bytes are (JPEG, PNG or WebP), read by Pillow from the image's header: what the caller
    declared does not matter. Only the header is read here; the processor decodes the pixels."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(image), formats=list(FORMATS)) as opened:
                kind, (width, height) = opened.format, opened.size
    except (UnidentifiedImageError, Image.DecompressionBombWarning, Image.DecompressionBombError, OSError) as error:
        if isinstance(error, Image.DecompressionBombWarning | Image.DecompressionBombError):
            raise PhotoError(400, f"Image dimensions too large: at most {MAX_PIXELS:,} pixels") from error
        raise PhotoError(400, "Image type not supported: send a JPEG, PNG or WebP image") from error
    if width * height > MAX_PIXELS:
        raise PhotoError(400, f"Image dimensions too large: at most {MAX_PIXELS:,} pixels")
    if kind not in FORMATS:
        raise PhotoError(400, "Image type not supported: send a JPEG, PNG or WebP image")
    return FORMATS[kind]
