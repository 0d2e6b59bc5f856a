"""Face detection and landmarks: BlazeFace full range feeding FaceMesh, in one MediaPipe graph, from the wheel."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

MIN_DETECTION_SCORE = 0.5

# FaceMesh's own graph finds faces with the short-range BlazeFace, which misses the small faces of a group photo;
# swapping in the full-range subgraph gives one pass that both counts every face and lands the mesh on the first.
_SHORT_RANGE = "FaceDetectionShortRangeCpu"
_FULL_RANGE = "FaceDetectionFullRangeCpu"
_SCORE_PARAM = "facedetectionfullrangecpu__facedetectionfullrange__facedetection__TensorsToDetectionsCalculator"


@dataclass(frozen=True, slots=True)
class Face:
    """One detection, in pixels of the image given to the detector."""

    score: float
    box: tuple[float, float, float, float]  # x, y, width, height
    keypoints: npt.NDArray[np.float64]  # 6 x 2: right eye, left eye, nose tip, mouth, right ear, left ear


@dataclass(frozen=True, slots=True)
class Detection:
    faces: tuple[Face, ...]
    # 478 x 3 FaceMesh points (with irises) of faces[0] in pixels (z scaled like x), or None when the mesh did not land.
    mesh: npt.NDArray[np.float64] | None


def _graph() -> Any:
    import mediapipe
    from mediapipe.framework import calculator_pb2

    path = os.path.join(
        os.path.dirname(mediapipe.__file__), "modules", "face_landmark", "face_landmark_front_cpu.binarypb"
    )
    config = calculator_pb2.CalculatorGraphConfig()
    with open(path, "rb") as file:
        config.ParseFromString(file.read())
    for node in config.node:
        if node.calculator == _SHORT_RANGE:
            node.calculator = _FULL_RANGE
    config.output_stream.append("ALL_DETECTIONS:all_face_detections")
    return config


class Detector:
    """Owns one MediaPipe graph; build once per process, it is not safe to share between threads."""

    def __init__(self) -> None:
        from mediapipe.python.solution_base import SolutionBase

        self._solution = SolutionBase(
            graph_config=_graph(),
            side_inputs={"num_faces": 1, "with_attention": True, "use_prev_landmarks": False},
            calculator_params={f"{_SCORE_PARAM}.min_score_thresh": MIN_DETECTION_SCORE},
            outputs=["multi_face_landmarks", "all_face_detections"],
        )

    def detect(self, rgb: npt.NDArray[np.uint8]) -> Detection:
        height, width = rgb.shape[:2]
        result = self._solution.process({"image": rgb})
        faces = tuple(
            sorted((_face(d, width, height) for d in result.all_face_detections or ()), key=lambda f: -f.score)
        )
        mesh = None
        if result.multi_face_landmarks:
            points = result.multi_face_landmarks[0].landmark
            mesh = np.array([(p.x * width, p.y * height, p.z * width) for p in points], dtype=np.float64)
        return Detection(faces=faces, mesh=mesh)

    def close(self) -> None:
        self._solution.close()


def _face(detection: Any, width: int, height: int) -> Face:
    data = detection.location_data
    box = data.relative_bounding_box
    keypoints = np.array([(k.x * width, k.y * height) for k in data.relative_keypoints], dtype=np.float64)
    return Face(
        score=float(detection.score[0]),
        box=(box.xmin * width, box.ymin * height, box.width * width, box.height * height),
        keypoints=keypoints,
    )


_detector: Detector | None = None


def shared_detector() -> Detector:
    """The process's one detector, built on first use (pool workers build it in their initialiser)."""
    global _detector  # noqa: PLW0603
    if _detector is None:
        _detector = Detector()
    return _detector
