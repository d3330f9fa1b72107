"""Download the official CBCL archive (only when the user asks), check it, write it atomically."""

from __future__ import annotations

import hashlib
import http.client
import os
import re
import tarfile
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path


from ..errors import FacedetectError
from ._locate import ARCHIVE_NAME, user_cache_dir

# https keeps the download private and unaltered in transit, but the integrity check does
# not rely on the transport: a pinned SHA-256 where one is known, the official image
# counts always, for https, http and file:// sources alike.
DEFAULT_URL = "https://cbcl.mit.edu/projects/cbcl/software-datasets/faces.tar.gz"
# SHA-256 of archives by URL, where a trustworthy digest is known. MIT publishes none for
# faces.tar.gz, so it has no entry: only its content is checked (or pass --sha256).
KNOWN_SHA256: dict[str, str] = {}
# file:// lets an offline machine install a copy carried over by hand.
SCHEMES = ("https", "http", "file")
# The official archive is a few MB; this refuses an endless or mistaken download early.
MAX_DOWNLOAD_BYTES = 512 << 20


def check_archive(path: Path) -> dict:
    """Read the archive as the loader would and compare its counts with the official ones.

    A split that is present must have the official counts; the training split must be
    present. Returns the counts per split and class.

    Parameters
    ----------
    path : pathlib.Path
        A ``faces.tar.gz`` as MIT CBCL publishes it.

    Returns
    -------
    dict
        ``{split: {"face": n, "non-face": n}}``.

    Raises
    ------
    FacedetectError
        An archive without the train split or with other counts than CBCL's.

    See Also
    --------
    fetch_cbcl : downloads the archive and checks it.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> check_archive(Path(tempfile.mkdtemp()) / "faces.tar.gz")
    Traceback (most recent call last):
        ...
    facedetect.errors.DataNotFoundError: ...
    """
    from ._cbcl import CLASSES, OFFICIAL_COUNTS, load_cbcl   # OpenCV and Pillow: on use
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


def normalize_sha256(text: str) -> str:
    """``text`` as 64 lower-case hex digits, or a FacedetectError."""
    digest = text.strip().lower()
    if not re.fullmatch(r"[0-9a-f]{64}", digest):
        raise FacedetectError(f"a SHA-256 is 64 hexadecimal digits, got {text!r}")
    return digest


def expected_sha256(url: str, given: str | None = None) -> str | None:
    """The SHA-256 a download from ``url`` must have: ``given``, else the known one, else None."""
    return normalize_sha256(given) if given else KNOWN_SHA256.get(url)


def check_url(url: str) -> None:
    """Refuse schemes other than https, http and file (urllib would also take ftp, data)."""
    scheme = urllib.parse.urlsplit(url).scheme.lower()
    if scheme not in SCHEMES:
        raise FacedetectError(f"{url}: unsupported URL scheme {scheme or '(none)'!r}; use "
                              f"{', '.join(SCHEMES)} (file:// for a local copy)")
    _check_local_source(url)


def fetch_cbcl(url: str = DEFAULT_URL, dest: str | Path | None = None, *,
               sha256: str | None = None, progress: bool = True,
               timeout: float = 30.0) -> Path:
    """Download ``faces.tar.gz`` into ``dest`` (default: the user cache's ``cbcl`` folder).

    Parameters
    ----------
    url : str
        https, http or file URL of the archive.
    dest : path, optional
        Folder to write ``faces.tar.gz`` to; created if need be.
    sha256 : str, optional
        Expected SHA-256 of the archive; default: :data:`KNOWN_SHA256` for ``url``, if any.

    The download goes to a temporary file in ``dest``, is checked (SHA-256 if known,
    :func:`check_archive` always), and only then renamed into place, so an interrupted or
    bad download never leaves a half file under the final name. On failure the temporary
    file and any folder this call created are removed.

    progress : bool
        A download progress bar on stderr.
    timeout : float
        Seconds to wait for the server.

    Returns
    -------
    pathlib.Path
        The checked archive.

    Raises
    ------
    FacedetectError
        A download that fails or an archive whose checksum or contents are wrong.

    See Also
    --------
    check_archive : the checksum it applies.
    load_cbcl : read what it unpacked.

    Examples
    --------
    >>> fetch_cbcl("ftp://example.org/faces.tar.gz")
    Traceback (most recent call last):
        ...
    facedetect.errors.FacedetectError: ...
    """
    check_url(url)
    expected = expected_sha256(url, sha256)
    dest = Path(dest) if dest is not None else user_cache_dir() / "cbcl"
    created = _make_folders(dest)
    try:
        target = _fetch_into(url, dest, expected, progress, timeout)
    except BaseException:  # Ctrl-C too: leave the file system as it was
        _remove_folders(created)
        raise
    return target


