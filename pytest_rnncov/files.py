"""Reading and writing the project's files without trusting them.

Every file pytest-rnncov reads (profiles, data files, baselines, reports, model configs)
goes through :func:`read_bounded` and :func:`parse_json`: a path that is not a regular
file, a file over the size limit, bytes that are not UTF-8, JSON that is malformed, nested
too deeply or holds NaN/Infinity all become the caller's error class naming the file, never
a traceback. Nothing read is ever executed.

Every file it writes goes through :func:`write_atomic` (a temporary file in the same
folder, renamed into place) and, for a run's outputs, :class:`Output`, which refuses to
replace anything but an earlier output of the same kind and never lets two concurrent
writers lose one's results.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import secrets
import signal
import socket
import stat
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, BinaryIO, Callable, Iterable, Iterator, Sequence

from .errors import DataFileError, InvalidArgument, OutputConflict, RNNCovError
from .validation import physical_memory, shown

#: The largest file read (bytes); bigger files are refused, not loaded.
MAX_FILE = 512 * 1024 * 1024


def as_path(path: Any, what: str) -> Path:
    """``path`` (str or os.PathLike) as a Path; anything else is an InvalidArgument."""
    if isinstance(path, bool) or not isinstance(path, (str, os.PathLike)):
        raise InvalidArgument(
            f"{what} must be a path (str or pathlib.Path), not {path!r} ({type(path).__name__})"
        )
    text = os.fspath(path)
    if isinstance(text, bytes):
        raise InvalidArgument(f"{what} {text!r} is bytes; pass a str or pathlib.Path")
    if not text.strip():
        raise InvalidArgument(f"{what} is an empty path; pass a real path")
    if "\x00" in text:
        raise InvalidArgument(f"{what} {text!r} contains a NUL character; pass a real path")
    return Path(text)


def read_bounded(
    path: Path, where: str, error: type[RNNCovError] = DataFileError, limit: int = MAX_FILE
) -> bytes:
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


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object whose keys are distinct (json keeps the last of a repeated key, where
    another reader, or a reviewer of the file, may take the first)."""
    out = dict(pairs)
    if len(out) != len(pairs):
        keys = [key for key, _ in pairs]
        repeated = next(key for index, key in enumerate(keys) if key in keys[:index])
        raise ValueError(f"key {repeated!r} is given twice in one object")
    return out


#: a JSON escape of a UTF-16 surrogate (paired ones decode to one character; a lone one
#: cannot be encoded as UTF-8, so printing or writing it fails)
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def parse_json(
    raw: bytes | str, where: str, error: type[RNNCovError] = DataFileError, fix: str = ""
) -> Any:
    """``raw`` parsed as strict JSON (no NaN/Infinity), or ``error`` naming ``where``."""
    suffix = f"; {fix}" if fix else ""
    if isinstance(raw, bytes):
        try:
            raw = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise error(f"{where} is not UTF-8 text{suffix}") from None
    _check_parsed_size(raw, where, error, suffix)
    try:
        parsed = json.loads(raw, parse_constant=_refuse_constant, object_pairs_hook=_unique_keys)
        if _SURROGATE_ESCAPE.search(raw):  # rare: only then the whole is checked
            json.dumps(parsed, ensure_ascii=False).encode("utf-8")
        return parsed
    except UnicodeEncodeError as exc:  # "\ud800": half of a character, which no text holds
        bad = exc.object[exc.start : exc.end]
        raise error(
            f"{where} holds {ascii(bad)}, an escaped lone surrogate (half of a UTF-16 pair), "
            f"which is no character: it cannot be printed or written{suffix}"
        ) from None
    except RecursionError:
        raise error(f"{where} nests JSON too deeply to be one of our files{suffix}") from None
    except MemoryError:
        raise error(f"{where} is too large to read in this machine's memory{suffix}") from None
    except ValueError as exc:  # JSONDecodeError, constants, integers too long to convert
        if "integer string conversion" in str(exc):  # Python's advice is no fix here
            raise error(
                f"{where} holds an integer of thousands of digits, which no pytest-rnncov "
                f"file does{suffix}"
            ) from None
        raise error(f"{where} is not valid JSON ({exc}){suffix}") from None


