"""The oracle on hand-worked cases."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_rnncov import AdversarialFailure, InvalidArgument, InvalidInput, Oracle


def test_classification_within_radius():
    oracle = Oracle(radius=1.0)
    seeds = np.array([[0.9, 0.1], [0.2, 0.8], [0.6, 0.4]])
    cases = np.array([[0.4, 0.6], [0.3, 0.7], [0.1, 0.9]])
    # case 0: class 0 -> 1, distance 0.5 <= 1: adversarial
    # case 1: class 1 -> 1: not adversarial
    # case 2: class 0 -> 1 but distance 1.5 > 1: outside the norm ball, not adversarial
    assert oracle.fails(seeds, cases, np.array([0.5, 0.2, 1.5])).tolist() == [True, False, False]
    # on the radius counts as inside
    assert oracle.fails(seeds[:1], cases[:1], np.array([1.0])).tolist() == [True]


def test_single_output_uses_the_threshold():
    oracle = Oracle(radius=None)
    assert oracle.fails(
        np.array([[0.7], [0.3]]), np.array([[0.4], [0.2]]), np.array([9.0, 9.0])
    ).tolist() == [True, False]


def test_regression_tolerance():
    oracle = Oracle(task="regression", tolerance=0.5)
    seeds, cases = np.array([[6.0], [6.0], [6.0]]), np.array([[6.6], [5.5], [6.4]])
    # moved 0.6 > 0.5 ; 0.5 is not more than 0.5 ; 0.4
    assert oracle.fails(seeds, cases, np.zeros(3)).tolist() == [True, False, False]


def test_bad_oracles():
    with pytest.raises(InvalidArgument, match="needs tolerance > 0"):
        Oracle(task="regression")
    with pytest.raises(InvalidArgument, match="radius=-1"):
        Oracle(radius=-1)
    with pytest.raises(InvalidArgument, match=r"radius=0.0 must be > 0"):
        Oracle(radius=0)  # only unchanged inputs would count: it could never find a failure
    with pytest.raises(InvalidArgument, match="task='ranking'"):
        Oracle(task="ranking")
    with pytest.raises(InvalidArgument, match=r"radius='3' \(str\) must be a number"):
        Oracle(radius="3")
    with pytest.raises(InvalidArgument, match="radius=nan must be a finite number"):
        Oracle(radius=float("nan"))
    with pytest.raises(InvalidArgument, match="tolerance=0.0 must be > 0"):
        Oracle(task="regression", tolerance=0)


def test_nan_outputs_are_refused():
    with pytest.raises(InvalidInput, match="NaN or inf in the case outputs"):
        Oracle().fails(np.ones((1, 2)), np.full((1, 2), np.nan), np.zeros(1))


def test_calibrated_radius_by_hand():
    # seeds at 0 and 1 (class 0), 4 and 10 (class 1): pairs decided differently are
    # 0-4, 0-10, 1-4, 1-10 at distances 4, 10, 3, 9
    seeds = np.array([[0.0], [1.0], [4.0], [10.0]])
    outputs = np.array([[1, 0], [1, 0], [0, 1], [0, 1]], float)
    assert Oracle.calibrate(seeds, outputs, quantile=0.0).radius == 1.5  # half the smallest gap
    oracle = Oracle.calibrate(seeds, outputs, quantile=0.5, fraction=1.0)
    assert oracle.radius == 6.5  # the median of 3, 4, 9, 10
    assert "the 50% quantile (6.5) of the L2 distances between 4 pairs" in oracle.describe()
    regression = Oracle.calibrate(
        seeds,
        np.array([[0.0], [0.1], [5.0], [5.2]]),
        task="regression",
        tolerance=1.0,
        quantile=0.0,
    )
    assert regression.radius == 1.5
    with pytest.raises(InvalidInput, match="every seed is decided alike"):
        Oracle.calibrate(seeds, np.ones((4, 2)))
    # far from the origin the Gram matrix would cancel a distance of 1 to 0: centred first
    far = Oracle.calibrate(np.array([[1e8, 0.0], [1e8 + 1, 0.0]]), np.eye(2), quantile=0.0)
    assert far.radius == 0.5
    # a distance blind to the change between two seeds decided differently: radius 0
    with pytest.raises(InvalidInput, match="is 0 .*no radius can be calibrated"):
        Oracle.calibrate(seeds, outputs, quantile=0.0, distance=lambda a, b: np.zeros(len(a)))


def test_calibrate_with_a_distance_takes_texts_and_measures_pairs_in_parts(monkeypatch):
    """distance= is for seeds L2 cannot measure, such as texts, which 1-D seeds once could
    never be (refused as "at least two seeds"); and it once measured every pair at once
    (2,000 MNIST seeds: gigabytes of pair rows), now CALIBRATION_PAIRS at a time."""
    import pytest_rnncov.generation.oracle as oracle_module

    texts = ["good movie", "great film", "bad movie", "awful plot here"]
    outputs = np.array([[1, 0], [1, 0], [0, 1], [0, 1]], float)

    def words_changed(a, b):  # the number of word positions that differ, by hand
        return np.array(
            [
                sum(x != y for x, y in zip(s.split(), t.split()))
                + abs(len(s.split()) - len(t.split()))
                for s, t in zip(a, b)
            ],
            float,
        )

    # pairs decided differently: good movie-bad movie 1, good movie-awful plot here 3,
    # great film-bad movie 2, great film-awful plot here 3
    assert Oracle.calibrate(texts, outputs, quantile=0.0, distance=words_changed).radius == 0.5
    seen = []

    def counted(a, b):
        seen.append(len(a))
        return np.linalg.norm(a - b, axis=1)

    monkeypatch.setattr(oracle_module, "CALIBRATION_PAIRS", 3)
    seeds = np.array([[0.0], [1.0], [4.0], [10.0]])
    oracle = Oracle.calibrate(seeds, outputs, quantile=0.5, fraction=1.0, distance=counted)
    assert oracle.radius == 6.5 and max(seen) <= 3 and sum(seen) == 4  # as by L2, in parts


def test_check_explains_the_failure():
    oracle = Oracle(radius=3.0)
    oracle.check(np.array([[0.9, 0.1]]), np.array([[0.8, 0.2]]), 2.0)  # same class: passes
    oracle.check(np.array([[0.9, 0.1]]), np.array([[0.2, 0.8]]), 3.5)  # beyond the radius
    with pytest.raises(
        AssertionError,
        match=r"decision changed from 0 to 1 \(seed 0.9 vs case "
        r"0.8 for the top output\), distance 2 <= radius 3",
    ):
        oracle.check(np.array([[0.9, 0.1]]), np.array([[0.2, 0.8]]), 2.0)
    regression = Oracle(task="regression", tolerance=0.5)
    with pytest.raises(AdversarialFailure, match=r"moved from 6 to 6.7 \(by 0.7 > tolerance 0.5\)"):
        regression.check(np.array([[6.0]]), np.array([[6.7]]), 0.0)


def test_margin_is_how_far_from_failing():
    oracle = Oracle()
    seeds = np.array([[0.7, 0.2, 0.1], [0.1, 0.8, 0.1]])
    cases = np.array([[0.5, 0.3, 0.2], [0.6, 0.3, 0.1]])
    np.testing.assert_allclose(oracle.margin(seeds, cases), [0.2, -0.3])
    np.testing.assert_allclose(
        Oracle(task="regression", tolerance=1.0).margin(np.array([[2.0]]), np.array([[2.25]])),
        [0.75],
    )


def test_a_margin_is_at_most_zero_exactly_when_the_case_fails():
    """A tie that arg-max gives the seed's class (or a move of exactly the tolerance) had
    the margin 0, read as failing by the strategies, which then stopped their search and
    reported a failure that did not happen. By hand: seed class 0 ([1, 0]); [0.5, 0.5]
    is still class 0 (arg-max takes the first), so it does not fail; seed class 1 ([0, 1])
    against [0.5, 0.5] is class 0: it fails."""
    oracle = Oracle(radius=1.0)
    seeds = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])
    cases = np.array([[0.5, 0.5], [0.5, 0.5], [0.4, 0.6]])
    fails = oracle.fails(seeds, cases, np.zeros(3))
    margin = oracle.margin(seeds, cases)
    assert fails.tolist() == [False, True, True]
    assert (margin <= 0).tolist() == fails.tolist()
    assert 0 < margin[0] < 1e-300 and margin[1] == 0 and margin[2] == pytest.approx(-0.2)
    assert (oracle.failure_fitness(seeds, cases, np.zeros(3)) <= 0).tolist() == fails.tolist()
    regression = Oracle(task="regression", tolerance=0.25)
    edge = regression.margin(np.array([[2.0], [2.0]]), np.array([[2.25], [2.5]]))
    assert 0 < edge[0] < 1e-300 and edge[1] == -0.25  # moved by exactly 0.25: no failure
    assert regression.fails(np.array([[2.0]]), np.array([[2.25]]), [0.0]).tolist() == [False]
    with pytest.raises(InvalidInput, match="seed output must be numeric model outputs, got No"):
        oracle.check(None, [0, 1], 0.5)  # read as NaN: "seed output hold NaN or inf"


HYPOTHESIS_TEST = """
import numpy as np
from hypothesis import given, settings, strategies as st
from pytest_rnncov import Oracle


