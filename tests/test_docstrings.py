"""Every public object has a numpy-style docstring, as in scikit-image's ``feature/haar.py``:
runnable Examples (the suite runs them as doctests, ``--doctest-modules``), and Parameters
and Returns for functions, Parameters or Attributes for classes. The public objects are
what the packages (and the base modules that declare one) list in ``__all__``: the list
lives in the code, not here."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import facedetect

# Base modules (layer 0) that declare an API of their own (the packages declare theirs;
# a package whose name starts with an underscore is private).
BASE_MODULES = ["facedetect.costs", "facedetect.images", "facedetect.metrics"]


def _declaring_modules():
    yield facedetect
    for info in pkgutil.iter_modules(facedetect.__path__):
        if info.ispkg and info.name != "models" and not info.name.startswith("_"):
            yield importlib.import_module(f"facedetect.{info.name}")
    for name in BASE_MODULES:
        yield importlib.import_module(name)


def _public_objects():
    seen = set()
    for module in _declaring_modules():
        for name in module.__all__:
            obj = getattr(module, name)
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and id(obj) not in seen:
                seen.add(id(obj))
                yield f"{module.__name__}.{name}", obj


def _section(doc: str, title: str) -> bool:
    return f"\n{title}\n{'-' * len(title)}\n" in f"\n{doc}"


PUBLIC = list(_public_objects())


def test_the_packages_declare_the_front_door_objects():
    names = {name.rsplit(".", 1)[1] for name, _ in PUBLIC}
    assert {"detect", "load_model", "train_detector", "TrainConfig", "AdaBoostDB",
            "HaarDetectorModel", "load_cbcl", "haar_feature_pool"} <= names
    assert len(PUBLIC) > 50


@pytest.mark.parametrize("name, obj", PUBLIC, ids=[name for name, _ in PUBLIC])
def test_public_object_is_documented_like_scikit_image(name, obj):
    doc = inspect.getdoc(obj) or ""
    assert "Examples\n--------\n>>> " in doc, f"{name} has no Examples section"
    assert _section(doc, "See Also"), f"{name} has no See Also section"
    if inspect.isclass(obj):
        if not issubclass(obj, Exception):
            assert _section(doc, "Parameters") or _section(doc, "Attributes"), \
                f"{name} documents neither its Parameters nor its Attributes"
        return
    signature = inspect.signature(obj)
    if signature.parameters:
        assert _section(doc, "Parameters"), f"{name} has no Parameters section"
    if signature.return_annotation not in (None, "None"):
        assert _section(doc, "Returns"), f"{name} has no Returns section"


def test_the_front_door_is_documented_at_scikit_images_level():
    import inspect

    import facedetect
    for name in ("detect", "load_model", "train_detector", "Detector"):
        doc = inspect.getdoc(getattr(facedetect, name))
        for section in ("Parameters", "Raises", "See Also"):
            assert _section(doc, section), (name, section)
    for name in ("AdaBoostDB", "CostSensitiveAdaBoost", "AdaBoost", "AsymmetricInitAdaBoost"):
        doc = inspect.getdoc(getattr(facedetect, name))
        assert _section(doc, "References") and "doi:" in doc, name
    for method in ("decision_function", "predict", "predict_proba", "load", "save"):
        doc = inspect.getdoc(getattr(facedetect.HaarDetectorModel, method))
        assert _section(doc, "Parameters") and _section(doc, "Returns"), method
    # nothing a pip user does not have
    for name in facedetect.__all__:
        doc = getattr(facedetect, name).__doc__ or ""
        assert "../shared" not in doc and "benchmarks/" not in doc, name


READERS = ["facedetect.data.find_cbcl", "facedetect.data.find_faces_folder",
           "facedetect.data.load_cbcl", "facedetect.data.load_wild_faces",
           "facedetect.data.fetch_cbcl", "facedetect.data.check_archive",
           "facedetect.data.load_uci",
           "facedetect.images.read_grey", "facedetect.images.read_colour",
           "facedetect.images.to_grey", "facedetect.costs.check_cost",
           "facedetect.modelfile.load_document", "facedetect.modelfile.parse_json",
           "facedetect.modelfile.check_document", "facedetect.pipeline.plan_training",
           "facedetect.pipeline.train_cascade", "facedetect.detector.detect_faces",
           "facedetect.detector.params_for", "facedetect.haar.haar_feature_pool",
           "facedetect.haar.feature_matrix"]


@pytest.mark.parametrize("name", READERS)
def test_what_refuses_input_says_what_it_raises(name):
    module, attribute = name.rsplit(".", 1)
    doc = inspect.getdoc(getattr(importlib.import_module(module), attribute))
    assert _section(doc, "Raises"), name