#: Bytes a parsed JSON list or object takes at least (an empty Python list: 56)
CONTAINER_BYTES = 56


def _size(n_bytes: int) -> str:
    """A size for messages: GiB from 1 GiB on, MiB below."""
    return f"{n_bytes / 2**30:.1f} GiB" if n_bytes >= 2**30 else f"{n_bytes / 2**20:.1f} MiB"


def _check_parsed_size(text: str, where: str, error: type[RNNCovError], suffix: str) -> None:
    """Refuse JSON whose parsed form would take more than half the memory this process may
    use (``physical_memory``), before it is parsed: ``[]`` is 2 bytes of text and 56 of
    Python list, so a file of a few hundred MB of them took tens of GB. Estimated from its
    lists and objects (each bracket counted, also inside strings: an overestimate) and its
    length."""
    containers = text.count("[") + text.count("{")
    estimate, memory = containers * CONTAINER_BYTES + 8 * len(text), physical_memory()
    if estimate > memory // 2:
        raise error(
            f"{where} would take about {_size(estimate)} once parsed ({containers:,} "
            f"JSON lists and objects at {CONTAINER_BYTES} bytes each, {len(text):,} "
            "characters at up to 8 bytes each: a number), more than half the "
            f"{_size(memory)} this process may use (the machine's memory or its "
            f"container's limit), which none of pytest-rnncov's files needs{suffix}"
        )


#: What the files pytest-rnncov writes start with, by kind (the JSON formats put "format"
#: first); an existing file is replaced only when it is an earlier output of the same kind.
KINDS = {
    "pytest-rnncov-data": "data file",
    "pytest-rnncov-baseline": "baseline",
    "pytest-rnncov-report": "JSON report",
    "pytest-rnncov-profile": "profile",
    "pytest-rnncov-campaign": "campaign summary",
    "html": "HTML report",
    "markdown": "Markdown report",
}
#: the kinds ``python -m pytest_rnncov show`` prints
SHOWN = (
    "pytest-rnncov-data",
    "pytest-rnncov-baseline",
    "pytest-rnncov-report",
    "pytest-rnncov-profile",
)
_JSON_FORMAT = re.compile(rb'\A\s*\{\s*"format"\s*:\s*"([a-z-]{1,40})"')
_HTML_MARKS = (
    b'<meta name="generator" content="pytest-rnncov">',
    b"<title>RNN coverage report</title>",
)  # the second: releases before the first
#: the first line of a Markdown report (reporting.markdown_report.MARKDOWN_MARK)
_MARKDOWN_MARK = b"<!-- pytest-rnncov report -->"


def file_kind(path: Path) -> str | None:
    """The kind of pytest-rnncov file at ``path`` (a key of KINDS), from its first bytes;
    None for anything else."""
    try:
        with path.open("rb") as handle:
            head = handle.read(4096)
    except OSError:
        return None
    if head.startswith(_MARKDOWN_MARK):
        return "markdown"
    match = _JSON_FORMAT.match(head)
    if match is not None:
        kind = match.group(1).decode()
        return kind if kind in KINDS else None
    return "html" if any(mark in head for mark in _HTML_MARKS) else None


#: the suffixes of source and configuration files, which a Markdown report never fills even
#: when empty (an empty ``__init__.py`` is a package marker); any other empty file may be
#: the summary file a CI runner hands a step, or a ``mktemp`` file
SOURCE_SUFFIXES = frozenset(
    ".py .pyi .pyx .pxd .pth .cfg .ini .toml .yaml .yml .json .sh .bash .c .h .cpp .hpp "
    ".js .ts .html .css .rst .ipynb".split()
)


