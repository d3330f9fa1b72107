"""The MIT CBCL face database #1: the unpacked folders or the official nested archive."""

from __future__ import annotations

import hashlib
import io
import tarfile
import zlib
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

import numpy as np
from PIL import Image, UnidentifiedImageError

from ..images import to_grey
from ..errors import FacedetectError
from .locate import ARCHIVE_NAME, find_cbcl

WINDOW = 19
CLASSES = ("face", "non-face")
SPLITS = ("train", "test")
IMAGE_SUFFIXES = (".pgm", ".png", ".bmp", ".tif", ".tiff", ".jpg", ".jpeg", ".gif")
# The counts of the official archive; a download that differs is not the CBCL set.
OFFICIAL_COUNTS = {"train": {"face": 2429, "non-face": 4548},
                   "test": {"face": 472, "non-face": 23573}}
# Archive members are read into memory, so their header sizes are bounded before reading:
# a 19x19 PGM is about 400 bytes, and the official nested face.test.tar.gz a few MB.
MAX_WINDOW_BYTES = 1 << 20
MAX_NESTED_BYTES = 256 << 20
# All windows of a split together: CBCL's take 3 MB, so 256 MiB is a data set 80x larger.
MAX_TOTAL_BYTES = 256 << 20


@dataclass
class CBCLData:
    """Windows of one or more CBCL splits.

    Attributes
    ----------
    images : (N, 19, 19) uint8 array
    labels : (N,) int8 array, 1 for face, 0 for non-face
    names : list of str, ``split/class/file`` per image
    source : Path, the folder or archive read
    ignored : int, files skipped because they are not images
    archive_sha256 : str or None
    """

    images: np.ndarray
    labels: np.ndarray
    names: list[str]
    source: Path
    ignored: int = 0
    archive_sha256: str | None = None
    counts: dict = field(default_factory=dict)

    def fingerprint(self) -> str:
        """sha256 over names, labels and pixels: identifies exactly the data trained on."""
        digest = hashlib.sha256()
        digest.update("\n".join(self.names).encode())
        digest.update(self.labels.tobytes())
        digest.update(np.ascontiguousarray(self.images).tobytes())
        return digest.hexdigest()


def _pgm_header(data: bytes) -> tuple[int, int, int, int] | None:
    """``(width, height, maxval, offset)`` of a binary PGM, or None if it is not one."""
    if not data.startswith(b"P5"):
        return None
    fields, pos = [], 2
    while len(fields) < 3:
        while pos < len(data) and data[pos:pos + 1].isspace():
            pos += 1
        if data[pos:pos + 1] == b"#":
            pos = data.find(b"\n", pos) + 1 or len(data)
            continue
        start = pos
        while pos < len(data) and data[pos:pos + 1].isdigit():
            pos += 1
        if start == pos:
            return None
        fields.append(int(data[start:pos]))
    return (*fields, pos + 1)


def decode_window(data: bytes, name: str) -> np.ndarray:
    """One 19x19 grey window from the bytes of an image file, or a FacedetectError.

    The pixels are those ``detect`` reads from the same file (Pillow, then
    :func:`~facedetect.images.to_grey`), whatever the PGM maxval: a model must
    see the same grey levels in training and in detection. 8-bit PGM with maxval 255
    (all of CBCL) is parsed directly, 30x faster than Pillow, to the same pixels.
    """
    header = _pgm_header(data)
    if header is None:
        return _decode_with_pillow(data, name)
    width, height, maxval, offset = header
    if (width, height) != (WINDOW, WINDOW):
        raise FacedetectError(f"{name}: image is {width}x{height}, "
                              f"expected {WINDOW}x{WINDOW}")
    if not 1 <= maxval <= 65535:
        raise FacedetectError(f"{name}: PGM maxval {maxval} is outside 1..65535")
    size = width * height * (2 if maxval > 255 else 1)  # 2-byte big-endian above 255
    pixels = data[offset:offset + size]
    if len(pixels) != size:
        raise FacedetectError(f"{name}: truncated PGM ({len(pixels)} of {size} pixel bytes)")
    if maxval == 255:
        return np.frombuffer(pixels, dtype=np.uint8).reshape(height, width)
    # Pillow stretches other maxvals (8-bit to 0..255, wider to 0..65535) and to_grey then
    # scales; doing the same arithmetic here would drift whenever either changes.
    return _decode_with_pillow(data, name)


