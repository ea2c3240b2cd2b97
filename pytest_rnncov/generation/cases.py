"""The cases of a campaign, by id: a growing array (array cases) or a list (strings).

A campaign keeps every case it generated (the paper's schedule draws parents from all of
them). Array cases beyond :data:`CASE_MEMORY` bytes go to an unlinked temporary file and
are read back through the page cache, so a long campaign's memory stays bounded."""

from __future__ import annotations

import os
import tempfile
import warnings
from typing import IO, Any

import numpy as np

from ..errors import RNNCovWarning, user_stacklevel

#: bytes of array cases a spilling store keeps in memory; later cases go to a temporary
#: file in the system's temporary folder (``TMPDIR``)
CASE_MEMORY = 256 * 2**20
#: bytes copied at a time when a forked process takes its own copy of the file
COPY_BYTES = 64 * 2**20


class CaseStore:
    """All cases of a campaign, by id: a growing array, or a list of strings. With
    ``spill``, array cases past :data:`CASE_MEMORY` bytes go to a temporary file (a
    forked process copies it before it adds cases of its own); if the file cannot be
    written (a full disk), the later cases stay in memory, with a warning."""

    def __init__(self, arrays: bool, *, spill: bool = False) -> None:
        self.arrays = arrays
        self.spill = spill
        self._list: list[Any] = []
        self._array: np.ndarray | None = None
        self._file: IO[bytes] | None = None
        self._owner = 0  # the process that made the file
        self._spilled = 0  # rows in the file, after the array's
        self._mapped: np.ndarray | None = None  # the file's rows, mapped (maybe fewer)
        self._tail: CaseStore | None = None  # the rows after the file's, if it failed
        self.size = 0

    def extend(self, cases: Any) -> None:
        if not self.arrays:
            self._list.extend(cases)
            self.size = len(self._list)
            return
        cases = np.asarray(cases)
        if self._array is None:
            self._array = np.empty((0,) + cases.shape[1:], cases.dtype)
        elif cases.shape[1:] != self._array.shape[1:]:
            raise ValueError(
                f"cases of shape {cases.shape[1:]} added to a store of {self._array.shape[1:]}"
            )
        if self._tail is not None:  # the file could not be written: the rest stays here
            self._tail.extend(cases)
            self.size += len(cases)
            return
        if self._file is not None:  # spilling already: every later case goes to the file
            room = 0
        elif self.spill and self._row_bytes():
            room = max(0, self._memory_rows() - self._held())
        else:
            room = len(cases)
        self._keep(cases[:room])
        if room < len(cases):
            self._write(cases[room:])

    def _keep(self, cases: np.ndarray) -> None:
        """Append ``cases`` to the array in memory (grown by doubling, up to what a
        spilling store keeps)."""
        assert self._array is not None
        held = self._held()
        if held + len(cases) > len(self._array):
            rows = max(1024, 2 * (held + len(cases)))
            if self.spill and self._row_bytes():
                rows = max(held + len(cases), min(rows, self._memory_rows()))
            grown = np.empty((rows,) + self._array.shape[1:], self._array.dtype)
            grown[:held] = self._array[:held]
            self._array = grown
        self._array[held : held + len(cases)] = cases
        self.size += len(cases)

    def _row_bytes(self) -> int:
        assert self._array is not None
        return self._array.dtype.itemsize * int(np.prod(self._array.shape[1:]))

    def _memory_rows(self) -> int:
        """Rows of array cases a spilling store keeps in memory (at least one)."""
        return max(1, CASE_MEMORY // self._row_bytes())

    def _write(self, cases: np.ndarray) -> None:
        """Append ``cases`` to the temporary file; if that fails, they and every later
        case stay in memory (the file keeps the rows it holds)."""
        assert self._array is not None
        data = np.ascontiguousarray(cases, self._array.dtype)
        try:
            if self._file is not None and self._owner != os.getpid():
                self._copy_file()  # forked: the parent appends to the file it shares
            if self._file is None:
                self._file, self._owner = tempfile.TemporaryFile(prefix="rnncov-"), os.getpid()
            self._file.seek(self._spilled * self._row_bytes())
            self._file.write(data.tobytes())
            self._file.flush()
        except OSError as error:
            warnings.warn(
                f"could not write a campaign's cases to a temporary file ({error}); the "
                "later cases stay in memory. Give the temporary folder room, or point "
                "TMPDIR at a folder that has it",
                RNNCovWarning,
                stacklevel=user_stacklevel(),
            )
            self._tail = CaseStore(True)
            self._tail.extend(data)
            self.size += len(data)
            return
        self._spilled += len(data)
        self.size += len(data)

    def _copy_file(self) -> None:
        """This process's own copy of the file it shares with the one it was forked from
        (whose rows past this store's may differ)."""
        assert self._file is not None
        shared, size = self._file, self._spilled * self._row_bytes()
        copy = tempfile.TemporaryFile(prefix="rnncov-")
        for start in range(0, size, COPY_BYTES):
            copy.write(os.pread(shared.fileno(), min(COPY_BYTES, size - start), start))
        self._file, self._owner, self._mapped = copy, os.getpid(), None
        shared.close()

    def _spilled_rows(self, local: np.ndarray) -> np.ndarray:
        """The file's rows ``local``: through a read-only mapping (made again when the
        file grew), or read one by one where no mapping can be made (no file descriptor
        or address space left)."""
        assert self._array is not None and self._file is not None
        if self._mapped is None or len(self._mapped) < self._spilled:
            try:
                self._mapped = np.memmap(
                    self._file,
                    self._array.dtype,
                    "r",
                    shape=(self._spilled,) + self._array.shape[1:],
                )
            except OSError:
                self._mapped = None
                return self._read(self._file, local)
        return self._mapped[local]

    def _read(self, file: IO[bytes], local: np.ndarray) -> np.ndarray:
        assert self._array is not None
        size = self._row_bytes()
        out = np.empty((len(local),) + self._array.shape[1:], self._array.dtype)
        for k, row in enumerate(local.tolist()):
            data = os.pread(file.fileno(), size, row * size)
            out[k] = np.frombuffer(data, self._array.dtype).reshape(out.shape[1:])
        return out

    def view(self, dtype: Any) -> np.ndarray:
        """The array cases so far, not copied (empty, of ``dtype``, before the first); a
        store that spills has no such view."""
        assert self.arrays and not self.spill
        return np.zeros(0, dtype) if self._array is None else self._array[: self.size]

    def take(self, index: Any) -> Any:
        """The cases ``index`` (ids; negative ones count from the end), copied."""
        index = self._ids(index)
        if not self.arrays:
            return [self._list[i] for i in index.tolist()]
        if self._array is None:
            return np.zeros(index.shape)
        held = self._held()
        if held == self.size:
            return self._array[:held][index]
        taken = np.empty(index.shape + self._array.shape[1:], self._array.dtype)
        kept, tail = index < held, index >= held + self._spilled
        taken[kept] = self._array[:held][index[kept]]
        spilled = ~(kept | tail)
        if spilled.any():
            taken[spilled] = self._spilled_rows(index[spilled] - held)
        if self._tail is not None and tail.any():
            taken[tail] = self._tail.take(index[tail] - held - self._spilled)
        return taken

    def _ids(self, index: Any) -> np.ndarray:
        """``index`` as int64 ids in 0..size-1; IndexError or TypeError otherwise."""
        index = np.asarray(index)
        if not index.size:
            return index.astype(np.int64)
        if index.dtype.kind not in "iu":
            mask = " (a mask?)" if index.dtype.kind == "b" else ""
            raise TypeError(f"case ids must be integers, not {index.dtype}{mask}")
        low, high = int(index.min()), int(index.max())  # Python ints: no wrapping
        if low < -self.size or high >= self.size:
            raise IndexError(f"case ids {low}..{high} of {self.size} cases")
        index = index.astype(np.int64)
        return np.where(index < 0, index + self.size, index)

    def _held(self) -> int:
        """Rows in the array in memory (the first ones)."""
        tail = 0 if self._tail is None else self._tail.size
        return self.size - self._spilled - tail


class KeySet:
    """A set of 64-bit keys (the hashes of a campaign's adversarial samples), 8 bytes a
    key: sorted arrays of doubling sizes, the smaller merged into the larger as they fill
    (a log-structured merge), so that a batch's lookups and inserts are a few vectorised
    searches, never a Python object per key."""

    def __init__(self) -> None:
        self._levels: list[np.ndarray] = []  # sorted, each at least twice the next one
        self.size = 0

    def add_new(self, keys: np.ndarray) -> np.ndarray:
        """Add ``keys`` (uint64); returns which of them were new: not in the set, and
        not an earlier one of ``keys``."""
        keys = np.asarray(keys, np.uint64)
        _, first = np.unique(keys, return_index=True)
        new = np.zeros(len(keys), bool)
        new[first] = True
        for level in self._levels:
            at = np.minimum(np.searchsorted(level, keys), len(level) - 1)
            new &= level[at] != keys
        fresh = np.sort(keys[new])
        while self._levels and len(self._levels[-1]) <= 2 * len(fresh):
            fresh = np.sort(np.concatenate([self._levels.pop(), fresh]), kind="stable")
        if len(fresh):
            self._levels.append(fresh)
        self.size += int(new.sum())
        return new
