"""``facedetect createsamples`` and ``facedetect traincascade`` (issue 55): OpenCV's
tutorial commands as written, OpenCV's ``.vec`` format, and the cascade run by OpenCV."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import cv2
import numpy as np
import pytest
from PIL import Image

from facedetect.data._vec import read_vec, write_vec
from facedetect.errors import FacedetectError

from .test_hardening_r4 import one_line, run_cli

FIXTURE = Path(__file__).resolve().parent / "models" / "opencv_vec" / "samples.vec"
# Where benchmarks and this test look for OpenCV's own tools, built by
# ../shared/peers/opencv-traincascade/build.sh (never a dependency).
PEER_BUILDS = [Path(os.environ.get("OPENCV_APPS", "/nonexistent")),
               Path(__file__).resolve().parents[2] / "opencv-apps"]


def _square(size: int) -> np.ndarray:
    """The toy object: a dark square with a bright middle."""
    square = np.full((size, size), 40, np.uint8)
    square[size // 4:-(size // 4), size // 4:-(size // 4)] = 220
    return square


def _tutorial_data(folder: Path, n_positives: int = 120) -> None:
    """An info file of boxes round the toy object, and a bg.txt of noise pictures, laid
    out as OpenCV's tutorial lays them out."""
    rng = np.random.default_rng(0)
    (folder / "pos").mkdir()
    (folder / "neg").mkdir()
    lines = []
    for k in range(n_positives):
        picture = rng.integers(90, 170, (64, 64)).astype(np.uint8)
        size = int(rng.integers(20, 36))
        x, y = (int(v) for v in rng.integers(0, 64 - size, 2))
        picture[y:y + size, x:x + size] = _square(size)
        Image.fromarray(picture).save(folder / "pos" / f"p{k}.png")
        lines.append(f"p{k}.png 1 {x} {y} {size} {size}")
    (folder / "pos" / "info.dat").write_text("\n".join(lines) + "\n")
    for k in range(8):
        Image.fromarray(rng.integers(0, 256, (160, 160)).astype(np.uint8)).save(
            folder / "neg" / f"n{k}.png")
    (folder / "bg.txt").write_text("".join(f"neg/n{k}.png\n" for k in range(8)))


def test_the_tutorial_commands_train_a_cascade_opencv_runs(tmp_path):
    _tutorial_data(tmp_path)
    made = run_cli("createsamples", "-info", "pos/info.dat", "-vec", "pos.vec", "-w", "16",
                   "-h", "16", "-num", "100", cwd=tmp_path)
    assert made.returncode == 0, made.stderr
    assert "Created 100 samples (16x16)" in made.stdout
    samples = read_vec(tmp_path / "pos.vec", (16, 16))
    assert samples.shape == (100, 16, 16)
    trained = run_cli("traincascade", "-data", "out", "-vec", "pos.vec", "-bg", "bg.txt",
                      "-numPos", "60", "-numNeg", "60", "-numStages", "3", "-w", "16",
                      "-h", "16", "-maxWeakCount", "10", "-mode", "ALL",
                      "-precalcValBufSize", "256", "-precalcIdxBufSize", "256",
                      "-numThreads", "1", "-baseFormatSave", "--quiet", cwd=tmp_path)
    assert trained.returncode == 0, trained.stderr
    assert "-precalcIdxBufSize is ignored" in trained.stderr
    assert "-baseFormatSave is ignored" in trained.stderr
    out = tmp_path / "out"
    cascade = cv2.CascadeClassifier(str(out / "cascade.xml"))
    assert not cascade.empty()
    storage = cv2.FileStorage(str(out / "cascade.xml"), cv2.FILE_STORAGE_READ)
    stages = int(storage.getNode("cascade").getNode("stageNum").real())
    assert sorted(p.name for p in out.glob("stage*.xml")) == [f"stage{k}.xml"
                                                              for k in range(stages)]
    storage = cv2.FileStorage(str(out / "params.xml"), cv2.FILE_STORAGE_READ)
    params = storage.getNode("params")
    assert (params.getNode("width").real(), params.getNode("featureParams").getNode("mode")
            .string()) == (16.0, "ALL")
    storage = cv2.FileStorage(str(out / f"stage{stages - 1}.xml"), cv2.FILE_STORAGE_READ)
    assert storage.getNode(f"stage{stages - 1}").getNode("maxWeakCount").real() >= 1
    # OpenCV finds the object where it is, and our own detect reads the model beside it
    picture = np.full((80, 80), 130, np.uint8)
    picture[20:52, 30:62] = _square(32)
    found = cascade.detectMultiScale(picture, 1.1, 1)
    from facedetect.detector._image_evaluation import iou_matrix
    assert len(found) and iou_matrix(np.asarray(found, float),
                                     np.array([[30.0, 20, 32, 32]])).max() > 0.4, found
    assert (out / "cascade.json").is_file()
    # OpenCV's stopping rules: capped stages kept, the fresh windows' acceptance ratio
    import json
    rules = json.loads((out / "cascade.json").read_text())["training"]["config"]["cascade"]
    assert rules["keep_capped_stages"] and rules["acceptance_target"]


