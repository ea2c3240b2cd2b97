"""Test-suite statistics (SPEC section 7): diversity and the minimal test suite."""

from __future__ import annotations

from typing import Mapping

import numpy as np


def angular_diversity(cases: np.ndarray, seed: np.ndarray) -> float:
    """``-(1/n^2) sum_ij cos(x_i - x_0, x_j - x_0)`` of test cases around their seed.

    Cases equal to the seed have no direction and are left out.
    """
    d = np.asarray(cases, np.float64).reshape(len(cases), -1) - np.asarray(seed, np.float64).ravel()
    norms = np.linalg.norm(d, axis=1)
    d = d[norms > 0] / norms[norms > 0, None]
    if len(d) == 0:
        return 0.0
    total = d.sum(axis=0)
    return -float(total @ total) / len(d) ** 2


def minimal_suite(hits: Mapping[str, np.ndarray]) -> np.ndarray:
    """Indices of a small subset of cases covering every condition the cases cover.

    ``hits`` maps metric names to (cases, conditions) boolean matrices. Greedy set cover,
    then a reverse pass drops any member whose removal lowers no coverage, so removing any
    member of the result lowers some coverage.
    """
    matrix = np.concatenate([np.asarray(h, bool) for h in hits.values()], axis=1)
    needed = matrix.any(axis=0)
    matrix = matrix[:, needed]
    uncovered = np.ones(matrix.shape[1], bool)
    chosen: list[int] = []
    while uncovered.any():
        gain = matrix[:, uncovered].sum(axis=1)
        best = int(gain.argmax())
        chosen.append(best)
        uncovered &= ~matrix[best]
    counts = matrix[chosen].sum(axis=0)
    for position in range(len(chosen) - 1, -1, -1):
        row = matrix[chosen[position]]
        if (counts[row] > 1).all():
            counts -= row
            chosen[position] = -1
    return np.array(sorted(i for i in chosen if i >= 0), dtype=np.int64)
