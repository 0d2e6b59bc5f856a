"""The policy catalogue: for each policy, which measurement each reason code judges and against which bounds."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from processors.photo.checks.measure import EYES_SEEN, GLASSES_SEEN, MOUTH_SEEN, RED_PUPIL, SKIN_CHROMA


@dataclass(frozen=True, slots=True)
class Rule:
    """Passes when low <= metric <= high; `tolerance` is how far past a bound counts as clearly past it."""

    code: str
    metric: str
    low: float = -math.inf
    high: float = math.inf
    tolerance: float = 1.0
    unit: str = ""
    # the sentence for the end user when this rule fails, where the code's own sentence is not precise enough
    feedback: str = ""

    def passes(self, value: float) -> bool:
        return bool(self.low <= value <= self.high)

    def margin(self, value: float) -> float:
        """Distance to the nearer bound in tolerance units: positive inside, negative outside. Sizes read from the
        file header are facts, not estimates: infinitely far either way."""
        if self.metric in EXACT_METRICS:
            return math.inf if self.passes(value) else -math.inf
        return min(value - self.low, self.high - value) / self.tolerance

    @property
    def threshold(self) -> str:
        unit = f" {self.unit}" if self.unit else ""
        if self.low == -math.inf:
            return f"<= {self.high:g}{unit}"
        if self.high == math.inf:
            return f">= {self.low:g}{unit}"
        return f"{self.low:g} to {self.high:g}{unit}"


@dataclass(frozen=True, slots=True)
class Policy:
    name: str
    title: str
    authority: str
    rules: tuple[Rule, ...]

    @property
    def codes(self) -> tuple[str, ...]:
        return (*FORMAT_CODES, *(rule.code for rule in self.rules))


# Every policy refuses what it cannot read; these two are decided before any measurement.
EXACT_METRICS = frozenset({"short_side", "long_side", "aspect", "face_count"})
FORMAT_CODES = ("undecodable_image", "unsupported_format")
FORMAT_THRESHOLD = "JPEG, PNG or WebP"

HEIGHT, WIDTH, PX, DEG = "of image height", "of image width", "px", "degrees"
LEVEL = "of 255"


def _faces() -> tuple[Rule, ...]:
    return (
        Rule("no_face", "face_count", low=1, unit="faces"),
        Rule("multiple_faces", "face_count", high=1, unit="faces"),
        # a mask, a bust: the face found has no skin colour (measured on colour photos only)
        Rule("not_a_person", "skin_chroma", low=SKIN_CHROMA, tolerance=4, unit="median chroma of the face"),
    )


def _pose(yaw: float, pitch: float, roll: float) -> tuple[Rule, ...]:
    return (
        Rule("head_turned", "abs_yaw", high=yaw, tolerance=5, unit=DEG),
        Rule("head_nodded", "abs_pitch", high=pitch, tolerance=5, unit=DEG),
        Rule("head_tilted", "abs_roll", high=roll, tolerance=5, unit=DEG),
    )


def _exposure() -> tuple[Rule, ...]:
    # the mean alone passes a face half burnt to white or half lost in black shadow: the clipped shares judge that
    return (
        Rule("too_dark", "face_brightness", low=80, tolerance=30, unit=f"mean face level {LEVEL}"),
        Rule("too_dark", "face_crushed", high=0.1, tolerance=0.05, unit="share of the face at level 10 or less"),
        Rule("overexposed", "face_brightness", high=225, tolerance=15, unit=f"mean face level {LEVEL}"),
        Rule("overexposed", "face_clipped", high=0.1, tolerance=0.05, unit="share of the face at level 250 or more"),
    )


RED_EYE = Rule("red_eye", "red_pupils", high=RED_PUPIL, tolerance=0.2, unit="share of the pupils flash red")


def _covering() -> tuple[Rule, ...]:
    return (
        Rule(
            "face_covered",
            "eyes_visibility",
            low=EYES_SEEN,
            tolerance=0.1,
            unit="eye contrast",
            feedback="Something covers your eyes; please remove anything in front of them.",
        ),
        Rule(
            "face_covered",
            "mouth_visibility",
            low=MOUTH_SEEN,
            tolerance=0.1,
            unit="mouth contrast",
            feedback="Something covers your mouth; please remove anything in front of it.",
        ),
    )


def _compression(high: float) -> Rule:
    return Rule(
        "compression_artifacts", "blockiness", high=high, tolerance=0.15, unit="step across / within 8 x 8 blocks"
    )


SHARP = Rule("blurry", "sharpness", low=60, tolerance=60, unit="Laplacian variance over the face")
# a photo is in colour from this mean channel difference on
COLOUR_SEEN = 4.0
COLOUR = Rule("grayscale", "colourfulness", low=COLOUR_SEEN, tolerance=4, unit="mean channel difference")
EYES_OPEN = Rule("eyes_closed", "eye_openness", low=0.15, tolerance=0.1, unit="eyelid gap / eye width")
EVEN_LIGHT = Rule("uneven_lighting", "lighting_imbalance", high=0.25, tolerance=0.1, unit="cheek level difference")
PLAIN_BACKDROP = Rule("background_not_uniform", "backdrop_spread", high=12, tolerance=6, unit=f"level spread {LEVEL}")

US_PASSPORT = Policy(
    name="us_passport",
    title="US passport",
    authority="US Department of State, digital passport photo requirements",
    rules=(
        Rule("image_too_small", "short_side", low=600, tolerance=100, unit=PX),
        Rule("image_too_large", "long_side", high=1200, tolerance=100, unit=PX),
        Rule("not_square", "aspect", low=0.99, high=1.01, tolerance=0.02, unit="width / height"),
        COLOUR,
        *_faces(),
        *_covering(),
        Rule("glasses", "glasses_frame", high=GLASSES_SEEN, tolerance=0.05, unit="bridge line / face level span"),
        Rule("head_too_small", "head_height_ratio", low=0.50, tolerance=0.05, unit=HEIGHT),
        Rule("head_too_large", "head_height_ratio", high=0.69, tolerance=0.05, unit=HEIGHT),
        Rule("eyes_too_low", "eye_line_from_bottom", low=0.56, tolerance=0.04, unit=f"{HEIGHT} from the bottom"),
        Rule("eyes_too_high", "eye_line_from_bottom", high=0.69, tolerance=0.04, unit=f"{HEIGHT} from the bottom"),
        Rule("head_not_centred", "face_centre_x", low=0.42, high=0.58, tolerance=0.04, unit=WIDTH),
        *_pose(yaw=10, pitch=10, roll=8),
        EYES_OPEN,
        # a natural smile parts the lips; speech opens them far wider
        Rule("mouth_open", "mouth_opening", high=0.35, tolerance=0.1, unit="lip gap / mouth width"),
        *_exposure(),
        RED_EYE,
        EVEN_LIGHT,
        PLAIN_BACKDROP,
        Rule("background_not_white", "backdrop_whiteness", low=190, tolerance=20, unit=f"level - 2 x tint {LEVEL}"),
        SHARP,
        _compression(1.4),
    ),
)

ICAO = Policy(
    name="icao",
    title="ICAO 9303 travel document",
    authority="ICAO Doc 9303 part 3 and ISO/IEC 19794-5 full frontal image",
    rules=(
        Rule("image_too_large", "long_side", high=5000, tolerance=500, unit=PX),
        Rule("wrong_aspect_ratio", "aspect", low=0.74, high=0.80, tolerance=0.03, unit="width / height"),
        COLOUR,
        *_faces(),
        *_covering(),
        Rule("glasses_glare", "lens_glare", high=0.02, tolerance=0.02, unit="share of clipped pixels around the eyes"),
        Rule("head_too_small", "head_height_ratio", low=0.60, tolerance=0.05, unit=HEIGHT),
        Rule("head_too_large", "head_height_ratio", high=0.90, tolerance=0.05, unit=HEIGHT),
        Rule("head_too_narrow", "head_width_ratio", low=0.50, tolerance=0.05, unit=WIDTH),
        Rule("head_too_wide", "head_width_ratio", high=0.75, tolerance=0.05, unit=WIDTH),
        Rule("eyes_too_low", "eye_line_from_bottom", low=0.50, tolerance=0.04, unit=f"{HEIGHT} from the bottom"),
        Rule("eyes_too_high", "eye_line_from_bottom", high=0.70, tolerance=0.04, unit=f"{HEIGHT} from the bottom"),
        Rule("head_not_centred", "face_centre_x", low=0.45, high=0.55, tolerance=0.03, unit=WIDTH),
        Rule("eyes_too_close", "eye_distance_px", low=90, tolerance=30, unit="px between eye centres"),
        *_pose(yaw=5, pitch=5, roll=8),
        EYES_OPEN,
        Rule("mouth_open", "mouth_opening", high=0.08, tolerance=0.05, unit="lip gap / mouth width"),
        *_exposure(),
        RED_EYE,
        EVEN_LIGHT,
        PLAIN_BACKDROP,
        Rule("background_too_dark", "backdrop_lightness", low=150, tolerance=30, unit=f"mean level {LEVEL}"),
        SHARP,
        _compression(1.4),
    ),
)

PROFILE_PHOTO = Policy(
    name="profile_photo",
    title="profile photo",
    authority="our own lenient rules: one clearly visible face",
    rules=(
        Rule("image_too_small", "short_side", low=200, tolerance=50, unit=PX),
        Rule("image_too_large", "long_side", high=6000, tolerance=500, unit=PX),
        *_faces(),
        Rule("face_too_small", "face_height_ratio", low=0.12, tolerance=0.04, unit=HEIGHT),
        Rule("head_turned", "abs_yaw", high=30, tolerance=10, unit=DEG),
        *_exposure(),
        Rule("blurry", "sharpness", low=30, tolerance=30, unit="Laplacian variance over the face"),
        _compression(1.6),
    ),
)

POLICIES: Mapping[str, Policy] = {p.name: p for p in (US_PASSPORT, ICAO, PROFILE_PHOTO)}
