"""Face detection and landmarks: full-range BlazeFace, then FaceMesh with attention on a lone face, from the wheel."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

MIN_DETECTION_SCORE = 0.5
# The full-range pass also reports detections down to CANDIDATE_SCORE. Under MIN_DETECTION_SCORE they are not faces,
# but they mark where small faces may be, and only the tiles around them are looked at again (an 8 x 8 contact sheet
# of LFW faces, where no face scores 0.5, shows two candidates, at 0.11 and 0.15; scikit-image's coffee, rocket and
# Hubble photos show two to eight, its cat none).
CANDIDATE_SCORE = 0.1
# Full-range BlazeFace sees the image at 192 x 192 and misses faces under about a tenth of its width (a grid of many
# photos, a person far away). When it finds no face, or one face this small (of the image height), the image is looked
# at again in TILES x TILES overlapping tiles with the short-range model (128 x 128, made for faces that fill much of
# what it sees): about 2 ms a tile, paid only by such images, and only for the tiles that hold the small face or a
# candidate. On tiles of photos without a face (scikit-image's coffee, cat, Hubble field, motorcycle) the short-range
# model scores up to 0.67, so a tile's face must score TILE_SCORE.
SMALL_FACE, TILES, TILE_OVERLAP, TILE_SCORE = 0.2, 3, 0.2, 0.75
# A tile narrower than this holds no face worth finding (and MediaPipe refuses an empty one: a 1 x 1 upload).
MIN_TILE_SIDE = 16

# Two graphs made of MediaPipe's own calculators, models from the wheel. The first is MediaPipe's full-range face
# detection (modules/face_detection/face_detection_full_range.pbtxt, its options as they are there) with the decoding
# done twice from the one inference: at MIN_DETECTION_SCORE for the faces, exactly as MediaPipe reports them, and at
# CANDIDATE_SCORE for the candidates (decoded apart because the weighted suppression would blend weak boxes into a
# face's). The second is MediaPipe's detection-to-region step and FaceMesh with attention, fed one face of the first,
# so the mesh runs only on a photo with one face.
_MODEL = "mediapipe/modules/face_detection/face_detection_full_range_sparse.tflite"


def _decoding(name: str, min_score: float) -> str:
    return f"""
node {{
  calculator: "TensorsToDetectionsCalculator"
  input_stream: "TENSORS:tensors" input_side_packet: "ANCHORS:anchors" output_stream: "DETECTIONS:{name}_decoded"
  options {{ [mediapipe.TensorsToDetectionsCalculatorOptions.ext] {{
    num_classes: 1 num_boxes: 2304 num_coords: 16 box_coord_offset: 0 keypoint_coord_offset: 4 num_keypoints: 6
    num_values_per_keypoint: 2 sigmoid_score: true score_clipping_thresh: 100.0 reverse_output_order: true
    x_scale: 192.0 y_scale: 192.0 h_scale: 192.0 w_scale: 192.0 min_score_thresh: {min_score}
  }} }}
}}
node {{
  calculator: "NonMaxSuppressionCalculator" input_stream: "{name}_decoded" output_stream: "{name}_suppressed"
  options {{ [mediapipe.NonMaxSuppressionCalculatorOptions.ext] {{
    min_suppression_threshold: 0.3 overlap_type: INTERSECTION_OVER_UNION algorithm: WEIGHTED
  }} }}
}}
node {{
  calculator: "DetectionProjectionCalculator"
  input_stream: "DETECTIONS:{name}_suppressed" input_stream: "PROJECTION_MATRIX:matrix"
  output_stream: "DETECTIONS:{name}"
}}
"""


_FACES_GRAPH = (
    f"""
