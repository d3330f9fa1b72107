import hashlib

import numpy as np
from PIL import Image
import pytest

from facedetect.data import find_cbcl, load_cbcl
from facedetect.data._locate import ENV_VAR
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


# --- PGM maxvals: the loader decodes a file exactly as detect reads it -------------------

def _pgm_with_maxval(maxval: int, seed: int = 0, shape=(19, 19)) -> bytes:
    samples = np.random.default_rng(seed).integers(0, maxval + 1, shape)
    body = (samples.astype(">u2") if maxval > 255 else samples.astype(np.uint8)).tobytes()
    return f"P5\n{shape[1]} {shape[0]}\n{maxval}\n".encode() + body


@pytest.mark.parametrize("maxval", [1, 100, 255, 1023, 65535])
def test_pgm_any_maxval_decodes_as_detect_reads_it(tmp_path, maxval):
    from PIL import Image

    from facedetect.data._cbcl import decode_window
    from facedetect.images import to_grey
    for seed in range(3):
        path = tmp_path / f"w{maxval}_{seed}.pgm"
        path.write_bytes(_pgm_with_maxval(maxval, seed))
        with Image.open(path) as image:
            expected = to_grey(image)
        got = decode_window(path.read_bytes(), path.name)
        assert got.dtype == np.uint8 and got.shape == (19, 19)
        assert np.array_equal(got, expected)


@pytest.mark.parametrize("data, message", [
    (b"P5\n19 19\n0\n" + bytes(361), r"w\.pgm: PGM maxval 0 is outside 1\.\.65535"),
    (b"P5\n19 19\n65536\n" + bytes(722), r"w\.pgm: PGM maxval 65536 is outside 1\.\.65535"),
    (b"P5\n19 19\n1023\n" + bytes(700), r"w\.pgm: truncated PGM \(700 of 722 pixel bytes\)"),
    (b"P5\n19 19\n100\n" + bytes(300), r"w\.pgm: truncated PGM \(300 of 361 pixel bytes\)"),
])
def test_pgm_bad_maxval_or_truncation_is_a_clean_error(data, message):
    from facedetect.data._cbcl import decode_window
    with pytest.raises(FacedetectError, match=message):
        decode_window(data, "w.pgm")


def test_unreadable_image_error_has_no_object_repr(tmp_path):
    _make_folder(tmp_path)
    (tmp_path / "train" / "face" / "junk.png").write_bytes(b"definitely not a png")
    with pytest.raises(FacedetectError) as info:
        load_cbcl(tmp_path)
    assert "junk.png" in str(info.value) and " object at 0x" not in str(info.value)


# --- archives: bounded members, no path tricks, errors that name the archive -------------

def _tar_gz(path, files: dict):
    from .conftest import _tar_bytes
    path.write_bytes(_tar_bytes(files))
    return path


def _windows_tree(n=2):
    windows = random_windows(2 * n)
    tree = {f"train/face/f{i}.pgm": pgm_bytes(w) for i, w in enumerate(windows[:n])}
    tree.update({f"train/non-face/n{i}.pgm": pgm_bytes(w) for i, w in enumerate(windows[n:])})
    return tree


def test_oversized_window_member_is_refused_before_it_is_read(tmp_path, monkeypatch):
    import tarfile
    files = _windows_tree()
    files["train/face/big.pgm"] = bytes(2 << 20)  # compresses to almost nothing
    archive = _tar_gz(tmp_path / "faces.tar.gz", files)
    read = []
    original = tarfile.TarFile.extractfile
    monkeypatch.setattr(tarfile.TarFile, "extractfile",
                        lambda self, member: read.append(member.name) or original(self, member))
    with pytest.raises(FacedetectError) as info:
        load_cbcl(archive)
    message = str(info.value)
    assert str(archive) in message and "train/face/big.pgm" in message and "limit" in message
    assert "train/face/big.pgm" not in read


def test_oversized_nested_archive_is_refused(tmp_path, monkeypatch):
    from facedetect.data import _cbcl_files as cbcl_module
    monkeypatch.setattr(cbcl_module, "MAX_NESTED_BYTES", 1000)
    windows = random_windows(6)
    archive = write_official_archive(tmp_path / "faces.tar.gz", {"train": {
        "face": [pgm_bytes(w) for w in windows[:3]],
        "non-face": [pgm_bytes(w) for w in windows[3:]]}})
    with pytest.raises(FacedetectError, match=r"face\.train\.tar\.gz.*limit") as info:
        load_cbcl(archive)
    assert str(archive) in str(info.value)


@pytest.mark.parametrize("bad", ["../../train/face/x.pgm", "/train/face/x.pgm",
                                 "train/../train/face/x.pgm"])
def test_archive_with_unsafe_member_names_is_refused(tmp_path, bad):
    files = _windows_tree()
    files[bad] = pgm_bytes(random_windows(1, seed=9)[0])
    archive = _tar_gz(tmp_path / "faces.tar.gz", files)
    with pytest.raises(FacedetectError) as info:
        load_cbcl(archive)
    assert bad in str(info.value) and str(archive) in str(info.value)


def test_unsafe_member_in_a_nested_archive_is_refused(tmp_path):
    from .conftest import _tar_bytes
    inner = _windows_tree()
    inner["../train/face/x.pgm"] = pgm_bytes(random_windows(1, seed=9)[0])
    archive = _tar_gz(tmp_path / "faces.tar.gz", {"face.train.tar.gz": _tar_bytes(inner)})
    with pytest.raises(FacedetectError, match=r"face\.train\.tar\.gz.*\.\./train/face/x\.pgm"):
        load_cbcl(archive)


@pytest.mark.parametrize("inner, member", [
    (b"\x1f\x8b\x08 a corrupt nested archive", "face.train.tar.gz"),
    (None, "train/face/junk.pgm"),
])
def test_archive_errors_name_the_archive_and_member_on_one_line(tmp_path, inner, member):
    from .conftest import _tar_bytes
    if inner is None:  # a readable nested archive holding an unreadable window
        inner = _tar_bytes({**_windows_tree(), "train/face/junk.pgm": b"not an image"})
    archive = _tar_gz(tmp_path / "faces.tar.gz", {"face.train.tar.gz": inner})
    with pytest.raises(FacedetectError) as info:
        load_cbcl(archive)
    message = str(info.value)
    assert str(archive) in message and member in message
    assert " object at 0x" not in message and "\n" not in message


def test_data_info_errors_name_the_subcommand(tmp_path, capsys):
    from facedetect.cli._main import main
    assert main(["data", "info", "--data", str(tmp_path / "missing")]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("facedetect data info: error: ")


def test_a_huge_file_in_a_data_folder_is_refused_before_reading(tmp_path, monkeypatch):
    from facedetect.data import _cbcl_files as cbcl_module
    for cls in ("face", "non-face"):
        (tmp_path / "train" / cls).mkdir(parents=True)
        for k in range(3):
            Image.fromarray(np.full((19, 19), 9 * k, np.uint8)).save(
                tmp_path / "train" / cls / f"{k}.pgm")
    with open(tmp_path / "train" / "face" / "big.pgm", "wb") as sparse:
        sparse.truncate(3 << 30)   # 3 GiB that take no disk
    with pytest.raises(FacedetectError, match="big.pgm: 3,221,225,472 bytes, over the window"):
        load_cbcl(tmp_path)
    (tmp_path / "train" / "face" / "big.pgm").unlink()
    monkeypatch.setattr(cbcl_module, "MAX_TOTAL_BYTES", 1000)
    with pytest.raises(FacedetectError, match="limit of 1,000 bytes in all"):
        load_cbcl(tmp_path)
