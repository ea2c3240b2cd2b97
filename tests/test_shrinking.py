"""Shrinking toward the seed, on hand-made models whose failures are known exactly."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_rnncov import EDAMutator, GaussianMutator, InvalidArgument, Oracle, WordEncoder
from pytest_rnncov.generation.shrinking import shrink


def test_continuous_cases_shrink_to_the_steps_that_matter():
    """Class 1 exactly when step 0's first feature exceeds 0.5: the shrunk case moves only
    step 0 (every other time step reverts to the seed), by little more than needed."""
    mutator = GaussianMutator(clip=None)

    def predict(x):
        x = np.asarray(x)
        return np.stack([np.zeros(len(x)), (x[:, 0, 0] > 0.5).astype(float)], axis=1)

    seeds = np.zeros((3, 4, 2), np.float32)
    cases = np.random.default_rng(0).normal(0, 1, (3, 4, 2)).astype(np.float32)
    cases[:, 0, 0] = [1.0, 2.0, 4.0]
    oracle = Oracle()
    shrunk = shrink(mutator, oracle, predict, seeds, predict(seeds), cases, predict(cases))
    assert shrunk.model_calls == 8 + 4  # bisection steps, then one call per time step
    assert set(np.argwhere(shrunk.cases != 0)[:, 1].tolist()) == {0}  # only step 0 moved
    # bisection: the case scaled by the smallest alpha = k / 2**8 that still fails
    alpha = shrunk.cases[:, 0, 0] / cases[:, 0, 0]
    needed = 0.5 / cases[:, 0, 0].astype(np.float64) * 2**8  # alpha * x must exceed 0.5
    np.testing.assert_allclose(alpha, (np.floor(needed) + 1) / 2**8, rtol=1e-6)
    np.testing.assert_allclose(shrunk.cases[:, 0], alpha[:, None] * cases[:, 0], rtol=1e-6)
    assert (oracle.fails(predict(seeds), predict(shrunk.cases), shrunk.distances)).all()
    np.testing.assert_allclose(
        shrunk.distances, np.linalg.norm(shrunk.cases.reshape(3, -1), axis=1), rtol=1e-6
    )


def test_many_samples_shrink_in_parts_to_the_same_cases(monkeypatch):
    """More than SHRINK_ROWS samples are shrunk in parts (the float64 work arrays of every
    sample at once took 12x their bytes at the end of a campaign); the cases, distances and
    outputs are those of one part, and the calls are one set per part. The distances are
    computed DISTANCE_ROWS rows at a time, to the same numbers."""
    from pytest_rnncov.generation import mutators, shrinking

    mutator = GaussianMutator(clip=None)

    def predict(x):
        x = np.asarray(x)
        return np.stack([np.zeros(len(x)), (x[:, 0, 0] > 0.5).astype(float)], axis=1)

    rng = np.random.default_rng(1)
    seeds = np.zeros((7, 4, 2), np.float32)
    cases = rng.normal(0, 1, (7, 4, 2)).astype(np.float32)
    cases[:, 0, 0] = rng.uniform(1.0, 4.0, 7)
    whole = shrink(mutator, Oracle(), predict, seeds, predict(seeds), cases, predict(cases))
    monkeypatch.setattr(shrinking, "SHRINK_ROWS", 3)
    monkeypatch.setattr(mutators, "DISTANCE_ROWS", 2)
    parts = shrink(mutator, Oracle(), predict, seeds, predict(seeds), cases, predict(cases))
    np.testing.assert_array_equal(parts.cases, whole.cases)
    np.testing.assert_array_equal(parts.distances, whole.distances)
    np.testing.assert_array_equal(parts.outputs, whole.outputs)
    assert whole.model_calls == 8 + 4 and parts.model_calls == 3 * (8 + 4)  # 7 rows: 3 parts
    by_hand = np.sqrt((cases.astype(np.float64) ** 2).reshape(7, -1).sum(axis=1))
    np.testing.assert_allclose(mutator.distance(seeds, cases), by_hand, rtol=1e-12)
    assert mutator.distance(seeds[:0], cases[:0]).shape == (0,)


def test_text_edits_are_undone_while_the_case_still_fails():
    encoder = WordEncoder(["a", "b", "c", "d", "x", "y", "z"], length=6)
    mutator = EDAMutator(encoder=encoder)
    x_id = encoder.index["x"]

    def predict(ids):  # class 1 exactly when the word "x" appears
        hit = (np.asarray(ids) == x_id).any(axis=1)
        return np.stack([~hit, hit], axis=1).astype(float)

    seeds = ["a b c d", "a b c d"]
    cases = ["x b y d", "a z c x"]  # two word edits each; only the "x" matters
    oracle = Oracle()
    shrunk = shrink(
        mutator, oracle, predict, seeds, predict(encoder(seeds)), cases, predict(encoder(cases))
    )
    assert shrunk.cases == ["x b c d", "a b c x"]
    np.testing.assert_allclose(shrunk.distances, [0.25, 0.25])
    assert oracle.fails(
        predict(encoder(seeds)), predict(encoder(shrunk.cases)), shrunk.distances
    ).all()


def _step_zero_model(x):
    """Class 1 exactly when step 0's first feature exceeds 0.5."""
    x = np.asarray(x)
    return np.stack([np.zeros(len(x)), (x[:, 0, 0] > 0.5).astype(float)], axis=1)


