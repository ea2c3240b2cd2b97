"""Shrinking toward the seed, on hand-made models whose failures are known exactly."""

from __future__ import annotations

import numpy as np

from pytest_rnncov import EDAMutator, GaussianMutator, Oracle, WordEncoder
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
