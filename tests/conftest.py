"""Shared fixtures: the shared CBCL copy (skipped with a reason when absent) and archives."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "datasets"


def _cbcl_dir() -> Path | None:
    for candidate in (os.environ.get("FACEDETECT_DATA"), SHARED / "cbcl"):
        if candidate and (Path(candidate) / "train" / "face").is_dir():
            return Path(candidate)
    return None


@pytest.fixture(scope="session")
def cbcl_dir() -> Path:
    path = _cbcl_dir()
    if path is None:
        pytest.skip("CBCL training set not available: set FACEDETECT_DATA to a CBCL folder")
    return path


@pytest.fixture(scope="session")
def uci_dir() -> Path:
    path = SHARED / "uci"
    if not path.is_dir():
        pytest.skip("UCI data sets not available at ../shared/datasets/uci")
    return path


@pytest.fixture(scope="session")
def cbcl(cbcl_dir):
    from facedetect.data import load_cbcl
    return load_cbcl(cbcl_dir)


@pytest.fixture(scope="session")
def negatives_dir() -> Path:
    path = SHARED / "negatives" / "images"
    if not path.is_dir():
        pytest.skip("negative pictures not available at ../shared/datasets/negatives")
    return path


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
    from facedetect.pipeline.config import TrainConfig
    settings = dict(cost=tuple(cost), rounds=rounds, mirror=False, jitter=0,
                    bootstrap_rounds=0, stage_rounds=None, max_features=None)
    return TrainConfig(**{**settings, **fields})
