import json
import os
import subprocess
import sys

import pytest


import facedetect


def run_cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "facedetect", *args], capture_output=True,
                          text=True, env={**os.environ, **(env or {})}, timeout=120)


def test_version_and_help():
    result = run_cli("--version")
    assert result.returncode == 0
    assert result.stdout.strip() == f"facedetect {facedetect.__version__}"
    assert "data" in run_cli("--help").stdout


HEAVY = ("cv2", "numba", "sklearn", "scipy", "PIL", "skimage", "matplotlib", "dask")
READ_FLAGS = r"""
import contextlib, io, sys
from facedetect.cli import (_main as main, _train_cmd as train_cmd, _detect_cmd as detect_cmd,
                            _evaluate_cmd as evaluate_cmd)
for argv, entry in ((["--version"], main.main), (["--help"], main.main),
                    (["train", "--bogus"], main.main), (["--help"], train_cmd.main),
                    (["--help"], detect_cmd.main), (["--help"], evaluate_cmd.main),
                    *[([name, "--help"], main.main) for name in
                      ("train", "detect", "evaluate", "evaluate-images", "sweep", "paper",
                       "show", "export-opencv", "data")]):
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            entry(argv)
        except SystemExit:
            pass
print(" ".join(sorted(name for name in HEAVY if name in sys.modules)) or "none")
"""


