"""Bounded reading of CBCL's window files, from the unpacked folders or a tar archive.

Every file's size is checked before a byte is read, so a huge or sparse file, or an
archive of many large members, cannot fill memory; archive member names must stay inside
the archive.
"""

from __future__ import annotations

import io
import tarfile
import zlib
from contextlib import ExitStack
from pathlib import Path, PurePosixPath

from ..errors import FacedetectError

CLASSES = ("face", "non-face")
IMAGE_SUFFIXES = (".pgm", ".png", ".bmp", ".tif", ".tiff", ".jpg", ".jpeg", ".gif")
# Archive members are read into memory, so their header sizes are bounded before reading:
# a 19x19 PGM is about 400 bytes, and the official nested face.test.tar.gz a few MB.
MAX_WINDOW_BYTES = 1 << 20
MAX_NESTED_BYTES = 256 << 20
# All windows of a split together: CBCL's take 3 MB, so 256 MiB is a data set 80x larger.
MAX_TOTAL_BYTES = 256 << 20


def _is_image_name(name: str) -> bool:
    return name.lower().endswith(IMAGE_SUFFIXES)


def read_folder(root: Path, split: str):
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


def read_archive(archive: Path, split: str):
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
