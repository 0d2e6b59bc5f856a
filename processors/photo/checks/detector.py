"""Face detection and landmarks: BlazeFace full range feeding FaceMesh, in one MediaPipe graph, from the wheel."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

MIN_DETECTION_SCORE = 0.5
# Full-range BlazeFace sees the image at 192 x 192 and misses faces under about a tenth of its width (a grid of many
# photos, a person far away). When it finds no face, or one face this small (of the image height), the image is looked
# at again in TILES x TILES overlapping tiles with the short-range model (128 x 128, made for faces that fill much of
# what it sees): about 2 ms a tile, paid only by such images. On tiles of photos without a face (scikit-image's coffee,
# cat, Hubble field, motorcycle) the short-range model scores up to 0.67, so a tile's face must score TILE_SCORE.
SMALL_FACE, TILES, TILE_OVERLAP, TILE_SCORE = 0.2, 3, 0.2, 0.75
# A tile narrower than this holds no face worth finding (and MediaPipe refuses an empty one: a 1 x 1 upload).
MIN_TILE_SIDE = 16

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
        self._tiles: Any = None

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

    def detect_small(self, rgb: npt.NDArray[np.uint8]) -> tuple[Face, ...]:
        """Every small face (under SMALL_FACE of the height) found in overlapping tiles, in image pixels; a face seen by
        two tiles counts once. A larger face is the full pass's to find."""
        if self._tiles is None:
            from mediapipe.python.solutions.face_detection import FaceDetection

            self._tiles = FaceDetection(model_selection=0)
        height, width = rgb.shape[:2]
        step_y, step_x = height / TILES, width / TILES
        found: list[Face] = []
        for row in range(TILES):
            for column in range(TILES):
                y0, y1 = int(max((row - TILE_OVERLAP) * step_y, 0)), int(min((row + 1 + TILE_OVERLAP) * step_y, height))
                x0, x1 = (
                    int(max((column - TILE_OVERLAP) * step_x, 0)),
                    int(min((column + 1 + TILE_OVERLAP) * step_x, width)),
                )
                if min(y1 - y0, x1 - x0) < MIN_TILE_SIDE:
                    continue
                result = self._tiles.process(np.ascontiguousarray(rgb[y0:y1, x0:x1]))
                faces = (_face(d, x1 - x0, y1 - y0, offset=(x0, y0)) for d in result.detections or ())
                found.extend(face for face in faces if face.score >= TILE_SCORE and face.box[3] < SMALL_FACE * height)
        return merge(found)

    def close(self) -> None:
        self._solution.close()
        if self._tiles is not None:
            self._tiles.close()


def merge(faces: list[Face] | tuple[Face, ...]) -> tuple[Face, ...]:
    """The faces, most certain first, without those whose middle lies inside a more certain one's box."""
    kept: list[Face] = []
    for face in sorted(faces, key=lambda f: -f.score):
        x, y, w, h = face.box
        cx, cy = x + w / 2, y + h / 2
        if not any(k.box[0] <= cx <= k.box[0] + k.box[2] and k.box[1] <= cy <= k.box[1] + k.box[3] for k in kept):
            kept.append(face)
    return tuple(kept)


def _face(detection: Any, width: int, height: int, offset: tuple[int, int] = (0, 0)) -> Face:
    data = detection.location_data
    box = data.relative_bounding_box
    x0, y0 = offset
    keypoints = np.array([(x0 + k.x * width, y0 + k.y * height) for k in data.relative_keypoints], dtype=np.float64)
    return Face(
        score=float(detection.score[0]),
        box=(x0 + box.xmin * width, y0 + box.ymin * height, box.width * width, box.height * height),
        keypoints=keypoints,
    )


_detector: Detector | None = None


def shared_detector() -> Detector:
    """The process's one detector, built on first use (pool workers build it in their initialiser)."""
    global _detector  # noqa: PLW0603
    if _detector is None:
        _detector = Detector()
    return _detector
