"""Diversity and minimal test suites on hand-worked cases."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_rnncov.generation.statistics import (
    DiversityAccumulator,
    MinimalSuite,
    angular_diversity,
    minimal_suite,
)


def test_angular_diversity_by_hand():
    seed = np.zeros(2)
    # two opposite directions: cos matrix [[1, -1], [-1, 1]] sums to 0 -> diversity 0
    assert angular_diversity(np.array([[1.0, 0], [-2.0, 0]]), seed) == 0
    # two equal directions: all cosines 1 -> -(4)/4 = -1 (the least diverse)
    assert angular_diversity(np.array([[1.0, 1], [3.0, 3]]), seed) == pytest.approx(-1)
    # orthogonal pair: [[1,0],[0,1]] sums to 2 -> -2/4
    assert angular_diversity(np.array([[1.0, 0], [0, 5.0]]), seed) == -0.5


def test_diversity_per_seed_over_batches_is_the_double_sum_of_cosines():
    """Batches that mix seeds in any order, with unmoved cases, give per seed what the
    definition gives on all of that seed's moved cases at once."""
    rng = np.random.default_rng(3)
    seeds = rng.normal(size=(4, 2, 3))
    acc = DiversityAccumulator(4)
    everything: list[tuple[int, np.ndarray]] = []
    for size in (7, 1, 12):
        owners = rng.integers(0, 3, size)  # seed 3 never gets a case
        cases = seeds[owners] + rng.normal(size=(size, 2, 3))
        cases[0] = seeds[owners[0]]  # unmoved: no direction, left out
        acc.add(cases, seeds[owners], owners)
        everything += list(zip(owners[1:].tolist(), cases[1:]))
    for seed in range(3):
        d = np.array([(c - seeds[seed]).ravel() for s, c in everything if s == seed])
        unit = d / np.linalg.norm(d, axis=1, keepdims=True)
        expected = -(unit @ unit.T).sum() / len(d) ** 2
        assert acc.per_seed()[seed] == pytest.approx(expected, rel=1e-12)
    assert acc.counts[3] == 0 and len(acc.per_seed()) == 3
    acc.add(seeds[:2], seeds[:2], np.array([0, 1]))  # nothing moved: nothing changes
    assert acc.counts.tolist()[:3] == [sum(s == k for s, _ in everything) for k in range(3)]


def test_minimal_suite_keeps_every_covered_condition_and_is_irredundant():
    # conditions:        c0 c1 c2 c3   (c3 never covered)
    hits = {
        "M": np.array(
            [
                [1, 1, 0, 0],  # case 0
                [0, 1, 0, 0],  # case 1: redundant
                [0, 0, 1, 0],  # case 2
                [1, 0, 1, 0],  # case 3: greedy picks first? ties -> case 0 (2 conditions)
            ],
            bool,
        )
    }
    suite = minimal_suite(hits)
    matrix = hits["M"]
    assert (matrix[suite].any(axis=0) == matrix.any(axis=0)).all()
    for i in range(len(suite)):
        rest = np.delete(suite, i)
        assert (matrix[rest].any(axis=0) != matrix.any(axis=0)).any()
    assert suite.tolist() == [0, 2]


def test_minimal_suite_reverse_pass_drops_members_made_redundant():
    # greedy picks A (4 conditions), then B (gains c4) and C (gains c5); B and C together
    # cover everything A covers, so the reverse pass drops A
    hits = {
        "M": np.array(
            [
                [1, 1, 1, 1, 0, 0],  # A
                [1, 1, 0, 0, 1, 0],  # B
                [0, 0, 1, 1, 0, 1],  # C
            ],
            bool,
        )
    }
    assert minimal_suite(hits).tolist() == [1, 2]


def test_incremental_suite_over_batches_covers_the_union_and_is_irredundant():
    rng = np.random.default_rng(0)
    matrix = rng.random((300, 40)) < 0.05
    suite = MinimalSuite(40)
    for start in range(0, 300, 64):
        rows, conditions = np.nonzero(matrix[start : start + 64])
        suite.add(np.arange(start, min(start + 64, 300)), rows, conditions)
    members = suite.members()
    assert (matrix[members].any(axis=0) == matrix.any(axis=0)).all()
    for i in range(len(members)):
        rest = np.delete(members, i)
        assert (matrix[rest].any(axis=0) != matrix.any(axis=0)).any()
    assert len(members) <= matrix.any(axis=0).sum()