def test_reading_flags_loads_no_heavy_library():
    # --version, every --help and a mistyped flag answer without numba, OpenCV,
    # scikit-learn or SciPy: those load when a command runs (benchmarks/cli_startup.py
    # times it).
    out = subprocess.run([sys.executable, "-c", f"HEAVY = {HEAVY!r}\n" + READ_FLAGS],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["none"]


def test_data_info_on_shared_copy(cbcl_dir):
    result = run_cli("data", "info", "--data", str(cbcl_dir))
    assert result.returncode == 0, result.stderr
    assert "face   2429   non-face   4548" in result.stdout
    assert "6977 windows" in result.stdout


def test_missing_data_is_one_line_on_stderr(tmp_path):
    result = run_cli("data", "info", "--data", str(tmp_path / "missing"))
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "no CBCL face data found" in lines[0]


def test_usage_error_is_one_line():
    result = run_cli("data", "frobnicate")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1


def test_explicit_data_places_never_fall_through(tmp_path, monkeypatch, capsys):
    from facedetect.cli._main import main
    monkeypatch.setenv("FACEDETECT_DATA", str(tmp_path / "typo"))
    assert main(["data", "info"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "typo" in err[0] and "user cache" not in err[0]
    assert main(["paper", "--uci", str(tmp_path / "nope"), "--quick", "--quiet"]) == 1
    assert "no such UCI data folder" in capsys.readouterr().err


def test_non_finite_thresholds_are_refused(capsys):
    from facedetect.cli._main import main
    for argv in (["detect", "x.jpg", "--threshold", "nan"],
                 ["export-opencv", "m.json", "o.xml", "--threshold", "inf"],
                 ["evaluate", "m.json", "--threshold", "nan"]):
        with pytest.raises(SystemExit) as raised:
            main(argv)
        assert raised.value.code == 2
        assert "finite" in capsys.readouterr().err


@pytest.mark.parametrize("argv, message", [
    (["show", "m.json", "--out", "/nonexistent/f.png"], "does not exist"),
    (["show", "m.json", "--out", "."], "is a folder"),
    (["evaluate-images", ".", "--annotations", "a.txt", "--curve", "/nonexistent/c"],
     "does not exist"),
])
def test_outputs_are_checked_before_the_work(argv, message, capsys):
    from facedetect.cli._main import main
    assert main(argv) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and message in err[0]


def test_detect_output_names_are_unique(tmp_path):
    from facedetect.cli._detect_cmd import _output_names
    files = [tmp_path / "a.jpg", tmp_path / "a.png", tmp_path / "b" / "a.jpg", tmp_path / "c.jpg"]
    names = _output_names(files)
    assert len(set(names.values())) == 4
    assert names[files[0]] == "a_faces.png" and names[files[1]] == "a_png_faces.png"
    assert names[files[3]] == "c_faces.png"


def test_errors_carry_the_command_name(tmp_path):
    for argv, prefix in (([sys.executable, "-m", "facedetect", "evaluate", "missing.json"],
                          "facedetect evaluate: error:"),
                         ([sys.executable, "-c", "import sys; from facedetect.cli._evaluate_cmd "
                           "import main; sys.exit(main(['missing.json']))"],
                          "evaluate-detector: error:")):
        result = subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=tmp_path)
        assert result.returncode == 1 and result.stderr.startswith(prefix), result.stderr


def test_library_warnings_reach_the_user_as_one_line(capsys):
    import argparse
    import warnings

    from facedetect.cli._common import run_safely

    def noisy(args):
        warnings.warn("invalid value encountered\n  in divide", RuntimeWarning)
        warnings.warn("invalid value encountered\n  in divide", RuntimeWarning)
        return 0
    assert run_safely(noisy, argparse.Namespace(), "detect") == 0
    assert capsys.readouterr().err == "detect: warning: invalid value encountered in divide\n"


def test_an_interrupted_run_exits_130_with_how_to_resume(capsys):
    import argparse

    from facedetect.cli._common import run_safely
    from facedetect.errors import InterruptedRun

    def stopped(args):
        raise InterruptedRun("interrupted after 5 rounds; checkpoint saved to m.ckpt; run "
                             "again with --resume to finish")
    assert run_safely(stopped, argparse.Namespace(), "train-detector") == 130
    assert capsys.readouterr().err == ("train-detector: interrupted after 5 rounds; checkpoint "
                                       "saved to m.ckpt; run again with --resume to finish\n")


def test_data_info_describes_every_set(cbcl_dir, negatives_dir, capsys):
    # The faces and negatives reports count what training reads: the CSV's rows by
    # source (the loader's own count of the shared set: 26,980) and the negatives'
    # three parts (the splits training uses).
    from facedetect.cli._main import main
    from facedetect.data._negatives import (negative_files, split_negatives,
                                           split_training_negatives)
    from .conftest import needs_data
    faces = needs_data("faces", "faces.csv")
    assert main(["data", "info", "--data", str(cbcl_dir), "--faces", str(faces),
                 "--negatives", str(negatives_dir), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    with open(faces / "faces.csv", newline="") as handle:
        assert report["faces"]["rows"] == sum(1 for _ in handle) - 1
    assert sum(report["faces"]["by_source"].values()) == report["faces"]["rows"]
    training, held = split_negatives(negative_files(negatives_dir))
    mining, calibration = split_training_negatives(training)
    assert (report["negatives"]["held_out"], report["negatives"]["calibration"],
            report["negatives"]["mining"]) == (len(held), len(calibration), len(mining))


def test_data_info_says_which_sets_are_missing(cbcl_dir, tmp_path, monkeypatch, capsys):
    from facedetect.cli._main import main
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    for variable in ("FACEDETECT_FACES", "FACEDETECT_NEGATIVES"):
        monkeypatch.delenv(variable, raising=False)
    assert main(["data", "info", "--data", str(cbcl_dir)]) == 0
    out = capsys.readouterr().out
    assert "faces from the wild: none found" in out and "face-free pictures: none found" in out
    assert main(["data", "info", "--data", str(cbcl_dir), "--faces", str(tmp_path)]) == 1
    assert "no faces.csv" in capsys.readouterr().err


@pytest.mark.parametrize("variable", [None, "", "none", " None "])
def test_data_info_with_no_cbcl_anywhere_reports_every_set(variable, tmp_path, monkeypatch,
                                                           capsys):
    # A newcomer's first run: nothing named, nothing found. The report still covers the
    # other sets (it stopped at CBCL's error before), and the exit status says CBCL is
    # missing. Unset, empty and "none" (the search turned off) all name no place.
    from PIL import Image

    from facedetect.cli._main import main
    pictures = tmp_path / "pictures"
    pictures.mkdir()
    for k in range(3):
        Image.new("L", (40, 30), 40 * k).save(pictures / f"p{k}.png")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.delenv("FACEDETECT_FACES", raising=False)
    monkeypatch.setenv("FACEDETECT_NEGATIVES", str(pictures))
    if variable is None:
        monkeypatch.delenv("FACEDETECT_DATA", raising=False)
    else:
        monkeypatch.setenv("FACEDETECT_DATA", variable)
    assert main(["data", "info"]) == 1
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert lines[0].startswith("CBCL data: none found (--data, $FACEDETECT_DATA")
    assert "data fetch" in lines[0] and err == ""
    assert lines[1].startswith("faces from the wild: none found")
    assert lines[2] == f"face-free pictures: {pictures}"
    assert main(["data", "info", "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert {key: report[key] for key in ("source", "archive_sha256", "counts", "total",
                                         "ignored_non_image_files", "faces")} == dict.fromkeys(
        ("source", "archive_sha256", "counts", "total", "ignored_non_image_files", "faces"))
    assert report["negatives"]["folder"] == str(pictures)


def test_data_info_keeps_a_named_place_that_holds_nothing_an_error(tmp_path, monkeypatch,
                                                                   capsys):
    # Only a place the search takes as named is an error: whitespace is a path it tried.
    from facedetect.cli._main import main
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("FACEDETECT_DATA", "  ")
    assert main(["data", "info"]) == 1
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1
    assert "$FACEDETECT_DATA:   " in err
    monkeypatch.delenv("FACEDETECT_DATA")
    assert main(["data", "info", "--data", str(tmp_path / "absent")]) == 1
    out, err = capsys.readouterr()
    assert out == "" and "absent" in err and len(err.strip().splitlines()) == 1
