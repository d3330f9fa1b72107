"""Pictures: cost-space curves (matplotlib, the ``plot`` extra) and Haar features (Pillow)."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
from PIL import Image, ImageDraw

from ._utils.atomic import atomic_write_bytes
from .errors import FacedetectError
from .metrics import lower_envelope


def _pyplot():
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise FacedetectError("drawing this picture needs matplotlib: "
                              "pip install 'facedetect[plot]'") from None
    return plt


def _save_figure(fig, path) -> Path:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=120, bbox_inches="tight")
    return atomic_write_bytes(path, buffer.getvalue())


def cost_space_figure(families: dict, path, title: str = "Cost space") -> Path:
    """Classifier lines from (0, FP) to (1, FN) and each family's lower envelope.

    ``families`` maps a label to ``(fn_rates, fp_rates)`` (one entry per trained cost).
    """
    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(6.4, 4.8))
    colours = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    top = 0.0
    for (label, (fn_rates, fp_rates)), colour in zip(families.items(), colours):
        for fn, fp in zip(fn_rates, fp_rates):
            ax.plot([0, 1], [fp, fn], color=colour, alpha=0.25, linewidth=0.8)
        grid, envelope = lower_envelope(fn_rates, fp_rates)
        top = max(top, float(envelope.max()))
        ax.plot(grid, envelope, color=colour, linewidth=2.2, label=f"{label} lower envelope")
    ax.set_xlabel("probability cost function PCF")
    ax.set_ylabel("normalised expected cost NEC")
    ax.set_xlim(0, 1)
    # Zoom on the envelopes (the comparison), not on the worst single classifier.
    ax.set_ylim(0, min(0.5, max(0.02, 1.6 * top)))
    ax.set_title(title)
    ax.legend(loc="upper right")
    try:
        return _save_figure(fig, path)
    finally:
        plt.close(fig)


def _rect_outline(x, y, w, h, tilted: bool, scale: int) -> list[tuple[float, float]]:
    """A rectangle's corners in tile pixels: upright, or tilted (top corner at ``(x, y)``,
    ``w`` down-right, ``h`` down-left, as the tilted integral image sums it)."""
    if tilted:
        corners = [(x, y), (x + w, y + w), (x + w - h, y + w + h), (x - h, y + h)]
    else:
        corners = [(x, y), (x + w, y), (x + w, y + h), (x, y + h)]
    return [(cx * scale, cy * scale) for cx, cy in corners]


def draw_haar_features(background: np.ndarray, rects_per_feature, path, *, scale: int = 12,
                       columns: int = 5, labels=None, tilted=None) -> Path:
    """Tiles of the background (e.g. the mean face) with each feature's rectangles drawn,
    turned by 45 degrees where ``tilted`` marks the feature.

    Positive-weight rectangles are white, negative ones black, half transparent.
    """
    background = np.asarray(background, dtype=np.float64)
    grey = np.clip((background - background.min()) / (np.ptp(background) or 1) * 255, 0, 255)
    height, width = grey.shape
    tile_w, tile_h = width * scale, height * scale
    pad = 6
    n = len(rects_per_feature)
    rows = max(1, -(-n // columns))
    sheet = Image.new("RGB", (columns * (tile_w + pad) + pad, rows * (tile_h + pad + 14) + pad),
                      "white")
    base = Image.fromarray(grey.astype(np.uint8)).resize((tile_w, tile_h), Image.NEAREST)
    tilted = [False] * n if tilted is None else [bool(t) for t in tilted]
    for i, rects in enumerate(rects_per_feature):
        tile = base.convert("RGBA")
        overlay = Image.new("RGBA", tile.size, (0, 0, 0, 0))
        draw = ImageDraw.Draw(overlay)
        for x, y, w, h, weight in rects:
            fill = (255, 255, 255, 150) if weight > 0 else (0, 0, 0, 150)
            draw.polygon(_rect_outline(x, y, w, h, tilted[i], scale), fill=fill,
                         outline=(255, 0, 0, 255))
        tile = Image.alpha_composite(tile, overlay).convert("RGB")
        left = pad + (i % columns) * (tile_w + pad)
        top = pad + (i // columns) * (tile_h + pad + 14)
        sheet.paste(tile, (left, top))
        ImageDraw.Draw(sheet).text((left, top + tile_h + 1),
                                   labels[i] if labels else f"#{i + 1}", fill="black")
    buffer = io.BytesIO()
    sheet.save(buffer, format="PNG")
    return atomic_write_bytes(path, buffer.getvalue())
