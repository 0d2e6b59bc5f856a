"""One photo against one policy: decode, detect once, measure, judge every rule, derive the verdict."""

from __future__ import annotations

import math

from processors.photo.checks import measure
from processors.photo.checks.decode import MAX_PIXELS, DecodeError, decode, open_image
from processors.photo.checks.detector import Detector, shared_detector
from processors.photo.checks.policies import FORMAT_THRESHOLD, POLICIES, Policy
from processors.photo.checks.verdict import REASON_CODES, Check, Verdict, verdict


def evaluate(image: bytes, policy: str, detector: Detector | None = None) -> Verdict:
    """Raises KeyError for an unknown policy; every property of the image itself ends up in the verdict."""
    rules = POLICIES[policy]
    try:
        metrics = _measure(image, detector or shared_detector())
    except DecodeError as error:
        check = Check(
            error.code, passed=False, measured=None, threshold=FORMAT_THRESHOLD, feedback=REASON_CODES[error.code]
        )
        return verdict([check], {error.code: -math.inf}, 1.0, rules.title)
    return judge(metrics, rules)


def _measure(image: bytes, detector: Detector) -> measure.Metrics:
    opened, header = open_image(image)
    metrics: measure.Metrics = {
        "width": float(header.width),
        "height": float(header.height),
        "short_side": float(min(header.width, header.height)),
        "long_side": float(max(header.width, header.height)),
        "aspect": header.width / header.height,
    }
    if header.width * header.height > MAX_PIXELS:
        return metrics
    decoded = decode(opened, header)
    metrics |= measure.image_metrics(decoded)
    detection = detector.detect(decoded.rgb)
    # a face the mesh cannot land on is not a face anyone can check
    count = len(detection.faces) if detection.mesh is not None or len(detection.faces) != 1 else 0
    metrics["face_count"] = float(count)
    if count == 1:
        metrics |= measure.face_metrics(decoded, detection)
    return metrics


def judge(metrics: measure.Metrics, policy: Policy) -> Verdict:
    """Runs every rule whose measurement exists; a rule without one was not reachable (no face, say)."""
    checks: list[Check] = []
    margins: dict[str, float] = {}
    for rule in policy.rules:
        if rule.metric not in metrics:
            continue
        value = float(metrics[rule.metric])
        passed = rule.passes(value)
        checks.append(
            Check(
                rule.code,
                passed=passed,
                measured=round(value, 4),
                threshold=rule.threshold,
                feedback="" if passed else REASON_CODES[rule.code],
            )
        )
        margins[rule.code] = min(margins.get(rule.code, math.inf), rule.margin(value))
    return verdict(checks, margins, float(metrics.get("face_score", 1.0)), policy.title)