@pytest.mark.parametrize("argv, words", [
    (["traincascade", "-data", "o", "-vec", "v", "-bg", "b", "-featureType", "LBP"],
     "-featureType LBP: only HAAR is supported"),
    (["traincascade", "-data", "o", "-vec", "v", "-bg", "b", "-maxDepth", "2"],
     "-maxDepth 2: only 1 (stumps) is supported"),
    (["traincascade", "-data", "o", "-vec", "v", "-bg", "b", "-minHitRate", "1.5"],
     "argument -minHitRate: min_hit_rate must be a number in (0, 1)"),
    (["traincascade", "-data", "o", "-vec", "v", "-bg", "b", "-acceptanceRatioBreakValue",
      "1"], "-acceptanceRatioBreakValue 1: must be below 1"),
    (["traincascade", "-data", "o", "-vec", "v", "-bg", "b", "-acceptanceRatioBreakValue",
      "nan"], "argument -acceptanceRatioBreakValue"),
    (["traincascade", "-data", "o", "-vec", "v", "-bg", "b", "--hit-rate-on", "all"],
     "argument --hit-rate-on: invalid choice: 'all'"),
    (["createsamples", "-img", "a.png", "-vec", "v"], "-img (distorted copies"),
    (["createsamples", "-vec", "v"], "-info is required"),
    (["createsamples", "-info", "i.dat", "-vec", "i.dat"], "is the info file itself"),
])
def test_what_this_trainer_cannot_honour_is_refused_in_one_line(tmp_path, argv, words):
    result = run_cli(*argv, cwd=tmp_path)
    assert result.returncode != 0
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0], result.stderr


def test_the_acceptance_ratio_break_value_stops_the_cascade_as_opencvs_does(tmp_path):
    _tutorial_data(tmp_path)
    assert run_cli("createsamples", "-info", "pos/info.dat", "-vec", "pos.vec", "-w", "16",
                   "-h", "16", "-num", "100", cwd=tmp_path).returncode == 0
    runs = {}
    for value in ("-1", "0.05"):   # -1: OpenCV's default, none
        trained = run_cli("traincascade", "-data", f"out{value}", "-vec", "pos.vec", "-bg",
                          "bg.txt", "-numPos", "60", "-numNeg", "60", "-numStages", "10",
                          "-w", "16", "-h", "16", "-maxWeakCount", "10", "-numThreads",
                          "1", "-acceptanceRatioBreakValue", value, "--quiet", cwd=tmp_path)
        assert trained.returncode == 0, trained.stderr
        assert "is ignored" not in trained.stderr
        import json
        runs[value] = json.loads((tmp_path / f"out{value}" / "cascade.json").read_text()
                                 )["training"]
    # one stage lets about 3% of the noise windows through: above 0.5 ** 10, below 0.05
    first = runs["-1"]["cascade_stages"][1]["acceptance_ratio"]
    assert 0.5 ** 10 < first <= 0.05, first
    assert len(runs["-1"]["cascade_stages"]) > 1, runs["-1"]["stop_reason"]
    assert len(runs["0.05"]["cascade_stages"]) == 1
    assert runs["0.05"]["stop_reason"] == ("target false-alarm rate 0.05 reached: the 1 "
                                           f"stages accept {first:.3g} of the windows mining "
                                           "scanned")


def test_a_bg_list_is_read_from_the_working_folder_and_its_gaps_said(tmp_path):
    _tutorial_data(tmp_path, n_positives=60)
    write_vec(tmp_path / "pos.vec", np.zeros((60, 16, 16), np.uint8))
    (tmp_path / "bg.txt").write_text("# none here\nnowhere/a.png\n")
    one_line(run_cli("traincascade", "-data", "out", "-vec", "pos.vec", "-bg", "bg.txt",
                     "-w", "16", "-h", "16", cwd=tmp_path), "traincascade",
             "none of its 1 pictures is a file (the first: nowhere/a.png; paths are "
             "relative to the working folder")
    one_line(run_cli("traincascade", "-data", "out", "-vec", "pos.vec", "-bg", "bg.txt",
                     "-w", "24", "-h", "24", cwd=tmp_path), "traincascade",
             "its samples hold 256 pixels, not 24x24 = 576")


