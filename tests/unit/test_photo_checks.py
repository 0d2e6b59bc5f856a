"""Photo checks on real portraits: the exact reason codes each transformation of the astronaut earns per policy."""

from __future__ import annotations

import asyncio
import functools
import math
import re
from collections.abc import Callable

import msgspec
import pytest

from processors.photo.checks import CATEGORIES, POLICIES, REASON_CODES, CheckPool, Verdict, evaluate
from processors.photo.checks.evaluate import judge
from tests.judgement.photos import CASES as JUDGEMENT_CASES
from tests.unit import photos as p

Build = Callable[[], bytes]


def jpeg(make: Callable[[], object], fmt: str = "JPEG") -> Build:
    return functools.cache(lambda: p.encode(make(), fmt))  # type: ignore[arg-type]


US, ICAO = p.us_passport_image, p.icao_image

CASES: list[tuple[str, Build]] = [
    ("us_compliant", jpeg(US)),
    ("us_png", jpeg(US, "PNG")),
    ("us_webp", jpeg(US, "WEBP")),
    ("icao_compliant", jpeg(ICAO)),
    ("profile_compliant", jpeg(p.profile_image)),
    ("garbage", lambda: p.GARBAGE),
    ("truncated_jpeg", p.truncated),
    ("gif", p.gif_bytes),
    ("no_face", jpeg(p.no_face)),
    ("second_face", jpeg(lambda: p.with_second_face(US()))),
    ("group_photo", jpeg(p.group_photo)),
    ("rolled", jpeg(lambda: p.rolled(US(), 15))),
    ("turned", jpeg(lambda: US(p.turned(p.on_white(), -40)))),
    ("icao_turned", jpeg(lambda: ICAO(p.turned(p.mouth_closed(), -25)))),
    ("dark", jpeg(lambda: p.scaled(US(), 0.3))),
    ("overexposed", jpeg(lambda: p.scaled(US(), 1.8))),
    ("blurred", jpeg(lambda: p.blurred(US()))),
    ("grayscale", jpeg(lambda: p.grayscale(US()))),
    ("side_shadow", jpeg(lambda: p.side_shadow(US()))),
    ("busy_background", jpeg(lambda: US(p.busy_background()))),
    ("icao_busy_background", jpeg(lambda: ICAO(p.busy_background()))),
    ("eyes_shut", jpeg(lambda: US(p.eyes_shut(p.on_white())))),
    ("mouth_wide_open", jpeg(lambda: US(p.mouth_wide_open(p.on_white())))),
    ("icao_smiling", jpeg(lambda: ICAO(p.on_white()))),
    ("too_small", jpeg(lambda: US().resize((300, 300)))),
    ("too_large", jpeg(lambda: US().resize((1400, 1400)))),
    ("not_square", jpeg(lambda: p.frame(p.on_white(), width=600, height=800, head=0.5, eyes=0.6))),
    ("head_small", jpeg(lambda: US(head=0.4))),
    ("head_large", jpeg(lambda: US(head=0.8))),
    ("eyes_low", jpeg(lambda: US(eyes=0.5))),
    ("eyes_high", jpeg(lambda: US(eyes=0.75))),
    ("off_centre", jpeg(lambda: US(centre=0.3))),
    ("icao_head_small", jpeg(lambda: ICAO(head=0.5))),
    ("icao_head_large", jpeg(lambda: ICAO(head=1.0, eyes=0.5))),
    ("icao_eyes_low", jpeg(lambda: ICAO(eyes=0.42))),
    ("icao_eyes_high", jpeg(lambda: ICAO(eyes=0.8))),
    ("icao_low_resolution", jpeg(lambda: ICAO().resize((210, 270)))),
    ("dark_backdrop", jpeg(lambda: p.scaled(ICAO(), 0.55))),
    ("small_face_tall", jpeg(p.small_face_tall)),
    ("wide_strip", lambda: p.strip(6001, 10)),
    # too small to cut into tiles: the small-face pass must not fail on it
    ("one_pixel", lambda: p.strip(1, 1)),
]