def _decode_with_pillow(data: bytes, name: str) -> np.ndarray:
    try:
        with Image.open(io.BytesIO(data)) as image:
            if image.size != (WINDOW, WINDOW):
                raise FacedetectError(f"{name}: image is {image.size[0]}x{image.size[1]}, "
                                      f"expected {WINDOW}x{WINDOW}")
            image.load()
            return to_grey(image)
    except UnidentifiedImageError:
        # Pillow's own text names the in-memory buffer (``<_io.BytesIO object at ...>``).
        raise FacedetectError(f"{name}: not a readable image (unknown format)") from None
    except (OSError, SyntaxError, ValueError) as error:
        raise FacedetectError(f"{name}: not a readable image ({error})") from None


def _is_image_name(name: str) -> bool:
    return name.lower().endswith(IMAGE_SUFFIXES)


def _read_folder(root: Path, split: str):
    """``(class, name, bytes, where)`` entries, and the count of non-image files."""
    ignored = total = 0
    entries = []
    for cls in CLASSES:
        folder = root / split / cls
        if not folder.is_dir():
            continue
        for path in sorted(folder.iterdir()):
            if path.is_file() and _is_image_name(path.name):
                total += _checked_size(path.stat().st_size, total, str(path))
                entries.append((cls, f"{split}/{cls}/{path.name}", path.read_bytes(),
                                str(path)))
            else:
                ignored += 1
    return entries, ignored


def _checked_size(size: int, total: int, label: str) -> int:
    """``size``, once it is known to fit a window and the split's budget: checked before
    a byte is read, so a huge or sparse file cannot fill memory."""
    if size > MAX_WINDOW_BYTES:
        raise FacedetectError(f"{label}: {size:,} bytes, over the window limit of "
                              f"{MAX_WINDOW_BYTES:,}")
    if total + size > MAX_TOTAL_BYTES:
        raise FacedetectError(f"{label}: the windows pass the limit of {MAX_TOTAL_BYTES:,} "
                              "bytes in all; this is not a window data set")
    return size


def _nested_names(split: str) -> tuple[str, ...]:
    return f"face.{split}.tar.gz", f"face.{split}.tgz", f"face.{split}.tar"


def _read_archive(archive: Path, split: str):
    """Entries of ``split`` from the official ``faces.tar.gz``, which nests one tarball per split.

    A plain tarball of the unpacked layout (``train/face/...``) is read as well. Every
    member is checked by its header before it is read: names must stay inside the
    archive, windows and nested archives are bounded in size.
    """
    where = str(archive)  # what a tar error names: the archive, or the nested one being read
    try:
        with tarfile.open(archive, "r:*") as outer, ExitStack() as stack:
            tars = []
            for member in _members(outer, where):
                if member.isfile() and member.name.endswith(_nested_names(split)):
                    where = _member_label(archive, member)
                    data = _member_bytes(outer, member, where, MAX_NESTED_BYTES,
                                         "a nested archive")
                    inner = tarfile.open(fileobj=io.BytesIO(data), mode="r:*")
                    tars.append((stack.enter_context(inner), where))
            tars.append((outer, str(archive)))
            entries, ignored = [], 0
            for tar, where in tars:
                found, skipped = _split_entries(tar, where, split)
                entries += found
                ignored += skipped
    except (tarfile.TarError, OSError, EOFError, zlib.error) as error:
        raise FacedetectError(f"{where}: not a readable tar.gz archive "
                              f"({_tar_reason(error)})") from None
    entries.sort(key=lambda entry: (CLASSES.index(entry[0]), entry[1]))
    return entries, ignored


