"""Atomic file writes: a temporary file in the same folder, then a rename."""

from __future__ import annotations

import fcntl
import glob
import os
import tempfile
from contextlib import contextmanager
from pathlib import Path

from ..errors import FacedetectError


def atomic_write_bytes(path: str | os.PathLike, data: bytes) -> Path:
    """Write ``data`` to ``path`` so that readers see the old file or the new one, never half."""
    path = Path(path)
    _remove_stale_temporaries(path)
    handle, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp creates the file 0600; give it the permissions a plain open() would.
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(temp, 0o666 & ~umask)
        with os.fdopen(handle, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(temp, path)
    except BaseException as error:
        Path(temp).unlink(missing_ok=True)
        if isinstance(error, OSError) and not error.filename:
            error.filename = str(path)   # a full disk says which file it stopped
        raise
    return path


STALE_SECONDS = 3600


def _remove_stale_temporaries(path: Path) -> None:
    """Remove ``.<name>.*.tmp`` files an earlier write of ``path`` left when it was killed
    (``kill -9`` gives no chance to clean up). Only those untouched for an hour: a
    concurrent writer's temporary file is younger."""
    import time
    cutoff = time.time() - STALE_SECONDS
    for temp in path.parent.glob(f".{glob.escape(path.name)}.*.tmp"):
        try:
            if temp.is_file() and temp.stat().st_mtime < cutoff:
                temp.unlink()
        except OSError:
            pass   # gone meanwhile, or not ours to remove: leave it


def atomic_write_text(path: str | os.PathLike, text: str) -> Path:
    return atomic_write_bytes(path, text.encode("utf-8"))


@contextmanager
def exclusive_output(path: str | os.PathLike):
    """Hold ``<path>.lock`` for the duration: a second writer of the same output (and of
    its checkpoint) is refused at once instead of silently replacing the first's work.

    The lock is an ``flock`` on an open file, so a killed holder releases it; the lock
    file itself is removed on a clean exit.
    """
    lock_path = Path(str(path) + ".lock")
    try:
        handle = open(lock_path, "a")
    except OSError as error:
        raise FacedetectError(f"{path}: cannot write there ({error.strerror})") from None
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            raise FacedetectError(f"{path}: another run is writing this output now (lock "
                                  f"{lock_path}); wait for it or choose another --out") from None
        try:
            yield
        finally:
            lock_path.unlink(missing_ok=True)
    finally:
        handle.close()