input_stream: "IMAGE:image"
output_stream: "FACES:faces"
output_stream: "CANDIDATES:candidates"
node {{
  calculator: "ImageToTensorCalculator"
  input_stream: "IMAGE:image" output_stream: "TENSORS:input" output_stream: "MATRIX:matrix"
  options {{ [mediapipe.ImageToTensorCalculatorOptions.ext] {{
    output_tensor_width: 192 output_tensor_height: 192 keep_aspect_ratio: true
    output_tensor_float_range {{ min: -1.0 max: 1.0 }} border_mode: BORDER_ZERO
  }} }}
}}
node {{
  calculator: "InferenceCalculator" input_stream: "TENSORS:input" output_stream: "TENSORS:tensors"
  options {{ [mediapipe.InferenceCalculatorOptions.ext] {{ model_path: "{_MODEL}" delegate {{ xnnpack {{}} }} }} }}
}}
node {{
  calculator: "SsdAnchorsCalculator" output_side_packet: "anchors"
  options {{ [mediapipe.SsdAnchorsCalculatorOptions.ext] {{
    num_layers: 1 min_scale: 0.1484375 max_scale: 0.75 input_size_width: 192 input_size_height: 192
    anchor_offset_x: 0.5 anchor_offset_y: 0.5 strides: 4 aspect_ratios: 1.0 fixed_anchor_size: true
    interpolated_scale_aspect_ratio: 0.0
  }} }}
}}
"""
    + _decoding("faces", MIN_DETECTION_SCORE)
    + _decoding("candidates", CANDIDATE_SCORE)
)
_MESH_GRAPH = """
input_stream: "IMAGE:image"
input_stream: "DETECTION:detection"
input_side_packet: "WITH_ATTENTION:with_attention"
output_stream: "LANDMARKS:landmarks"
node { calculator: "ImagePropertiesCalculator" input_stream: "IMAGE:image" output_stream: "SIZE:size" }
node {
  calculator: "FaceDetectionFrontDetectionToRoi"
  input_stream: "DETECTION:detection" input_stream: "IMAGE_SIZE:size" output_stream: "ROI:roi"
}
node {
  calculator: "FaceLandmarkCpu"
  input_stream: "IMAGE:image" input_stream: "ROI:roi" input_side_packet: "WITH_ATTENTION:with_attention"
  output_stream: "LANDMARKS:landmarks"
}
"""


@dataclass(frozen=True, slots=True)
class Face:
    """One detection, in pixels of the image given to the detector."""

    score: float
    box: tuple[float, float, float, float]  # x, y, width, height
    keypoints: npt.NDArray[np.float64]  # 6 x 2: right eye, left eye, nose tip, mouth, right ear, left ear

    @property
    def middle(self) -> tuple[float, float]:
        x, y, w, h = self.box
        return x + w / 2, y + h / 2

    def inside(self, others: list[Face] | tuple[Face, ...]) -> bool:
        """Whether this face's middle lies in the box of one of `others`."""
        cx, cy = self.middle
        return any(x <= cx <= x + w and y <= cy <= y + h for x, y, w, h in (other.box for other in others))


@dataclass(frozen=True, slots=True)
class Detection:
    faces: tuple[Face, ...]  # scoring MIN_DETECTION_SCORE or more, most certain first
    candidates: tuple[Face, ...]  # scoring CANDIDATE_SCORE or more, faces among them: where small faces may be
    # 478 x 3 FaceMesh points (with irises) in pixels (z scaled like x) when there is exactly one face and the mesh
    # landed on it, else None.
    mesh: npt.NDArray[np.float64] | None


_LANDMARK = 17
"""Bytes of one landmark in a serialized NormalizedLandmarkList whose landmarks hold x, y and z alone: the list's field
tag (0x0a) and the landmark's length (15), then each coordinate's tag (0x0d, 0x15, 0x1d) and its little-endian
float."""
_XYZ = np.array([3, 4, 5, 6, 8, 9, 10, 11, 13, 14, 15, 16])
_TAGS = np.array([0x0A, 0x0F, 0x0D, 0x15, 0x1D], dtype=np.uint8)


def _points(landmarks: Any) -> npt.NDArray[np.float64]:
    """The landmarks' normalized x, y, z, one row each. Read from the list's serialized bytes when every landmark holds
    x, y and z alone (a tenth of the time of reading 478 x 3 attributes, the same numbers); else attribute by
    attribute."""
    raw = np.frombuffer(landmarks.SerializeToString(), dtype=np.uint8)
    count = len(landmarks.landmark)
    if raw.size == count * _LANDMARK:
        rows = raw.reshape(count, _LANDMARK)
        if (rows[:, [0, 1, 2, 7, 12]] == _TAGS).all():
            return rows[:, _XYZ].copy().view("<f4").astype(np.float64)
    return np.array([(p.x, p.y, p.z) for p in landmarks.landmark], dtype=np.float64)


