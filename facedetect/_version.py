"""The package version (one place: ``pyproject.toml`` reads the same number)."""

__version__ = "0.2.0"
