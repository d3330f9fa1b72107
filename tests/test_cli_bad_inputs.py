"""Each class of bad input, through the command line: one line on stderr naming the
command, a non-zero exit, and nothing left behind in the working folder."""

from __future__ import annotations

import json
import os
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from facedetect.cli.main import main
from facedetect.model_file import reseal

SHIPPED = Path(__file__).resolve().parents[1] / "facedetect" / "models" / "default.json"


def _giant_png(path: Path) -> None:
    """A 100-byte PNG whose header declares 100,000 x 100,000 pixels."""
    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    header = struct.pack(">IIBBBBB", 100_000, 100_000, 8, 0, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
                     + chunk(b"IDAT", zlib.compress(b"\0" * 10)) + chunk(b"IEND", b""))


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    Image.fromarray(np.random.default_rng(0).integers(0, 256, (64, 80), np.uint8)).save("a.png")
    Image.fromarray(np.zeros((64, 80), np.uint8)).save("b.png")
    _giant_png(tmp_path / "giant.png")
    Path("afile").write_text("not a folder")
    Path("bad.jpg").write_bytes(b"\xff\xd8\xff not really a jpeg")
    os.mkfifo("fifo.png")
    Path("adir").mkdir()
    Path("boxes_twice.txt").write_text("a.png 1 2 30 40\na.png 1 2 30 40\n")
    document = json.loads(SHIPPED.read_text())
    document["features"] = []
    Path("features_as_list.json").write_text(json.dumps(reseal(document)))
    document = json.loads(SHIPPED.read_text())
    Path("inf_model.json").write_text(SHIPPED.read_text().replace(
        f'"threshold": {json.dumps(document["stumps"][0]["threshold"])}', '"threshold": 1e999',
        1))
    return tmp_path


CASES = {
    "1 output is a file, not a folder": ["detect", "a.png", "b.png", "--output", "afile"],
    "1 output is a folder, not a file": ["export-opencv", "default", "adir"],
    "1 output folder missing": ["show", str(SHIPPED), "--out", "missing/x.png"],
    "1 curve folder missing": ["evaluate-images", ".", "--annotations", "boxes_twice.txt",
                               "--curve", "missing/c"],
    "1 model out is a folder": ["train", "--cost", "1,10", "--out", "adir"],
    "1 out-dir is a file": ["sweep", "--out-dir", "afile"],
    "1 two images, one file": ["detect", "a.png", "b.png", "--output", "x.png"],
    "2 declared giant image": ["detect", "giant.png"],
    "3 endless pyramid": ["detect", "a.png", "--scale-factor", "1.0000001"],
    "3 huge jitter": ["train", "--cost", "1,10", "--jitter", "100000"],
    "3 absurd memory": ["train", "--cost", "1,10", "--memory", "1e308"],
    "4 features as a list": ["detect", "a.png", "--model", "features_as_list.json"],
    "4 infinity in a model": ["detect", "a.png", "--model", "inf_model.json"],
    "4 a device as a model": ["detect", "a.png", "--model", "/dev/zero"],
    "5 prior too near 0": ["train", "--cost", "1,10", "--prior", "1e-17"],
    "3 memory that rounds to nothing": ["train", "--cost", "1,10", "--memory", "1e-10"],
    "2 a pipe as an image": ["detect", "fifo.png"],
    "8 every image fails, output folder": ["detect", "bad.jpg", "--output", "newout"],
    "5 nan threshold": ["detect", "a.png", "--threshold", "nan"],
    "5 export threshold beyond float32": ["export-opencv", "default", "x.xml",
                                          "--threshold", "1e308"],
    "5 extreme cost": ["train", "--cost", "1e308,1"],
    "5 negative seed": ["train", "--cost", "1,10", "--seed", "-1"],
    "5 holdout near 1": ["train", "--cost", "1,10", "--holdout", "0.999"],
    "5 negative roc points": ["evaluate", "--model", str(SHIPPED), "--roc-points", "-3"],
    "5 too many folds": ["sweep", "--folds", "100000"],
    "6 the same face twice": ["evaluate-images", ".", "--annotations", "boxes_twice.txt"],
    "6 annotations from a device": ["evaluate-images", ".", "--annotations", "/dev/zero"],
    "7 data place that does not exist": ["train", "--cost", "1,10", "--data", "/typo"],
}


@pytest.mark.parametrize("argv", CASES.values(), ids=CASES.keys())
def test_bad_input_is_one_line_a_failure_and_leaves_nothing(workspace, argv, capsys):
    before = sorted(p.name for p in workspace.rglob("*"))
    try:
        code = main(argv)
    except SystemExit as exit:   # argparse refuses a flag's value before the command runs
        code = exit.code
    err = capsys.readouterr().err
    assert code != 0
    command = "train" if argv[0] == "train" else argv[0]
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith((f"facedetect {command}: ", "facedetect: error")), err
    assert sorted(p.name for p in workspace.rglob("*")) == before
