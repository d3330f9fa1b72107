"""``detect``'s time per megapixel for model files against OpenCV's default cascade, idle
and with one core busy, in one run (the photographs and the timing of
:func:`benchmarks.peers.speed`).

Run: ``python -m benchmarks.detect_speed MODEL ... [--label detect_speed]``
"""

from __future__ import annotations

import argparse

from .common import machine, one_core_busy, write_results


def main(argv=None) -> dict:
    import cv2

    from facedetect._utils.threads import wait_passively

    from .peer_detectors import opencv_cascade, ours
    from .peers import speed
    wait_passively()   # as the detect command does
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--label", default="detect_speed")
    args = parser.parse_args(argv)
    reference = "OpenCV default"
    detectors = [ours(m) for m in args.models] + [opencv_cascade(
        cv2.data.haarcascades + "haarcascade_frontalface_default.xml", reference)]
    results = {"machine": machine(), "idle": speed(detectors, args.repeat)}
    with one_core_busy():
        results["one_core_busy"] = speed(detectors, args.repeat)
    lines = [f"# detect against OpenCV's default cascade ({args.label})\n",
             f"Machine: {results['machine']}.\n",
             "| detector | s/Mpx idle | / OpenCV idle | s/Mpx one core busy | / OpenCV busy |",
             "|---|---|---|---|---|"]
    for name in results["idle"]:
        idle, busy = results["idle"][name], results["one_core_busy"][name]
        lines.append(f"| {name} | {idle:.4f} | {idle / results['idle'][reference]:.2f}x | "
                     f"{busy:.4f} | {busy / results['one_core_busy'][reference]:.2f}x |")
    write_results(args.label, results, "\n".join(lines) + "\n")   # and prints it
    return results


if __name__ == "__main__":
    main()