def _fetch_into(url: str, dest: Path, expected: str | None, progress: bool,
                timeout: float) -> Path:
    target = dest / ARCHIVE_NAME
    if target.is_dir():
        raise FacedetectError(f"{target} is a folder; cannot write the archive there")
    try:
        handle, temp_name = tempfile.mkstemp(prefix=".faces-", suffix=".tar.gz.part",
                                             dir=dest)
    except OSError as error:
        raise FacedetectError(f"cannot write in {dest} ({error.strerror or error})") from None
    temp = Path(temp_name)
    try:
        with os.fdopen(handle, "wb") as out:
            digest = _download(url, out, progress, timeout)
        if expected is not None and digest != expected:
            raise FacedetectError(f"{url}: SHA-256 of the download is {digest}, expected "
                                  f"{expected}; refusing it")
        if not tarfile.is_tarfile(temp):
            raise FacedetectError(f"{url}: the download is not a tar archive")
        check_archive(temp)
        os.replace(temp, target)
    finally:
        temp.unlink(missing_ok=True)
    return target


def _make_folders(dest: Path) -> list[Path]:
    """Create ``dest`` and missing parents; return those created, outermost first."""
    missing, created, folder = [], [], dest
    try:
        while not folder.exists() and folder.parent != folder:
            missing.append(folder)
            folder = folder.parent
        for folder in reversed(missing):
            folder.mkdir()
            created.append(folder)
    except OSError as error:
        _remove_folders(created)
        raise FacedetectError(f"cannot create folder {dest} "
                              f"({error.strerror or error})") from None
    if not dest.is_dir():
        raise FacedetectError(f"{dest} is not a folder")
    return created


def _remove_folders(created: list[Path]) -> None:
    """Remove folders made by this call, innermost first, if they are still empty."""
    for folder in reversed(created):
        try:
            folder.rmdir()
        except OSError:  # something else was put there meanwhile: leave it
            return


class _HttpRedirectsOnly(urllib.request.HTTPRedirectHandler):
    """Follow redirects to http(s) only (urllib's own handler would follow one to ftp)."""

    def redirect_request(self, req, fp, code, msg, headers, newurl):
        if urllib.parse.urlsplit(newurl).scheme.lower() not in ("http", "https"):
            raise urllib.error.HTTPError(newurl, code, f"redirect to {newurl} refused",
                                         headers, fp)
        return super().redirect_request(req, fp, code, msg, headers, newurl)


def _check_local_source(url: str) -> None:
    """A file:// source is a regular file: a pipe or a device would block the read, or
    never end."""
    if urllib.parse.urlsplit(url).scheme.lower() != "file":
        return
    from .._utils.files import check_regular_file
    try:
        check_regular_file(urllib.request.url2pathname(urllib.parse.urlsplit(url).path))
    except IsADirectoryError:
        raise FacedetectError(f"cannot read {url} (a folder)") from None


def _open(url: str, timeout: float):
    _check_local_source(url)
    try:
        return urllib.request.build_opener(_HttpRedirectsOnly).open(url, timeout=timeout)
    except urllib.error.HTTPError as error:
        raise FacedetectError(f"cannot download {url}: {error.code} {error.reason}") from None
    except (urllib.error.URLError, OSError, http.client.HTTPException) as error:
        reason = getattr(error, "reason", error)
        if urllib.parse.urlsplit(url).scheme.lower() == "file":
            raise FacedetectError(f"cannot read {url} ({reason})") from None
        raise FacedetectError(f"cannot download {url}: no network or server "
                              f"unreachable ({reason})") from None


def _download(url: str, out, progress: bool, timeout: float) -> str:
    """Stream ``url`` into ``out``, refusing it past :data:`MAX_DOWNLOAD_BYTES`; its SHA-256."""
    limit, digest, size = MAX_DOWNLOAD_BYTES, hashlib.sha256(), 0
    too_big = f"{url}: the download is larger than the limit of {limit:,} bytes"
    with _open(url, timeout) as response:
        total = int(response.headers.get("Content-Length") or 0) or None
        if total is not None and total > limit:
            raise FacedetectError(too_big)
        from .._utils.progress import progress_bar
        with progress_bar(total=total, unit="B", unit_scale=True, desc=ARCHIVE_NAME,
                  disable=not progress) as bar:
            for block in _blocks(response, url):
                size += len(block)
                if size > limit:  # checked per block: a server may omit or lie in the length
                    raise FacedetectError(too_big)
                digest.update(block)
                out.write(block)
                bar.update(len(block))
    return digest.hexdigest()


def _blocks(response, url: str):
    """The response in 64 KB blocks; a broken connection is a FacedetectError."""
    while True:
        try:
            block = response.read(1 << 16)
        except (OSError, http.client.HTTPException) as error:
            raise FacedetectError(f"download of {url} failed ({error})") from None
        if not block:
            return
        yield block
