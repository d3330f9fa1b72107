"""Peak memory of ``detect`` on the largest images it takes by default.

Run: ``python -m benchmarks.detect_memory``

Three files of 12,200 x 12,200 pixels (149 megapixels, just under the default
``--max-pixels`` of 150 million), each under 100 MB: an RGB JPEG, an RGBA PNG and a 16-bit
grey PNG. Each is scanned by a fresh ``facedetect detect`` process with default flags (the
shipped model at its own operating point); its peak resident memory is read from the
kernel. Target: at most 2 GB.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
from PIL import Image

from .common import machine, write_results

SIDE = 12_200


def _images(folder: Path) -> dict[str, Path]:
    y, x = np.mgrid[0:SIDE:40, 0:SIDE:40]
    small = ((np.sin(x / 300.0) + np.cos(y / 200.0)) * 60 + 128).astype(np.uint8)
    Image.MAX_IMAGE_PIXELS = None
    grey = Image.fromarray(small).resize((SIDE, SIDE), Image.BILINEAR)
    paths = {"RGB JPEG": folder / "big.jpg", "RGBA PNG": folder / "big_rgba.png",
             "16-bit grey PNG": folder / "big16.png"}
    grey.convert("RGB").save(paths["RGB JPEG"], quality=85)
    Image.merge("RGBA", [grey] * 4).save(paths["RGBA PNG"], compress_level=1)
    Image.fromarray(np.asarray(grey).astype(np.uint16) * 257).save(paths["16-bit grey PNG"],
                                                                   compress_level=1)
    return paths


def main(argv=None) -> dict:
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for label, path in _images(Path(folder)).items():
            measure = [sys.executable, "-c",
                       "import resource, sys; from facedetect.cli._detect_cmd import main; "
                       "main([sys.argv[1]]); "
                       "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)", str(path)]
            start = time.perf_counter()
            output = subprocess.run(measure, check=True, capture_output=True, text=True).stdout
            seconds = time.perf_counter() - start
            peak = int(output.strip().splitlines()[-1]) / 2 ** 20
            rows.append({"image": label, "file_mb": path.stat().st_size / 1e6,
                         "seconds": seconds, "peak_gib": peak})
    results = {"machine": machine(), "side": SIDE, "rows": rows}
    table = "\n".join(f"| {r['image']} | {r['file_mb']:.1f} | {r['seconds']:.0f} | "
                      f"{r['peak_gib']:.2f} |" for r in rows)
    markdown = f"""# Peak memory of detect on the largest default images

Machine: {results['machine']}. {SIDE:,} x {SIDE:,} pixels ({SIDE * SIDE / 1e6:.0f} Mpx, under
the default limit of 150), default flags, one fresh process per image. Target: 2 GB.

| image | file MB | seconds | peak RSS GiB |
|---|---|---|---|
{table}
"""
    write_results("detect_memory", results, markdown)
    return results


if __name__ == "__main__":
    main()
