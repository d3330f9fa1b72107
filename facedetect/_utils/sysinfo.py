"""A one-line description of this machine, for benchmark and reproduction reports."""

from __future__ import annotations

import os
import platform
import resource
from pathlib import Path


def machine() -> str:
    """CPU model, core count and Python version."""
    cpu = platform.processor() or "unknown CPU"
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return f"{cpu}, {os.cpu_count()} cores, Python {platform.python_version()}"


# What a timing or a model depends on beyond the code: a ratio to OpenCV's cascade is a
# ratio to one OpenCV release (runs that did not record it differed by a third).
LIBRARIES = ("numpy", "numba", "opencv-python-headless", "scikit-image", "scikit-learn",
             "scipy")


def library_versions() -> dict[str, str]:
    """The installed version of each of ``LIBRARIES`` ("absent" where one is not), and
    under ``"cv2"`` the OpenCV that ``import cv2`` loads (another wheel may provide it).

    Examples
    --------
    >>> versions = library_versions()
    >>> sorted(versions) == sorted(LIBRARIES + ("cv2",))
    True
    """
    from importlib import metadata
    found = {}
    for name in LIBRARIES:
        try:
            found[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            found[name] = "absent"
    try:
        import cv2
        found["cv2"] = cv2.__version__
    except ImportError:
        found["cv2"] = "absent"
    return found


def peak_rss_gib() -> float:
    """Peak resident memory of this process so far, in GiB (Linux reports KiB)."""
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2 ** 20


def available_memory_bytes() -> int | None:
    """Memory the machine can give a new job now (Linux's ``MemAvailable``: free memory
    plus the caches it can drop), in bytes; None where it cannot be read."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return None
