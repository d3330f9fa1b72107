"""The product benchmarks (``python -m benchmarks.NAME``; docs/results.md lists them).

They run the package through its public API (``facedetect``, ``facedetect.detector``,
``facedetect.data``, ``facedetect.pipeline``, ``facedetect.training``, ``facedetect.haar``).
The exceptions import the internal they measure or mimic, and say so where they do: the
boosting round and its feature storage (``boosting``, ``sharded``), the export's stage
levels (``opencv_export``), the paper's protocol (``cost_response``, ``operating_point``),
the machine's description and ``detect``'s thread policy (``_utils``).
"""
