"""One lever at a time, on held-out data only: each model file's recall on the held-out
wild crops (MTFL + Caltech: clean, grainy, posterised; UTKFace and Yale B apart), its
false alarms per megapixel on the held-out face-free pictures, its training time as
recorded, and its detect time against OpenCV's default cascade. The development
images are not read: they measure the final choice (``benchmarks.peers``), never a lever.

Run: ``python -m benchmarks.levers data/models/a.json data/models/b.json --label levers``
(``$FACEDETECT_FACES`` and ``$FACEDETECT_NEGATIVES`` as the user sets them).
"""

from __future__ import annotations

import argparse

from .common import machine, wild_data, write_results
from .peer_detectors import opencv_cascade, ours
from .peers import crops, false_alarms, speed
from .wild_detectors import COMPARED, pooled


def main(argv=None) -> dict:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--label", default="levers")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args(argv)
    import cv2
    import facedetect
    from facedetect.pipeline._wild import heldout_faces
    faces, pictures = wild_data(None)
    detectors = [ours(m) for m in args.models]
    held = heldout_faces(facedetect.load_model(args.models[0]), faces)
    results = {"machine": machine(), "crops": crops(detectors, held),
               "false_alarms_per_mpx": false_alarms(detectors, pictures)}
    reference = opencv_cascade(cv2.data.haarcascades + "haarcascade_frontalface_default.xml",
                               "OpenCV default")
    results["seconds_per_mpx"] = speed(detectors + [reference], args.repeat)
    lines = [f"# Levers on held-out data ({args.label})\n", f"Machine: {results['machine']}.\n",
             "| model | MTFL + Caltech | grainy | posterised | UTKFace | Yale B | FA/Mpx | "
             "grainy | posterised | detect / OpenCV | training s |",
             "|---" * 11 + "|"]
    seconds = results["seconds_per_mpx"]
    for detector, path in zip(detectors, args.models):
        name = detector.name
        crop, alarms = results["crops"][name], results["false_alarms_per_mpx"][name]
        training = facedetect.load_model(path).document["training"]
        lines.append(
            f"| {path} | {pooled(crop['clean']['by_source'], COMPARED):.3f} | "
            f"{pooled(crop['grainy']['by_source'], COMPARED):.3f} | "
            f"{pooled(crop['posterised']['by_source'], COMPARED):.3f} | "
            f"{pooled(crop['clean']['by_source'], ['utkface']):.3f} | "
            f"{pooled(crop['clean']['by_source'], ['extended-yale-b']):.3f} | "
            f"{alarms['clean']:.3f} | {alarms['grainy']:.3f} | {alarms['posterised']:.3f} | "
            f"{seconds[name] / seconds['OpenCV default']:.2f}x"
            f" | {training.get('seconds', 0):.0f} |")
    write_results(args.label, results, "\n".join(lines) + "\n")
    return results


if __name__ == "__main__":
    main()