def _split_entries(tar: tarfile.TarFile, where: str, split: str):
    """The windows of ``split`` in one tarball, and the count of non-image files."""
    entries, ignored, total = [], 0, 0
    for member in _members(tar, where):
        parts = PurePosixPath(member.name).parts
        if not member.isfile() or split not in parts:
            continue
        rest = parts[parts.index(split) + 1:]
        if len(rest) != 2 or rest[0] not in CLASSES:
            continue
        if not _is_image_name(rest[1]):
            ignored += 1
            continue
        label = _member_label(where, member)
        total += _checked_size(member.size, total, label)
        data = _member_bytes(tar, member, label, MAX_WINDOW_BYTES, "a window")
        entries.append((rest[0], f"{split}/{rest[0]}/{rest[1]}", data, label))
    return entries, ignored


def _members(tar: tarfile.TarFile, where: str) -> list[tarfile.TarInfo]:
    """All members, refusing the archive if a name is absolute or climbs out with ``..``:
    the official archive has none, and such a name must not pass for a training image."""
    members = tar.getmembers()
    for member in members:
        path = PurePosixPath(member.name)
        if path.is_absolute() or ".." in path.parts:
            raise FacedetectError(f"{_member_label(where, member)}: absolute path or '..' "
                                  f"in the name; refusing the archive")
    return members


def _member_bytes(tar: tarfile.TarFile, member: tarfile.TarInfo, label: str, limit: int,
                  what: str) -> bytes:
    """The bytes of a member whose header size is at most ``limit`` (checked unread)."""
    if member.size > limit:
        raise FacedetectError(f"{label}: {member.size:,} bytes, above the limit of "
                              f"{limit:,} for {what}")
    return tar.extractfile(member).read()


def _member_label(where: str, member: tarfile.TarInfo) -> str:
    """``archive: member 'name'``; repr keeps a name with odd characters on one line."""
    return f"{where}: member {member.name!r}"


def _tar_reason(error: Exception) -> str:
    """One line: tarfile's "r:*" error lists every compression tried, one per line."""
    if isinstance(error, tarfile.ReadError) and "could not be opened" in str(error):
        return "not a tar, tar.gz, tar.bz2 or tar.xz file"
    return " ".join(str(error).split()) or type(error).__name__


def _archive_in(path: Path) -> Path | None:
    if path.is_file():
        return path
    candidate = path / ARCHIVE_NAME
    if candidate.is_file() and not (path / "train").is_dir():
        return candidate
    return None


def sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def load_cbcl(path: str | Path | None = None, splits=("train",)) -> CBCLData:
    """Load CBCL windows from a folder or archive found by :func:`find_cbcl`.

    Parameters
    ----------
    path : path, optional
        ``--data``: a CBCL folder, a folder holding ``faces.tar.gz``, or the archive.
    splits : sequence of {"train", "test"}
        Splits to read, concatenated in this order. A split that is absent is skipped;
        if none of them holds any image, that is an error.

    Raises
    ------
    FacedetectError
        No data, a corrupt or wrongly sized image (naming the file), or an empty folder.
    """
    if isinstance(splits, str):
        splits = (splits,)
    for split in splits:
        if split not in SPLITS:
            raise FacedetectError(f"unknown CBCL split {split!r}; choose from {SPLITS}")
    source = find_cbcl(path)
    archive = _archive_in(source)
    images, labels, names, counts, ignored = [], [], [], {}, 0
    for split in splits:
        entries, skipped = (_read_archive(archive, split) if archive
                            else _read_folder(source, split))
        ignored += skipped
        for cls, name, data, where in entries:
            images.append(decode_window(data, where))
            labels.append(1 if cls == "face" else 0)
            names.append(name)
            counts.setdefault(split, {c: 0 for c in CLASSES})[cls] += 1
    if not images:
        raise FacedetectError(f"{source}: no CBCL images found for split(s) "
                              f"{', '.join(splits)} (expected {'/'.join(splits)}/face/*.pgm "
                              f"and .../non-face/*.pgm)")
    return CBCLData(np.stack(images), np.asarray(labels, dtype=np.int8), names, source,
                    ignored, sha256_file(archive) if archive else None, counts)
