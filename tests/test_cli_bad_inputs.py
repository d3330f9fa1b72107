"""Each class of bad input, through the command line: one line on stderr naming the
command, a non-zero exit, and nothing left behind in the working folder."""

from __future__ import annotations

import json
import os
import struct
import sys
import zlib
from pathlib import Path

import numpy as np
import pytest
from PIL import Image

from facedetect.cli._main import main
from facedetect.modelfile._io import reseal

SHIPPED = Path(__file__).resolve().parents[1] / "facedetect" / "models" / "default.json"


def _giant_png(path: Path) -> None:
    """A 100-byte PNG whose header declares 100,000 x 100,000 pixels."""
    def chunk(kind, data):
        return (struct.pack(">I", len(data)) + kind + data
                + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF))
    header = struct.pack(">IIBBBBB", 100_000, 100_000, 8, 0, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header)
                     + chunk(b"IDAT", zlib.compress(b"\0" * 10)) + chunk(b"IEND", b""))


def _cold_cache_notice(detector, prog: str, quiet: bool) -> None:
    """The compile notice that a machine with a cold numba cache (CI's) prints, printed
    every time, so that no refusal here passes only because the scanner was compiled."""
    from facedetect.cli._detect_cmd import COMPILE_NOTICE
    if not quiet:
        print(COMPILE_NOTICE.format(prog=prog), file=sys.stderr)


