"""Checks that an output path can be written, made before any test runs."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable, Sequence

from ..errors import DataFileError, InvalidArgument

__all__ = ["baseline_path", "check_distinct", "check_output_dir", "check_output_file"]


def _nearest_existing(path: Path) -> Path:
    for parent in [path, *path.parents]:
        if parent.exists():
            return parent
    return Path(".")


def check_output_file(path: Path, what: str, append: bool = False) -> Path:
    """Refuse a file path that is a directory or under something that is not a writable
    directory (missing parents are created when the file is written). With ``append`` (the
    CI step summary) a writable file that exists is enough: appending creates nothing in
    its folder."""
    if append and path.is_file() and os.access(path, os.W_OK):
        return path
    return _explained(_check_output_file, path, what)


def _explained(check: Callable[[Path, str], Path], path: Path, what: str) -> Path:
    """Run a path check, turning an operating-system error into a DataFileError."""
    try:
        return check(path, what)
    except (OSError, ValueError) as exc:
        raise DataFileError(
            f"{what} {str(path)!r} cannot be used: {getattr(exc, 'strerror', None) or exc}"
        ) from None


def _check_output_file(path: Path, what: str) -> Path:
    _refuse_broken_links(path.parent, what, path)
    if path.is_dir():
        raise DataFileError(f"{what} {str(path)!r} is a directory; give a file path")
    existing = _nearest_existing(path.parent)
    if not existing.is_dir():
        raise DataFileError(f"{what} {str(path)!r}: {str(existing)!r} is not a directory")
    _probe(existing, path, what)
    if path.exists() and not os.access(path, os.W_OK):
        raise DataFileError(f"{what} {str(path)!r} exists and is not writable")
    return path


def check_output_dir(path: Path, what: str) -> Path:
    """Refuse a directory path that exists as something else or cannot be created."""
    return _explained(_check_output_dir, path, what)


def _refuse_broken_links(folder: Path, what: str, path: Path) -> None:
    """Refuse ``path`` when ``folder`` or a folder above it is a link to nothing: the
    folders made for it would be made wherever the link points."""
    for link in (folder, *folder.parents):
        if link.is_symlink() and not link.exists():
            at = "" if link == path else f": {str(link)!r}"
            raise DataFileError(
                f"{what} {str(path)!r}{at} is a symbolic link to nothing (broken, or a "
                "loop); give a directory path, or point the link at a directory"
            )


def _check_output_dir(path: Path, what: str) -> Path:
    _refuse_broken_links(path, what, path)
    if path.exists() and not path.is_dir():
        raise DataFileError(
            f"{what} {str(path)!r} exists and is not a directory; give a directory path"
        )
    existing = _nearest_existing(path)
    if not existing.is_dir():
        raise DataFileError(f"{what} {str(path)!r}: {str(existing)!r} is not a directory")
    _probe(existing, path, what)
    return path


def _probe(folder: Path, path: Path, what: str) -> None:
    """Refuse ``path`` unless a file can be created in ``folder`` (where it, or the folders
    made for it, will be written): a file is created there and removed. Permission bits
    alone do not say it: root passes them on /proc, a read-only or root-squashed mount."""
    if not os.access(folder, os.W_OK | os.X_OK):
        raise DataFileError(f"{what} {str(path)!r}: cannot write in {str(folder)!r}")
    try:
        handle, probe = tempfile.mkstemp(dir=folder, prefix=".rnncov-probe-")
    except OSError as exc:
        raise DataFileError(
            f"{what} {str(path)!r}: cannot write in {str(folder)!r} (creating a file there "
            f"failed: {exc.strerror or exc})"
        ) from None
    os.close(handle)
    try:
        os.unlink(probe)
    except OSError:
        pass  # created but not removable: it can be written, which is what was asked


def baseline_path(name: str, directory: Path) -> Path:
    """``name`` as a path when it ends in .json, else ``directory/name.json``."""
    if not isinstance(name, str) or not name.strip():
        raise InvalidArgument(f"baseline name {name!r}: use a plain name or a path ending in .json")
    if name.endswith(".json"):
        return Path(name)
    if "/" in name or "\\" in name or name in (".", ".."):
        raise InvalidArgument(f"baseline name {name!r}: use a plain name or a path ending in .json")
    return directory / f"{name}.json"


def _same_file(path: Path, other: Path) -> bool:
    """Whether two resolved paths name one file (hard links included)."""
    if path == other:
        return True
    try:
        return os.path.samefile(path, other)
    except OSError:
        return False


def check_distinct(
    outputs: Sequence[tuple[str, Path]], inputs: Sequence[tuple[str, Path]] = ()
) -> None:
    """Refuse an input given twice, two outputs at one path (or one inside another's
    folder), and an output that would overwrite an input: no result replaces another.
    Paths are compared after resolving symbolic links; hard links count as one file."""
    entries = [(what, Path(os.path.realpath(p)), False) for what, p in inputs] + [
        (what, Path(os.path.realpath(p)), True) for what, p in outputs
    ]
    for index, (what, path, written) in enumerate(entries):
        for other_what, other, other_written in entries[:index]:
            if not written and not other_written:
                if _same_file(path, other):
                    why = (  # two runs' data, or one file in two roles (weights, inputs)
                        "; each run's data counts once"
                        if what == other_what
                        else f" (also as {other_what}); each needs its own file"
                    )
                    raise InvalidArgument(f"{what} {str(path)!r} is given twice{why}")
            elif _same_file(path, other) or other in path.parents or path in other.parents:
                if _same_file(path, other):
                    verb = "collide with" if other_written else "overwrite"
                    relation = f"would {verb}"
                elif other in path.parents:
                    relation = "lies inside the folder of"
                else:
                    relation = "is a folder holding"
                raise InvalidArgument(
                    f"{what} {str(path)!r} {relation} {other_what} "
                    f"{str(other)!r}; give each output its own path"
                )
