"""Where the data is: ``--data``, ``$FACEDETECT_DATA``, ``./data/cbcl``, the user cache."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import DataNotFoundError

ENV_VAR = "FACEDETECT_DATA"
ARCHIVE_NAME = "faces.tar.gz"
OFFICIAL_PAGE = "http://cbcl.mit.edu/software-datasets/FaceData2.html"


def user_cache_dir() -> Path:
    """``$XDG_CACHE_HOME/facedetect`` or ``~/.cache/facedetect``."""
    base = os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache"
    return Path(base) / "facedetect"


def search_places(explicit, flag: str, env_var: str, name: str) -> list[tuple[str, Path]]:
    """Every place looked at for a data set, in order, with the reason: the flag, the
    environment variable, ``./data/<name>``, the user cache. The variable set to
    ``none`` turns the search off: only the flag is looked at.

    Examples
    --------
    >>> import os
    >>> os.environ["FACEDETECT_EXAMPLE"] = "none"
    >>> [reason for reason, _ in search_places(None, "--x", "FACEDETECT_EXAMPLE", "x")]
    []
    >>> del os.environ["FACEDETECT_EXAMPLE"]
    """
    places = []
    if explicit is not None:
        places.append((flag, Path(explicit)))
    if os.environ.get(env_var, "").strip().lower() == "none":
        return places
    if os.environ.get(env_var):
        places.append((f"${env_var}", Path(os.environ[env_var])))
    places.append((f"./data/{name}", Path("data") / name))
    places.append(("user cache", user_cache_dir() / name))
    return places


# Places the user named: one that holds no data is an error, never a fall-through.
NAMED = ("--data", f"${ENV_VAR}")


def names_a_place(explicit: str | os.PathLike | None = None) -> bool:
    """Whether the CBCL search is told where to look (``--data`` or ``$FACEDETECT_DATA``,
    not empty or ``none``), so that finding nothing is an error rather than a report."""
    return any(reason in NAMED for reason, _ in _candidate_places(explicit))


def _candidate_places(explicit: str | os.PathLike | None = None) -> list[tuple[str, Path]]:
    """Every place looked at for CBCL, in order, with the reason it is looked at."""
    return search_places(explicit, "--data", ENV_VAR, "cbcl")


def _is_cbcl_source(path: Path) -> bool:
    """A CBCL folder (with ``train/`` or ``test/``), a folder holding the archive, or the
    archive."""
    if path.is_file():
        return True  # an archive; the loader says so if it is not one
    return path.is_dir() and ((path / "train").is_dir() or (path / "test").is_dir()
                              or (path / ARCHIVE_NAME).is_file())


def find_cbcl(explicit: str | os.PathLike | None = None) -> Path:
    """The first place holding CBCL data.

    An explicit path (``--data`` or ``$FACEDETECT_DATA``) that holds no data is an error
    even if a later place has data: the user asked for that one, and a typo must not fall
    through silently. The error lists only the places actually looked at.

    Raises
    ------
    DataNotFoundError
        With one message listing every place looked and how to get the data.

    Parameters
    ----------
    explicit : path, optional
        ``--data``; else ``$FACEDETECT_DATA``, ``./data/cbcl`` and the user cache are tried.

    Returns
    -------
    pathlib.Path
        The folder or archive that holds CBCL's windows.

    See Also
    --------
    load_cbcl : read the folder it finds.
    fetch_cbcl : download it.

    Examples
    --------
    >>> find_cbcl("/nonexistent")
    Traceback (most recent call last):
        ...
    facedetect.errors.DataNotFoundError: ...
    """
    places, looked = _candidate_places(explicit), []
    for reason, path in places:
        looked.append(f"{reason}: {path}")
        if _is_cbcl_source(path):
            return path
        if reason in NAMED:
            break
    looked = "; ".join(looked)
    raise DataNotFoundError(
        f"no CBCL face data found (looked in {looked}). Run 'facedetect data fetch', or "
        f"download {ARCHIVE_NAME} from {OFFICIAL_PAGE} and pass --data or set {ENV_VAR}")
