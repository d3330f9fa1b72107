"""The MIT CBCL face database #1: the unpacked folders or the official nested archive."""

from __future__ import annotations

import hashlib
import io
import tarfile
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from PIL import Image, UnidentifiedImageError

from ..errors import FacedetectError
from .locate import ARCHIVE_NAME, find_cbcl

WINDOW = 19
CLASSES = ("face", "non-face")
SPLITS = ("train", "test")
IMAGE_SUFFIXES = (".pgm", ".png", ".bmp", ".tif", ".tiff", ".jpg", ".jpeg", ".gif")
# The counts of the official archive; a download that differs is not the CBCL set.
OFFICIAL_COUNTS = {"train": {"face": 2429, "non-face": 4548},
                   "test": {"face": 472, "non-face": 23573}}


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


def _pgm_header(data: bytes):
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

    8-bit binary PGM (all of CBCL) is parsed directly, 30x faster than Pillow; anything
    else goes through Pillow.
    """
    header = _pgm_header(data)
    if header is not None and header[2] < 256:
        width, height, _, offset = header
        if (width, height) != (WINDOW, WINDOW):
            raise FacedetectError(f"{name}: image is {width}x{height}, "
                                  f"expected {WINDOW}x{WINDOW}")
        pixels = data[offset:offset + width * height]
        if len(pixels) != width * height:
            raise FacedetectError(f"{name}: truncated PGM ({len(pixels)} of "
                                  f"{width * height} pixel bytes)")
        return np.frombuffer(pixels, dtype=np.uint8).reshape(height, width)
    try:
        with Image.open(io.BytesIO(data)) as image:
            image.load()
            if image.size != (WINDOW, WINDOW):
                raise FacedetectError(f"{name}: image is {image.size[0]}x{image.size[1]}, "
                                      f"expected {WINDOW}x{WINDOW}")
            if image.mode not in ("L", "P", "1"):
                image = image.convert("L")
            array = np.asarray(image.convert("L"), dtype=np.uint8)
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError) as error:
        raise FacedetectError(f"{name}: not a readable image ({error})") from None
    return array


def _is_image_name(name: str) -> bool:
    return name.lower().endswith(IMAGE_SUFFIXES)


def _read_folder(root: Path, split: str):
    """Yield ``(class, name, bytes)`` and count non-image files."""
    ignored = 0
    entries = []
    for cls in CLASSES:
        folder = root / split / cls
        if not folder.is_dir():
            continue
        for path in sorted(folder.iterdir()):
            if path.is_file() and _is_image_name(path.name):
                entries.append((cls, f"{split}/{cls}/{path.name}", path.read_bytes()))
            else:
                ignored += 1
    return entries, ignored


def _read_archive(archive: Path, split: str):
    """Entries of ``split`` from the official ``faces.tar.gz``, which nests one tarball per split.

    A plain tarball of the unpacked layout (``train/face/...``) is read as well.
    """
    entries, ignored = [], 0
    try:
        with tarfile.open(archive, "r:*") as outer:
            members = outer.getmembers()
            nested = [m for m in members if m.isfile() and m.name.endswith(
                (f"face.{split}.tar.gz", f"face.{split}.tgz", f"face.{split}.tar"))]
            sources = []
            for member in nested:
                inner_bytes = outer.extractfile(member).read()
                inner = tarfile.open(fileobj=io.BytesIO(inner_bytes), mode="r:*")
                sources.append(inner)
            sources.append(outer)
            for tar in sources:
                for member in tar.getmembers():
                    if not member.isfile():
                        continue
                    parts = Path(member.name).parts
                    if split not in parts:
                        continue
                    rest = parts[parts.index(split) + 1:]
                    if len(rest) != 2 or rest[0] not in CLASSES:
                        continue
                    if not _is_image_name(rest[1]):
                        ignored += 1
                        continue
                    data = tar.extractfile(member).read()
                    entries.append((rest[0], f"{split}/{rest[0]}/{rest[1]}", data))
    except (tarfile.TarError, OSError, EOFError) as error:
        raise FacedetectError(f"{archive}: not a readable tar.gz archive ({error})") from None
    entries.sort(key=lambda entry: (CLASSES.index(entry[0]), entry[1]))
    return entries, ignored


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
        for cls, name, data in entries:
            images.append(decode_window(data, name))
            labels.append(1 if cls == "face" else 0)
            names.append(name)
            counts.setdefault(split, {c: 0 for c in CLASSES})[cls] += 1
    if not images:
        raise FacedetectError(f"{source}: no CBCL images found for split(s) "
                              f"{', '.join(splits)} (expected {'/'.join(splits)}/face/*.pgm "
                              f"and .../non-face/*.pgm)")
    return CBCLData(np.stack(images), np.asarray(labels, dtype=np.int8), names, source,
                    ignored, sha256_file(archive) if archive else None, counts)
