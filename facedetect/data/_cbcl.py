"""The MIT CBCL face database #1: the unpacked folders or the official nested archive."""

from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass, field
from pathlib import Path

import cv2
import numpy as np
from PIL import Image, UnidentifiedImageError

from ..images import to_grey
from ..errors import FacedetectError
from ..modelfile._detection import CBCL_FRAMING
from ..modelfile._schema import CBCL_WINDOW
from ._cbcl_files import CLASSES, read_archive, read_folder
from ._locate import ARCHIVE_NAME, find_cbcl

WINDOW = CBCL_WINDOW
# A CBCL window is 1.75 eye distances wide, its eye line 0.28 of its side below its top
# (fitted to the CBCL mean face: the faces folder's PROVENANCE.md).
FRAMING = CBCL_FRAMING
SPLITS = ("train", "test")
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

    See Also
    --------
    load_cbcl : what returns it.
    find_cbcl : where the data is looked for.

    Examples
    --------
    >>> import numpy as np
    >>> from pathlib import Path
    >>> data = CBCLData(np.zeros((2, 19, 19), np.uint8), np.array([1, 0], np.int8),
    ...                 ["train/face/a.pgm", "train/non-face/b.pgm"], Path("cbcl"))
    >>> int(data.labels.sum()), len(data.fingerprint())
    (1, 64)
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


def _archive_in(path: Path) -> Path | None:
    if path.is_file():
        return path
    candidate = path / ARCHIVE_NAME
    if candidate.is_file() and not (path / "train").is_dir():
        return candidate
    return None


def _sha256_file(path: Path) -> str:
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

    Returns
    -------
    CBCLData
        The windows, labels (1 = face) and file names of the splits read.

    See Also
    --------
    find_cbcl : where it looks.
    facedetect.haar.feature_matrix : Haar features of the windows.

    Examples
    --------
    >>> import tempfile
    >>> from pathlib import Path
    >>> from PIL import Image
    >>> root = Path(tempfile.mkdtemp())
    >>> for name, value in (("face", 200), ("non-face", 30)):
    ...     folder = root / "train" / name
    ...     folder.mkdir(parents=True)
    ...     Image.fromarray(np.full((19, 19), value, np.uint8)).save(folder / "0.pgm")
    >>> data = load_cbcl(root)
    >>> data.images.shape, data.labels.tolist(), data.names
    ((2, 19, 19), [1, 0], ['train/face/0.pgm', 'train/non-face/0.pgm'])
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
        entries, skipped = (read_archive(archive, split) if archive
                            else read_folder(source, split))
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
                    ignored, _sha256_file(archive) if archive else None, counts)


def framed_windows(images: np.ndarray, labels: np.ndarray, window: tuple[int, int],
                   framing: float = FRAMING) -> np.ndarray:
    """CBCL's windows as ``window`` (width, height) windows ``framing`` eye distances wide.

    A face is scaled about its window's centre (which a looser framing keeps, as
    :func:`~facedetect.data._face_windows.eye_line_for` does), the border beyond its crop
    reflected as for the jittered copies; a non-face is resized. CBCL's own window and
    framing give the windows unchanged.

    Parameters
    ----------
    images : (n, h, w) uint8 array
        CBCL windows, ``FRAMING`` eye distances wide (:attr:`CBCLData.images`).
    labels : (n,) int array
        1 for a face, any other value for a non-face (:attr:`CBCLData.labels`).
    window : (int, int)
        ``(width, height)`` of the windows returned, in pixels.
    framing : float
        The returned window's width in eye distances (default ``FRAMING``, CBCL's).

    Returns
    -------
    (n, height, width) array
        The windows, of the images' dtype. ``images`` itself when ``window`` is the
        images' size and ``framing`` is ``FRAMING``.

    See Also
    --------
    load_cbcl : reads the windows and labels.
    eye_line_for : the eye line of a window with the same centre and another framing.
    face_windows : windows cut from faces with eye positions, in the same framing.

    Examples
    --------
    >>> faces = np.tile(np.arange(19, dtype=np.uint8) * 10, (2, 19, 1))
    >>> framed_windows(faces, np.array([1, 0]), (19, 19)) is faces
    True
    >>> wide = framed_windows(faces, np.array([1, 0]), (24, 24), framing=2.2)
    >>> wide.shape, int(wide[0, 12, 12]), int(wide[0, 12, 0]) > int(wide[0, 12, 2])  # 10 x 9.50
    ((2, 24, 24), 95, True)
    """
    height, width = images.shape[1:]
    if (width, height) == tuple(window) and framing == FRAMING:
        return images
    scale = (window[0] / framing) / (width / FRAMING)
    shift = [(window[0] - 1) / 2 - scale * (width - 1) / 2,
             (window[1] - 1) / 2 - scale * (height - 1) / 2]
    matrix = np.array([[scale, 0.0, shift[0]], [0.0, scale, shift[1]]])
    return np.stack([
        cv2.warpAffine(image, matrix, tuple(window), flags=cv2.INTER_LINEAR,
                       borderMode=cv2.BORDER_REFLECT_101) if label == 1
        else cv2.resize(image, tuple(window), interpolation=cv2.INTER_LINEAR)
        for image, label in zip(images, labels)])
