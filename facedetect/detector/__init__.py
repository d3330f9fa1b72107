"""Sliding-window scanning, grouping and OpenCV export (issue 5)."""
