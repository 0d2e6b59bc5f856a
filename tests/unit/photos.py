"""Test photos built from scikit-image's astronaut portrait: compliant framings and one transformation per fault."""

from __future__ import annotations

import functools
import io

import numpy as np
import numpy.typing as npt
from PIL import Image, ImageFilter, ImageOps

Array = npt.NDArray[np.uint8]

NEAR_WHITE = (244, 244, 241)
# In the astronaut portrait (512 x 512): eye line, crown of the hair, chin, face middle; measured once with FaceMesh.
EYE_Y, CROWN_Y, CHIN_Y, FACE_X = 104, 15, 177, 225
PAD = 200  # the white canvas extends the portrait this far on every side, so framings may reach past its edges


@functools.cache
def astronaut() -> Array:
    from skimage import data

    return np.ascontiguousarray(data.astronaut())


def person_mask(source: Array) -> npt.NDArray[np.float32]:
    """Soft mask of the person, from MediaPipe's selfie segmentation (shipped in the same wheel)."""
    import mediapipe as mp

    with mp.solutions.selfie_segmentation.SelfieSegmentation(model_selection=0) as segmenter:
        mask = segmenter.process(source).segmentation_mask
    return np.clip((mask.astype(np.float32) - 0.3) / 0.4, 0.0, 1.0)


def on_backdrop(source: Array) -> Array:
    """The person of a portrait on a plain near-white backdrop, the same size."""
    mask = person_mask(source)[..., None]
    person = source.astype(np.float32) * mask + np.array(NEAR_WHITE, np.float32) * (1 - mask)
    return np.clip(person, 0, 255).astype(np.uint8)


@functools.cache
def on_white() -> Array:
    """The astronaut on a plain near-white backdrop, padded by PAD on every side."""
    person = on_backdrop(astronaut()).astype(np.float32)
    canvas = np.empty((512 + 2 * PAD, 512 + 2 * PAD, 3), np.float32)
    canvas[:] = NEAR_WHITE
    canvas[PAD : PAD + 512, PAD : PAD + 512] = person
    # the suit ends at the portrait's bottom edge; below it stays suit-coloured rather than white
    canvas[PAD + 512 :, PAD : PAD + 512] = person[-1:, :, :]
    return np.clip(canvas, 0, 255).astype(np.uint8)


@functools.cache
def mouth_closed() -> Array:
    """on_white() with the smile's open lips pulled together: the lower lip and chin move up over the teeth."""
    image = on_white().copy()
    top, gap = PAD + 143, 8
    x0, x1 = PAD + 190, PAD + 258
    rows = np.arange(top, PAD + 240)
    for x in range(x0, x1):
        edge = min(x - x0, x1 - x) / 10
        shift = round(gap * min(edge, 1.0))
        if shift:
            src = np.clip(rows + (shift * np.clip((PAD + 240 - rows) / 40, 0, 1)).astype(int), 0, image.shape[0] - 1)
            image[rows, x] = on_white()[src, x]
    return image


def frame(
    source: Array, *, width: int, height: int, head: float, eyes: float, centre: float = 0.5, chin_y: int = CHIN_Y
) -> Image.Image:
    """Crop so the head (crown to chin) takes `head` of the height, the eye line sits `eyes` of the height from the
    bottom and the face middle `centre` of the width from the left, then resize to width x height."""
    crop_h = (chin_y - CROWN_Y) / head
    crop_w = crop_h * width / height
    top = EYE_Y - (1 - eyes) * crop_h
    left = FACE_X - centre * crop_w
    box = (left + PAD, top + PAD, left + PAD + crop_w, top + PAD + crop_h)
    return Image.fromarray(source).resize((width, height), Image.Resampling.LANCZOS, box=box)


def encode(image: Image.Image, fmt: str = "JPEG", **options: object) -> bytes:
    buffer = io.BytesIO()
    if fmt == "JPEG":
        options.setdefault("quality", 92)
    image.save(buffer, fmt, **options)
    return buffer.getvalue()


# Compliant framings -------------------------------------------------------------------------------------------


def us_passport_image(source: Array | None = None, **framing: float) -> Image.Image:
    args = {"head": 0.58, "eyes": 0.62} | framing
    return frame(on_white() if source is None else source, width=600, height=600, **args)  # type: ignore[arg-type]


def icao_image(source: Array | None = None, **framing: float) -> Image.Image:
    args = {"head": 0.72, "eyes": 0.60} | framing
    source = mouth_closed() if source is None else source
    return frame(source, width=420, height=540, chin_y=CHIN_Y - 8, **args)  # type: ignore[arg-type]


def profile_image() -> Image.Image:
    return Image.fromarray(astronaut())


def profile_image_of(source: Array) -> Image.Image:
    """The profile photo's framing (the original 512 x 512 portrait) of a padded source like on_white()."""
    return Image.fromarray(source[PAD : PAD + 512, PAD : PAD + 512])


# Transformations ------------------------------------------------------------------------------------------------


