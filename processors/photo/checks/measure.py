"""Measurements of one photo: numbers in image proportions, degrees or 0..255 levels, for the policies to judge."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt

from processors.photo.checks.decode import Decoded
from processors.photo.checks.detector import Detection

# FaceMesh indices (subject's right is image left).
FOREHEAD, CHIN, NOSE_TIP = 10, 152, 1
CHEEK_RIGHT, CHEEK_LEFT = 234, 454
EYE_RIGHT = (33, 133, (160, 159, 158), (144, 145, 153))
EYE_LEFT = (263, 362, (387, 386, 385), (373, 374, 380))
LIP_UPPER_INNER, LIP_LOWER_INNER, MOUTH_RIGHT, MOUTH_LEFT = 13, 14, 61, 291
CHEEKBONE_RIGHT, CHEEKBONE_LEFT = 205, 425
LIP_TOP, LIP_BOTTOM = 0, 17
BETWEEN_BROWS, NOSE_BRIDGE = 168, 6
# The irises of the attention mesh: a centre and four rim points each.
IRIS_RIGHT, IRIS_LEFT = (468, (469, 470, 471, 472)), (473, (474, 475, 476, 477))

# The forehead-to-chin line leans by this much on a face looking straight into the camera (docs/photo.md, "Pose
# zero"). On MediaPipe's canonical face model the line leans 0.7 degrees, and FaceMesh reads it 1.4 +- 0.8 degrees more
# than a fit of that model to the same mesh (22 faces). People facing the camera at eye level fit the model about
# 6.5 degrees chin-down (the model's frame is not the head's natural upright), and their line reads 2.9 to 13.4
# (mean 8.1, median 8.4). The 10.5 calibrated on one portrait read good frontal photos 7 degrees chin-up.
PITCH_AT_FRONTAL = 8.3
# Hair counts as hair when it differs from the backdrop by more than this (RGB distance); JPEG noise stays below.
HAIR_CONTRAST = 40.0
# Where the backdrop is too busy to tell hair from it, the crown sits this many forehead-to-chin lengths above the
# top of the forehead: the middle of adult head proportions.
CROWN_ABOVE_FOREHEAD = 0.45
BORDER = 0.08
MIN_BACKDROP_PIXELS = 30
# An eye or a mouth in view has at least this contrast (`_contrast`); under a hand, a card, a mask or a band, less.
EYES_SEEN, MOUTH_SEEN = 0.25, 0.2
# Beyond this share of the inner face at full white, eyes and mouth have lost their contrast to the exposure.
CLIPPED_FACE = 0.2
# A frame's bridge reads 0.19 and more (`_glasses_frame`); a face without glasses 0.05 at most.
GLASSES_SEEN = 0.1
# A pupil is red-eye when at least this share of its disc is flash red (`_red_pupils`).
RED_PUPIL = 0.4
# Face levels at or beyond these are burnt to white or crushed to black: no detail is left there.
BURNT_LEVEL, CRUSHED_LEVEL = 250, 10
# A living person's skin has colour: the median chroma (max - min of R, G, B) of the inner face reads 12 and more on
# every colour photo of a person here; a plastic or plaster mask, a marble or plaster bust read 5 to 8.
SKIN_CHROMA = 10.0
# JPEG codes 8 x 8 blocks; a working copy decoded at 1/2 (draft) shows them every 4 pixels. Below 3 pixels the grid is
# too fine to tell from the picture itself, and the blockiness check does not run.
JPEG_BLOCK, MIN_BLOCK_PERIOD = 8, 3

Metrics = dict[str, float]
Image = npt.NDArray[np.uint8]
Eye = tuple[int, int, tuple[int, ...], tuple[int, ...]]  # outer corner, inner corner, upper lid, lower lid


def image_metrics(decoded: Decoded) -> Metrics:
    rgb = decoded.rgb[::4, ::4].astype(np.int16)
    chroma = np.abs(rgb[..., 0] - rgb[..., 1]) + np.abs(rgb[..., 1] - rgb[..., 2]) + np.abs(rgb[..., 0] - rgb[..., 2])
    return {"colourfulness": 0.0 if decoded.grayscale_mode else float(chroma.mean() / 3)}


def face_metrics(decoded: Decoded, detection: Detection, *, colour: bool = True) -> Metrics:
    """Everything that needs the one face's mesh; `detection.mesh` must be present. `colour`: the photo is in colour
    (a black-and-white photo has no skin colour to measure)."""
    mesh = detection.mesh
    assert mesh is not None
    rgb = decoded.rgb
    height, width = rgb.shape[:2]
    scale = decoded.header.width / width
    face = detection.faces[0]

    forehead, chin = mesh[FOREHEAD], mesh[CHIN]
    length = chin[1] - forehead[1]
    face_width = mesh[CHEEK_LEFT][0] - mesh[CHEEK_RIGHT][0]
    eye_right, eye_left = _eye_centre(mesh, EYE_RIGHT), _eye_centre(mesh, EYE_LEFT)
    eyes_mid = (eye_right + eye_left) / 2

    # Hair reaches about 0.8 face widths either side of the face middle and as far above the forehead as the chin is
    # below the eyes; the ellipse around it keeps hair out of the backdrop sample.
    crown_guess = forehead[1] - 0.6 * length
    head = (
        (mesh[CHEEK_RIGHT][0] + mesh[CHEEK_LEFT][0]) / 2,
        (crown_guess + chin[1]) / 2,
        0.85 * face_width,
        0.55 * (chin[1] - crown_guess),
    )
    backdrop = _backdrop(rgb, head, eyes_mid[1])
    seen = len(backdrop) >= MIN_BACKDROP_PIXELS
    backdrop_spread = float(np.ascontiguousarray(backdrop.T).std(axis=1).mean()) if seen else math.inf
    backdrop_colour = np.median(backdrop, axis=0) if seen else np.zeros(3)
    crown = _crown(rgb, mesh, backdrop_colour, busy=backdrop_spread > 20.0)

    luma = _face_luma(rgb, mesh)
    inner_box = (
        int(mesh[CHEEK_RIGHT][0] + 0.15 * face_width),
        int(max(eyes_mid[1] - 0.12 * length, 0)),
        int(mesh[CHEEK_LEFT][0] - 0.15 * face_width),
        int(chin[1] - 0.15 * length),
    )
    inner = _region(luma, inner_box)
    cheek_right = _patch(luma, mesh[CHEEKBONE_RIGHT], 0.08 * face_width)
    cheek_left = _patch(luma, mesh[CHEEKBONE_LEFT], 0.08 * face_width)
    yaw, pitch, roll = _pose(mesh)
    face_clipped = float((inner >= BURNT_LEVEL).mean()) if inner.size else 0.0
    face_crushed = float((inner <= CRUSHED_LEVEL).mean()) if inner.size else 0.0
    low, high = _levels(inner) if inner.size else (0.0, 0.0)
    glasses = _glasses_frame(luma, mesh, face_width, float(high - low))
    lightness = float(_luma(backdrop_colour[None, None, :])[0, 0])

    metrics = {
        "face_score": face.score,
        "face_height_ratio": face.box[3] / height,
        "head_height_ratio": (chin[1] - crown) / height,
        "crown_from_top": crown / height,
        "head_width_ratio": face_width / width,
        "eye_line_from_bottom": 1.0 - eyes_mid[1] / height,
        "face_centre_x": eyes_mid[0] / width,
        "eye_distance_px": float(np.hypot(*(eye_left - eye_right)) * scale),
        "yaw": yaw,
        "pitch": pitch,
        "roll": roll,
        "abs_yaw": abs(yaw),
        "abs_pitch": abs(pitch),
        "abs_roll": abs(roll),
        "eye_openness": min(_eye_aspect(mesh, EYE_RIGHT), _eye_aspect(mesh, EYE_LEFT)),
        "mouth_opening": float(
            np.hypot(*(mesh[LIP_LOWER_INNER][:2] - mesh[LIP_UPPER_INNER][:2]))
            / np.hypot(*(mesh[MOUTH_LEFT][:2] - mesh[MOUTH_RIGHT][:2]))
        ),
        "face_brightness": float(inner.mean()) if inner.size else 0.0,
        "lighting_imbalance": abs(cheek_right - cheek_left) / max(cheek_right, cheek_left, 1.0),
        "sharpness": _sharpness(luma, mesh, face_width),
        "face_clipped": face_clipped,
        "face_crushed": face_crushed,
        "red_pupils": max(_red_pupils(rgb, mesh, IRIS_RIGHT), _red_pupils(rgb, mesh, IRIS_LEFT)),
        "glasses_frame": glasses,
        "lens_glare": _lens_glare(luma, mesh, face_clipped) if glasses >= GLASSES_SEEN else 0.0,
    }
    if face_clipped < CLIPPED_FACE:
        # on a face burnt to white nothing has contrast: the overexposure check says so instead
        metrics["eyes_visibility"] = min(
            _contrast(luma, _eye_box(mesh, EYE_RIGHT)), _contrast(luma, _eye_box(mesh, EYE_LEFT))
        )
        metrics["mouth_visibility"] = _contrast(luma, _mouth_box(mesh))
        if colour:
            # in a black-and-white photo no face has colour; on a burnt face the colour is gone with the exposure
            metrics["skin_chroma"] = _skin_chroma(rgb, inner_box)
    blockiness = _blockiness(luma, mesh, round(JPEG_BLOCK * width / decoded.header.width))
    if blockiness is not None:
        metrics["blockiness"] = blockiness
    if not seen:
        # a head filling the frame leaves no backdrop to judge: the framing checks report that instead
        return metrics
    return metrics | {
        "backdrop_spread": backdrop_spread,
        "backdrop_lightness": lightness,
        "backdrop_tint": float(backdrop_colour.max() - backdrop_colour.min()),
        "backdrop_whiteness": float(lightness - 2 * (backdrop_colour.max() - backdrop_colour.min())),
    }


def _luma(rgb: npt.NDArray[np.generic]) -> npt.NDArray[np.float32]:
    pixels = rgb.astype(np.float32)
    return pixels[..., 0] * 0.299 + pixels[..., 1] * 0.587 + pixels[..., 2] * 0.114  # type: ignore[no-any-return]


def _face_luma(rgb: Image, mesh: npt.NDArray[np.float64]) -> npt.NDArray[np.float32]:
    """Luma over the face (the mesh's extent and a margin of a fifth of it), zero elsewhere: every level measured below
    is on the face, and the rest of the image need not be converted."""
    height, width = rgb.shape[:2]
    (x0, y0), (x1, y1) = mesh[:, :2].min(axis=0), mesh[:, :2].max(axis=0)
    mx, my = 0.2 * (x1 - x0), 0.2 * (y1 - y0)
    top, bottom = int(np.clip(y0 - my, 0, height)), int(np.clip(y1 + my + 1, 0, height))
    left, right = int(np.clip(x0 - mx, 0, width)), int(np.clip(x1 + mx + 1, 0, width))
    luma = np.zeros((height, width), dtype=np.float32)
    luma[top:bottom, left:right] = _luma(rgb[top:bottom, left:right])
    return luma


def _eye_centre(mesh: npt.NDArray[np.float64], eye: Eye) -> npt.NDArray[np.float64]:
    return (mesh[eye[0]][:2] + mesh[eye[1]][:2]) / 2  # type: ignore[no-any-return]


def _eye_width(mesh: npt.NDArray[np.float64], eye: Eye) -> float:
    """Corner to corner."""
    return float(np.hypot(*(mesh[eye[0]][:2] - mesh[eye[1]][:2])))


def _eye_aspect(mesh: npt.NDArray[np.float64], eye: Eye) -> float:
    _, _, upper, lower = eye
    opening = np.mean([np.hypot(*(mesh[u][:2] - mesh[d][:2])) for u, d in zip(upper, lower, strict=True)])
    return float(opening / _eye_width(mesh, eye))


def _pose(mesh: npt.NDArray[np.float64]) -> tuple[float, float, float]:
    across = mesh[CHEEK_LEFT] - mesh[CHEEK_RIGHT]
    down = mesh[CHIN] - mesh[FOREHEAD]
    yaw = math.degrees(math.atan2(across[2], across[0]))
    roll = math.degrees(math.atan2(across[1], across[0]))
    # Measured along the face's own down axis, so a rolled head does not read as pitched.
    along = math.hypot(down[0], down[1])
    pitch = math.degrees(math.atan2(down[2], along)) - PITCH_AT_FRONTAL
    return yaw, pitch, roll


def _backdrop(rgb: Image, head: tuple[float, float, float, float], eye_y: float) -> npt.NDArray[np.float32]:
    """Pixels of the top band and of the side bands down to the eye line, outside the head ellipse."""
    height, width = rgb.shape[:2]
    band_h, band_w = max(int(height * BORDER), 2), max(int(width * BORDER), 2)
    rows = min(max(band_h, int(eye_y)), height)  # nothing below is sampled
    mask = np.zeros((rows, width), dtype=bool)
    mask[:band_h, :] = True
    mask[: int(eye_y), :band_w] = True
    mask[: int(eye_y), width - band_w :] = True
    cx, cy, rx, ry = head
    ys, xs = np.ogrid[:rows, :width]
    mask &= ((xs - cx) / rx) ** 2 + ((ys - cy) / ry) ** 2 > 1.0
    return rgb[:rows].reshape(-1, 3)[np.flatnonzero(mask)[::3]].astype(np.float32)  # type: ignore[no-any-return]


def _crown(rgb: Image, mesh: npt.NDArray[np.float64], backdrop: npt.NDArray[np.floating], *, busy: bool) -> float:
    """Top of the hair: walking up from the forehead while the rows still differ from the backdrop."""
    forehead_y = mesh[FOREHEAD][1]
    length = mesh[CHIN][1] - forehead_y
    fallback = max(forehead_y - CROWN_ABOVE_FOREHEAD * length, 0.0)
    if busy:
        return float(fallback)
    x0, x1 = int(mesh[EYE_RIGHT[0]][0]), int(mesh[EYE_LEFT[0]][0])
    top = int(forehead_y)
    if top <= 0 or x1 <= x0:
        return 0.0
    away = rgb[:top, x0:x1].astype(np.float32) - backdrop.astype(np.float32)
    differs = np.einsum("ijk,ijk->ij", away, away) > HAIR_CONTRAST**2  # squared distances, summed over the channels
    hair_rows = differs.mean(axis=1) > 0.1
    above = hair_rows[::-1]
    if above.all():
        return 0.0
    return float(top - int(np.argmin(above)))


def _patch(luma: npt.NDArray[np.float32], centre: npt.NDArray[np.float64], half: float) -> float:
    x, y, h = int(centre[0]), int(centre[1]), max(int(half), 1)
    patch = luma[max(y - h, 0) : y + h, max(x - h, 0) : x + h]
    return float(patch.mean()) if patch.size else 0.0


def _sharpness(luma: npt.NDArray[np.float32], mesh: npt.NDArray[np.float64], face_width: float) -> float:
    """Laplacian spread over the inner face, brought to a face about 100 px wide so that resolution does not count."""
    x0, x1 = int(max(mesh[CHEEK_RIGHT][0], 0)), int(mesh[CHEEK_LEFT][0])
    y0, y1 = int(max(mesh[FOREHEAD][1], 0)), int(mesh[CHIN][1])
    step = max(int(face_width // 100), 1)
    face = luma[y0:y1:step, x0:x1:step]
    if face.shape[0] < 3 or face.shape[1] < 3:
        return 0.0
    laplacian = 4 * face[1:-1, 1:-1] - face[:-2, 1:-1] - face[2:, 1:-1] - face[1:-1, :-2] - face[1:-1, 2:]
    return float(laplacian.var())


Box = tuple[int, int, int, int]  # x0, y0, x1, y1


def _eye_box(mesh: npt.NDArray[np.float64], eye: Eye, scale: float = 1.0) -> Box:
    """The eye from corner to corner and 0.3 eye widths above and below its middle (`scale` grows it)."""
    (cx, cy), width = _eye_centre(mesh, eye), _eye_width(mesh, eye) * scale
    return int(cx - 0.6 * width), int(cy - 0.3 * width), int(cx + 0.6 * width), int(cy + 0.3 * width)


def _mouth_box(mesh: npt.NDArray[np.float64]) -> Box:
    return (
        int(mesh[MOUTH_RIGHT][0]),
        int(mesh[LIP_TOP][1]),
        int(mesh[MOUTH_LEFT][0]),
        int(mesh[LIP_BOTTOM][1]),
    )


def _region(luma: npt.NDArray[np.float32], box: Box) -> npt.NDArray[np.float32]:
    x0, y0, x1, y1 = box
    return luma[max(y0, 0) : max(y1, 0), max(x0, 0) : max(x1, 0)]


def _contrast(luma: npt.NDArray[np.float32], box: Box) -> float:
    """Michelson contrast of the region's 5th and 95th percentile levels. An eye (white, iris, lashes) or a mouth (lips,
    their parting line) reads 0.35 and more; a hand, a card, a mask or a band laid over it reads under 0.25."""
    region = _region(luma, box)
    if region.size < 4:
        return 0.0
    low, high = _levels(region)
    return float((high - low) / max(high + low, 1.0))


_LEVELS = np.array([0.05, 0.95])


def _levels(values: npt.NDArray[np.float32]) -> tuple[float, float]:
    """The 5th and 95th percentiles, as `np.percentile(values, (5, 95))` gives them to the last bit (its linear
    interpolation, the difference taken in the values' own type), from one partial sort: a third less time, on
    regions this small most of it numpy's own bookkeeping."""
    flat = values.ravel()
    position = _LEVELS * (flat.size - 1)
    below = np.floor(position).astype(np.intp)
    above = np.minimum(below + 1, flat.size - 1)
    ordered = np.partition(flat, np.unique(np.concatenate([below, above])))
    low, high, t = ordered[below], ordered[above], position - below
    step = high - low
    low_level, high_level = np.where(t >= 0.5, high - step * (1 - t), low + step * t)
    return float(low_level), float(high_level)


def _red_pupils(rgb: Image, mesh: npt.NDArray[np.float64], iris: tuple[int, tuple[int, ...]]) -> float:
    """Share of the pupil (a disc of 0.6 iris radii round the iris centre) that glows flash red: red at least twice
    green and blue and bright enough to be light, not a dark brown iris. A flash's red eye reads 0.7 to 0.9; brown,
    blue and dark eyes, glasses and their tints 0.22 at most."""
    centre, rim = iris
    if len(mesh) <= max(rim):
        return 0.0
    cx, cy = mesh[centre][0], mesh[centre][1]
    radius = max(0.6 * float(np.mean([np.hypot(*(mesh[k][:2] - mesh[centre][:2])) for k in rim])), 1.0)
    x0, y0 = max(int(cx - radius), 0), max(int(cy - radius), 0)
    patch = rgb[y0 : int(cy + radius) + 1, x0 : int(cx + radius) + 1].astype(np.int16)
    if patch.size == 0:
        return 0.0
    ys, xs = np.ogrid[y0 : y0 + patch.shape[0], x0 : x0 + patch.shape[1]]
    disc = patch[(xs - cx) ** 2 + (ys - cy) ** 2 <= radius**2]
    if disc.size == 0:
        return 0.0
    red, other = disc[:, 0], np.maximum(disc[:, 1], disc[:, 2])
    return float(((red - other > red // 2) & (red > 60)).mean())


def _skin_chroma(rgb: Image, box: Box) -> float:
    """Median chroma (max - min of R, G, B) over the inner face, every other pixel."""
    x0, y0, x1, y1 = box
    region = rgb[max(y0, 0) : max(y1, 0) : 2, max(x0, 0) : max(x1, 0) : 2]
    if region.size == 0:
        return 0.0
    return float(np.median(region.max(axis=2) - region.min(axis=2)))


def covered(metrics: Metrics) -> bool:
    """Eyes and mouth both hidden: nothing of the face is left to check, the same as no face at all."""
    return metrics.get("eyes_visibility", 1.0) < EYES_SEEN and metrics.get("mouth_visibility", 1.0) < MOUTH_SEEN


def _lens_glare(luma: npt.NDArray[np.float32], mesh: npt.NDArray[np.float64], face_clipped: float) -> float:
    """Light clipped on the lenses (boxes 1.6 times the eye boxes), beyond what is clipped on the whole face: an
    overexposed photo says so itself."""
    glare = 0.0
    for eye in (EYE_RIGHT, EYE_LEFT):
        region = _region(luma, _eye_box(mesh, eye, 1.6))
        glare = max(glare, float((region >= 245).mean()) if region.size else 0.0)
    return max(glare - face_clipped, 0.0)


def _glasses_frame(
    luma: npt.NDArray[np.float32], mesh: npt.NDArray[np.float64], face_width: float, span: float
) -> float:
    """Evidence of a frame's bridge: the strongest thin line, dark or bright, running along the eye axis across the
    middle half of the nose between the inner eye corners, from the brows down to the top of the nose, over the face's
    own level span (so that a dark frame on dark skin counts as much as on light skin). The rows are sampled along the
    face's own axes, so a rolled head reads like an upright one. A line is at most a tenth of the eye gap thick: the
    broad highlight of a nose bridge, a brow furrow's shading or a shadow is not one."""
    right, left = mesh[EYE_RIGHT[1]][:2], mesh[EYE_LEFT[1]][:2]
    gap = float(np.hypot(*(left - right)))
    if gap < 2 or span <= 0:
        return 0.0
    along = (left - right) / gap
    down = np.array([-along[1], along[0]])
    middle = (right + left) / 2
    top = float(np.dot(mesh[BETWEEN_BROWS][:2] - middle, down)) - 0.08 * face_width
    bottom = float(np.dot(mesh[NOSE_BRIDGE][:2] - middle, down)) + 0.02 * face_width
    rows, columns = np.arange(top, bottom, 1.0), np.linspace(-0.25 * gap, 0.25 * gap, max(int(0.5 * gap), 2))
    xs = middle[0] + columns[None, :] * along[0] + rows[:, None] * down[0]
    ys = middle[1] + columns[None, :] * along[1] + rows[:, None] * down[1]
    height, width = luma.shape
    profile = luma[np.clip(np.rint(ys), 0, height - 1).astype(int), np.clip(np.rint(xs), 0, width - 1).astype(int)]
    return _thin_line(profile.mean(axis=1), max(2, round(0.1 * gap))) / span


def _thin_line(profile: npt.NDArray[np.floating], thickest: int) -> float:
    """How far a row stands out, darker or brighter, from both rows k away, for k up to `thickest`."""
    strongest = 0.0
    for k in range(1, min(thickest, (len(profile) - 1) // 2) + 1):
        inner, before, after = profile[k:-k], profile[: -2 * k], profile[2 * k :]
        dark = np.minimum(before, after) - inner
        bright = inner - np.maximum(before, after)
        strongest = max(strongest, float(dark.max()), float(bright.max()))
    return strongest


def _blockiness(luma: npt.NDArray[np.float32], mesh: npt.NDArray[np.float64], period: int) -> float | None:
    """How much larger the steps between neighbouring pixels are across the JPEG block grid than inside the blocks,
    over the face (which always has texture; a flat backdrop has no steps to compare): about 1.0 for a photo, 1.4 and
    more once a very low quality setting leaves the 8 x 8 blocks visible. None when the grid is too fine to see."""
    if period < MIN_BLOCK_PERIOD:
        return None
    # the box starts on the grid, so the grid falls where the file's blocks meet
    x0, x1 = int(max(mesh[CHEEK_RIGHT][0], 0)) // period * period, int(mesh[CHEEK_LEFT][0])
    y0, y1 = int(max(mesh[FOREHEAD][1], 0)) // period * period, int(mesh[CHIN][1])
    face = luma[y0:y1, x0:x1]
    if min(face.shape) < 4 * period:
        return None
    ratios = []
    for axis in (0, 1):
        steps = np.abs(np.diff(face, axis=axis)).mean(axis=1 - axis)
        on_grid = (np.arange(steps.size) + 1) % period == 0
        ratios.append(float(steps[on_grid].mean()) / max(float(steps[~on_grid].mean()), 1e-3))
    return float(np.mean(ratios))
