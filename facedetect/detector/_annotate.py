"""Annotated copies of images: detection boxes and scores drawn on the picture."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from .._utils.atomic import atomic_write_bytes

# The formats an annotated copy is written in, by the suffix of its name.
ANNOTATION_FORMATS = {".jpg": "JPEG", ".jpeg": "JPEG", ".png": "PNG", ".bmp": "BMP",
                      ".tif": "TIFF", ".tiff": "TIFF", ".gif": "GIF"}


def annotate(pixels: np.ndarray, boxes, scores, path, colour=(0, 220, 0), extra=None) -> Path:
    """Write ``pixels`` (grey ``(h, w)`` or RGB ``(h, w, 3)``) as RGB with one rectangle and
    score per box (format from the suffix).

    ``extra`` is an optional list of ``(boxes, colour)`` drawn underneath (ground truth).
    """
    image = Image.fromarray(np.asarray(pixels, dtype=np.uint8)).convert("RGB")
    draw = ImageDraw.Draw(image)
    width = max(2, round(min(image.size) / 250))
    for other_boxes, other_colour in extra or []:
        for x, y, w, h in other_boxes:
            draw.rectangle([x, y, x + w, y + h], outline=other_colour, width=max(1, width - 1))
    for (x, y, w, h), score in zip(boxes, scores):
        draw.rectangle([x, y, x + w, y + h], outline=colour, width=width)
        draw.text((x + 3, y + 2), f"{score:.1f}", fill=colour)
    path = Path(path)
    buffer = io.BytesIO()
    fmt = ANNOTATION_FORMATS.get(path.suffix.lower(), "PNG")
    image.save(buffer, format=fmt)
    return atomic_write_bytes(path, buffer.getvalue())