@settings(database=None, derandomize=True, max_examples=200)
@given(st.floats(0, 1))
def test_oracle(x):
    oracle = Oracle(radius=1.0)
    oracle.check(np.array([[0.6, 0.4]]), np.array([[1 - x, x]]), 0.1)  # the user's line
"""


def test_a_hypothesis_failure_points_at_the_users_test_not_the_oracle(pytester):
    pytester.makepyfile(test_h=HYPOTHESIS_TEST)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    output = result.stdout.str()
    assert "Failing test case: test_oracle(" in output
    assert "oracle.py" not in output  # no "Explanation" or traceback lines into the oracle
    result.stdout.fnmatch_lines(["*oracle.check(np.array(*# the user's line"])


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda: Oracle().margin(np.zeros((2, 2)), np.zeros((2, 3))), r"\(2, 2\) and .* \(2, 3\)"),
        (lambda: Oracle().margin(np.zeros((2, 2)), np.zeros((3, 2))), r"\(2, 2\) and .* \(3, 2\)"),
        (
            lambda: Oracle(task="regression", tolerance=0.1).margin(
                np.zeros((2, 2)), np.zeros((2, 3))
            ),
            "differ in shape",
        ),
        (lambda: Oracle().check(np.zeros(0), np.zeros(0), 0.1), "non-empty batch"),
        (lambda: Oracle().fails(np.zeros((3, 0)), np.zeros((3, 0)), np.zeros(3)), "non-empty"),
    ],
)
def test_margin_and_check_refuse_outputs_that_do_not_pair(call, message):
    """margin() once judged a case against a class its seed does not have, and check() on
    empty outputs raised numpy's argmax error; both now say what is wrong, as changed()."""
    with pytest.raises(InvalidInput, match=message):
        call()


