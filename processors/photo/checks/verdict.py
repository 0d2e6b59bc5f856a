"""The verdict's shape, the reason-code catalogue and the rules that turn checks into a verdict."""

from __future__ import annotations

import math

import msgspec

# Full-range BlazeFace scores a clear, close-up face anywhere from about 0.6 to 0.95; above this it is sure enough.
DETECTOR_SURE = 0.6

# In priority order: a verdict's category is the first one of these that a failed check belongs to.
CATEGORIES = (
    "compliant",
    "format",
    "no_face",
    "multiple_faces",
    "obstruction",
    "framing",
    "pose",
    "expression",
    "lighting",
    "background",
    "quality",
)

# code -> (category, the one sentence the end user reads)
REASONS: dict[str, tuple[str, str]] = {
    "undecodable_image": ("format", "The file could not be read as an image; please upload a JPEG, PNG or WebP photo."),
    "unsupported_format": ("format", "This file type is not accepted; please upload a JPEG, PNG or WebP photo."),
    "image_too_small": ("format", "The photo is too small; please use a larger, higher-resolution photo."),
    "image_too_large": ("format", "The photo is too large; please use a smaller version of it."),
    "not_square": ("format", "The photo must be square; please crop it to equal width and height."),
    "wrong_aspect_ratio": ("format", "The photo has the wrong shape; please crop it to a 35 by 45 portrait format."),
    "no_face": ("no_face", "No face could be found; please take a photo that shows your face clearly."),
    "multiple_faces": ("multiple_faces", "More than one face is visible; please take a photo of yourself alone."),
    "not_a_person": (
        "no_face",
        "The face does not look like a living person's; please take a photo of yourself, not of a mask or a statue.",
    ),
    "face_covered": ("obstruction", "Something covers part of your face; please remove it."),
    "glasses": ("obstruction", "Glasses are not allowed; please take them off for the photo."),
    "glasses_glare": ("obstruction", "Your glasses reflect light; please tilt them or remove them to avoid glare."),
    "face_too_small": ("framing", "Your face is too small in the photo; please move closer to the camera."),
    "head_too_small": ("framing", "Your head is too small in the photo; please move closer or crop tighter."),
    "head_too_large": ("framing", "Your head is too large in the photo; please move back or crop wider."),
    "head_too_narrow": ("framing", "Your head is too narrow in the photo; please move closer or crop tighter."),
    "head_too_wide": ("framing", "Your head is too wide in the photo; please move back or crop wider."),
    "head_not_centred": ("framing", "Your head is not centred; please place your face in the middle of the photo."),
    "eyes_too_low": ("framing", "Your eyes are too low in the photo; please leave less space above your head."),
    "eyes_too_high": ("framing", "Your eyes are too high in the photo; please leave more space above your head."),
    "eyes_too_close": ("framing", "Your face has too few pixels; please use a sharper photo taken closer up."),
    "head_turned": ("pose", "Your head is turned to the side; please face the camera directly."),
    "head_tilted": ("pose", "Your head is tilted; please keep your head straight and level."),
    "head_nodded": ("pose", "Your chin is raised or lowered; please look straight into the camera."),
    "eyes_closed": ("expression", "Your eyes appear closed; please keep both eyes open."),
    "mouth_open": ("expression", "Your mouth is open; please close your mouth and keep a neutral expression."),
    "too_dark": ("lighting", "Your face is too dark; please take the photo in brighter, even light."),
    "overexposed": ("lighting", "Your face is overexposed; please avoid direct flash or strong light."),
    "red_eye": (
        "lighting",
        "Your eyes look red from the camera flash; please take the photo without flash or with red-eye reduction.",
    ),
    "uneven_lighting": ("lighting", "There are shadows on your face; please use even light from the front."),
    "background_not_uniform": ("background", "The background is not plain; please stand in front of a plain wall."),
    "background_too_dark": ("background", "The background is too dark; please use a light, plain background."),
    "background_not_white": ("background", "The background must be white or off-white; please use a white wall."),
    "blurry": ("quality", "The photo is blurry; please hold the camera still and make sure it is in focus."),
    "compression_artifacts": (
        "quality",
        "The photo is too heavily compressed; please upload the original or save it at a higher quality.",
    ),
    "grayscale": ("quality", "The photo is black and white; please submit a colour photo."),
}

REASON_CODES: dict[str, str] = {code: sentence for code, (_, sentence) in REASONS.items()}


class Check(msgspec.Struct, frozen=True):
    code: str
    passed: bool
    measured: float | str | None
    threshold: str
    feedback: str


class Verdict(msgspec.Struct, frozen=True):
    is_compliant: bool
    confidence: float
    category: str
    violation_reasons: list[str]
    feedback: str
    checks: list[Check]


def verdict(checks: list[Check], margins: dict[str, float], face_score: float, title: str) -> Verdict:
    """`margins`: per run check, distance to its threshold in the check's own tolerance units (negative = failed)."""
    failed = list(dict.fromkeys(c.code for c in checks if not c.passed))
    if not failed:
        decisive = min((margins[c.code] for c in checks), default=math.inf)
        return Verdict(
            is_compliant=True,
            confidence=_confidence(decisive, face_score),
            category="compliant",
            violation_reasons=[],
            feedback=f"The photo meets every check of the {title} policy.",
            checks=checks,
        )
    category = min((REASONS[code][0] for code in failed), key=CATEGORIES.index)
    decisive = max(-margins[code] for code in failed)
    # Format faults and a missing face do not rest on the detector's belief in a face.
    score = 1.0 if category in ("format", "no_face") else face_score
    return Verdict(
        is_compliant=False,
        confidence=_confidence(decisive, score),
        category=category,
        violation_reasons=failed,
        feedback=" ".join(dict.fromkeys(c.feedback for c in checks if not c.passed)),
        checks=checks,
    )


def _confidence(margin: float, face_score: float) -> float:
    """Half certain at the threshold itself, fully certain one tolerance unit away; scaled down only when the
    detector itself was unsure of the face (score under DETECTOR_SURE)."""
    certainty = min(face_score / DETECTOR_SURE, 1.0)
    return round(max(0.0, min(1.0, (0.5 + 0.5 * min(abs(margin), 1.0)) * certainty)), 3)
