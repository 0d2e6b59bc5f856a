"""The labelled photos of tests/judgement/photos.py: every case a reviewer labelled is judged as labelled."""

from __future__ import annotations

import pytest

from processors.photo.checks import evaluate
from tests.judgement.photos import CASES, PhotoCase, encoded

JUDGED = [pytest.param(case, id=f"{case.kind}-{case.name}") for case in CASES if not case.known_gap]


@pytest.mark.parametrize("photo", JUDGED)
def test_judged_as_labelled(photo: PhotoCase) -> None:
    reported = set(evaluate(encoded(photo), photo.policy).violation_reasons)
    assert photo.must <= reported, f"{photo.why}: missing {sorted(photo.must - reported)}"
    assert not photo.must_not & reported, f"{photo.why}: wrongly reported {sorted(photo.must_not & reported)}"


def test_the_part_covered_is_named_in_feedback() -> None:
    by_name = {case.name: case for case in CASES}
    eyes = evaluate(encoded(by_name["band_over_eyes"]), "us_passport")
    mouth = evaluate(encoded(by_name["mask"]), "us_passport")
    assert eyes.category == mouth.category == "obstruction"
    assert "covers your eyes" in eyes.feedback
    assert "covers your mouth" in mouth.feedback
    assert eyes.violation_reasons.count("face_covered") == 1
