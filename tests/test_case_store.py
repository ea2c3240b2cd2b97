"""A campaign's case store: bounded memory, cases past the bound in a temporary file."""

from __future__ import annotations

import tempfile

import numpy as np
import pytest

import pytest_rnncov.generation.cases as cases_module
from pytest_rnncov import RNNCovWarning
from pytest_rnncov.generation.cases import CaseStore

REAL_TEMPORARY_FILE = tempfile.TemporaryFile
ROW = (2, 3)  # 6 float32 values: 24 bytes a row


def rows(start: int, stop: int) -> np.ndarray:
    """Rows ``start..stop-1``, each filled with its own id (so a row names itself)."""
    return np.repeat(np.arange(start, stop, dtype=np.float32), 6).reshape(-1, *ROW)


def filled(store: CaseStore, sizes: list[int]) -> CaseStore:
    start = 0
    for size in sizes:
        store.extend(rows(start, start + size))
        start += size
    return store


@pytest.fixture
def three_rows(monkeypatch):
    """A store keeps 3 rows (72 bytes) in memory."""
    monkeypatch.setattr(cases_module, "CASE_MEMORY", 3 * 24)


def test_cases_past_the_bound_go_to_a_file_and_read_back(three_rows):
    store = filled(CaseStore(True, spill=True), [2, 2, 4, 2])
    assert store.size == 10 and store._held() == 3 and store._spilled == 7
    assert len(store._array) <= 3  # the memory held is the bound's, however many cases
    index = [9, 0, 5, 2, -1, 3, 3]
    np.testing.assert_array_equal(store.take(index)[:, 0, 0], [9, 0, 5, 2, 9, 3, 3])
    store.extend(rows(10, 12))  # the file grows after it was read: read again
    np.testing.assert_array_equal(store.take([11, 10, 4])[:, 0, 0], [11, 10, 4])
    assert store.take(np.zeros(0, int)).shape == (0, *ROW)


def test_a_store_that_does_not_spill_keeps_everything_in_memory(three_rows):
    store = filled(CaseStore(True), [2, 2, 4, 2])
    assert store._file is None and store._held() == 10
    np.testing.assert_array_equal(store.view(np.float32)[:, 0, 0], np.arange(10))


def test_text_cases_stay_a_list(three_rows):
    store = CaseStore(False, spill=True)
    store.extend(["a", "b"])
    store.extend(["c", "d", "e"])
    assert store.take([4, 0]) == ["e", "a"] and store.size == 5


class FailingFile:
    """A temporary file whose ``writes``-th write (counting from 1) fails: the disk is
    full; the writes before it land."""

    def __init__(self, writes: int) -> None:
        self.file = REAL_TEMPORARY_FILE()
        self.writes = writes

    def write(self, data: bytes) -> int:
        self.writes -= 1
        if self.writes == 0:
            self.file.write(data[:5])  # a partial write, then the error
            raise OSError(28, "No space left on device")
        return self.file.write(data)

    def __getattr__(self, name: str):
        return getattr(self.file, name)


def test_a_full_disk_keeps_the_later_cases_in_memory_with_a_warning(three_rows, monkeypatch):
    monkeypatch.setattr(cases_module.tempfile, "TemporaryFile", lambda **_: FailingFile(2))
    store = CaseStore(True, spill=True)
    filled(store, [2, 2])  # rows 0-2 in memory, row 3 in the file
    with pytest.warns(RNNCovWarning, match="No space left on device.*TMPDIR"):
        store.extend(rows(4, 7))  # the second write fails
    store.extend(rows(7, 9))
    assert (store._held(), store._spilled, store._tail.size, store.size) == (3, 1, 5, 9)
    np.testing.assert_array_equal(store.take([8, 3, 0, 4, 6, 2])[:, 0, 0], [8, 3, 0, 4, 6, 2])


def test_a_disk_that_takes_no_write_at_all(three_rows, monkeypatch):
    monkeypatch.setattr(
        cases_module.tempfile, "TemporaryFile", lambda **_: open("/dev/full", "r+b")
    )
    store = CaseStore(True, spill=True)
    with pytest.warns(RNNCovWarning, match="temporary file"):
        filled(store, [5, 4])
    assert store._spilled == 0 and store._tail.size == 6
    np.testing.assert_array_equal(store.take(np.arange(9))[:, 0, 0], np.arange(9))