def test_decision_texts_of_a_batch():
    """One text per row: the class (arg-max, or one output against the threshold), or the
    regression value; the first row's is ``decision_text``."""
    outputs = np.array([[0.1, 0.9], [0.8, 0.2], [0.5, 0.5]])
    assert Oracle().decision_texts(outputs) == ["1", "0", "0"]  # a tie: the first class
    assert Oracle().decision_text(outputs[1:]) == "0"
    assert Oracle(threshold=0.3).decision_texts(np.array([[0.2], [0.4]])) == ["0", "1"]
    regression = Oracle(task="regression", tolerance=0.5)
    assert regression.decision_texts(np.array([[1.23456], [-0.000123]])) == ["1.23", "-0.000123"]


def test_calibrate_on_texts_without_a_distance_says_to_pass_one():
    """Fifty texts and fifty output rows were refused as 'at least two seeds with one
    output row each'; the cause is the default L2 distance."""
    texts = np.array(["good movie", "bad movie", "great film"])
    outputs = np.array([[1, 0], [0, 1], [1, 0]], float)
    with pytest.raises(
        InvalidInput,
        match=r"seeds are 3 texts \(dtype <U10\), which the default L2 distance cannot "
        r"measure; pass the mutator's distance: Oracle.calibrate\(seeds, outputs, "
        r"distance=mutator.distance\)",
    ):
        Oracle.calibrate(texts, outputs)