EXPECTED: dict[str, tuple[set[str], set[str], set[str]]] = {
    # name: (us_passport, icao, profile_photo)
    "us_compliant": (
        set(),
        {"eyes_too_close", "head_too_narrow", "head_too_small", "mouth_open", "wrong_aspect_ratio"},
        set(),
    ),
    "us_png": (
        set(),
        {"eyes_too_close", "head_too_narrow", "head_too_small", "mouth_open", "wrong_aspect_ratio"},
        set(),
    ),
    "us_webp": (
        set(),
        {"eyes_too_close", "head_too_narrow", "head_too_small", "mouth_open", "wrong_aspect_ratio"},
        set(),
    ),
    "icao_compliant": ({"head_too_large", "image_too_small", "not_square"}, set(), set()),
    "profile_compliant": (
        {"background_not_uniform", "background_not_white", "eyes_too_high", "head_too_small", "image_too_small"},
        {
            "background_not_uniform",
            "eyes_too_close",
            "eyes_too_high",
            "head_not_centred",
            "head_too_narrow",
            "head_too_small",
            "mouth_open",
            "wrong_aspect_ratio",
        },
        set(),
    ),
    "garbage": ({"undecodable_image"}, {"undecodable_image"}, {"undecodable_image"}),
    "truncated_jpeg": ({"undecodable_image"}, {"undecodable_image"}, {"undecodable_image"}),
    "gif": ({"unsupported_format"}, {"unsupported_format"}, {"unsupported_format"}),
    "no_face": ({"image_too_small", "no_face", "not_square"}, {"no_face", "wrong_aspect_ratio"}, {"no_face"}),
    "second_face": ({"multiple_faces"}, {"multiple_faces", "wrong_aspect_ratio"}, {"multiple_faces"}),
    "group_photo": ({"multiple_faces", "not_square"}, {"multiple_faces", "wrong_aspect_ratio"}, {"multiple_faces"}),
    "rolled": (
        {"head_tilted"},
        {"eyes_too_close", "head_tilted", "head_too_narrow", "head_too_small", "mouth_open", "wrong_aspect_ratio"},
        set(),
    ),
    "turned": (
        {"head_not_centred", "head_turned"},
        {
            "eyes_too_close",
            "head_not_centred",
            "head_too_narrow",
            "head_too_small",
            "head_turned",
            "mouth_open",
            "wrong_aspect_ratio",
        },
        set(),
    ),
    "icao_turned": (
        {"head_not_centred", "head_too_large", "image_too_small", "not_square"},
        {"head_not_centred", "head_too_narrow", "head_turned"},
        set(),
    ),
    "dark": (
        {"background_not_white", "blurry", "too_dark"},
        {
            "background_too_dark",
            "blurry",
            "head_too_narrow",
            "head_too_small",
            "mouth_open",
            "too_dark",
            "wrong_aspect_ratio",
        },
        {"too_dark"},
    ),
    "overexposed": (
        {"overexposed"},
        {"head_too_narrow", "head_too_small", "overexposed", "wrong_aspect_ratio"},
        {"overexposed"},
    ),
    "blurred": (
        {"blurry"},
        {"blurry", "head_too_narrow", "head_too_small", "mouth_open", "wrong_aspect_ratio"},
        {"blurry"},
    ),
    "grayscale": (
        {"grayscale"},
        {"eyes_too_close", "grayscale", "head_too_narrow", "head_too_small", "mouth_open", "wrong_aspect_ratio"},
        set(),
    ),
    "side_shadow": (
        {"background_not_uniform", "background_not_white", "uneven_lighting"},
        {
            "background_not_uniform",
            "head_too_narrow",
            "head_too_small",
            "mouth_open",
            "uneven_lighting",
            "wrong_aspect_ratio",
        },
        set(),
    ),
    "busy_background": (
        {"background_not_uniform", "background_not_white"},
        {"background_not_uniform", "head_too_narrow", "head_too_small", "mouth_open", "wrong_aspect_ratio"},
        set(),
    ),
    "icao_busy_background": (
        {"background_not_white", "head_too_large", "image_too_small", "not_square"},
        {"mouth_open"},
        set(),
    ),
    "eyes_shut": (
        {"eyes_closed"},
        {"eyes_closed", "head_too_narrow", "head_too_small", "mouth_open", "wrong_aspect_ratio"},
        set(),
    ),
    "mouth_wide_open": ({"mouth_open"}, {"head_too_narrow", "mouth_open", "wrong_aspect_ratio"}, set()),
    "icao_smiling": ({"head_too_large", "image_too_small", "not_square"}, {"mouth_open"}, set()),
    "too_small": (
        {"image_too_small"},
        {"eyes_too_close", "head_too_narrow", "head_too_small", "mouth_open", "wrong_aspect_ratio"},
        set(),
    ),
    "too_large": (
        {"image_too_large"},
        {"head_too_narrow", "head_too_small", "mouth_open", "wrong_aspect_ratio"},
        set(),
    ),
    "not_square": ({"not_square"}, {"head_too_narrow", "head_too_small", "mouth_open"}, set()),
    "head_small": (
        {"head_too_small"},
        {"eyes_too_close", "head_too_narrow", "head_too_small", "mouth_open", "wrong_aspect_ratio"},
        set(),
    ),
    "head_large": ({"head_too_large"}, {"head_too_narrow", "mouth_open", "wrong_aspect_ratio"}, set()),
    "eyes_low": (
        {"eyes_too_low"},
        {"eyes_too_close", "head_too_narrow", "head_too_small", "mouth_open", "wrong_aspect_ratio"},
        set(),
    ),
    "eyes_high": (
        {"eyes_too_high"},
        {"eyes_too_close", "eyes_too_high", "head_too_narrow", "head_too_small", "mouth_open", "wrong_aspect_ratio"},
        set(),
    ),
    "off_centre": (
        {"head_not_centred"},
        {"head_not_centred", "head_too_narrow", "head_too_small", "mouth_open", "wrong_aspect_ratio"},
        set(),
    ),
    "icao_head_small": (
        {"image_too_small", "not_square"},
        {"eyes_too_close", "head_too_narrow", "head_too_small"},
        set(),
    ),
    "icao_head_large": (
        {"eyes_too_low", "head_too_large", "image_too_small", "not_square"},
        {"head_too_large", "head_too_wide"},
        set(),
    ),
    "icao_eyes_low": ({"eyes_too_low", "head_too_large", "image_too_small", "not_square"}, {"eyes_too_low"}, set()),
    "icao_eyes_high": ({"eyes_too_high", "image_too_small", "not_square"}, {"eyes_too_high", "head_too_small"}, set()),
    "icao_low_resolution": ({"head_too_large", "image_too_small", "not_square"}, {"eyes_too_close"}, set()),
    "dark_backdrop": (
        {"background_not_white", "head_too_large", "image_too_small", "not_square"},
        {"background_too_dark"},
        set(),
    ),
    "small_face_tall": (
        {"background_not_uniform", "head_too_small", "image_too_small", "not_square"},
        {
            "background_not_uniform",
            "eyes_too_close",
            "head_not_centred",
            "head_too_narrow",
            "head_too_small",
            "mouth_open",
            "wrong_aspect_ratio",
        },
        {"face_too_small"},
    ),
    "wide_strip": (
        {"grayscale", "image_too_large", "image_too_small", "no_face", "not_square"},
        {"grayscale", "image_too_large", "no_face", "wrong_aspect_ratio"},
        {"image_too_large", "image_too_small", "no_face"},
    ),
    "one_pixel": (
        {"grayscale", "image_too_small", "no_face"},
        {"grayscale", "no_face", "wrong_aspect_ratio"},
        {"image_too_small", "no_face"},
    ),
}

