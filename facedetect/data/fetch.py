"""Download the official CBCL archive (only when the user asks), check it, write it atomically."""

from __future__ import annotations

import os
import socket
import tarfile
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from tqdm.auto import tqdm

from ..errors import FacedetectError
from .cbcl import CLASSES, OFFICIAL_COUNTS, load_cbcl
from .locate import ARCHIVE_NAME, user_cache_dir

DEFAULT_URL = "http://cbcl.mit.edu/projects/cbcl/software-datasets/faces.tar.gz"


def check_archive(path: Path) -> dict:
    """Read the archive as the loader would and compare its counts with the official ones.

    A split that is present must have the official counts; the training split must be
    present. Returns the counts per split and class.
    """
    data = load_cbcl(path, splits=("train", "test"))
    counts = data.counts
    if "train" not in counts:
        raise FacedetectError(f"{path}: archive has no train split")
    for split, per_class in counts.items():
        for cls in CLASSES:
            expected = OFFICIAL_COUNTS[split][cls]
            if per_class[cls] != expected:
                raise FacedetectError(f"{path}: {split}/{cls} has {per_class[cls]} images, "
                                      f"the official archive has {expected}")
    return counts


def fetch_cbcl(url: str = DEFAULT_URL, dest: str | Path | None = None, *,
               progress: bool = True, timeout: float = 30.0) -> Path:
    """Download ``faces.tar.gz`` into ``dest`` (default: the user cache's ``cbcl`` folder).

    The download goes to a temporary file in the same folder, is checked with
    :func:`check_archive`, and only then renamed into place, so an interrupted or bad
    download never leaves a half file under the final name.
    """
    dest = Path(dest) if dest is not None else user_cache_dir() / "cbcl"
    dest.mkdir(parents=True, exist_ok=True)
    target = dest / ARCHIVE_NAME
    handle, temp_name = tempfile.mkstemp(prefix=".faces-", suffix=".tar.gz.part", dir=dest)
    temp = Path(temp_name)
    try:
        with os.fdopen(handle, "wb") as out:
            try:
                response = urllib.request.urlopen(url, timeout=timeout)
            except (urllib.error.URLError, socket.timeout, ConnectionError) as error:
                reason = getattr(error, "reason", error)
                raise FacedetectError(f"cannot download {url}: no network or server "
                                      f"unreachable ({reason})") from None
            with response:
                total = int(response.headers.get("Content-Length") or 0) or None
                with tqdm(total=total, unit="B", unit_scale=True, desc=ARCHIVE_NAME,
                          disable=not progress) as bar:
                    for block in iter(lambda: response.read(1 << 16), b""):
                        out.write(block)
                        bar.update(len(block))
        if not tarfile.is_tarfile(temp):
            raise FacedetectError(f"{url}: the download is not a tar archive")
        check_archive(temp)
        os.replace(temp, target)
    finally:
        temp.unlink(missing_ok=True)
    return target
