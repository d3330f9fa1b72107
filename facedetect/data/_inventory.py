"""What ``facedetect data info`` says of the faces from the wild and the negatives: where
each set was found and what it holds, without decoding an image (a second, not minutes)."""

from __future__ import annotations

import collections
import hashlib
from pathlib import Path

from .._utils.files import read_bounded
from ._negatives import negative_files, split_negatives, split_training_negatives
from ._wild_faces import CSV_NAME, MAX_CSV_BYTES, _csv_rows


def describe_faces(folder: str | Path) -> dict:
    """The rows of a faces folder's CSV, by source, and the CSV's SHA-256.

    Rows are counted as listed; training skips the unsound ones, naming each.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> _ = (folder / "faces.csv").write_text(
    ...     "file,leye_x,leye_y,reye_x,reye_y,source\\n"
    ...     "a.png,1,2,3,4,mtfl\\nb.png,1,2,3,4,mtfl\\nc.png,1,2,3,4,\\n")
    >>> report = describe_faces(folder)
    >>> report["rows"], report["by_source"]
    (3, {'(none)': 1, 'mtfl': 2})
    """
    csv_path = Path(folder) / CSV_NAME
    raw = read_bounded(csv_path, MAX_CSV_BYTES, "faces CSV")
    sha256 = hashlib.sha256(raw).hexdigest()
    sources = collections.Counter((row.get("source") or "").strip() or "(none)"
                                  for _, row in _csv_rows(raw, csv_path))
    return {"folder": str(Path(folder).resolve()), "csv_sha256": sha256,
            "rows": sum(sources.values()), "by_source": dict(sorted(sources.items()))}


def describe_negatives(folder: str | Path) -> dict:
    """The pictures of a negatives folder and how training divides them: the held-out
    fifth (only measures), the calibration part (sets the operating points) and the
    mining part.

    Examples
    --------
    >>> import tempfile
    >>> folder = Path(tempfile.mkdtemp())
    >>> for k in range(20):
    ...     _ = (folder / f"neg-{k:02d}.jpg").write_bytes(b"x" * 10)
    >>> report = describe_negatives(folder)
    >>> report["pictures"], report["bytes"]
    (20, 200)
    >>> report["held_out"] + report["calibration"] + report["mining"]
    20
    """
    files = negative_files(Path(folder))
    training, held = split_negatives(files)
    mining, calibration = split_training_negatives(training)
    return {"folder": str(Path(folder).resolve()), "pictures": len(files),
            "bytes": int(sum(p.stat().st_size for p in files)), "held_out": len(held),
            "calibration": len(calibration), "mining": len(mining)}