POLICY_ORDER = ("us_passport", "icao", "profile_photo")
BUILDS = dict(CASES)
# Checks no transformation of a single real portrait reaches reliably (a nodding head cannot be faked in 2D; the
# lenient profile policy tolerates every turn a warp produces): judged from measurements directly.
SYNTHETIC: list[tuple[str, str, dict[str, float], set[str]]] = [
    ("us_passport", "nodded", {"abs_pitch": 14.0}, {"head_nodded"}),
    ("icao", "nodded", {"abs_pitch": 7.0}, {"head_nodded"}),
    ("profile_photo", "turned", {"abs_yaw": 45.0}, {"head_turned"}),
]
ASSERTED: set[tuple[str, str]] = {
    (policy, code)
    for sets in EXPECTED.values()
    for policy, codes in zip(POLICY_ORDER, sets, strict=True)
    for code in codes
} | {(policy, code) for policy, _, _, codes in SYNTHETIC for code in codes}
# the labelled photos of the harder kinds (tests/judgement/photos.py, asserted in test_photo_judgement.py)
ASSERTED |= {(case.policy, code) for case in JUDGEMENT_CASES if not case.known_gap for code in case.must}


@functools.cache
def verdict(name: str, policy: str) -> Verdict:
    return evaluate(BUILDS[name](), policy)


