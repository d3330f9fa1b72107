"""Image input and annotations: reading pictures, annotation files, matching detections to faces."""

import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from facedetect.detector._image_evaluation import (ImageResult, evaluation_images, iou_matrix,
                                                 match, read_annotations, summarize)
from facedetect.images import read_grey
from facedetect.errors import FacedetectError


@pytest.mark.parametrize("mode", ["L", "RGB", "RGBA", "P", "I;16", "1"])
@pytest.mark.parametrize("suffix", [".png", ".bmp", ".tiff", ".gif", ".jpg", ".pgm"])
def test_image_formats_and_modes(tmp_path, mode, suffix):
    grey = np.tile(np.arange(0, 250, 10, dtype=np.uint8), (20, 1))
    image = Image.fromarray(grey)
    if mode == "I;16":
        if suffix not in (".png", ".tiff", ".pgm"):
            pytest.skip("format has no 16-bit grey")
        image = Image.fromarray(grey.astype(np.uint16) * 257)
    elif mode == "RGBA":
        if suffix in (".jpg", ".bmp", ".pgm", ".gif"):
            pytest.skip("format has no alpha")
        image = image.convert("RGBA")
    elif mode != "L":
        if suffix == ".pgm" or (suffix == ".jpg" and mode in ("P", "1")):
            pytest.skip("format cannot hold this mode")
        image = image.convert(mode)
    path = tmp_path / f"img{suffix}"
    image.save(path)
    read = read_grey(path)
    assert read.shape == (20, 25) and read.dtype == np.uint8
    if mode in ("L", "I;16", "RGB", "RGBA") and suffix != ".jpg":
        np.testing.assert_array_equal(read, grey)


def test_exif_orientation_is_honoured(tmp_path):
    grey = np.zeros((10, 30), np.uint8)
    grey[:, :5] = 255
    exif = Image.Exif()
    exif[0x0112] = 6  # rotate 90 degrees clockwise to display
    Image.fromarray(grey).save(tmp_path / "r.jpg", exif=exif)
    upright = read_grey(tmp_path / "r.jpg")
    assert upright.shape == (30, 10)
    assert upright[:5].mean() > 200 and upright[-5:].mean() < 50


def test_a_declared_giant_is_refused_before_decoding(tmp_path):
    """A tiny PNG whose header declares 100,000 x 100,000 pixels: one line, no decode."""
    import struct
    import zlib

    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    header = struct.pack(">IIBBBBB", 100_000, 100_000, 8, 0, 0, 0, 0)
    png = b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(
        b"IDAT", zlib.compress(b"\x00" * 10)) + chunk(b"IEND", b"")
    path = tmp_path / "bomb.png"
    path.write_bytes(png)
    with pytest.raises(FacedetectError, match="10000 megapixels, above the limit"):
        read_grey(path)
    result = subprocess.run([sys.executable, "-m", "facedetect", "detect", str(path)],
                            capture_output=True, text=True, timeout=120)
    assert result.returncode == 1 and "--max-pixels" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_float_images_with_nan_pixels_are_refused(tmp_path):
    pixels = np.random.default_rng(0).random((40, 40)).astype(np.float32)
    pixels[3, 4] = np.nan
    Image.fromarray(pixels, mode="F").save(tmp_path / "f.tif")
    with pytest.raises(FacedetectError, match="NaN or infinite pixels"):
        read_grey(tmp_path / "f.tif")


def test_a_dark_16_bit_pgm_stays_dark(tmp_path):
    # Every sample at most 255 of 65535: Pillow's mode I gives no hint of the range but
    # the format; read as 8-bit it would come out bright.
    samples = np.full((20, 20), 200, ">u2")
    (tmp_path / "dark.pgm").write_bytes(b"P5\n20 20\n65535\n" + samples.tobytes())
    assert read_grey(tmp_path / "dark.pgm").max() == 1


def test_wide_images_outside_the_usual_ranges_keep_their_contrast(tmp_path):
    ramp = np.tile(np.linspace(0, 1, 30), (20, 1))
    Image.fromarray((ramp * 1e6).astype(np.int32), mode="I").save(tmp_path / "i32.tif")
    Image.fromarray((ramp * 10 - 5).astype(np.float32), mode="F").save(tmp_path / "neg.tif")
    for name in ("i32.tif", "neg.tif"):
        grey = read_grey(tmp_path / name)
        assert grey[0, 0] == 0 and grey[0, -1] == 255, name


