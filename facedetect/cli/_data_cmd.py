"""``facedetect data info`` (every data set found) and ``facedetect data fetch`` (CBCL)."""

from __future__ import annotations

import argparse
import sys

from ..data import fetch_cbcl
from ..data._fetch import DEFAULT_URL, check_url, expected_sha256, normalize_sha256
from ..errors import FacedetectError
from ._common import print_json


def add_parser(subparsers) -> None:
    data = subparsers.add_parser("data", help="find and describe the data sets; download CBCL")
    verbs = data.add_subparsers(dest="data_command", required=True, metavar="{info,fetch}")
    info = verbs.add_parser("info", help="where each data set is (CBCL, faces from the wild, "
                                         "face-free pictures), what it holds, checksums")
    info.add_argument("--data", help="CBCL folder or faces.tar.gz")
    info.add_argument("--faces", help="folder of faces from the wild with its faces.csv")
    info.add_argument("--negatives", help="folder of face-free pictures")
    info.add_argument("--json", action="store_true", help="print the report as JSON")
    info.set_defaults(func=_info_command)
    fetch = verbs.add_parser("fetch", help="download the official faces.tar.gz (needs internet)")
    fetch.add_argument("--url", default=DEFAULT_URL,
                       help=f"archive URL: https, http, or file:// for a copy on this machine "
                            f"(offline installs) (default {DEFAULT_URL})")
    fetch.add_argument("--sha256", metavar="HEX", type=_sha256_argument,
                       help="expected SHA-256 of the archive; a download that differs is "
                            "refused (none is published for the official archive)")
    fetch.add_argument("--dest", help="folder to write faces.tar.gz to (default: user cache)")
    fetch.add_argument("--quiet", action="store_true", help="no progress bar")
    fetch.set_defaults(func=_fetch_command)


def _sha256_argument(text: str) -> str:
    try:
        return normalize_sha256(text)
    except FacedetectError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _info_command(args: argparse.Namespace) -> int:
    from ..data._inventory import describe_faces, describe_negatives
    from ..data._negatives import find_negatives
    from ..data._wild_faces import find_faces_folder
    data = _searched_cbcl(args.data)
    # The same keys whether or not CBCL was found (null where not), for scripts.
    report = dict.fromkeys(("source", "archive_sha256", "counts", "total",
                            "ignored_non_image_files"))
    if data is not None:
        report.update(source=str(data.source.resolve()), archive_sha256=data.archive_sha256,
                      counts=data.counts, total=int(len(data.labels)),
                      ignored_non_image_files=data.ignored)
    faces, negatives = find_faces_folder(args.faces), find_negatives(args.negatives)
    report["faces"] = describe_faces(faces) if faces is not None else None
    report["negatives"] = describe_negatives(negatives) if negatives is not None else None
    if args.json:
        print_json(report)
    else:
        _print_cbcl(report)
        _print_faces(report["faces"])
        _print_negatives(report["negatives"])
    # Every recipe but the object cascade needs CBCL: without it the report is not a pass.
    return 0 if data is not None else 1


def _searched_cbcl(explicit: str | None):
    """CBCL's data, or None where the search found none in its usual places. A place the
    user named (``--data``, ``$FACEDETECT_DATA``) that holds none stays an error."""
    from ..data import load_cbcl
    from ..data._locate import names_a_place
    from ..errors import DataNotFoundError
    try:
        return load_cbcl(explicit, splits=("train", "test"))
    except DataNotFoundError:
        if names_a_place(explicit):
            raise
        return None


def _print_cbcl(report: dict) -> None:
    if report["source"] is None:
        return _none_found("CBCL data", "--data", "FACEDETECT_DATA", "cbcl",
                           "'facedetect data fetch' downloads it; every recipe but "
                           "object needs it")
    print(f"CBCL data: {report['source']}")
    if report["archive_sha256"]:
        print(f"archive sha256: {report['archive_sha256']}")
    for split, per_class in report["counts"].items():
        print(f"  {split:5s}  face {per_class['face']:6d}   non-face {per_class['non-face']:6d}")
    print(f"  total  {report['total']} windows of 19x19")
    if report["ignored_non_image_files"]:
        print(f"  ignored {report['ignored_non_image_files']} non-image file(s)")


def _none_found(what: str, flag: str, variable: str, name: str, without: str) -> None:
    """One line: the set was not found, every place looked (as the search looks), and
    what training does without it."""
    from ..data._locate import search_places
    looked = [flag, f"${variable}"] + [reason for reason, _ in
                                       search_places(None, flag, variable, name)
                                       if not reason.startswith("$")]
    print(f"{what}: none found ({', '.join(looked)}); {without}")


def _print_faces(faces: dict | None) -> None:
    if faces is None:
        return _none_found("faces from the wild", "--faces", "FACEDETECT_FACES", "faces",
                           "the faces and opencv recipes need them; --recipe cbcl "
                           "trains without")
    print(f"faces from the wild: {faces['folder']}")
    print(f"  faces.csv sha256: {faces['csv_sha256']}")
    by_source = ", ".join(f"{name} {count:,}" for name, count in faces["by_source"].items())
    print(f"  {faces['rows']:,} rows: {by_source}")


def _print_negatives(negatives: dict | None) -> None:
    if negatives is None:
        return _none_found("face-free pictures", "--negatives", "FACEDETECT_NEGATIVES",
                           "negatives", "training then mines scikit-image's 16 pictures")
    print(f"face-free pictures: {negatives['folder']}")
    print(f"  {negatives['pictures']:,} pictures, {negatives['bytes'] / 2**20:,.1f} MiB: "
          f"{negatives['mining']:,} mined, {negatives['calibration']:,} set the operating "
          f"points, {negatives['held_out']:,} held out to measure false alarms")


def _fetch_command(args: argparse.Namespace) -> int:
    check_url(args.url)  # before the note below, so a bad URL is the only line printed
    sha256 = expected_sha256(args.url, args.sha256)
    if sha256 is None:
        print(f"{args.prog}: note: no SHA-256 is published for this archive; only its "
              f"content (the official image counts) is checked", file=sys.stderr)
    target = fetch_cbcl(args.url, args.dest, sha256=sha256, progress=not args.quiet)
    print(f"saved and checked {target}")
    return 0
