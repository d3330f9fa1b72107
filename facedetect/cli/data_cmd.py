"""``facedetect data info`` and ``facedetect data fetch``."""

from __future__ import annotations

import argparse

from ..data import fetch_cbcl, load_cbcl
from ..data.fetch import DEFAULT_URL
from .common import print_json


def add_parser(subparsers) -> None:
    data = subparsers.add_parser("data", help="find, describe and download the CBCL data")
    verbs = data.add_subparsers(dest="data_command", required=True, metavar="{info,fetch}")
    info = verbs.add_parser("info", help="where the CBCL data is, counts, archive checksum")
    info.add_argument("--data", help="CBCL folder or faces.tar.gz")
    info.add_argument("--json", action="store_true", help="print the report as JSON")
    info.set_defaults(func=info_command)
    fetch = verbs.add_parser("fetch", help="download the official faces.tar.gz (needs internet)")
    fetch.add_argument("--url", default=DEFAULT_URL, help=f"archive URL (default {DEFAULT_URL})")
    fetch.add_argument("--dest", help="folder to write faces.tar.gz to (default: user cache)")
    fetch.add_argument("--quiet", action="store_true", help="no progress bar")
    fetch.set_defaults(func=fetch_command)


def info_command(args: argparse.Namespace) -> int:
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


def fetch_command(args: argparse.Namespace) -> int:
    target = fetch_cbcl(args.url, args.dest, progress=not args.quiet)
    print(f"saved and checked {target}")
    return 0
