"""The installed package's version, read without importing the commands."""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError, version

__all__ = ["package_version"]


def package_version() -> str:
    """The installed package's version (from its metadata)."""
    try:
        return version("codereasoner")
    except PackageNotFoundError:  # pragma: no cover - running from an uninstalled tree
        return "unknown"