def check_replaceable(
    path: Path,
    kind: str,
    what: str,
    error: type[RNNCovError] = DataFileError,
    appending: bool = False,
) -> None:
    """Refuse to write ``what`` (a file of ``kind``) at ``path`` when something other than
    an earlier output of the same kind is there: a user's file is never replaced. With
    ``appending`` (the CI step summary), whatever the file holds stays, so any content
    is taken."""
    try:
        info = path.stat()
    except FileNotFoundError:
        if path.is_symlink():  # writing would create the link's target, wherever it points
            raise error(
                f"{what} {str(path)!r} is a symbolic link to a missing file; give a path "
                "that is not a link"
            ) from None
        return
    except OSError as exc:
        raise error(f"{what} {str(path)!r} cannot be used: {exc.strerror or exc}") from None
    if stat.S_ISDIR(info.st_mode):
        raise error(f"{what} {str(path)!r} is a directory; give a file path")
    if stat.S_ISREG(info.st_mode) and info.st_nlink > 1 and not appending:
        raise error(
            f"{what} {str(path)!r} is hard-linked ({info.st_nlink} names): writing replaces "
            "the file, so the other names would keep the old content; give a path that is "
            "not hard-linked"
        )
    if appending and stat.S_ISREG(info.st_mode):
        return
    found = file_kind(path) if stat.S_ISREG(info.st_mode) else None
    if kind == "markdown" and found is None and stat.S_ISREG(info.st_mode) and not info.st_size:
        if path.suffix.lower() in SOURCE_SUFFIXES:
            raise error(
                f"{what} {str(path)!r} would replace an empty {path.suffix} file, a source or "
                "configuration file all the same; give another path"
            )
        return  # an empty file waiting for it: a CI job summary ($GITHUB_STEP_SUMMARY)
    if found != kind:
        seen = "a file pytest-rnncov did not write" if found is None else f"a {KINDS[found]}"
        raise error(
            f"{what} {str(path)!r} would replace {seen}; pytest-rnncov replaces only "
            f"its own earlier {KINDS[kind]}: give another path, or move the file away"
        )


def as_output_path(path: Any, what: str, example: str = "rnncov.json") -> Path:
    """``as_path`` for a file to write: a path ending in a separator names a folder, not a
    file, and is refused (``dir/`` would otherwise write a file named ``dir``); the message
    suggests ``example`` in that folder."""
    target = as_path(path, what)
    if os.fspath(path).endswith(("/", os.sep)):
        raise InvalidArgument(
            f"{what} {os.fspath(path)!r} ends in a separator (a folder); give "
            f"a file path, e.g. {os.fspath(path)}{example}"
        )
    return target


def _snapshot(path: Path) -> tuple[int, int, int, int] | None:
    """What identifies the file's current content cheaply (None: no file)."""
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError:
        return (-1, -1, -1, -1)
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns)


