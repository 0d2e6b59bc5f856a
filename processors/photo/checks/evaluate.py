"""One photo against one policy: decode, detect once, measure, judge every rule, derive the verdict."""

from __future__ import annotations

import math

from processors.photo.checks import measure
from processors.photo.checks.decode import MAX_PIXELS, DecodeError, decode, open_image
from processors.photo.checks.detector import SMALL_FACE, Detector, merge, shared_detector
from processors.photo.checks.policies import COLOUR_SEEN, FORMAT_THRESHOLD, POLICIES, Policy
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


# On a frontal portrait the head (crown to chin) is about this many detector face boxes high (1.44 on the
# Grace Hopper portrait, 1.47 on the astronaut's).
HEAD_PER_FACE_BOX = 1.45


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
    height = decoded.rgb.shape[0]
    meshed = detection.mesh is not None and len(detection.faces) == 1
    # a lone face the mesh cannot land on is not a face anyone can check
    faces = detection.faces if meshed or len(detection.faces) != 1 else ()
    if not faces or (len(faces) == 1 and faces[0].box[3] < SMALL_FACE * height):
        faces = merge(faces + detector.detect_small(decoded.rgb, near=detection.candidates))
    metrics["face_count"] = float(len(faces))
    if len(faces) != 1:
        return metrics
    metrics |= {"face_score": faces[0].score, "face_height_ratio": faces[0].box[3] / height}
    if not meshed:
        # a small face the mesh did not land on (found in the tiles only): its size is all there is to judge
        return metrics | {"head_height_ratio": HEAD_PER_FACE_BOX * faces[0].box[3] / height}
    face = measure.face_metrics(decoded, detection, colour=metrics["colourfulness"] >= COLOUR_SEEN)
    if measure.covered(face):
        metrics["face_count"] = 0.0  # eyes and mouth both hidden: a face nobody can check
        return metrics
    return metrics | face


def judge(metrics: measure.Metrics, policy: Policy) -> Verdict:
    """Runs every rule whose measurement exists; a rule without one was not reachable (no face, say)."""
    checks: list[Check] = []
    margins: dict[str, float] = {}
    failed: set[str] = set()
    for rule in policy.rules:
        # a code's later rules (the clipped share after the mean level) run only while the code has not failed
        if rule.metric not in metrics or rule.code in failed:
            continue
        value = float(metrics[rule.metric])
        passed = rule.passes(value)
        if not passed:
            failed.add(rule.code)
        checks.append(
            Check(
                rule.code,
                passed=passed,
                measured=round(value, 4),
                threshold=rule.threshold,
                feedback="" if passed else rule.feedback or REASON_CODES[rule.code],
            )
        )
        margins[rule.code] = min(margins.get(rule.code, math.inf), rule.margin(value))
    return verdict(checks, margins, float(metrics.get("face_score", 1.0)), policy.title)
