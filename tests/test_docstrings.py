"""The public API has numpy-style docstrings with runnable Examples (the suite runs them as
doctests, ``--doctest-modules``): a public object without one fails here."""

from __future__ import annotations

import importlib
import inspect

import pytest

# module -> names; None means the module's __all__.
PUBLIC_API = {
    "facedetect.data": ["CBCLData", "load_cbcl", "make_bayes", "make_toy_windows", "make_two_clouds",
                        "projection_features", "BayesOptimalClassifier", "load_uci"],
    "facedetect.haar": ["HaarFeaturePool", "haar_feature_pool", "integral_image",
                        "squared_integral_image", "rectangle_sums", "normalization_factors",
                        "feature_matrix"],
    "facedetect.training": None,
    "facedetect.training.threshold": ["CostSensitiveThreshold"],
    "facedetect.training.operating_point": ["choose_operating_point",
                                            "cost_optimal_threshold"],
    "facedetect.training.splits": ["stratified_holdout", "stratified_kfold",
                                   "balanced_subset"],
    "facedetect.training.model_io": ["model_document", "save_model", "load_estimator"],
    "facedetect.training.binned": ["quantile_bins", "BinnedFeatures", "binned_root_search"],
    "facedetect.training.search": ["conditional_root_search", "exhaustive_root_search",
                                   "hull_loss_search"],
    "facedetect.training.roots": ["solve_alpha", "RootCoefficients", "normalized_costs"],
    "facedetect.detector.model": ["HaarDetectorModel"],
    "facedetect.detector.detect": ["detect_faces", "DetectionParams"],
    "facedetect.detector.export": ["export_opencv"],
    "facedetect.pipeline.train": ["train_detector", "TrainConfig", "RunOptions"],
    "facedetect.pipeline.heldout": ["evaluate"],
    "facedetect.data.wild_faces": ["load_wild_faces", "find_faces", "face_windows",
                                   "window_transform", "heldout_mask"],
    "facedetect.pipeline.wild": ["split_wild_faces", "eyes_found"],
    "facedetect.threads": ["wait_passively"],
    "facedetect.pipeline.storage": ["compact_features", "exact_features"],
    "facedetect.images": ["read_grey", "to_grey"],
    "facedetect.metrics": ["binary_rates", "BinaryRates", "probability_cost", "roc_points"],
    "facedetect.model_file": ["load_document", "save_document"],
}


def _public_objects():
    for module_name, names in PUBLIC_API.items():
        module = importlib.import_module(module_name)
        for name in names if names is not None else module.__all__:
            yield f"{module_name}.{name}", getattr(module, name)


@pytest.mark.parametrize("name, obj", list(_public_objects()), ids=lambda v: str(v)[:60])
def test_public_object_has_runnable_examples(name, obj):
    doc = inspect.getdoc(obj) or ""
    assert "Examples\n--------\n>>> " in doc, f"{name} has no Examples section"
