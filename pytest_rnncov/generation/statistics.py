"""Test-suite statistics (SPEC section 7): diversity and the minimal test suite, both kept
incrementally in memory bounded by the seeds and the conditions, not the number of cases."""

from __future__ import annotations

import heapq
from typing import Mapping

import numpy as np


def angular_diversity(cases: np.ndarray, seed: np.ndarray) -> float:
    """``-(1/n^2) sum_ij cos(x_i - x_0, x_j - x_0)`` of test cases around their seed.

    Cases equal to the seed have no direction and are left out.
    """
    acc = DiversityAccumulator(1)
    acc.add(np.asarray(cases), np.asarray(seed)[None], np.zeros(len(cases), np.int64))
    value = acc.per_seed()
    return float(value[0]) if len(value) else 0.0


class DiversityAccumulator:
    """Angular diversity per seed from running sums: the double sum of cosines is the
    squared norm of the sum of unit directions, so only one vector per seed is kept."""

    def __init__(self, n_seeds: int) -> None:
        self.n_seeds = n_seeds
        self.sums: np.ndarray | None = None
        self.counts = np.zeros(n_seeds, np.int64)

    def add(self, cases: np.ndarray, seeds: np.ndarray, seed_index: np.ndarray) -> None:
        """Add cases (row-aligned with their seeds and seed indices)."""
        d = np.asarray(cases, np.float64).reshape(len(cases), -1) - np.asarray(
            seeds, np.float64
        ).reshape(len(seeds), -1)
        norms = np.linalg.norm(d, axis=1)
        if self.sums is None:
            self.sums = np.zeros((self.n_seeds, d.shape[1]))
        moved = np.flatnonzero(norms > 0)
        if len(moved) == 0:
            return
        # the moved cases grouped by seed, each group's unit directions summed in one pass
        moved = moved[np.argsort(seed_index[moved], kind="stable")]
        owners = seed_index[moved]
        starts = np.flatnonzero(np.r_[True, owners[1:] != owners[:-1]])
        units = d[moved] / norms[moved, None]
        self.sums[owners[starts]] += np.add.reduceat(units, starts, axis=0)
        self.counts += np.bincount(owners, minlength=self.n_seeds)

    def per_seed(self, minimum: int = 1) -> np.ndarray:
        """Diversity of every seed with at least ``minimum`` moved cases."""
        if self.sums is None:
            return np.zeros(0)
        keep = self.counts >= max(minimum, 1)
        sums, counts = self.sums[keep], self.counts[keep]
        squares = np.einsum("ij,ij->i", sums, sums) / counts.astype(np.float64) ** 2
        return -np.minimum(squares, 1.0)  # in [-1, 0]: n equal directions may round past 1

    def mean(self) -> float | None:
        """Mean diversity over seeds with more than one moved case (None when none)."""
        values = self.per_seed(minimum=2)
        return float(values.mean()) if len(values) else None


class MinimalSuite:
    """A small subset of cases covering every condition the cases cover.

    Cases arrive in batches of (row, condition) hit pairs; within each batch the case that
    covers the most conditions the suite does not cover yet joins first (greedy set cover),
    so the suite grows with the conditions, not with the number of cases. ``members()``
    finally drops, from the last member back, any member whose removal loses nothing, so
    removing any member of the result lowers some coverage.
    """

    def __init__(self, total: int) -> None:
        self.total = int(total)
        self.covered = np.zeros(self.total, bool)
        self._ids: list[int] = []
        self._hits: list[np.ndarray] = []

    def add(self, case_ids: np.ndarray, rows: np.ndarray, conditions: np.ndarray) -> None:
        """Add a batch: case ``case_ids[r]`` satisfies ``conditions[k]`` where ``rows[k] == r``.

        Lazy greedy: a case's gain only shrinks as the suite grows, so the cases wait in a
        heap under their last known gain and only the top one is re-counted; the result is
        the eager greedy choice (ties to the earlier case) at a cost proportional to the
        hits of the cases examined, not to all pending hits per member added.
        """
        new = ~self.covered[conditions]
        if not new.any():
            return
        fresh = np.bincount(rows[new], minlength=len(case_ids))
        candidate = (fresh > 0)[rows]  # only cases that gain something can join
        rows, conditions = rows[candidate], conditions[candidate]
        order = np.argsort(rows, kind="stable")
        rows_sorted, conditions_sorted = rows[order], conditions[order]
        starts = np.searchsorted(rows_sorted, np.arange(len(case_ids) + 1))
        heap = [(-int(fresh[r]), int(r)) for r in np.flatnonzero(fresh)]
        heapq.heapify(heap)
        while heap:
            _, row = heapq.heappop(heap)
            hit = conditions_sorted[starts[row] : starts[row + 1]]
            gain = int((~self.covered[hit]).sum())
            if gain == 0:
                continue
            if heap and (-gain, row) > heap[0]:  # another case may gain more now
                heapq.heappush(heap, (-gain, row))
                continue
            self._ids.append(int(case_ids[row]))
            self._hits.append(hit.copy())  # unique already: metrics report each pair once
            self.covered[hit] = True

    def members(self) -> np.ndarray:
        """Sorted ids of the suite after dropping redundant members."""
        counts = np.zeros(self.total, np.int64)
        for hit in self._hits:
            counts[hit] += 1
        keep = np.ones(len(self._ids), bool)
        for position in range(len(self._ids) - 1, -1, -1):
            hit = self._hits[position]
            if (counts[hit] > 1).all():
                counts[hit] -= 1
                keep[position] = False
        return np.array(sorted(i for i, k in zip(self._ids, keep) if k), dtype=np.int64)


def minimal_suite(hits: Mapping[str, np.ndarray]) -> np.ndarray:
    """Indices of a small subset of cases covering every condition the cases cover.

    ``hits`` maps metric names to (cases, conditions) boolean matrices (one batch).
    """
    matrix = np.concatenate([np.asarray(h, bool) for h in hits.values()], axis=1)
    rows, conditions = np.nonzero(matrix)
    suite = MinimalSuite(matrix.shape[1])
    suite.add(np.arange(matrix.shape[0]), rows.astype(np.int64), conditions.astype(np.int64))
    return suite.members()