@pytest.mark.parametrize("name", list(BUILDS))
@pytest.mark.parametrize("policy", POLICY_ORDER)
def test_exact_reasons(name: str, policy: str) -> None:
    expected = EXPECTED[name][POLICY_ORDER.index(policy)]
    result = verdict(name, policy)
    assert set(result.violation_reasons) == expected
    assert result.is_compliant is (not expected)
    assert (result.category == "compliant") is (not expected)
    failed = [c.code for c in result.checks if not c.passed]
    assert failed == result.violation_reasons


@pytest.mark.parametrize(
    ("name", "policy"),
    [
        ("us_compliant", "us_passport"),
        ("us_png", "us_passport"),
        ("us_webp", "us_passport"),
        ("icao_compliant", "icao"),
        ("profile_compliant", "profile_photo"),
    ],
)
def test_compliant_photo_passes(name: str, policy: str) -> None:
    result = verdict(name, policy)
    assert result.is_compliant
    assert result.category == "compliant"
    assert result.violation_reasons == []
    assert result.confidence >= 0.75
    assert result.feedback.startswith("The photo meets every check")
    assert all(check.passed for check in result.checks)


@pytest.mark.parametrize(
    ("name", "policy", "category"),
    [
        ("garbage", "us_passport", "format"),
        ("gif", "icao", "format"),
        ("no_face", "profile_photo", "no_face"),
        ("group_photo", "profile_photo", "multiple_faces"),
        ("head_small", "us_passport", "framing"),
        ("rolled", "us_passport", "pose"),
        ("eyes_shut", "us_passport", "expression"),
        ("icao_smiling", "icao", "expression"),
        ("dark", "us_passport", "lighting"),
        ("busy_background", "us_passport", "background"),
        ("blurred", "profile_photo", "quality"),
    ],
)
def test_category_is_the_first_failed_in_priority_order(name: str, policy: str, category: str) -> None:
    result = verdict(name, policy)
    assert result.category == category
    assert 0.0 <= result.confidence <= 1.0


def test_feedback_is_one_sentence_per_reason() -> None:
    result = verdict("dark", "us_passport")
    assert result.feedback == " ".join(REASON_CODES[code] for code in result.violation_reasons)
    assert result.feedback.count(".") == len(result.violation_reasons)


def test_undecodable_image_is_a_verdict_not_an_exception() -> None:
    result = verdict("garbage", "icao")
    assert result.checks == [result.checks[0]]
    assert result.checks[0].measured is None
    assert result.confidence == 1.0


