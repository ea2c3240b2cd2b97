"""Checks that an output path can be written, made before any test runs."""

from __future__ import annotations

import os
from pathlib import Path

from ..errors import DataFileError, InvalidArgument


def _nearest_existing(path: Path) -> Path:
    for parent in [path, *path.parents]:
        if parent.exists():
            return parent
    return Path(".")


def check_output_file(path: Path, what: str) -> Path:
    """Refuse a file path that is a directory or under something that is not a writable
    directory (missing parents are created when the file is written)."""
    if path.is_dir():
        raise DataFileError(f"{what} {str(path)!r} is a directory; give a file path")
    existing = _nearest_existing(path.parent)
    if not existing.is_dir():
        raise DataFileError(f"{what} {str(path)!r}: {str(existing)!r} is not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise DataFileError(f"{what} {str(path)!r}: cannot write in {str(existing)!r}")
    if path.exists() and not os.access(path, os.W_OK):
        raise DataFileError(f"{what} {str(path)!r} exists and is not writable")
    return path


def check_output_dir(path: Path, what: str) -> Path:
    """Refuse a directory path that exists as something else or cannot be created."""
    if path.exists() and not path.is_dir():
        raise DataFileError(f"{what} {str(path)!r} exists and is not a directory; give a "
                            "directory path")
    existing = _nearest_existing(path)
    if not existing.is_dir():
        raise DataFileError(f"{what} {str(path)!r}: {str(existing)!r} is not a directory")
    if not os.access(existing, os.W_OK | os.X_OK):
        raise DataFileError(f"{what} {str(path)!r}: cannot write in {str(existing)!r}")
    return path


def write_text(path: Path, text: str, what: str) -> Path:
    """Write ``text`` (creating parents), as a DataFileError when it fails."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise DataFileError(f"cannot write {what} to {str(path)!r}: {exc.strerror}") from None
    return path


def baseline_path(name: str, directory: Path) -> Path:
    """``name`` as a path when it ends in .json, else ``directory/name.json``."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidArgument(f"baseline name {name!r}: use a plain name or a path ending in .json")
    if name.endswith(".json"):
        return Path(name)
    if "/" in name or "\\" in name or name in (".", ".."):
        raise InvalidArgument(f"baseline name {name!r}: use a plain name or a path ending in .json")
    return directory / f"{name}.json"
