"""Shared fixtures: the data sets, found as the commands find them (skipped with a reason
naming every place looked when absent), and archives."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
# The copy beside the checkout that CI provides: the last place looked.
SHARED = REPO.parent / "shared" / "datasets"
ENV_VARS = {"cbcl": "FACEDETECT_DATA", "faces": "FACEDETECT_FACES",
            "negatives": "FACEDETECT_NEGATIVES"}
# The tests find their data sets below (data_places); the library's own search for faces
# from the wild and negative pictures is turned off for the session (and the commands the
# tests start), so that a test trains on what it passes, wherever a user keeps the data:
# with the sets under ./data/, a plain training run would read 26,980 faces.
USER_ENV = {name: os.environ.get(name) for name in ("FACEDETECT_FACES", "FACEDETECT_NEGATIVES")}
for _name in USER_ENV:
    os.environ[_name] = "none"


# Test tiers: `pytest -m "not slow"` leaves out the tests marked `@pytest.mark.slow` where
# they are defined (each took over 2.5 s on 2 cores: whole trainings, sharded runs, scans
# of every development image) and runs the rest, with one end-to-end test of every command
# (END_TO_END); `pytest` runs them all. A test that uses a fixture of SLOW_FIXTURES is slow
# too.
SLOW_FIXTURES = {"quick"}   # test_paper.py: the paper's quick run, about a minute
# command -> the end-to-end test that stays in the fast tier (tests/test_tiers.py checks)
END_TO_END = {
    "train": "test_train_then_evaluate_on_the_heldout_split",
    "evaluate": "test_train_then_evaluate_on_the_heldout_split",
    "detect": "test_detect_command_on_the_astronaut",
    "train-verifier": "test_train_verifier_command_end_to_end",
    "evaluate-images": "test_evaluate_images_with_opencv_baseline",
    "sweep": "test_small_sweep_writes_tables_and_picture",
    "paper": "test_paper_cli_small_run_and_bad_input",
    "show": "test_show_draws_features",
    "export-opencv": "test_export_command_writes_a_loadable_cascade",
    "calibrate": "test_calibrate_records_the_rates_detect_and_opencv_give",
    "data": "test_data_info_on_shared_copy",
    "createsamples": "test_the_tutorial_commands_train_a_cascade_opencv_runs",
    "traincascade": "test_the_tutorial_commands_train_a_cascade_opencv_runs",
}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if SLOW_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)


def data_places(name: str) -> list[Path]:
    """Where the tests look for a data set, as the commands do: its environment variable,
    ``./data/<name>`` (the README's layout), the user cache, then the shared copy."""
    from facedetect.data._locate import user_cache_dir
    variable = ENV_VARS.get(name, "")
    value = USER_ENV[variable] if variable in USER_ENV else os.environ.get(variable)
    places = [Path(value)] if value and value.lower() != "none" else []
    return places + [REPO / "data" / name, user_cache_dir() / name, SHARED / name]


def data_folder(name: str, inside: str = "") -> Path | None:
    """The first place holding ``name`` (with ``inside`` in it), or None."""
    for place in data_places(name):
        if (place / inside).exists():
            return place
    return None


def needs_data(name: str, inside: str = "") -> Path:
    """The data set's folder, or the test skipped with every place looked."""
    found = data_folder(name, inside)
    if found is None:
        pytest.skip(f"{name} data not found (looked in "
                    f"{', '.join(str(p) for p in data_places(name))})")
    return found


def _cbcl_dir() -> Path | None:
    return data_folder("cbcl", "train/face")


@pytest.fixture(scope="session")
def cbcl_dir() -> Path:
    return needs_data("cbcl", "train/face")


@pytest.fixture(scope="session")
def uci_dir() -> Path:
    return needs_data("uci")


@pytest.fixture(scope="session")
def cbcl(cbcl_dir):
    from facedetect.data import load_cbcl
    return load_cbcl(cbcl_dir)


def negatives_found() -> tuple[Path | None, list[str]]:
    """The face-free pictures' folder as the commands take it (a place holding ``images/``,
    or the pictures themselves), and what each place passed over held."""
    from facedetect.data._negatives import negative_files
    notes = []
    for place in data_places("negatives"):
        folder = place / "images" if (place / "images").is_dir() else place
        if not folder.is_dir():
            notes.append(f"{place}: no such folder")
        elif negative_files(folder):
            return folder, notes
        else:
            notes.append(f"{folder}: a folder without pictures")
    return None, notes


@pytest.fixture(scope="session")
def negatives_dir() -> Path:
    folder, notes = negatives_found()
    if folder is None:
        pytest.skip("negatives data not found: " + "; ".join(notes))
    return folder


@pytest.fixture(scope="session")
def small_cbcl(tmp_path_factory, cbcl):
    """A CBCL-shaped folder with 150 faces and 250 non-faces of the real data."""
    root = tmp_path_factory.mktemp("cbcl_small")
    rng = np.random.default_rng(0)
    for cls, label, count in (("face", 1, 150), ("non-face", 0, 250)):
        folder = root / "train" / cls
        folder.mkdir(parents=True)
        members = rng.choice(np.flatnonzero(cbcl.labels == label), count, replace=False)
        for i in members:
            (folder / cbcl.names[i].rsplit("/", 1)[1]).write_bytes(pgm_bytes(cbcl.images[i]))
    return root


@pytest.fixture(scope="session")
def toy_cbcl_dir(tmp_path_factory) -> Path:
    """A CBCL-shaped folder of :func:`make_toy_windows` (40 faces, 60 non-faces): for
    command-line tests that need some data but not CBCL's, so they run without it."""
    from facedetect.data import make_toy_windows
    data = make_toy_windows()
    root = tmp_path_factory.mktemp("cbcl_toy")
    for image, name in zip(data.images, data.names):
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_bytes(pgm_bytes(image))
    return root


def pgm_bytes(array: np.ndarray) -> bytes:
    height, width = array.shape
    return f"P5\n{width} {height}\n255\n".encode() + array.astype(np.uint8).tobytes()


def _tar_bytes(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def write_official_archive(path: Path, splits: dict[str, dict[str, list[bytes]]]) -> Path:
    """An archive shaped like the official faces.tar.gz: one nested tarball per split."""
    outer = {}
    for split, classes in splits.items():
        inner = {f"{split}/{cls}/{cls.replace('-', '')}{i:05d}.pgm": data
                 for cls, items in classes.items() for i, data in enumerate(items, 1)}
        outer[f"face.{split}.tar.gz"] = _tar_bytes(inner)
    outer["svm.train.normgrey"] = b"not an image\n"
    path.write_bytes(_tar_bytes(outer))
    return path


def random_windows(n: int, seed: int = 0, size=(19, 19)) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (n, *size)).astype(np.uint8)


@pytest.fixture
def interrupt_after_two_rounds(monkeypatch):
    """Boosting raises KeyboardInterrupt (as Ctrl-C would) when it starts its third round;
    call the returned function to let it run again."""
    from facedetect.training import AdaBoostDB
    original = AdaBoostDB._boost_once

    def stop(self, *args):
        if len(args[0].alphas) == 2:
            raise KeyboardInterrupt
        return original(self, *args)

    monkeypatch.setattr(AdaBoostDB, "_boost_once", stop)
    return lambda: monkeypatch.setattr(AdaBoostDB, "_boost_once", original)


def plain_config(cost=(1.0, 1.0), rounds: int = 200, **fields):
    """A TrainConfig of the plain window classifier (no mirror, jitter or bootstrapping,
    every feature searched): the paper's experiment, quick to train; ``fields`` override."""
    from facedetect.pipeline._config import TrainConfig
    settings = dict(cost=tuple(cost), rounds=rounds, mirror=False, jitter=0,
                    bootstrap_rounds=0, stage_rounds=None, max_features=None)
    return TrainConfig(**{**settings, **fields})


def shipped_digests(name: str = "default") -> set[str]:
    """The SHA-256 fields under which a shipped model was measured: the file's own, and
    those of its earlier layouts where they migrate to it (the same model, written in the
    new layout): ``tests/models/NAME_v2.json.gz`` (version 2, before the ``calibration``
    section) and, for the default, ``default_v1.json.gz`` (version 1; it migrates to the
    900-round ``haar.json`` of its release, so it adds nothing now)."""
    import gzip
    import json

    from facedetect.detector._api import shipped_model_path
    from facedetect.modelfile._io import load_document
    from facedetect.modelfile._schema import check_document
    shipped = load_document(shipped_model_path(name))
    digests = {shipped["sha256"]}
    for version in (1, 2):
        path = Path(__file__).resolve().parent / "models" / f"{name}_v{version}.json.gz"
        if path.is_file():
            previous = json.loads(gzip.decompress(path.read_bytes()))
            if check_document(json.loads(json.dumps(previous)), path.name) == shipped:
                digests.add(previous["sha256"])
    return digests


def shipped_default_digests() -> set[str]:
    """:func:`shipped_digests` of the default model."""
    return shipped_digests("default")


@pytest.fixture
def stop_in_stage(monkeypatch):
    """``stop_in_stage(k)``: the cascade trainer's ``k``-th stage from now is stopped as
    Ctrl-C stops it; ``stop_in_stage(None)``: stages train again."""
    from facedetect.pipeline import _cascade
    real = _cascade.train_stage

    def stop(stage: int | None) -> None:
        calls = []

        def interrupted(*args, **kwargs):
            calls.append(1)
            if len(calls) == stage:
                raise KeyboardInterrupt
            return real(*args, **kwargs)
        monkeypatch.setattr(_cascade, "train_stage", real if stage is None else interrupted)
    return stop