def test_unknown_policy_raises_key_error() -> None:
    with pytest.raises(KeyError):
        evaluate(BUILDS["us_compliant"](), "eu_visa")


def test_group_photo_counts_every_small_face() -> None:
    faces = next(c for c in verdict("group_photo", "profile_photo").checks if c.code == "multiple_faces")
    assert faces.measured == 4


@pytest.mark.parametrize(
    ("policy", "label", "metrics", "codes"), SYNTHETIC, ids=lambda v: v if isinstance(v, str) else ""
)
def test_judged_from_measurements(policy: str, label: str, metrics: dict[str, float], codes: set[str]) -> None:
    assert set(judge(metrics | {"face_score": 0.9}, POLICIES[policy]).violation_reasons) == codes


def test_every_reason_code_of_every_policy_is_asserted() -> None:
    catalogue = {(name, code) for name, policy in POLICIES.items() for code in policy.codes}
    assert catalogue - ASSERTED == set()


def test_catalogue_is_consistent() -> None:
    assert set(POLICIES) == {"us_passport", "icao", "profile_photo"}
    for policy in POLICIES.values():
        assert set(policy.codes) <= set(REASON_CODES)
        for rule in policy.rules:
            assert re.fullmatch(r"[a-z]+(_[a-z]+)*", rule.code)
            assert rule.tolerance > 0
            assert rule.low > -math.inf or rule.high < math.inf
    assert CATEGORIES[0] == "compliant"
    for sentence in REASON_CODES.values():
        assert sentence.endswith(".")
        assert sentence.count(".") == 1


def test_verdict_serialises() -> None:
    decoded = msgspec.json.decode(msgspec.json.encode(verdict("eyes_shut", "us_passport")), type=Verdict)
    assert decoded.violation_reasons == ["eyes_closed"]


async def test_pool_evaluates_off_the_loop_and_reuses_workers() -> None:
    pool = CheckPool(workers=1)
    try:
        image = BUILDS["us_compliant"]()
        first, second = await asyncio.gather(pool.evaluate(image, "us_passport"), pool.evaluate(image, "profile_photo"))
        assert first.is_compliant
        assert second.is_compliant
        assert first == verdict("us_compliant", "us_passport")
        with pytest.raises(KeyError):
            await pool.evaluate(image, "nope")
    finally:
        pool.close()


@pytest.mark.parametrize("extra", [{}, {"visibility": 0.9}, {"presence": 0.0}, {"z": 0.0}])
def test_the_mesh_points_are_read_alike_from_bytes_or_attributes(extra: dict[str, float]) -> None:
    """The landmarks read from their serialized bytes are the numbers their attributes hold, and a list whose
    landmarks hold more (or fewer) fields than x, y, z is read attribute by attribute."""
    from mediapipe.framework.formats import landmark_pb2

    from processors.photo.checks.detector import _points

    landmarks = landmark_pb2.NormalizedLandmarkList()
    for n in range(478):
        point = landmarks.landmark.add(x=n / 478, y=1 - n / 478, z=-n / 4780)
        if n == 240:
            for name, value in extra.items():
                if name == "z":
                    point.ClearField("z")
                else:
                    setattr(point, name, value)
    expected = [[point.x, point.y, point.z] for point in landmarks.landmark]
    assert _points(landmarks).tolist() == expected


def test_the_levels_are_numpys_percentiles_to_the_last_bit() -> None:
    import numpy as np

    from processors.photo.checks.measure import _levels

    rng = np.random.default_rng(7)
    for _ in range(2000):
        values = (rng.random((int(rng.integers(1, 60)), int(rng.integers(1, 90)))) * 255).astype(np.float32)
        if rng.random() < 0.5:
            values = np.round(values)
        assert _levels(values) == tuple(float(level) for level in np.percentile(values, (5, 95)))