def test_a_pipe_is_not_read_as_an_image(tmp_path):
    import os
    os.mkfifo(tmp_path / "fifo.png")
    with pytest.raises(FacedetectError, match="not a regular file"):
        read_grey(tmp_path / "fifo.png")


def test_iou_and_one_to_one_matching_hand_computed():
    assert iou_matrix([[0, 0, 10, 10]], [[5, 0, 10, 10]])[0, 0] == pytest.approx(50 / 150)
    truth = np.array([[0, 0, 10, 10], [100, 100, 10, 10]])
    detections = np.array([[0, 0, 10, 10], [1, 0, 10, 10], [100, 101, 10, 10]])
    # Two detections on the first face: only one may count.
    assert match(detections, np.array([3.0, 2.0, 1.0]), truth) == 2


def test_read_annotations(tmp_path):
    path = tmp_path / "b.txt"
    path.write_text("a.gif 1 2 11 22\na.gif 5 5 6 6\nb.gif 0 0 3 4\n")
    boxes = read_annotations(path)
    assert boxes["a.gif"].tolist() == [[1, 2, 10, 20], [5, 5, 1, 1]]


def test_unannotated_images_are_face_free_and_their_detections_false_positives(tmp_path):
    for name in ("a.png", "b.png"):
        Image.new("L", (40, 40)).save(tmp_path / name)
    faces = {"a.png": np.array([[0.0, 0.0, 38.0, 38.0]])}
    images = evaluation_images(tmp_path, faces)
    assert [(path.name, len(truth)) for path, truth in images] == [("a.png", 1), ("b.png", 0)]
    # One window on each image, both mapped (x2 side, shifted down 0.1) onto a's face box.
    window = np.array([[9, 7, 19, 19]])
    results = [ImageResult(path.name, window, np.array([50.0]), truth, 0.0)
               for path, truth in images]
    assert summarize(results, 30.0, 0, 2.0, 0.1) == (1, 1, 1)
    with pytest.raises(FacedetectError, match="no image for 1"):
        evaluation_images(tmp_path, dict(faces, **{"c.png": faces["a.png"]}))


@pytest.mark.parametrize("line", ["a.jpg 10 10 5 20", "a.jpg 1 2 nan 4", "a.jpg 1 2 inf 4",
                                  "a.jpg 1 2 3 4 junk", "a.jpg 1 2 3",
                                  "a.jpg -1e308 -1e308 1e308 1e308"])
def test_bad_annotation_lines_are_refused_with_their_number(tmp_path, line):
    path = tmp_path / "boxes.txt"
    path.write_text("ok.jpg 1 2 30 40\n" + line + "\n")
    with pytest.raises(FacedetectError, match=r"boxes.txt:2: expected"):
        read_annotations(path)


def test_duplicate_and_outside_boxes_are_refused(tmp_path):
    path = tmp_path / "boxes.txt"
    path.write_text("a.png 1 2 30 40\nb.png 1 1 9 9\na.png 1 2 30 40\n")
    with pytest.raises(FacedetectError, match="boxes.txt:3: the same box twice for a.png"):
        read_annotations(path)
    from facedetect.detector._image_evaluation import inside_boxes
    # Faces the border cuts are clipped to the image; a box wholly outside is skipped,
    # each with a warning (issue 26: real annotation sets hold such close-ups).
    with pytest.warns(UserWarning, match="wholly outside the 320x240 image; skipped"):
        assert inside_boxes("a.png", np.array([[5000.0, 5000, 1000, 1000]]),
                            (240, 320)).shape == (0, 4)
    with pytest.warns(UserWarning, match="clipped to the image"):
        clipped = inside_boxes("a.png", np.array([[0.0, 0, 1e6, 1e6], [300, 200, 80, 80]]),
                               (240, 320))
    np.testing.assert_array_equal(clipped, [[0, 0, 320, 240], [300, 200, 20, 40]])
    path.write_bytes(b"\xef\xbb\xbfa.png 1 2 30 40\n")   # a byte-order mark
    assert list(read_annotations(path)) == ["a.png"]
    path.write_bytes(b"a.png\x00 1 2 30 40\n")
    with pytest.raises(FacedetectError, match="boxes.txt:1: the image name"):
        read_annotations(path)
    with pytest.raises(FacedetectError, match="not a regular file"):
        read_annotations("/dev/zero")


def test_non_utf8_annotations_are_one_error(tmp_path):
    path = tmp_path / "boxes.txt"
    path.write_bytes(b"\xff\xfe a.jpg 1 2 3 4\n")
    with pytest.raises(FacedetectError, match="not UTF-8"):
        read_annotations(path)
