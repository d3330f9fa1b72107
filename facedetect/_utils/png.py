"""Whether a PNG file's image data holds all its rows.

Pillow fills the rows of a PNG whose compressed stream ends early with zeros and says
nothing (a truncated JPEG, GIF or TIFF it refuses): half a picture read as black would be
scanned as if it were whole. libpng refuses such a file ("Not enough image data"); so do we.
"""

from __future__ import annotations

import struct
import zlib
from pathlib import Path

__all__ = ["png_data_shortfall"]

SIGNATURE = b"\x89PNG\r\n\x1a\n"
CHANNELS = {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}   # by colour type: grey, RGB, palette, GA, RGBA
# Adam7's passes: (first column, first row, column step, row step)
ADAM7 = ((0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2),
         (0, 1, 1, 2))
READ_BLOCK = 1 << 20


def expected_bytes(width: int, height: int, bit_depth: int, colour_type: int,
                   interlaced: bool) -> int:
    """Bytes of filtered scanlines a PNG of this header decompresses to.

    Examples
    --------
    >>> expected_bytes(4, 2, 8, 0, False)   # two rows of a filter byte and 4 grey bytes
    10
    >>> expected_bytes(1, 1, 8, 2, True)    # one RGB pixel: only the first pass has it
    4
    """
    bits = CHANNELS.get(colour_type, 1) * bit_depth
    passes = ADAM7 if interlaced else ((0, 0, 1, 1),)
    total = 0
    for column, row, column_step, row_step in passes:
        columns = max(0, (width - column + column_step - 1) // column_step)
        rows = max(0, (height - row + row_step - 1) // row_step)
        if columns and rows:
            total += rows * (1 + (columns * bits + 7) // 8)
    return total


def png_data_shortfall(path: str | Path) -> tuple[int, int] | None:
    """``(bytes found, bytes expected)`` of a PNG whose image data ends early, else None
    (a whole file, or one this cannot read: Pillow's own checks then speak).

    The compressed data is inflated a block at a time and counted, never kept.
    """
    inflate = zlib.decompressobj()
    found = expected = 0
    with open(path, "rb") as handle:
        if handle.read(8) != SIGNATURE:
            return None
        while True:
            head = handle.read(8)
            if len(head) < 8:
                break
            length, kind = struct.unpack(">I4s", head)
            if kind == b"IHDR":
                fields = struct.unpack(">IIBBBBB", handle.read(13))
                width, height, depth, colour, _, _, interlace = fields
                expected = expected_bytes(width, height, depth, colour, interlace == 1)
                handle.seek(length - 13 + 4, 1)
            elif kind == b"IDAT":
                left = length
                while left and not inflate.eof:
                    block = handle.read(min(left, READ_BLOCK))
                    if not block:
                        break
                    left -= len(block)
                    try:
                        while block and not inflate.eof:
                            found += len(inflate.decompress(block, READ_BLOCK))
                            block = inflate.unconsumed_tail
                    except zlib.error:
                        return None
                handle.seek(left + 4, 1)
            elif kind == b"IEND" or (found and kind != b"IDAT"):
                break   # the image data is one run of IDAT chunks
            else:
                handle.seek(length + 4, 1)
    return (found, expected) if expected and found < expected else None
