"""Reading the uploaded bytes: format sniffing, header size, a cheap downscaled decode for the detector."""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from PIL import Image, ImageOps, UnidentifiedImageError

ALLOWED_FORMATS = ("JPEG", "PNG", "WEBP")
# Checks look at proportions, so ~300 px on the short side is plenty; decoding more only costs time.
WORK_SIDE = 300
# Beyond this the pixels alone would take gigabytes; the file is refused before it is decoded.
MAX_PIXELS = 50_000_000


class DecodeError(Exception):
    """The bytes are not an image we can read; `code` is the reason code."""

    def __init__(self, code: str) -> None:
        super().__init__(code)
        self.code = code


@dataclass(frozen=True, slots=True)
class Header:
    format: str
    width: int
    height: int


@dataclass(frozen=True, slots=True)
class Decoded:
    header: Header
    rgb: npt.NDArray[np.uint8]  # the working copy, short side about WORK_SIDE (or the original when smaller)
    grayscale_mode: bool  # stored with a single channel, whatever the pixels look like


def open_image(data: bytes) -> tuple[Image.Image, Header]:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            image = Image.open(io.BytesIO(data))
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError, Image.DecompressionBombWarning):
        raise DecodeError("undecodable_image") from None
    if image.format not in ALLOWED_FORMATS:
        raise DecodeError("unsupported_format")
    width, height = _oriented_size(image)
    return image, Header(format=image.format, width=width, height=height)


def decode(image: Image.Image, header: Header) -> Decoded:
    grayscale_mode = image.mode in ("1", "L", "LA", "I", "I;16", "F")
    try:
        if header.format == "JPEG":
            image.draft("RGB", (WORK_SIDE, WORK_SIDE))
        image.load()
        factor = min(image.size) // WORK_SIDE
        if factor > 1:
            image = image.reduce(factor)
        ImageOps.exif_transpose(image, in_place=True)  # the working copy is this call's own: no copy made
        rgb = np.asarray(image if image.mode == "RGB" else image.convert("RGB"))
    except (OSError, ValueError, SyntaxError, Image.DecompressionBombError):
        raise DecodeError("undecodable_image") from None
    return Decoded(header=header, rgb=np.ascontiguousarray(rgb), grayscale_mode=grayscale_mode)


def _oriented_size(image: Image.Image) -> tuple[int, int]:
    width, height = image.size
    # EXIF orientations 5-8 swap the axes: the person sees (and the policy measures) the rotated photo.
    orientation = image.getexif().get(0x0112, 1)
    return (height, width) if orientation in (5, 6, 7, 8) else (width, height)