@pytest.fixture
def workspace(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    from facedetect.cli import _detect_cmd
    monkeypatch.setattr(_detect_cmd, "_compile_scanner", _cold_cache_notice)
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
    _toy_data(tmp_path)
    return tmp_path


def _toy_data(root: Path) -> None:
    """``toy/`` (CBCL-shaped toy windows), ``negs/`` (face-free pictures), ``pos/`` (three
    positive crops) and ``many.info`` (100,001 boxes, more than a cascade takes)."""
    from facedetect.data import make_toy_windows
    data = make_toy_windows()
    for image, name in zip(data.images, data.names):
        (root / "toy" / name).parent.mkdir(parents=True, exist_ok=True)
        Image.fromarray(image).save(root / "toy" / name)
    (root / "negs").mkdir()
    (root / "pos").mkdir()
    rng = np.random.default_rng(1)
    for i in range(3):
        Image.fromarray(rng.integers(0, 256, (120, 160), np.uint8)).save(root / "negs" / f"{i}.png")
        Image.fromarray(rng.integers(0, 256, (30, 30), np.uint8)).save(root / "pos" / f"{i}.png")
    (root / "many.info").write_text("a.png 100001 " + " ".join(["0 0 24 24"] * 100_001) + "\n")


# Toy CBCL windows and face-free pictures the workspace fixture writes.
TOY = ["--data", "toy", "--negatives", "negs", "--jitter", "0", "--no-mirror", "--quiet"]
ONE = ["--recipe", "cbcl", "--data", "toy", "--no-bootstrap", "--rounds", "2", "--jitter", "0",
       "--no-mirror", "--quiet"]

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
    "3 nan grain": ["train", "--cost", "1,10", "--grain", "nan"],
    "3 negative grain": ["train", "--cost", "1,10", "--grain", "-1"],
    "3 posterize over 1": ["train", "--cost", "1,10", "--posterize", "1.5"],
    "3 nan posterize": ["train", "--cost", "1,10", "--posterize", "nan"],
    "3 absurd memory": ["train", "--cost", "1,10", "--memory", "1e308"],
    "4 features as a list": ["detect", "a.png", "--model", "features_as_list.json"],
    "4 infinity in a model": ["detect", "a.png", "--model", "inf_model.json"],
    "4 a device as a model": ["detect", "a.png", "--model", "/dev/zero"],
    "5 prior too near 0": ["train", "--recipe", "cbcl", "--cost", "1,10", "--prior", "1e-17"],
    "3 memory that rounds to nothing": ["train", "--cost", "1,10", "--memory", "1e-10"],
    "2 a pipe as an image": ["detect", "fifo.png"],
    "8 every image fails, output folder": ["detect", "bad.jpg", "--output", "newout"],
    "5 nan threshold": ["detect", "a.png", "--threshold", "nan"],
    "5 export threshold beyond float32": ["export-opencv", "default", "x.xml",
                                          "--threshold", "1e308"],
    "5 extreme cost": ["train", "--cost", "1e308,1"],
    "5 negative seed": ["train", "--cost", "1,10", "--seed", "-1"],
    "5 holdout near 1": ["train", "--recipe", "cbcl", "--cost", "1,10", "--holdout", "0.999"],
    "5 negative roc points": ["evaluate", "--model", str(SHIPPED), "--roc-points", "-3"],
    "5 too many folds": ["sweep", "--folds", "100000"],
    "6 the same face twice": ["evaluate-images", ".", "--annotations", "boxes_twice.txt"],
    "6 annotations from a device": ["evaluate-images", ".", "--annotations", "/dev/zero"],
    "7 data place that does not exist": ["train", "--recipe", "cbcl", "--cost", "1,10",
                                         "--data", "/typo"],
    # Round 3 (issue 26): cascades, positives, operating points, checkpoints and Dask.
    "r3-2 hit rate that keeps no positive": ["train", "--stages", "1", *TOY, "--min-hit-rate",
                                              "1e-300"],
    "r3-2 hit rate 1": ["train", "--stages", "1", *TOY, "--min-hit-rate", "1"],
    "r3-3 every positive held out": ["train", "--stages", "1", "--positives", "pos",
                                     "--negatives", "negs", "--holdout", "0.99"],
    "r3-9 calibration split leaves no boosting part": ["train", *ONE, "--calibration-split",
                                                       "0.999"],
    "r3-9 calibration split 0.99 of holdout 0.9, adaboost": [
        "train", *ONE, "--calibration-split", "0.99", "--holdout", "0.9", "--algorithm",
        "adaboost", "--calibrated"],
    "r3-10 tls scheduler": ["train", *ONE, "--scheduler", "tls://127.0.0.1:1"],
    "r3-10 ucx scheduler": ["train", *ONE, "--scheduler", "ucx://127.0.0.1:1"],
    "r3-10 empty scheduler": ["train", *ONE, "--scheduler", ""],
    "r3-16 cascade given --rounds": ["train", "--stages", "1", *TOY, "--rounds", "5"],
    "r3-16 cascade given --data and --positives": ["train", "--stages", "1", "--positives",
                                                   "pos", *TOY],
    "r3-16 cascade --resume without a checkpoint": ["train", "--stages", "1", *TOY,
                                                    "--resume", "--out", "c.json"],
    "r3-16 --out named like a lock": ["train", *ONE, "--out", "m.json.lock"],
    "r3-16 --out named like a checkpoint": ["train", *ONE, "--out", "m.json.checkpoint.json"],
    "r3-16 a 200x200 window": ["train", "--stages", "1", "--positives", "pos", "--negatives",
                               "negs", "--window", "200x200"],
    "r3-16 100,001 boxes in an info file": ["train", "--stages", "1", "--positives-info",
                                            "many.info", "--negatives", "negs"],
    "54 a verifier for CBCL's window classifier": ["train", *ONE, "--verifier"],
    "54 verifier searching more features than it draws": [
        "train-verifier", "default", "--out", "v.json", "--features", "100",
        "--max-features", "101"],
    "54 a verifier for a cascade": ["train", "--stages", "1", *TOY, "--verifier"],
    "r3-16 fetch from a pipe": ["data", "fetch", "--url", "file://FIFO", "--dest", "adir"],
}


@pytest.mark.parametrize("argv", CASES.values(), ids=CASES.keys())
def test_bad_input_is_one_line_a_failure_and_leaves_nothing(workspace, argv, capsys):
    argv = [a.replace("FIFO", str(workspace / "fifo.png")) for a in argv]
    before = sorted(p.name for p in workspace.rglob("*"))
    try:
        code = main(argv)
    except SystemExit as exit:   # argparse refuses a flag's value before the command runs
        code = exit.code
    err = capsys.readouterr().err
    assert code != 0
    command = " ".join(argv[:2]) if argv[0] == "data" else argv[0]   # a verb: data fetch
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith((f"facedetect {command}: ", "facedetect: error")), err
    assert sorted(p.name for p in workspace.rglob("*")) == before


