import hashlib

import numpy as np
import pytest

from facedetect.data import find_cbcl, load_cbcl
from facedetect.data.locate import ENV_VAR
from facedetect.errors import DataNotFoundError, FacedetectError

from .conftest import pgm_bytes, random_windows, write_official_archive


def test_shared_training_set_counts(cbcl):
    assert cbcl.images.shape == (6977, 19, 19) and cbcl.images.dtype == np.uint8
    assert int(cbcl.labels.sum()) == 2429 and int((cbcl.labels == 0).sum()) == 4548
    assert cbcl.counts == {"train": {"face": 2429, "non-face": 4548}}
    assert cbcl.names[0] == "train/face/face00001.pgm"
    # PROVENANCE.md: mean grey level 127.1 for faces and 101.7 for non-faces.
    assert cbcl.images[cbcl.labels == 1].mean() == pytest.approx(127.1, abs=0.05)
    assert cbcl.images[cbcl.labels == 0].mean() == pytest.approx(101.7, abs=0.05)


def test_pgm_parser_agrees_with_pillow(cbcl_dir, cbcl):
    from PIL import Image
    for name in ("face00001.pgm", "face02429.pgm"):
        expected = np.asarray(Image.open(cbcl_dir / "train" / "face" / name))
        assert np.array_equal(cbcl.images[cbcl.names.index(f"train/face/{name}")], expected)


def _make_folder(root, n_face=3, n_non=4, seed=0):
    windows = random_windows(n_face + n_non, seed)
    for split in ("train",):
        for cls, items in (("face", windows[:n_face]), ("non-face", windows[n_face:])):
            folder = root / split / cls
            folder.mkdir(parents=True)
            for i, w in enumerate(items):
                (folder / f"{cls}{i:03d}.pgm").write_bytes(pgm_bytes(w))
    return windows


def test_folder_and_archive_give_the_same_data(tmp_path):
    windows = _make_folder(tmp_path / "folder")
    split = {"train": {"face": [pgm_bytes(w) for w in windows[:3]],
                       "non-face": [pgm_bytes(w) for w in windows[3:]]},
             "test": {"face": [pgm_bytes(windows[0])], "non-face": [pgm_bytes(windows[4])]}}
    archive = write_official_archive(tmp_path / "faces.tar.gz", split)
    from_folder = load_cbcl(tmp_path / "folder")
    from_archive = load_cbcl(archive)
    assert np.array_equal(from_folder.images, from_archive.images)
    assert from_folder.labels.tolist() == [1, 1, 1, 0, 0, 0, 0]
    assert from_archive.archive_sha256 == hashlib.sha256(archive.read_bytes()).hexdigest()
    both = load_cbcl(archive, splits=("train", "test"))
    assert both.counts == {"train": {"face": 3, "non-face": 4}, "test": {"face": 1, "non-face": 1}}
    # A folder that holds the archive is read through it too.
    assert np.array_equal(load_cbcl(tmp_path).images, from_archive.images)


def test_non_image_files_are_ignored_and_counted(tmp_path):
    _make_folder(tmp_path)
    (tmp_path / "train" / "face" / "README.txt").write_text("hello")
    (tmp_path / "train" / "non-face" / ".DS_Store").write_bytes(b"\0\1")
    data = load_cbcl(tmp_path)
    assert data.ignored == 2 and len(data.labels) == 7


def test_truncated_image_names_the_file(tmp_path):
    _make_folder(tmp_path)
    bad = tmp_path / "train" / "face" / "face001.pgm"
    bad.write_bytes(bad.read_bytes()[:100])
    with pytest.raises(FacedetectError, match=r"face001\.pgm: truncated"):
        load_cbcl(tmp_path)


def test_wrong_size_names_the_file(tmp_path):
    _make_folder(tmp_path)
    (tmp_path / "train" / "non-face" / "big.pgm").write_bytes(pgm_bytes(np.zeros((20, 19))))
    with pytest.raises(FacedetectError, match=r"big\.pgm: image is 19x20, expected 19x19"):
        load_cbcl(tmp_path)


def test_garbage_image_names_the_file(tmp_path):
    _make_folder(tmp_path)
    (tmp_path / "train" / "face" / "junk.png").write_bytes(b"definitely not a png")
    with pytest.raises(FacedetectError, match=r"junk\.png: not a readable image"):
        load_cbcl(tmp_path)


def test_empty_folder_is_a_clear_error(tmp_path):
    (tmp_path / "train" / "face").mkdir(parents=True)
    with pytest.raises(FacedetectError, match="no CBCL images found"):
        load_cbcl(tmp_path)


def test_corrupt_archive_is_a_clear_error(tmp_path):
    archive = tmp_path / "faces.tar.gz"
    archive.write_bytes(b"\x1f\x8b not really gzip")
    with pytest.raises(FacedetectError, match="not a readable tar.gz"):
        load_cbcl(archive)


def test_search_order(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv(ENV_VAR, raising=False)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DataNotFoundError) as info:
        find_cbcl()
    message = str(info.value)
    assert "./data/cbcl" in message and "user cache" in message and "data fetch" in message
    _make_folder(tmp_path / "cache" / "facedetect" / "cbcl")
    assert find_cbcl() == tmp_path / "cache" / "facedetect" / "cbcl"
    _make_folder(tmp_path / "data" / "cbcl")
    assert find_cbcl().resolve() == (tmp_path / "data" / "cbcl").resolve()
    _make_folder(tmp_path / "env")
    monkeypatch.setenv(ENV_VAR, str(tmp_path / "env"))
    assert find_cbcl() == tmp_path / "env"
    _make_folder(tmp_path / "explicit")
    assert find_cbcl(tmp_path / "explicit") == tmp_path / "explicit"
    # An explicit path without data is an error, not a silent fallback.
    with pytest.raises(DataNotFoundError, match="--data"):
        find_cbcl(tmp_path / "nothing")
