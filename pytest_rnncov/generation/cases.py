"""The cases of a campaign, by id: a growing array (array cases) or a list (strings)."""

from __future__ import annotations

from typing import Any

import numpy as np


class CaseStore:
    """All cases of a campaign, by id: a growing array, or a list of strings."""

    def __init__(self, arrays: bool) -> None:
        self.arrays = arrays
        self._list: list[Any] = []
        self._array: np.ndarray | None = None
        self.size = 0

    def extend(self, cases: Any) -> None:
        if not self.arrays:
            self._list.extend(cases)
            self.size = len(self._list)
            return
        cases = np.asarray(cases)
        if self._array is None:
            self._array = np.empty((max(1024, 2 * len(cases)),) + cases.shape[1:], cases.dtype)
        if self.size + len(cases) > len(self._array):
            grown = np.empty(
                (2 * (self.size + len(cases)),) + self._array.shape[1:], self._array.dtype
            )
            grown[: self.size] = self._array[: self.size]
            self._array = grown
        self._array[self.size : self.size + len(cases)] = cases
        self.size += len(cases)

    def view(self, dtype: Any) -> np.ndarray:
        """The array cases so far, not copied (empty, of ``dtype``, before the first)."""
        assert self.arrays
        return np.zeros(0, dtype) if self._array is None else self._array[: self.size]

    def take(self, index: Any) -> Any:
        if self.arrays:
            assert self._array is not None
            return self._array[: self.size][np.asarray(index, np.int64)]
        return [self._list[int(i)] for i in index]