# Round 3 classes whose right answer is not a refusal, or that need a process of their own.

def _faces_picture(workspace: Path) -> None:
    """``eval/faces.png``: a folder of its own (the workspace's other pictures are bad)."""
    (workspace / "eval").mkdir()
    Image.fromarray(np.random.default_rng(2).integers(0, 256, (60, 80), np.uint8)).save(
        workspace / "eval" / "faces.png")


def test_r3_1_an_edited_cascade_checkpoint_is_one_line(workspace, capsys):
    """Trained for real, then its checkpoint edited with a recomputed checksum."""
    argv = ["train", "--stages", "1", *TOY, "--min-hit-rate", "0.9", "--out", "c.json"]
    assert main(argv) == 0
    document = json.loads(Path("c.json").read_text())
    del document["training"]["cascade_stages"][0]["false_alarm_rate"]
    Path("c.json.checkpoint.json").write_text(json.dumps(reseal(document)))
    capsys.readouterr()
    assert main([*argv, "--resume"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "stage record 1 has no false_alarm_rate" in err, err


def test_r3_5_a_face_past_the_border_is_clipped_and_one_wholly_outside_skipped(workspace,
                                                                             capsys):
    _faces_picture(workspace)
    Path("border.txt").write_text("faces.png 60 40 120 100\nfaces.png 90 70 120 100\n"
                                  "faces.png 10 10 40 40\n")
    assert main(["evaluate-images", "eval", "--annotations", "border.txt", "--quiet",
                 "--json"]) == 0
    captured = capsys.readouterr()
    assert json.loads(captured.out)["faces"] == 2            # clipped, skipped, kept
    lines = captured.err.strip().splitlines()
    assert any("clipped to the image" in line for line in lines), lines
    assert any("(90, 70, 120, 100) lies wholly outside the 80x60 image; skipped" in line
               for line in lines), lines


def test_r3_7_a_curve_name_is_taken_as_given(workspace, capsys):
    pytest.importorskip("matplotlib")
    _faces_picture(workspace)
    Path("one.txt").write_text("faces.png 10 10 40 40\n")
    assert main(["evaluate-images", "eval", "--annotations", "one.txt", "--quiet", "--curve",
                 "X.csv"]) == 0
    assert Path("X.csv").is_file() and Path("X.png").is_file()
    assert not Path("X.csv.csv").exists()


@pytest.mark.parametrize("cost, prior", [((1, 1e6), 1e-12), ((5e-324, 1e-323), 1e-12),
                                         ((1e300, 1e300), 0.999999999999)])
def test_r3_8_operating_points_at_the_extremes_are_finite(cost, prior):
    from facedetect.training._operating_point import choose_operating_point
    rng = np.random.default_rng(0)
    labels = np.r_[np.zeros(60), np.ones(40)]
    scores = rng.normal(2 * labels - 1)
    for rule, calibration in (("probability", "sigmoid"), ("probability", "isotonic"),
                              ("expected-cost", None)):
        point = choose_operating_point(scores, labels, cost, prior=prior, rule=rule,
                                       calibration=calibration)
        assert np.isfinite(point.threshold) and np.isfinite(point.expected_cost)


def test_r3_11_a_silent_scheduler_is_refused_within_the_limit():
    import socket
    import time
    from facedetect.errors import FacedetectError
    from facedetect.training._cluster import handshake
    pytest.importorskip("distributed")
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen(1)
        start = time.perf_counter()
        with pytest.raises(FacedetectError, match="accepted the connection but did not "
                                                  "answer the Dask handshake within 1 s"):
            handshake(f"tcp://127.0.0.1:{server.getsockname()[1]}", timeout=1)
        assert time.perf_counter() - start < 10


def test_r3_12_shipped_names_and_every_command_described(workspace, capsys):
    from facedetect.cli._main import build_parser
    assert main(["show", "default", "--out", "f.png"]) == 0
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices
    for name, command in commands.items():
        assert command.description, name
        for action in command._actions:
            assert action.help or not action.option_strings, (name, action.option_strings)


def test_r3_16_empty_feature_values_are_refused_not_read_past():
    from facedetect.training._binned import quantile_bins
    with pytest.raises(ValueError, match="at least one sample"):
        quantile_bins(np.empty((5, 0), np.float32))


def test_r3_4_an_interrupt_at_any_moment_is_one_line_and_130(workspace):
    """SIGINT to the installed program from the first instant to the work itself."""
    import shutil
    import signal
    import subprocess
    import sys
    import time
    program = Path(sys.executable).parent / "train-detector"
    if not program.exists() and shutil.which("train-detector") is None:
        pytest.skip("train-detector is not installed (pip install -e .)")
    program = program if program.exists() else Path(shutil.which("train-detector"))
    argv = [str(program), "--stages", "2", *TOY, "--min-hit-rate", "0.9", "--out", "c.json"]
    for delay in (0.05, 0.4, 1.0, 1.6):
        process = subprocess.Popen(argv, stderr=subprocess.PIPE, text=True)
        time.sleep(delay)
        process.send_signal(signal.SIGINT)
        err = process.communicate(timeout=120)[1]
        if process.returncode == 0:       # finished before the signal came
            Path("c.json").unlink()
            continue
        if process.returncode == -signal.SIGINT or (
                process.returncode == 1 and err.startswith("Fatal Python error: init_")):
            # Before Python has started (its own site import) or installed its handler,
            # the signal ends the process as Python itself decides, before any line of
            # facedetect ran: all the program can guarantee is that nothing is left.
            assert (process.returncode < 0 or "KeyboardInterrupt" in err) and \
                not Path("c.json.lock").exists(), (delay, err)
            continue
        assert process.returncode == 130 and "Traceback" not in err, (delay, err)
        assert len(err.strip().splitlines()) == 1, (delay, err)
        for name in ("c.json", "c.json.lock"):
            assert not Path(name).exists(), (delay, name)
        Path("c.json.checkpoint.json").unlink(missing_ok=True)


def _interrupt_reported_as(error: Exception):
    """A function that gets a Ctrl-C and reports it as ``error``, as C code may."""
    import os
    import signal
    import time

    def interrupted(*args):
        try:
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)
        except KeyboardInterrupt:
            raise error from None
    return interrupted


@pytest.mark.parametrize("where", ["import", "work"])
def test_an_interrupt_that_c_code_turned_into_an_error_is_still_130(where, monkeypatch, capsys):
    # numpy's C import code reports a Ctrl-C during its import as an ImportError; scipy's
    # FFT, imported lazily once the work runs, as "initialization failed".
    import signal
    import types
    from facedetect.cli import _launch as launch
    if where == "import":
        import_module = _interrupt_reported_as(
            ImportError('PyCapsule_Import could not import module "datetime"'))
    else:
        work = _interrupt_reported_as(ImportError("initialization failed"))
        def import_module(name):
            return types.SimpleNamespace(main=work)
    monkeypatch.setattr(launch.importlib, "import_module", import_module)
    monkeypatch.setattr(sys, "unraisablehook", sys.unraisablehook)   # set back afterwards
    previous = signal.getsignal(signal.SIGINT)
    try:
        assert launch.train_detector() == 130
    finally:
        signal.signal(signal.SIGINT, previous)
    assert capsys.readouterr().err == "train-detector: interrupted\n"


def test_after_an_interrupt_compiler_finalizer_errors_are_not_reported(monkeypatch):
    # An interrupt inside numba's compiler leaves llvmlite objects whose __del__ fails at
    # exit, after the one "interrupted" line: that is dropped, anything else still reported.
    import types
    from facedetect._utils.interrupts import quiet_compiler_finalizers
    seen = []
    monkeypatch.setattr(sys, "unraisablehook", seen.append)
    quiet_compiler_finalizers()

    def finalizer():
        pass
    for module in ("llvmlite.binding.ffi", "numba.core.dispatcher", "facedetect.modelfile._io"):
        finalizer.__module__ = module
        sys.unraisablehook(types.SimpleNamespace(object=finalizer, exc_type=AttributeError))
    assert [u.object.__module__ for u in seen] == ["facedetect.modelfile._io"]