def test_a_vec_file_round_trips_and_a_broken_one_is_refused(tmp_path):
    samples = np.random.default_rng(1).integers(0, 256, (7, 12, 10), dtype=np.uint8)
    path = write_vec(tmp_path / "s.vec", samples)
    np.testing.assert_array_equal(read_vec(path, (10, 12)), samples)
    data = path.read_bytes()
    assert len(data) == 12 + 7 * (1 + 2 * 120)
    (tmp_path / "cut.vec").write_bytes(data[:-5])
    with pytest.raises(FacedetectError, match="truncated: 7 samples need"):
        read_vec(tmp_path / "cut.vec", (10, 12))
    (tmp_path / "junk.vec").write_bytes(b"\xff" * 40)
    with pytest.raises(FacedetectError, match="not a .vec file"):
        read_vec(tmp_path / "junk.vec", (10, 12))


def _opencv_createsamples() -> Path | None:
    for folder in PEER_BUILDS:
        tool = folder / "opencv_createsamples"
        if tool.is_file() and os.access(tool, os.X_OK):
            return tool
    return None


def test_a_vec_made_by_opencv_createsamples_is_read_as_it_made_it(tmp_path):
    # The fixture is what OpenCV's own tool wrote for the boxes of info.dat beside it;
    # where the tool is built, it is made again and compared byte for byte.
    assert FIXTURE.is_file(), "the fixture made by opencv_createsamples is missing"
    samples = read_vec(FIXTURE, (20, 20))
    info = FIXTURE.with_name("info.dat")
    ours = run_cli("createsamples", "-info", info, "-vec", tmp_path / "ours.vec",
                   "-w", "20", "-h", "20")
    assert ours.returncode == 0, ours.stderr
    assert samples.shape == (5, 20, 20)   # boxes that shrink, enlarge and stretch
    assert (tmp_path / "ours.vec").read_bytes() == FIXTURE.read_bytes()
    tool = _opencv_createsamples()
    if tool is None:
        pytest.skip("opencv_createsamples is not built (bash "
                    "../shared/peers/opencv-traincascade/build.sh ../opencv-apps)")
    again = tmp_path / "again.vec"
    subprocess.run([tool, "-info", info, "-vec", again, "-w", "20", "-h", "20",
                    "-num", str(len(samples))], check=True, capture_output=True)
    assert again.read_bytes() == FIXTURE.read_bytes()


def test_an_interrupted_traincascade_continues_when_run_again(tmp_path, monkeypatch, capsys,
                                                              stop_in_stage):
    # OpenCV continues from the stage files it finds in -data; ours from the checkpoint
    # an interrupted run left there, to the cascade an uninterrupted run writes.
    import numba
    from facedetect.cli._main import main
    _tutorial_data(tmp_path)
    monkeypatch.chdir(tmp_path)
    assert main(["createsamples", "-info", "pos/info.dat", "-vec", "pos.vec", "-w", "16",
                 "-h", "16", "-num", "100"]) == 0
    flags = ["-vec", "pos.vec", "-bg", "bg.txt", "-numPos", "60", "-numNeg", "60",
             "-numStages", "10", "-w", "16", "-h", "16", "-maxWeakCount", "10", "-numThreads",
             "1", "--quiet"]
    assert main(["traincascade", "-data", "whole", *flags]) == 0
    import re
    stages = int(re.search(r"cascade\.xml: (\d+) stages", capsys.readouterr().out).group(1))
    assert stages >= 2   # so that the run below stops in its second stage
    stop_in_stage(2)
    capsys.readouterr()
    assert main(["traincascade", "-data", "cut", *flags]) == 130
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "run the same command again to continue" in err[0], err
    assert (tmp_path / "cut" / "cascade.json.checkpoint.json").is_file()
    stop_in_stage(None)
    # other flags: one line, and the checkpoint is still there to continue
    assert main(["traincascade", "-data", "cut", *flags, "-minHitRate", "0.99"]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "an interrupted run with other flags or files" in err[0], err
    # a damaged checkpoint: one line, naming what to do
    (tmp_path / "bad").mkdir()
    (tmp_path / "bad" / "cascade.json.checkpoint.json").write_text("{}")
    assert main(["traincascade", "-data", "bad", *flags]) != 0
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "cannot be continued" in err[0] and "delete it" in err[0], err
    threads = numba.get_num_threads()
    assert main(["traincascade", "-data", "cut", *flags]) == 0
    assert "continuing the interrupted run" in capsys.readouterr().out
    assert numba.get_num_threads() == threads   # -numThreads 1 was this run's alone
    assert ((tmp_path / "cut" / "cascade.xml").read_bytes()
            == (tmp_path / "whole" / "cascade.xml").read_bytes())
    assert not (tmp_path / "cut" / "cascade.json.checkpoint.json").exists()