@contextlib.contextmanager
def folder_lock(folder: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``folder`` (flock on the directory itself, so no lock
    file is left behind); writers of files in one folder take turns. A no-op where the
    platform or the file system has no flock, or the folder cannot be opened for reading
    (the writes stay atomic)."""
    try:
        import fcntl
    except ImportError:  # Windows: no advisory locks; writes stay atomic
        yield
        return
    try:
        handle = os.open(folder, os.O_RDONLY)
    except OSError:  # a folder we may write in but not read: writes stay atomic, unlocked
        yield
        return
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX)
        except OSError:  # a file system without locks (some network mounts)
            pass
        yield
    finally:
        os.close(handle)  # releases the lock


def _new_file_mode() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


#: a temporary file of a writer that died is removed once it is this old (seconds)
ORPHAN_AGE = 600


#: the characters of a target's name a temporary file's name repeats (file names stay
#: within the system's limit however long the target's is)
_NAME_KEPT = 64


#: the folders whose orphans this process has looked for (once each: a folder of many
#: samples is not listed again at every file written into it)
_TIDIED: set[Path] = set()


def _host() -> str:
    """This host, as temporary file names carry it (8 hex digits of its name)."""
    return hashlib.sha256(socket.gethostname().encode("utf-8", "replace")).hexdigest()[:8]


def _temporary_stem(target: Path) -> str:
    """How the names of ``target``'s temporary files written on this host begin (the
    writer's process id follows)."""
    return f".{target.name[:_NAME_KEPT]}.{_host()}-"


def _remove_orphans(target: Path) -> None:
    """Remove the temporary files in ``target``'s folder left by writers of this host that
    were killed mid-write (SIGKILL, a lost machine): their process is gone and the file is
    older than ORPHAN_AGE (a writer on another host that shares the name is long done by
    then). Once per folder and process (one listing, however many files are written into
    it); never on Windows, where there is no harmless test of a process id."""
    folder = target.parent
    if os.name == "nt" or folder in _TIDIED:
        return
    _TIDIED.add(folder)
    pattern = re.compile(r"\..*\." + re.escape(_host()) + r"-([0-9]+)\.[a-z0-9_]+\.tmp")
    for name in os.listdir(folder):
        match = pattern.fullmatch(name)
        if match is None or _alive(int(match.group(1))):
            continue
        path = folder / name
        if time.time() - path.lstat().st_mtime > ORPHAN_AGE:
            path.unlink()


def _alive(pid: int) -> bool:
    """Whether process ``pid`` exists on this host (unsure: True, so its file stays)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (OSError, OverflowError, ValueError):
        return True  # another user's process, or no valid pid: left alone
    return True


def write_atomic(
    path: Path,
    content: str | bytes | Callable[[BinaryIO], None],
    what: str,
    error: type[RNNCovError] = DataFileError,
    durable: bool = True,
    make_folder: bool = True,
) -> Path:
    """Write ``content`` to a temporary file in ``path``'s folder, flush it to disk and
    rename it into place: readers see the old file or the new one, never a part of it, and
    a write that fails (disk full, interrupt) leaves the old file as it was. A symbolic
    link is followed: the file it names is replaced, the link stays. Without ``durable``
    the data is not forced to the disk (fsync) before the rename: the write is as atomic
    for a process that dies, but a machine that loses power may keep the old file or an
    empty one (for many small files, such as a campaign's images, where fsync costs 10-20
    times the write). Without ``make_folder`` a missing folder is an error, not made.
    ``content`` may be a function that writes the file's bytes into the stream it is given
    (a large file written part by part, never held in memory whole)."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    temporary: str | None = None
    target = Path(os.path.realpath(path))  # through a symbolic link: the file it names
    existed = os.path.lexists(target)
    try:
        if make_folder:
            target.parent.mkdir(parents=True, exist_ok=True)
        try:
            mode = stat.S_IMODE(target.stat().st_mode)
        except FileNotFoundError:
            mode = _new_file_mode()
        handle, temporary = tempfile.mkstemp(
            dir=target.parent, prefix=f"{_temporary_stem(target)}{os.getpid()}.", suffix=".tmp"
        )
        with os.fdopen(handle, "wb") as stream:
            if callable(data):
                data(stream)
            else:
                stream.write(data)
            stream.flush()
            if durable:
                os.fsync(stream.fileno())
        os.chmod(temporary, mode)
        os.replace(temporary, target)
        temporary = None
    except (OSError, ValueError) as exc:
        kept = "the file there is unchanged" if existed else "no file was written there"
        raise error(
            f"cannot write {what} to {str(path)!r}: {getattr(exc, 'strerror', None) or exc}; {kept}"
        ) from None
    finally:
        if temporary is not None:
            with contextlib.suppress(OSError):
                os.unlink(temporary)
    with contextlib.suppress(OSError):  # the file is written: tidying never fails it
        _remove_orphans(target)
    return path


class Terminated(KeyboardInterrupt):
    """SIGTERM (a CI job's timeout or cancel), raised as an interrupt: the session ends as
    after a Ctrl-C, keeping what it measured (``terminate_as_interrupt``)."""


def interrupt_name(exc: KeyboardInterrupt) -> str:
    """What sent the interrupt ``exc``, for messages: "SIGTERM" or "Ctrl-C"."""
    return "SIGTERM" if isinstance(exc, Terminated) else "Ctrl-C"


def terminate_as_interrupt() -> Callable[[], None] | None:
    """Make SIGTERM stop this process as a Ctrl-C does (``Terminated``), where SIGTERM
    still has its default action (which ends the process at once, writing nothing) and
    this is the main thread; a second SIGTERM ends it at once, and so does one sent to a
    process forked from this one (``Process.terminate()``). Returns the function that
    restores the default (None: nothing was changed)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    if signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return None  # someone else's handler, or SIGTERM ignored: theirs to keep

    owner = os.getpid()

    def terminated(signum: int, frame: Any) -> None:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        if os.getpid() != owner:  # a forked child inherited this: its default, at once
            os.kill(os.getpid(), signal.SIGTERM)
            return
        raise Terminated("SIGTERM")

    signal.signal(signal.SIGTERM, terminated)

    def restore() -> None:
        if signal.getsignal(signal.SIGTERM) is terminated:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)

    return restore


@contextlib.contextmanager
def interrupt_after() -> Iterator[None]:
    """Hold a Ctrl-C (SIGINT), or a SIGTERM that ``terminate_as_interrupt`` turns into one,
    that arrives inside the block until the block ends, then raise it: a set of files
    written together is finished, each whole. A second signal raises at once (a write
    that hangs on a lock or a lost mount can still be stopped). Outside the main thread
    (where signals cannot be handled) the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield  # signals cannot be handled here
        return
    previous = {
        signum: handler
        for signum in (signal.SIGINT, signal.SIGTERM)
        for handler in [signal.getsignal(signum)]
        if callable(handler) or (signum == signal.SIGINT and handler == signal.SIG_DFL)
    }  # not a handler that is not Python's to restore, nor an ignored or default SIGTERM
    held: list[tuple[int, Any]] = []

    def restore() -> None:
        for signum, handler in previous.items():
            signal.signal(signum, handler)

    def hold(signum: int, frame: Any) -> None:
        if held:  # a second signal: the user insists (a write hangs): stop now
            restore()
            raise Terminated("SIGTERM") if signum == signal.SIGTERM else KeyboardInterrupt
        held.append((signum, frame))

    for caught in previous:
        signal.signal(caught, hold)
    try:
        yield
    finally:
        restore()
    if held:
        first, frame = held[0]
        handler = previous[signal.Signals(first)]
        if callable(handler):
            handler(first, frame)  # Python's SIGINT handler raises KeyboardInterrupt
        else:
            raise KeyboardInterrupt  # SIGINT's default action


def is_step_summary(path: Path) -> bool:
    """Whether ``path`` is the file ``$GITHUB_STEP_SUMMARY`` names: the Markdown summary a
    GitHub Actions runner hands each step, which every command of the step appends to."""
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    try:
        return bool(summary) and os.path.samefile(path, str(summary))
    except (OSError, ValueError):  # either file missing, a name no file can have
        return False


def append_whole(
    path: Path, content: str | bytes, what: str, error: type[RNNCovError] = DataFileError
) -> None:
    """Append ``content`` to ``path`` (after a blank line when the file holds something)
    in one ``O_APPEND`` write, as the other writers of a shared file such as the CI step
    summary do (``>>``, ``tee -a``): what they write before or after is kept, where a
    renamed copy would drop what they write to the file they hold open. A write that fails
    or is interrupted part-way is cut back off, unless another writer appended since."""
    added = content.encode("utf-8") if isinstance(content, str) else content
    try:
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | getattr(os, "O_BINARY", 0)  # no \r\n
        handle = os.open(path, flags, _new_file_mode())
    except OSError as exc:
        raise error(f"cannot append {what} to {str(path)!r}: {exc.strerror or exc}") from None
    start = written = 0
    try:
        info = os.fstat(handle)
        if not stat.S_ISREG(info.st_mode):  # a FIFO would block, a device take all
            raise error(f"cannot append {what} to {str(path)!r}: it is not a regular file")
        start = info.st_size
        last = b""
        if start:  # lseek and read, not pread: Windows runners have step summaries too
            os.lseek(handle, start - 1, os.SEEK_SET)
            last = os.read(handle, 1)
        data = (b"" if not start else b"\n" if last == b"\n" else b"\n\n") + added
        while written < len(data):
            written += os.write(handle, data[written:])
        os.fsync(handle)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            if written and os.fstat(handle).st_size == start + written:  # ours is the last
                os.ftruncate(handle, start)
        if not isinstance(exc, OSError):
            raise
        raise error(
            f"cannot append {what} to {str(path)!r}: {exc.strerror or exc}; what the file "
            "held is kept"
        ) from None
    finally:
        os.close(handle)


class Output:
    """A file a run will write, checked when the run starts and written when it ends.

    At creation the path is checked (``check_replaceable``) and what is there is noted; at
    :meth:`write` the folder is locked and, if another process changed the file since,
    this run's content goes to a file beside it (``NAME.conflict-PID-XXXXXX.EXT``) and
    :class:`OutputConflict` says where: two writers never silently lose one's results.
    With ``append`` (the CI step summary) the content is added after what the file holds
    when it is written (:func:`append_whole`).
    """

    def __init__(
        self,
        path: Path,
        kind: str,
        what: str,
        error: type[RNNCovError] = DataFileError,
        append: bool = False,
    ) -> None:
        self.path, self.what, self.error, self.append = path, what, error, append
        check_replaceable(path, kind, what, error, appending=append)
        self._seen = _snapshot(path)

    def write(self, content: str | bytes) -> Path:
        with self._locked_folder():
            if self.append:  # what the step's other commands wrote stays, before this
                append_whole(self.path, content, self.what, self.error)
                return self.path
            if not self._write_if_unchanged(content):
                kept = self.path.with_name(
                    f"{self.path.stem}.conflict-{os.getpid()}-"
                    f"{secrets.token_hex(3)}{self.path.suffix}"
                )
                write_atomic(kept, content, self.what, self.error)
                raise OutputConflict(
                    f"{self.what} not written to {str(self.path)!r}: another process wrote "
                    f"that file while this run went on; this run's {self.what} is in "
                    f"{str(kept)!r}"
                )
        return self.path

    def claim(self, content: str | bytes) -> bool:
        """Write ``content`` now, as :meth:`write` does, where no other process changed the
        file since it was checked (else leave the file be, and return False: :meth:`write`
        then keeps this run's content beside it)."""
        with self._locked_folder():
            return not self.append and self._write_if_unchanged(content)

    @contextlib.contextmanager
    def _locked_folder(self) -> Iterator[None]:
        """The output's folder, made if missing, locked against other writers."""
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise self.error(
                f"cannot write {self.what} to {str(self.path)!r}: {exc.strerror or exc}"
            ) from None
        with folder_lock(Path(os.path.realpath(self.path)).parent):
            yield

    def _write_if_unchanged(self, content: str | bytes) -> bool:
        """Under the folder's lock: write ``content`` where the file is as this run last
        saw it (False, and nothing written, where another process changed it)."""
        if _snapshot(self.path) != self._seen:
            return False
        try:
            write_atomic(self.path, content, self.what, self.error)
        finally:  # a Ctrl-C just after the rename: the file is this run's, not another's
            self._seen = _snapshot(self.path)
        return True


class Fields:
    """Strict, typed reads of one JSON object of a file: the one field reader of every
    format. A missing key, a value of another type (``true`` is no integer, ``1`` no float)
    and, with :meth:`exact_keys`, a key the format does not have are ``error`` naming
    ``where``, the key and ``fix``: a file is refused by name or read back identically."""

    def __init__(
        self, data: Any, where: str, error: type[RNNCovError] = DataFileError, fix: str = ""
    ) -> None:
        self.where, self.error, self.fix = where, error, fix
        if not isinstance(data, dict):
            raise self.fail(f"expected an object, got {type(data).__name__}")
        self.data: dict[str, Any] = data
        self.optional: frozenset[str] = frozenset()

    def fail(self, problem: str) -> RNNCovError:
        """The error to raise for ``problem`` (which names the key)."""
        return self.error(f"{self.where}: {problem}" + (f"; {self.fix}" if self.fix else ""))

    def get(self, key: str, kind: type | tuple[type, ...]) -> Any:
        """``data[key]``, which must be of ``kind`` exactly as JSON wrote it."""
        if key not in self.data:
            raise self.fail(f"missing key {key!r}")
        value = self.data[key]
        kinds = kind if isinstance(kind, tuple) else (kind,)
        if (
            (isinstance(value, bool) and bool not in kinds)
            or (isinstance(value, int) and int not in kinds and bool not in kinds)
            or not isinstance(value, kinds)
        ):
            names = " or ".join(k.__name__ for k in kinds)
            if value is None and key in self.optional:
                raise self.fail(f"{key!r} is null, not {names} (leave the key out for no value)")
            raise self.fail(f"{key!r} is {shown(value)} ({type(value).__name__}), not {names}")
        return value

    def strings(self, key: str) -> list[str]:
        """``data[key]``, which must be a list of strings."""
        values = self.get(key, list)
        if not all(isinstance(v, str) for v in values):
            raise self.fail(f"{key!r} must be a list of strings")
        return list(values)

    def exact_keys(self, required: Iterable[str], optional: Iterable[str] = ()) -> None:
        """Refuse a missing required key and any key the format does not have (it would be
        defaulted, or dropped, when the file is written again)."""
        required = tuple(required)
        self.optional = frozenset(optional)
        known = set(required) | self.optional
        missing = [k for k in required if k not in self.data]
        if missing:
            raise self.fail(f"missing key {missing[0]!r}")
        unknown = sorted(set(self.data) - known)
        if unknown:
            raise self.fail(
                f"unknown key {shown(unknown[0])} (the format has {', '.join(sorted(known))})"
            )


def read_envelope(
    data: Any,
    where: str,
    kind: str,
    versions: Sequence[int],
    error: type[RNNCovError] = DataFileError,
    fix: str = "",
    noun: str = "format",
) -> tuple[Fields, int]:
    """Check that ``data`` is a file of ``kind`` (a key of KINDS) in one of ``versions``
    (an integer, not ``true`` or ``2.0``); returns its fields and version."""
    if not isinstance(data, dict) or data.get("format") != kind:
        noun = KINDS[kind] if KINDS[kind].endswith("file") else f"{KINDS[kind]} file"
        found = data.get("format") if isinstance(data, dict) else None
        if isinstance(found, str) and found.startswith("pytest-rnncov-") and found in KINDS:
            shown_by = " (python -m pytest_rnncov show FILE prints it)" if found in SHOWN else ""
            raise error(f"{where} is a pytest-rnncov {KINDS[found]}, not a {noun}{shown_by}")
        raise error(f"{where} is not a pytest-rnncov {noun}")
    version = data.get("version")
    if type(version) is not int or version not in versions:
        reads = (
            f"version {versions[0]}"
            if len(versions) == 1
            else f"versions {versions[0]}-{versions[-1]}"
        )
        if type(version) is int and version > max(versions):  # refitting would lose it
            raise error(
                f"{where} has {noun} version {version}, newer than this pytest-rnncov reads "
                f"({reads}): a later release wrote it; upgrade pytest-rnncov (pip install -U "
                "pytest-rnncov) to read it, rather than write the file again with this one"
            )
        raise error(
            f"{where} has {noun} version {shown(version)}; this pytest-rnncov reads "
            f"{reads}" + (f": {fix}" if fix else "")
        )
    return Fields(data, where, error, fix), version
