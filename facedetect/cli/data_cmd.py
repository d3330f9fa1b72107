"""``facedetect data info`` and ``facedetect data fetch``."""

from __future__ import annotations

import argparse
import sys

from ..data import fetch_cbcl
from ..data.fetch import DEFAULT_URL, check_url, expected_sha256, normalize_sha256
from ..errors import FacedetectError
from .common import print_json


def add_parser(subparsers) -> None:
    data = subparsers.add_parser("data", help="find, describe and download the CBCL data")
    verbs = data.add_subparsers(dest="data_command", required=True, metavar="{info,fetch}")
    info = verbs.add_parser("info", help="where the CBCL data is, counts, archive checksum")
    info.add_argument("--data", help="CBCL folder or faces.tar.gz")
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
    from ..data import load_cbcl
    data = load_cbcl(args.data, splits=("train", "test"))
    report = {"source": str(data.source.resolve()), "archive_sha256": data.archive_sha256,
              "counts": data.counts, "total": int(len(data.labels)),
              "ignored_non_image_files": data.ignored}
    if args.json:
        print_json(report)
        return 0
    print(f"CBCL data: {report['source']}")
    if data.archive_sha256:
        print(f"archive sha256: {data.archive_sha256}")
    for split, per_class in data.counts.items():
        print(f"  {split:5s}  face {per_class['face']:6d}   non-face {per_class['non-face']:6d}")
    print(f"  total  {report['total']} windows of 19x19")
    if data.ignored:
        print(f"  ignored {data.ignored} non-image file(s)")
    return 0


def _fetch_command(args: argparse.Namespace) -> int:
    check_url(args.url)  # before the note below, so a bad URL is the only line printed
    sha256 = expected_sha256(args.url, args.sha256)
    if sha256 is None:
        print(f"{args.prog}: note: no SHA-256 is published for this archive; only its "
              f"content (the official image counts) is checked", file=sys.stderr)
    target = fetch_cbcl(args.url, args.dest, sha256=sha256, progress=not args.quiet)
    print(f"saved and checked {target}")
    return 0