def _config(text: str) -> Any:
    from google.protobuf import text_format
    from mediapipe.framework import calculator_pb2

    return text_format.Parse(text, calculator_pb2.CalculatorGraphConfig())


class Detector:
    """Owns MediaPipe graphs; build once per process, it is not safe to share between threads."""

    def __init__(self) -> None:
        from mediapipe.python.solution_base import SolutionBase

        self._faces = SolutionBase(graph_config=_config(_FACES_GRAPH), outputs=["faces", "candidates"])
        self._mesh = SolutionBase(
            graph_config=_config(_MESH_GRAPH), side_inputs={"with_attention": True}, outputs=["landmarks"]
        )
        self._short_range: Any = None

    def detect(self, rgb: npt.NDArray[np.uint8]) -> Detection:
        height, width = rgb.shape[:2]
        found = self._faces.process({"image": rgb})
        strong: list[Any] = found.faces or []
        candidates = tuple(_face(d, width, height) for d in found.candidates or ())
        large = [c for c in candidates if c.box[3] >= SMALL_FACE * height]
        if not strong and large:
            # A large face the full-range model was unsure of (a hand over the eyes lowers its score): the short-range
            # model, made for faces that fill much of the image, looks again, and confirms it where the candidate is.
            strong = [d for d in self._short_range_detections(rgb) if _face(d, width, height).inside(large)]
        faces = tuple(sorted((_face(d, width, height) for d in strong), key=lambda f: -f.score))
        mesh = None
        if len(strong) == 1:
            landmarks = self._mesh.process({"image": rgb, "detection": strong[0]}).landmarks
            if landmarks is not None:
                mesh = _points(landmarks) * (width, height, width)
        return Detection(faces=faces, candidates=candidates, mesh=mesh)

    def _short_range_detections(self, rgb: npt.NDArray[np.uint8]) -> list[Any]:
        """The short-range model's detections scoring MIN_DETECTION_SCORE or more, as MediaPipe gives them."""
        if self._short_range is None:
            from mediapipe.python.solutions.face_detection import FaceDetection

            self._short_range = FaceDetection(min_detection_confidence=MIN_DETECTION_SCORE, model_selection=0)
        return list(self._short_range.process(rgb).detections or ())

    def detect_small(self, rgb: npt.NDArray[np.uint8], near: tuple[Face, ...]) -> tuple[Face, ...]:
        """Every small face (under SMALL_FACE of the height) found in the overlapping tiles whose core holds the middle
        of a face or candidate `near`, in image pixels; a face seen by two tiles counts once. A larger face is the
        full pass's to find."""
        height, width = rgb.shape[:2]
        step_y, step_x = height / TILES, width / TILES
        cells = {(min(int(f.middle[1] // step_y), TILES - 1), min(int(f.middle[0] // step_x), TILES - 1)) for f in near}
        found: list[Face] = []
        for row, column in sorted(cells):
            (y0, y1), (x0, x1) = _span(row, step_y, height), _span(column, step_x, width)
            if min(y1 - y0, x1 - x0) < MIN_TILE_SIDE:
                continue
            tile = np.ascontiguousarray(rgb[y0:y1, x0:x1])
            faces = (_face(d, x1 - x0, y1 - y0, offset=(x0, y0)) for d in self._short_range_detections(tile))
            found.extend(face for face in faces if face.score >= TILE_SCORE and face.box[3] < SMALL_FACE * height)
        return merge(found)

    def close(self) -> None:
        self._faces.close()
        self._mesh.close()
        if self._short_range is not None:
            self._short_range.close()


def _span(index: int, step: float, limit: int) -> tuple[int, int]:
    """Where tile `index` begins and ends along one side, overlapping its neighbours by TILE_OVERLAP."""
    return int(max((index - TILE_OVERLAP) * step, 0)), int(min((index + 1 + TILE_OVERLAP) * step, limit))


def merge(faces: list[Face] | tuple[Face, ...]) -> tuple[Face, ...]:
    """The faces, most certain first, without those whose middle lies inside a more certain one's box."""
    kept: list[Face] = []
    for face in sorted(faces, key=lambda f: -f.score):
        if not face.inside(kept):
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