def scaled(image: Image.Image, factor: float) -> Image.Image:
    pixels = np.asarray(image).astype(np.float32) * factor
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))


def blurred(image: Image.Image, radius: float = 4.0) -> Image.Image:
    return image.filter(ImageFilter.GaussianBlur(radius))


def grayscale(image: Image.Image) -> Image.Image:
    return ImageOps.grayscale(image)


def rolled(image: Image.Image, degrees: float) -> Image.Image:
    return image.rotate(degrees, Image.Resampling.BICUBIC, fillcolor=NEAR_WHITE)


def busy_background() -> Array:
    """The original studio portrait (flag, shuttle, mottled backdrop), padded like on_white()."""
    canvas = on_white().copy()
    canvas[PAD : PAD + 512, PAD : PAD + 512] = astronaut()
    return canvas


def side_shadow(image: Image.Image, strength: float = 0.5) -> Image.Image:
    """Darkens the left half progressively: light from one side only."""
    pixels = np.asarray(image).astype(np.float32)
    width = pixels.shape[1]
    ramp = np.clip(np.linspace(-1.0, 1.0, width) * 3, -1.0, 0.0) * strength + 1.0
    return Image.fromarray(np.clip(pixels * ramp[None, :, None], 0, 255).astype(np.uint8))


def eyes_shut(source: Array) -> Array:
    """The lid skin between brow and upper lid stretched down to the lower lid, hiding iris and white: eyes closed."""
    image = source.copy()
    brow, upper, lower = PAD + 86, PAD + 96, PAD + 107
    rows = np.arange(brow, lower)
    src = brow + (rows - brow) * (upper - brow) / (lower - brow)
    for cx in (PAD + 203, PAD + 247):
        for x in range(cx - 16, cx + 16):
            image[rows, x] = source[np.round(src).astype(int), x]
        image[lower - 2 : lower, cx - 12 : cx + 12] = (image[lower - 2 : lower, cx - 12 : cx + 12] * 0.6).astype(
            np.uint8
        )
    return image


def mouth_wide_open(source: Array) -> Array:
    """The lower lip and chin pushed down, the gap filled dark: a mouth open mid-sentence."""
    image = source.copy()
    top, drop = PAD + 146, 16
    for x in range(PAD + 202, PAD + 244):
        image[top + drop : PAD + 235, x] = source[top : PAD + 235 - drop, x]
        image[top : top + drop, x] = (60, 25, 25)
    return image


def turned(source: Array, degrees: float, *, vertical: bool = False) -> Array:
    """The head region mapped over a cylinder turned by `degrees`: a head turned sideways (or nodding, if vertical)."""
    image = source if not vertical else source.transpose(1, 0, 2)
    centre, radius = (FACE_X, 95.0) if not vertical else ((CROWN_Y + CHIN_Y) / 2, 110.0)
    lo, hi = (CROWN_Y - 20, CHIN_Y + 20) if not vertical else (FACE_X - 100, FACE_X + 100)
    out = image.copy()
    xs = np.arange(int(centre - radius) + 1, int(centre + radius)) + PAD
    angle = np.arcsin((xs - PAD - centre) / radius) - np.radians(degrees)
    src = np.clip(np.round(PAD + centre + radius * np.sin(angle)).astype(int), 0, image.shape[1] - 1)
    out[PAD + lo : PAD + hi, xs] = image[PAD + lo : PAD + hi][:, src]
    return out if not vertical else np.ascontiguousarray(out.transpose(1, 0, 2))


def with_second_face(image: Image.Image) -> Image.Image:
    """A second, smaller head over the shoulder."""
    base = image.copy()
    face = Image.fromarray(astronaut()).crop((140, 10, 310, 200))
    w = base.width // 3
    base.paste(face.resize((w, int(w * 190 / 170))), (base.width - w - 5, base.height - int(w * 190 / 170) - 5))
    return base


def group_photo() -> Image.Image:
    """Four people in a row, far from the camera: small faces about an eighth of the frame wide."""
    canvas = Image.new("RGB", (900, 600), (120, 140, 110))
    person = Image.fromarray(astronaut()).crop((100, 0, 360, 330)).resize((220, 279))
    for i in range(4):
        canvas.paste(person, (10 + 222 * i, 200))
    return canvas


def no_face() -> Image.Image:
    from skimage import data

    return Image.fromarray(data.coffee())


def gif_bytes() -> bytes:
    return encode(us_passport_image(), "GIF")


GARBAGE = b"\x00\x01not an image at all" * 40


def small_face_tall() -> Image.Image:
    """A tall frame with the face in a small part of it: visible, but not the subject of the picture."""
    canvas = Image.new("RGB", (300, 900), NEAR_WHITE)
    canvas.paste(Image.fromarray(astronaut()).resize((300, 300)), (0, 300))
    return canvas


def strip(width: int, height: int) -> bytes:
    return encode(Image.new("RGB", (width, height), NEAR_WHITE), "PNG")


def truncated() -> bytes:
    data = encode(us_passport_image())
    return data[: len(data) // 2]
