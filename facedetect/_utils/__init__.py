"""Plumbing the rest of the package shares: atomic writes and output locks, bounded reads
of regular files, SIGTERM as Ctrl-C, thread counts and waiting beside other work, the
machine's description and peak memory, progress bars. Private: no public name lives here."""

__all__: list[str] = []
