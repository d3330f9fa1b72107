"""Command-line entry points."""

# The commands are modules (facedetect.cli.<command>_cmd) reached through the entry points
# of facedetect.cli._launch; nothing is imported here, so that Ctrl-C while they load is
# still one line (see launch).
__all__: list[str] = []
