"""Windows framed wider than CBCL's: CBCL's faces reframed, the recipe's window resolved,
and the face box a wider window reports."""

import cv2
import numpy as np
import pytest
from skimage.transform import AffineTransform, warp

from facedetect.data._cbcl import FRAMING, framed_windows
from facedetect.data._face_windows import eye_line_for, window_transform
from facedetect.detector._multiscale import box_mapping, params_for, window_to_box
from facedetect.modelfile._detection import detection_section, framing_box
from facedetect.detector._model import HaarDetectorModel
from facedetect.errors import FacedetectError
from facedetect.modelfile._io import reseal, save_document
from facedetect.pipeline._config import (TrainConfig, check_config, resolved_window,
                                        trains_cbcl_faces)


def test_framed_faces_match_scikit_image_and_non_faces_are_resized():
    # smooth faces: OpenCV's warp places samples to 1/32 pixel, which noise would amplify
    y, x = np.mgrid[:19, :19]
    images = np.stack([120 + 60 * np.sin(x / 3.0) * np.cos(y / 4.0) + 2 * x,
                       np.full((19, 19), 90.0) + x * y / 4]).astype(np.uint8)
    framed = framed_windows(images, np.array([1, 0]), (24, 24), framing=2.2)
    scale = (24 / 2.2) / (19 / FRAMING)
    shift = 11.5 - scale * 9
    # scikit-image's warp of the same map (pixel centres at whole coordinates), reflected
    # at the border as numpy's "reflect" (OpenCV's BORDER_REFLECT_101)
    expected = warp(images[0].astype(float), AffineTransform(
        scale=scale, translation=(shift, shift)).inverse, output_shape=(24, 24),
        order=1, mode="reflect", preserve_range=True)
    assert np.abs(framed[0] - expected).max() <= 1.0
    assert np.array_equal(framed[1], cv2.resize(images[1], (24, 24),
                                                interpolation=cv2.INTER_LINEAR))
    assert framed_windows(images, np.array([1, 0]), (19, 19)) is images


def test_a_wider_framing_keeps_the_window_centre_below_the_eyes():
    eyes = [30.0, 40.0, 50.0, 40.0]           # 20 px apart, midpoint (40, 40)
    for window, framing in (((19, 19), FRAMING), ((24, 24), 2.2), ((30, 30), 2.6)):
        matrix = window_transform(eyes, window, framing=framing,
                                  eye_line=eye_line_for(framing))
        inverse = cv2.invertAffineTransform(matrix)
        centre = inverse @ [(window[0] - 1) / 2, (window[1] - 1) / 2, 1]
        assert centre == pytest.approx([40, 40 + 0.385 * 20], abs=1e-9)
        width = abs(inverse[0, 0]) * window[0]     # crop pixels the window spans across
        assert width == pytest.approx(framing * 20)


def test_the_box_of_a_wider_window_is_the_box_of_cbcl_s_window():
    # One face seen by a 19x19 window framed 1.75 eye distances and by a 24x24 one framed
    # 2.2, both at the scanner's scale where the eyes are 20 px apart: the same box.
    distance, centre = 20.0, np.array([100.0, 107.7])
    boxes = []
    for window, framing in ((19, FRAMING), (24, 2.2)):
        side = framing * distance
        box = window_to_box([[*(centre - side / 2), side, side]], **{
            {"box_scale": "scale", "box_shift": "shift"}[k]: v
            for k, v in framing_box(framing).items()})
        boxes.append(box[0])
    assert boxes[0] == pytest.approx(boxes[1], abs=1e-3)


def test_the_recipe_window_depends_on_the_faces_from_the_wild():
    assert resolved_window(TrainConfig(), wild_faces=True).window == (24, 24)
    assert resolved_window(TrainConfig(), wild_faces=False).window == (19, 19)
    wild_19 = resolved_window(TrainConfig(window=(19, 19)), wild_faces=True)
    assert wild_19.framing == FRAMING and trains_cbcl_faces(wild_19)
    assert not trains_cbcl_faces(resolved_window(TrainConfig(), wild_faces=True))
    with pytest.raises(FacedetectError, match="needs faces from the wild"):
        resolved_window(TrainConfig(window=(24, 24)), wild_faces=False)
    with pytest.raises(FacedetectError, match="must be square"):
        resolved_window(TrainConfig(window=(24, 20)), wild_faces=True)
    # a tighter or equal framing cuts CBCL's faces, so needs no faces from the wild
    assert resolved_window(TrainConfig(window=(24, 24), framing=1.75), False).framing == 1.75


@pytest.mark.parametrize("fields, message", [
    ({"window": (7, 24)}, "window sides"), ({"window": (24,)}, "window must be"),
    ({"window": (24.0, 24)}, "window must be"), ({"window": 24}, "window must be"),
    ({"window": (200, 200)}, "Haar features"), ({"framing": float("nan")}, "framing"),
    ({"framing": 0.5}, "framing"), ({"framing": True}, "framing"),
    ({"max_features": 0}, "max_features"), ({"max_features": 1.5}, "max_features"),
    ({"max_features": True}, "max_features")])
def test_bad_windows_framings_and_feature_counts_are_refused(fields, message):
    with pytest.raises(FacedetectError, match=message):
        check_config(TrainConfig(**fields))


def _shipped_document() -> dict:
    import copy

    from facedetect.detector._api import shipped_model_path
    return copy.deepcopy(HaarDetectorModel.load(shipped_model_path()).document)


def test_a_model_without_an_image_operating_point_boxes_and_scans_by_its_framing():
    # --no-bootstrap at the 24x24 recipe gives a detection section at the window
    # operating point: the box and the smallest scan follow the window and framing.
    document = _shipped_document()
    assert document["training"]["config"]["framing"] == 2.2
    document["detection"] = detection_section(document["detection"]["window"], 2.2, 1.0)
    model = HaarDetectorModel.from_document(reseal(document))
    assert model.image_point is None
    assert box_mapping(model) == (1.590909, 0.079545)
    assert params_for(model).min_size == max(model.window) == 24


@pytest.mark.parametrize("field, value", [("framing", "x"), ("framing", 0.5),
                                          ("framing", [2.2]), ("window", [24]),
                                          ("window", [24, 2.5]), ("window", "24x24")])
def test_a_model_file_with_a_bad_window_or_framing_is_refused(tmp_path, field, value):
    document = _shipped_document()
    document["training"]["config"][field] = value
    path = tmp_path / "m.json"
    save_document(path, document)
    with pytest.raises(FacedetectError, match=f"training.config.{field}"):
        HaarDetectorModel.load(path)
