"""Hardening, round 5 (issue 57): scan settings from Python, 16-bit and truncated pictures,
what a model file expands to, full disks, and the messages a newcomer met."""

from __future__ import annotations

import errno
import gzip
import io
import json
import logging
import os
import re
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image
from skimage import data as skdata

import facedetect
from facedetect.detector._api import Detector, cached_detector
from facedetect.errors import FacedetectError
from facedetect.images import read_grey

from .test_hardening_r4 import one_line, run_cli

MODELS = Path(__file__).resolve().parent / "models"
SHIPPED = Path(facedetect.__file__).resolve().parent / "models"


def full_disk(*args, **kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


# 1, 5. Scan settings from Python are checked as their flags are, naming the argument.

@pytest.mark.parametrize("call, words", [
    (lambda: Detector(max_pixels=float("nan")), "max_pixels must be an integer"),
    (lambda: Detector(max_pixels="x"), "max_pixels must be an integer"),
    (lambda: facedetect.detect(np.zeros((40, 40), np.uint8), max_pixels=float("nan")),
     "max_pixels must be an integer"),
    (lambda: Detector(foo=1), "unknown scan setting 'foo'; choose from"),
    (lambda: Detector("default").detect(np.zeros((40, 40), np.uint8),
                                        threshold=np.array([1.0, 2.0])),
     "threshold must be a number"),
    (lambda: Detector(123), "model must be a shipped model's name, a model file"),
])
def test_settings_from_python_are_refused_naming_the_argument(call, words):
    with pytest.raises(FacedetectError, match=words):
        call()


def test_a_nan_pixel_limit_never_switches_the_limit_off():
    big = np.zeros((200, 200), np.uint8)
    with pytest.raises(ValueError, match="more than max_pixels"):
        facedetect.detect(big, max_pixels=1000)
    with pytest.raises(ValueError, match="max_pixels must be"):
        Detector("default", max_pixels=float("nan")).detect(big)


# 2. The same 16-bit pixels give one answer, whatever holds them.

def test_sixteen_bit_pixels_are_read_one_way_whatever_their_container():
    from facedetect.detector._image_input import grey_pixels
    wide = (skdata.camera().astype(np.uint16) * 257)[:, :300]
    dark = (wide // 257).astype(np.uint16)          # a 16-bit image whose maximum is 255
    dark_one = dark.copy()
    dark_one[0, 0] = 256
    expected = np.rint(dark / 257.0).astype(np.uint8)
    for same in (dark, dark.astype(">u2"), Image.fromarray(dark)):
        np.testing.assert_array_equal(grey_pixels(same), expected)
    assert np.abs(grey_pixels(dark_one).astype(int) - expected).max() <= 1
    np.testing.assert_array_equal(grey_pixels(wide.astype(">u2")), grey_pixels(wide))
    np.testing.assert_array_equal(grey_pixels(wide), skdata.camera()[:, :300])


# 3. A picture whose data ends early is refused, whatever its format.

def _png_with_half_its_rows(path: Path, width: int = 64, height: int = 64) -> Path:
    rows = b"".join(b"\x00" + bytes([200] * width) for _ in range(height // 2))

    def chunk(kind, body):
        return (struct.pack(">I", len(body)) + kind + body
                + struct.pack(">I", zlib.crc32(kind + body) & 0xFFFFFFFF))
    path.write_bytes(b"\x89PNG\r\n\x1a\n"
                     + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
                     + chunk(b"IDAT", zlib.compress(rows)) + chunk(b"IEND", b""))
    return path


def test_a_png_holding_half_its_rows_is_refused(tmp_path):
    from facedetect._utils.png import png_data_shortfall
    half = _png_with_half_its_rows(tmp_path / "half.png")
    assert png_data_shortfall(half) == (32 * 65, 64 * 65)
    with pytest.raises(FacedetectError, match="half.png: not a readable image.*truncated"):
        facedetect.detect(half)
    one_line(run_cli("detect", half), "detect", "truncated")
    whole = tmp_path / "whole.png"
    for image in (Image.new("L", (64, 64), 100), Image.new("RGB", (33, 17), (1, 2, 3)),
                  Image.new("I;16", (20, 30))):
        image.save(whole)
        assert png_data_shortfall(whole) is None
        read_grey(whole)


@pytest.mark.parametrize("fmt", ["PNG", "GIF", "TIFF", "JPEG"])
def test_a_cut_picture_is_refused_naming_it(tmp_path, fmt):
    rng = np.random.default_rng(0)
    buffer = io.BytesIO()
    Image.fromarray((rng.random((96, 96)) * 255).astype(np.uint8)).save(buffer, fmt)
    cut = tmp_path / f"cut.{fmt.lower()}"
    cut.write_bytes(buffer.getvalue()[:len(buffer.getvalue()) // 2])
    with pytest.raises(FacedetectError, match=f"{cut.name}: not a readable image"):
        read_grey(cut)


# 4. A model file the schema accepts is one the readers can describe.

def _resealed(document: dict, path: Path) -> Path:
    from facedetect.modelfile._io import reseal
    path.write_text(json.dumps(reseal(document)))
    return path


def test_an_operating_point_is_refused_at_load_or_described(tmp_path):
    from facedetect.cli._common import describe_operating_point
    from facedetect.modelfile._io import load_document
    document = json.loads((SHIPPED / "default.json").read_text())
    point = document["operating_point"]
    del point["n_calibration"], point["extreme"]
    line = describe_operating_point(load_document(
        _resealed(document, tmp_path / "a.json"))["operating_point"])
    assert "calibration windows not recorded" in line
    point["calibration"] = None
    with pytest.raises(FacedetectError, match="rule 'probability' needs its calibration"):
        load_document(_resealed(document, tmp_path / "b.json"))
    del point["calibration"]
    with pytest.raises(FacedetectError, match="rule 'probability' needs its calibration"):
        load_document(_resealed(document, tmp_path / "c.json"))
    point.update(calibration={"method": "sigmoid", "a": -1.0, "b": 0.0}, n_calibration="7")
    with pytest.raises(FacedetectError, match="n_calibration must be a whole number"):
        load_document(_resealed(document, tmp_path / "d.json"))


# 6. What a model file may expand to is bounded before it is parsed.

def test_a_model_file_that_expands_past_its_bounds_is_refused(tmp_path):
    from facedetect.modelfile import _io
    flood = tmp_path / "flood.json"
    flood.write_text('{"format": "facedetect-model", "training": {"x": ['
                     + ",".join(["0"] * (_io.MAX_VALUES + 1)) + "]}}")
    with pytest.raises(FacedetectError, match="more than 4,000,000 values"):
        facedetect.load_model(flood)
    document = json.loads((SHIPPED / "haar.json").read_text())
    document["training"]["notes"] = [{}] * (_io.MAX_TRAINING_VALUES + 1)
    with pytest.raises(FacedetectError, match="training record holds more than 500,000"):
        facedetect.load_model(_resealed(document, tmp_path / "record.json"))
    deep = tmp_path / "deep.json"
    deep.write_text('{"a": ' + "[" * 40 + "]" * 40 + "}")
    with pytest.raises(FacedetectError, match="nested more than 32 levels"):
        facedetect.load_model(deep)
    # commas and brackets inside strings are no values
    assert _io.parse_json('{"a": "' + ",[{" * 100 + '"}', "s.json", max_values=5)


# 7, 11. --positives-info: each picture decoded once, bounded by pixels, and one line each.

def _info(tmp_path: Path, text: str, encoding: str = "utf-8") -> Path:
    Image.fromarray(np.full((80, 100), 90, np.uint8)).save(tmp_path / "img.png")
    path = tmp_path / "info.dat"
    path.write_text(text, encoding=encoding)
    return path


def test_an_info_file_decodes_each_picture_once(tmp_path, monkeypatch):
    from facedetect.data import _positives
    decoded = []
    real = _positives.read_grey
    monkeypatch.setattr(_positives, "read_grey", lambda p, *a: decoded.append(p) or real(p))
    info = _info(tmp_path, "".join(f"img.png 1 {k % 50} 10 30 30\n" for k in range(300)))
    found = _positives.load_positives_info(info, (24, 24))
    assert len(found.images) == 300 and len(decoded) == 1
    assert found.names[:2] == ["img.png#0", "img.png#0"]
    monkeypatch.setattr(_positives, "MAX_INFO_PIXELS", 7_999)
    with pytest.raises(FacedetectError, match="pictures hold more than"):
        _positives.load_positives_info(info, (24, 24))


@pytest.mark.parametrize("text, words", [
    ("img.png 0\n", "info.dat:1: img.png has a box count of 0; a line names at least one"),
    ("img.png 1 10 10 30 30\nmissing.png 1 0 0 5 5\n", "info.dat:2: "),
    ("img.png 1 10 10 " + "9" * 400 + " 30\n", "the box value 99999999999999999999..."),
])
def test_an_info_file_error_names_file_and_line(tmp_path, text, words):
    from facedetect.data._positives import load_positives_info
    (tmp_path / "folder.png").mkdir()
    with pytest.raises(FacedetectError, match=None) as caught:
        load_positives_info(_info(tmp_path, text), (24, 24))
    assert words in str(caught.value) and len(str(caught.value)) < 300, str(caught.value)
    if "missing" in text:
        assert "missing.png: no such file" in str(caught.value)
    with pytest.raises(FacedetectError, match=r"info.dat:1: .*folder.png: is a folder"):
        load_positives_info(_info(tmp_path, "folder.png 1 0 0 5 5\n"), (24, 24))


def test_an_info_file_with_a_byte_order_mark_reads_its_first_path(tmp_path):
    from facedetect.data._positives import load_positives_info
    info = _info(tmp_path, "img.png 1 10 10 30 30\n", encoding="utf-8-sig")
    assert load_positives_info(info, (24, 24)).names == ["img.png#0"]


# 8. A memory setting too small for one block is refused, naming the smallest that works.

def test_a_memory_setting_below_one_block_is_refused_with_the_smallest():
    from facedetect.pipeline._compact import check_memory_setting, minimum_memory
    from facedetect.pipeline._storage import memory_bytes
    least = minimum_memory(24_000)
    check_memory_setting(least, 24_000, 244_028, exact=False)
    with pytest.raises(FacedetectError, match=f"the minimum is {least / 2**20:.1f} MiB"):
        check_memory_setting(memory_bytes(0.001), 24_000, 244_028, exact=False)


# 9. A full disk at a checkpoint leaves the checkpoint as it was and names the file.

def test_a_full_disk_at_a_checkpoint_leaves_nothing_and_names_the_file(tmp_path,
                                                                        monkeypatch):
    from facedetect._utils import atomic
    from facedetect.pipeline._checkpoint import RunState, save_checkpoint
    path = tmp_path / "m.json.checkpoint.json"
    calls = []
    real = atomic.os.fsync

    def second_write_fails(fd):
        calls.append(fd)
        if len(calls) == 2:    # the windows' file is written, then the JSON is not
            full_disk()
        real(fd)
    monkeypatch.setattr(atomic.os, "fsync", second_write_fails)
    with pytest.raises(FacedetectError, match=f"{path}: cannot write the checkpoint "
                                              r"\(No space left on device\)"):
        save_checkpoint(path, RunState(), {"rounds": 3})
    assert len(calls) == 2 and list(tmp_path.iterdir()) == []


# 10. A full disk during detect --output: that picture fails, the rest go on.

def test_detect_goes_on_when_an_annotated_copy_cannot_be_written(tmp_path, monkeypatch,
                                                                  capsys):
    from facedetect.cli._main import main
    from facedetect.detector import _annotate
    for k in range(3):
        Image.fromarray(skdata.camera()[::4, ::4]).save(tmp_path / f"p{k}.png")
    real, calls = _annotate.atomic_write_bytes, []

    def full_after_one(path, data):
        calls.append(path)
        if len(calls) >= 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real(path, data)
    monkeypatch.setattr(_annotate, "atomic_write_bytes", full_after_one)
    out = tmp_path / "out"
    code = main(["detect", str(tmp_path), "--json", "--quiet", "--output", str(out)])
    captured = capsys.readouterr()
    report = json.loads(captured.out)
    assert code == 1 and len(calls) == 3 and len(report) == 3
    assert [bool(p["annotated"]) for p in report] == [True, False, False]
    assert captured.err.count("cannot write the annotated copy (No space left") == 2
    assert "p1_faces.png" in captured.err


def test_a_full_disk_names_the_file_it_stopped(tmp_path, monkeypatch):
    from facedetect._utils import atomic
    monkeypatch.setattr(atomic.os, "fsync", full_disk)
    with pytest.raises(OSError) as caught:
        atomic.atomic_write_bytes(tmp_path / "model.xml", b"x")
    assert caught.value.filename == str(tmp_path / "model.xml")
    assert list(tmp_path.iterdir()) == []


# 12. Versions: a string is not a number; a version 1 image point migrates as one.

def test_a_version_given_as_a_string_is_said_to_be_one(tmp_path):
    document = json.loads((SHIPPED / "haar.json").read_text())
    document["version"] = "2"
    with pytest.raises(FacedetectError, match="version must be a whole number, got '2'"):
        facedetect.load_model(_resealed(document, tmp_path / "m.json"))


def test_a_version_1_image_point_without_applies_to_migrates_as_images():
    from facedetect.modelfile._io import reseal
    from facedetect.modelfile._schema import check_document
    previous = json.loads(gzip.decompress((MODELS / "default_v1.json.gz").read_bytes()))
    del previous["detection"]["applies_to"]
    migrated = check_document(reseal(previous), "v1.json")
    assert migrated["detection"]["applies_to"] == "images"


# 13. Negative numbers after flags; a min-size no window meets; an --output suffix.

def test_a_negative_number_in_exponent_form_is_a_flag_value(tmp_path):
    image = tmp_path / "a.png"
    Image.fromarray(skdata.camera()[::4, ::4]).save(image)
    result = run_cli("detect", image, "--threshold", "-1e9", "--max-size", "40", "--json",
                     "--no-verifier")   # the one-stage scan: every window passes -1e9
    assert result.returncode == 0, result.stderr
    assert len(json.loads(result.stdout)[0]["faces"]) > 0
    one_line(run_cli("detect", image, "--min-size", "100000"), "detect",
             "no window fits the 128x128 picture at min_size 100000")
    one_line(run_cli("detect", image, "--output", tmp_path / "out.txt"), "detect",
             "cannot write an image as '.txt'")
    assert not (tmp_path / "out.txt").exists()


# 14. The detector cache sees a model rewritten with its size and time kept.

def test_a_model_rewritten_with_its_size_and_time_is_loaded_again(tmp_path):
    from facedetect.modelfile._io import reseal
    path = tmp_path / "m.json"
    document = json.loads((SHIPPED / "haar.json").read_text())

    def write(note: str) -> None:   # the same size each time, another checksum
        document["training"]["note"] = note
        path.write_text(json.dumps(reseal(document)))
    write("aaaa")
    first = cached_detector(path)
    assert cached_detector(path) is first
    stat = path.stat()
    write("bbbb")
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))   # as cp -p, rsync -t, tar
    assert path.stat().st_size == stat.st_size
    assert cached_detector(path) is not first


# 15, 16, 19. What a folder skipped, progress over pictures, the compile said apart.

def test_detect_says_what_a_folder_skipped_and_shows_progress(tmp_path):
    for k in range(2):
        Image.fromarray(skdata.camera()[::4, ::4]).save(tmp_path / f"p{k}.png")
    (tmp_path / "folder.jpg").mkdir()
    (tmp_path / "loop.png").symlink_to(tmp_path / "loop.png")
    result = run_cli("detect", tmp_path)
    assert result.returncode == 0, result.stderr
    assert ("skipped 2 entries named like pictures that are no files: folder.jpg (a folder), "
            "loop.png (a link to nothing (or a loop))") in result.stderr
    bar = re.compile(r"pictures:\s+\d+%")   # the progress bar over the folder
    assert bar.search(result.stderr), result.stderr
    quiet = run_cli("detect", tmp_path, "--quiet")
    assert not bar.search(quiet.stderr) and quiet.stdout.count("face(s) in") == 2


def test_a_slow_first_scan_is_said_to_be_the_compiler(monkeypatch, capsys):
    import time

    from facedetect.cli import _detect_cmd
    from facedetect.detector import _api
    monkeypatch.setattr(_detect_cmd, "COMPILE_NOTICE_SECONDS", 0.05)
    monkeypatch.setattr(_api, "find_faces", lambda *a, **k: time.sleep(0.3))
    detector = Detector("default", verifier=False)   # the scan alone: no faces to verify
    _detect_cmd._compile_scanner(detector, "detect", quiet=False)
    assert "detect: compiling the scanner" in capsys.readouterr().err
    _detect_cmd._compile_scanner(detector, "detect", quiet=True)
    assert capsys.readouterr().err == ""


# 18. The library says which data it found, as the command does, at INFO.

def test_the_library_logs_the_data_it_found(caplog):
    from facedetect.data import make_toy_windows
    config = facedetect.TrainConfig(rounds=2, jitter=0, mirror=False, bootstrap_rounds=0)
    with caplog.at_level(logging.INFO, logger="facedetect"):
        facedetect.train_detector(config, make_toy_windows(), faces=None, progress=False)
    assert any("faces from the wild: none" in r.message for r in caplog.records)
    assert any("face-free pictures: none" in r.message for r in caplog.records)


# 20, 21. What export-opencv wrote, and the closest flag to a mistyped one.

def test_export_opencv_names_what_it_wrote_and_why_stages_repeat(tmp_path):
    result = run_cli("export-opencv", "default", tmp_path / "default.xml")
    assert result.returncode == 0, result.stderr
    assert "holds the shipped 'haar' model" in result.stdout
    assert "a name such as haar.xml says what it holds" in result.stdout
    assert "(the model's 1500 stumps: OpenCV sums each stage from zero" in result.stdout


def test_a_mistyped_flag_gets_the_closest_one(tmp_path):
    one_line(run_cli("detect", "--ouput", "x.png", "y.png"), "detect",
             "unrecognized arguments: --ouput (did you mean --output?); see "
             "'facedetect detect --help'")
