"""A campaign's case store: bounded memory, cases past the bound in a temporary file."""

from __future__ import annotations

import tempfile

import numpy as np
import pytest

import pytest_rnncov.generation.cases as cases_module
from pytest_rnncov import RNNCovWarning
from pytest_rnncov.generation.cases import CaseStore, KeySet

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


def test_ids_outside_the_store_are_refused(three_rows):
    """Past the end, a spilled store returned uninitialised memory; below -size an id
    wrapped twice."""
    for store in (filled(CaseStore(True, spill=True), [2, 2, 4]), filled(CaseStore(True), [8])):
        for index in ([8], [0, 13], [-9]):
            with pytest.raises(IndexError, match="of 8 cases"):
                store.take(index)
        np.testing.assert_array_equal(store.take([-8, -1])[:, 0, 0], [0, 7])
        with pytest.raises(TypeError, match="case ids must be integers, not bool"):
            store.take(np.ones(8, bool))  # a mask read as ids 0 and 1
        with pytest.raises(IndexError, match="case ids 18446744073709551615..1844"):
            store.take(np.array([2**64 - 1], np.uint64))  # wrapped to -1: the last case
        assert store.take([]).shape == (0, *ROW)
    text = CaseStore(False)
    text.extend(["a", "b"])
    with pytest.raises(TypeError, match="not bool"):
        text.take(np.array([True, False]))
    with pytest.raises(TypeError, match="not float64"):
        text.take([1.7])
    assert text.take([-1]) == ["b"] and CaseStore(True).take([]).shape == (0,)


def test_rows_of_no_bytes_never_spill(three_rows):
    store = CaseStore(True, spill=True)
    store.extend(np.zeros((50, 0), np.float32))  # more rows than 72 bytes hold of 1 byte
    store.extend(np.zeros((50, 0), np.float32))
    assert store._file is None and store.take([99, 0]).shape == (2, 0)


def test_rows_of_another_shape_are_refused(three_rows):
    store = filled(CaseStore(True, spill=True), [4])
    with pytest.raises(ValueError, match=r"cases of shape \(3, 2\) added to a store of \(2, 3\)"):
        store.extend(np.zeros((2, 3, 2), np.float32))


def test_a_forked_process_copies_the_file_before_it_adds_cases(three_rows):
    """Parent and child shared one file: the child's cases overwrote the parent's."""
    import os

    store = filled(CaseStore(True, spill=True), [6])  # rows 3-5 in the file
    written, wait = os.pipe()
    answer, tell = os.pipe()
    child = os.fork()
    if child == 0:  # once the parent added rows, the child adds its own and reads all
        try:
            os.read(written, 1)
            store.extend(np.full((3, *ROW), -1, np.float32))
            os.write(tell, store.take(np.arange(9))[:, 0, 0].astype(np.float32).tobytes())
        finally:
            os._exit(0)
    store.extend(rows(6, 9))  # the parent's, where the child's would go in a shared file
    os.write(wait, b"x")
    os.waitpid(child, 0)
    seen = np.frombuffer(os.read(answer, 4 * 9), np.float32)
    np.testing.assert_array_equal(seen, [0, 1, 2, 3, 4, 5, -1, -1, -1])
    np.testing.assert_array_equal(store.take(np.arange(9))[:, 0, 0], np.arange(9))


def test_rows_are_read_without_a_mapping_when_none_can_be_made(three_rows, monkeypatch):
    """Out of file descriptors (each mapping holds one), the rows are read one by one."""
    store = filled(CaseStore(True, spill=True), [2, 2, 4])

    def no_mapping(*args, **kwargs):
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(cases_module.np, "memmap", no_mapping)
    np.testing.assert_array_equal(store.take([7, 3, 0, 5])[:, 0, 0], [7, 3, 0, 5])


def test_a_key_set_says_which_keys_are_new_as_a_python_set_would():
    """Batches of keys with repeats within and across batches, checked against a set; the
    levels stay sorted, each at least twice the next, so a lookup is a few searches."""
    rng = np.random.default_rng(0)
    keys, seen = KeySet(), set()
    for size in rng.integers(0, 60, 200).tolist():
        batch = rng.integers(0, 3_000, size).astype(np.uint64)
        if size:
            batch[-1] = np.uint64(2**64 - 1)  # the largest key, past every level's end
        expected = []
        for key in batch.tolist():
            expected.append(key not in seen)
            seen.add(key)
        np.testing.assert_array_equal(keys.add_new(batch), np.array(expected, bool))
        assert keys.size == len(seen)
        for level in keys._levels:
            assert (np.diff(level.astype(np.float64)) > 0).all()
        sizes = [len(level) for level in keys._levels]
        assert all(a > 2 * b for a, b in zip(sizes, sizes[1:]))
    assert len(keys._levels) <= 12 and sum(map(len, keys._levels)) == len(seen)
