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

# The forehead-to-chin line leans back by this much on a frontal face; calibrated on a frontal studio portrait.
PITCH_AT_FRONTAL = 10.5
# Hair counts as hair when it differs from the backdrop by more than this (RGB distance); JPEG noise stays below.
HAIR_CONTRAST = 40.0
# Where the backdrop is too busy to tell hair from it, the crown sits this many forehead-to-chin lengths above the
# top of the forehead: the middle of adult head proportions.
CROWN_ABOVE_FOREHEAD = 0.45
BORDER = 0.08
MIN_BACKDROP_PIXELS = 30

Metrics = dict[str, float]
Image = npt.NDArray[np.uint8]


def image_metrics(decoded: Decoded) -> Metrics:
    rgb = decoded.rgb[::4, ::4].astype(np.int16)
    chroma = np.abs(rgb[..., 0] - rgb[..., 1]) + np.abs(rgb[..., 1] - rgb[..., 2]) + np.abs(rgb[..., 0] - rgb[..., 2])
    return {"colourfulness": 0.0 if decoded.grayscale_mode else float(chroma.mean() / 3)}


def face_metrics(decoded: Decoded, detection: Detection) -> Metrics:
    """Everything that needs the one face's mesh; `detection.mesh` must be present."""
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
    backdrop_spread = float(backdrop.std(axis=0).mean()) if seen else math.inf
    backdrop_colour = np.median(backdrop, axis=0) if seen else np.zeros(3)
    crown = _crown(rgb, mesh, backdrop_colour, busy=backdrop_spread > 20.0)

    luma = _luma(rgb)
    inner = luma[
        int(max(eyes_mid[1] - 0.12 * length, 0)) : int(chin[1] - 0.15 * length),
        int(mesh[CHEEK_RIGHT][0] + 0.15 * face_width) : int(mesh[CHEEK_LEFT][0] - 0.15 * face_width),
    ]
    cheek_right = _patch(luma, mesh[CHEEKBONE_RIGHT], 0.08 * face_width)
    cheek_left = _patch(luma, mesh[CHEEKBONE_LEFT], 0.08 * face_width)
    yaw, pitch, roll = _pose(mesh)
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
        "face_clipped": float((inner >= 250).mean()) if inner.size else 0.0,
        "lighting_imbalance": abs(cheek_right - cheek_left) / max(cheek_right, cheek_left, 1.0),
        "sharpness": _sharpness(luma, mesh, face_width),
    }
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


def _eye_centre(
    mesh: npt.NDArray[np.float64], eye: tuple[int, int, tuple[int, ...], tuple[int, ...]]
) -> npt.NDArray[np.float64]:
    return (mesh[eye[0]][:2] + mesh[eye[1]][:2]) / 2  # type: ignore[no-any-return]


def _eye_aspect(mesh: npt.NDArray[np.float64], eye: tuple[int, int, tuple[int, ...], tuple[int, ...]]) -> float:
    outer, inner, upper, lower = eye
    opening = np.mean([np.hypot(*(mesh[u][:2] - mesh[d][:2])) for u, d in zip(upper, lower, strict=True)])
    return float(opening / np.hypot(*(mesh[outer][:2] - mesh[inner][:2])))


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
    mask = np.zeros((height, width), dtype=bool)
    mask[:band_h, :] = True
    mask[: int(eye_y), :band_w] = True
    mask[: int(eye_y), width - band_w :] = True
    cx, cy, rx, ry = head
    ys, xs = np.ogrid[:height, :width]
    mask &= ((xs - cx) / rx) ** 2 + ((ys - cy) / ry) ** 2 > 1.0
    return rgb[mask][::3].astype(np.float32)  # type: ignore[no-any-return]


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
    strip = rgb[:top, x0:x1].astype(np.float32)
    differs = np.linalg.norm(strip - backdrop, axis=2) > HAIR_CONTRAST
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