def test_a_bound_gives_bisection_then_the_step_phase_to_the_rows_in_order():
    """3 cases of 4 steps: bisection costs 8 inputs per case, the step phase at most 4. A bound
    of 3 * 8 + 4 = 28 bisects every case and reverts steps of the first in ``order`` only; a
    bound of 16 bisects the first two in ``order`` and leaves the third as found."""
    mutator, oracle = GaussianMutator(clip=None), Oracle()
    seeds = np.zeros((3, 4, 2), np.float32)
    cases = np.random.default_rng(0).normal(0, 1, (3, 4, 2)).astype(np.float32)
    cases[:, 0, 0] = [1.0, 2.0, 4.0]
    inputs: list[int] = []

    def predict(x):
        inputs.append(len(x))
        return _step_zero_model(x)

    def run(order, bound):
        inputs.clear()
        found = _step_zero_model(cases)
        return shrink(mutator, oracle, predict, seeds, predict(seeds), cases, found, order, bound)

    unbounded = shrink(
        mutator,
        oracle,
        _step_zero_model,
        seeds,
        _step_zero_model(seeds),
        cases,
        _step_zero_model(cases),
    )
    shrunk = run(np.array([2, 0, 1]), 28)
    assert sum(inputs[1:]) <= 28 and shrunk.model_calls == 8 + 4
    np.testing.assert_array_equal(shrunk.cases[2], unbounded.cases[2])  # fully shrunk
    for row in (0, 1):  # bisected only: the found case scaled by bisection's alpha
        alpha = shrunk.cases[row, 0, 0] / cases[row, 0, 0]
        assert alpha < 1
        np.testing.assert_allclose(shrunk.cases[row], alpha * cases[row], rtol=1e-6)
    shrunk = run(np.array([1, 2, 0]), 16)
    assert sum(inputs[1:]) == 16 and shrunk.model_calls == 8
    np.testing.assert_array_equal(shrunk.cases[0], cases[0])  # left as found
    assert shrunk.distances[0] == pytest.approx(np.linalg.norm(cases[0]), rel=1e-6)
    assert (shrunk.cases[1:, 0, 0] < cases[1:, 0, 0]).all()
    shrunk = run(np.array([0, 1, 2]), 7)  # not even one bisection fits
    assert inputs == [3] and shrunk.model_calls == 0
    np.testing.assert_array_equal(shrunk.cases, cases)


def test_a_bound_undoes_the_word_edits_of_the_rows_that_fit_it():
    encoder = WordEncoder(["a", "b", "c", "d", "x", "y", "z"], length=6)
    mutator = EDAMutator(encoder=encoder)
    x_id = encoder.index["x"]

    def predict(ids):
        hit = (np.asarray(ids) == x_id).any(axis=1)
        return np.stack([~hit, hit], axis=1).astype(float)

    seeds = ["a b c d", "a b c d"]
    cases = ["x b y d", "a z c x"]  # two edits each: a bound of 3 fits the first in order
    shrunk = shrink(
        mutator,
        Oracle(),
        predict,
        seeds,
        predict(encoder(seeds)),
        cases,
        predict(encoder(cases)),
        np.array([1, 0]),
        3,
    )
    assert shrunk.cases == ["x b y d", "a b c x"] and shrunk.model_calls == 2


@pytest.mark.parametrize("bad", [-1, 2.5, float("nan"), True, "8"])
def test_a_bound_that_is_not_a_count_is_refused_by_name(bad):
    seeds = np.zeros((2, 3, 1), np.float32)
    cases = np.ones((2, 3, 1), np.float32)
    outputs = _step_zero_model(cases)
    with pytest.raises(InvalidArgument, match="max_inputs"):
        shrink(
            GaussianMutator(clip=None),
            Oracle(),
            _step_zero_model,
            seeds,
            _step_zero_model(seeds),
            cases,
            outputs,
            None,
            bad,
        )
