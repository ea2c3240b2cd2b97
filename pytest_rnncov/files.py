"""Reading and writing the project's files without trusting them.

Every file pytest-rnncov reads (profiles, data files, baselines, reports, model configs)
goes through :func:`read_bounded` and :func:`parse_json`: a path that is not a regular
file, a file over the size limit, bytes that are not UTF-8, JSON that is malformed, nested
too deeply or holds NaN/Infinity all become the caller's error class naming the file, never
a traceback. Nothing read is ever executed.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from .errors import DataFileError, InvalidArgument, RNNCovError

#: The largest file read (bytes); bigger files are refused, not loaded.
MAX_FILE = 512 * 1024 * 1024


def as_path(path: Any, what: str) -> Path:
    """``path`` (str or os.PathLike) as a Path; anything else is an InvalidArgument."""
    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)):
        raise InvalidArgument(f"{what} must be a file path (str or pathlib.Path), not "
                              f"{path!r} ({type(path).__name__})")
    text = os.fspath(path)
    if isinstance(text, bytes):
        raise InvalidArgument(f"{what} {text!r} is bytes; pass a str or pathlib.Path")
    if not text.strip():
        raise InvalidArgument(f"{what} is an empty path; pass a file path")
    if "\x00" in text:
        raise InvalidArgument(f"{what} {text!r} contains a NUL character; pass a real path")
    return Path(text)


def read_bounded(path: Path, where: str, error: type[RNNCovError] = DataFileError,
                 limit: int = MAX_FILE) -> bytes:
    """The bytes of the regular file ``path``, at most ``limit`` of them.

    Missing files, directories, devices and pipes, unreadable files and files over
    ``limit`` raise ``error`` naming ``where``.
    """
    try:
        info = path.stat()
    except FileNotFoundError:
        raise error(f"no file at {str(path)!r}") from None
    except (OSError, ValueError) as exc:
        raise error(f"cannot read {where}: {getattr(exc, 'strerror', None) or exc}") from None
    if stat.S_ISDIR(info.st_mode):
        raise error(f"{where} is a directory; pass a file")
    if not stat.S_ISREG(info.st_mode):
        raise error(f"{where} is not a regular file (a device, pipe or socket); pass a file")
    if info.st_size > limit:
        raise error(f"{where} has {info.st_size:,} bytes, more than the {limit:,} read")
    try:
        with path.open("rb") as handle:
            raw = handle.read(limit + 1)
    except OSError as exc:
        raise error(f"cannot read {where}: {exc.strerror or exc}") from None
    if len(raw) > limit:
        raise error(f"{where} grew past the {limit:,} bytes read")
    return raw


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a number JSON allows")


def parse_json(raw: bytes | str, where: str, error: type[RNNCovError] = DataFileError,
               fix: str = "") -> Any:
    """``raw`` parsed as strict JSON (no NaN/Infinity), or ``error`` naming ``where``."""
    suffix = f"; {fix}" if fix else ""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise error(f"{where} is not UTF-8 text{suffix}") from None
    try:
        return json.loads(raw, parse_constant=_refuse_constant)
    except RecursionError:
        raise error(f"{where} nests JSON too deeply to be one of our files{suffix}") from None
    except ValueError as exc:  # JSONDecodeError, constants, integers too long to convert
        raise error(f"{where} is not valid JSON ({exc}){suffix}") from None


def write_text(path: Path, text: str, what: str, error: type[RNNCovError] = DataFileError) -> Path:
    """Write ``text`` to ``path`` (creating parents), as ``error`` when it fails."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    except (OSError, ValueError) as exc:
        raise error(f"cannot write {what} to {str(path)!r}: "
                    f"{getattr(exc, 'strerror', None) or exc}") from None
    return path
