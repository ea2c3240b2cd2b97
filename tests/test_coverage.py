"""Coverage: measuring an existing test set through a model, merging, best inputs."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_rnncov import BC, Coverage, InvalidArgument, InvalidInput, Profile, RNNModel
from pytest_rnncov.metrics import Signals


@pytest.fixture(scope="module")
def rnn(stacked_model):
    return RNNModel(stacked_model, "lstm_b")


@pytest.fixture(scope="module")
def profile(rnn, seq_inputs):
    return Profile(window=(1, 6)).fit(rnn, seq_inputs)


def test_update_measures_a_test_set(rnn, profile, seq_inputs):
    rng = np.random.default_rng(3)
    tests = seq_inputs + rng.normal(0, 0.5, seq_inputs.shape).astype(np.float32)
    coverage = Coverage(rnn, profile, ("BC", "SC", "TC"))
    gained = coverage.update(tests)
    assert coverage.n_inputs_ == 12
    # the same numbers as the metrics fed directly with the trace
    signals = Signals(rnn.trace(tests), profile.window_)
    for name, metric in coverage.metrics.items():
        direct = metric.bind(profile)
        direct.update(signals, np.arange(12))
        np.testing.assert_array_equal(metric.covered_, direct.covered_)
        assert gained[name] == direct.covered
    assert set(coverage.rates()) == {"BC", "SC", "TC"}
    text = coverage.summary()
    assert "layer 'lstm_b'" in text and "TC(h/net, w=5, a=3)" in text and "/243" in text


def test_best_input_is_kept_for_uncovered_conditions(rnn, profile, seq_inputs):
    coverage = Coverage(rnn, profile, [BC(alpha_max=1.0)])
    coverage.update(seq_inputs[:6])
    coverage.update(seq_inputs[6:])
    bc = coverage["BC"]
    uncovered = np.flatnonzero(~bc.covered_)
    assert uncovered.size
    for condition in uncovered:
        best = coverage.best_input("BC", int(condition))
        np.testing.assert_array_equal(best, seq_inputs[bc.best_input_[condition]])
        # its fitness is the lowest of all inputs
        fitness = bc.fitness(Signals(rnn.trace(seq_inputs), profile.window_))[:, condition]
        assert bc.best_fitness_[condition] == pytest.approx(fitness.min())


def test_merge_of_two_halves_equals_the_whole(rnn, profile, seq_inputs):
    whole = Coverage(rnn, profile)
    whole.update(seq_inputs)
    first, second = Coverage(rnn, profile), Coverage(rnn, profile)
    first.update(seq_inputs[:5])
    second.update(seq_inputs[5:])
    first.merge(second)
    third = Coverage(rnn, profile)
    third.merge_state(whole.state())
    for name in whole.metrics:
        np.testing.assert_array_equal(first[name].covered_, whole[name].covered_)
        np.testing.assert_array_equal(first[name].times_, whole[name].times_)
        np.testing.assert_array_equal(third[name].covered_, whole[name].covered_)
    assert first.n_inputs_ == 12


def test_testrnn_preset(rnn, profile):
    coverage = Coverage(rnn, profile, preset="testrnn")
    assert coverage["BC"].describe() == "BC(h/net, alpha_max=0.8)"
    assert coverage["SC"].describe() == "SC(h/delta_net, alpha_sc=0.6)"


def test_errors(rnn, profile, seq_inputs):
    with pytest.raises(InvalidArgument, match="given twice"):
        Coverage(rnn, profile, ("BC", "bc"))
    with pytest.raises(InvalidArgument, match="metrics is empty"):
        Coverage(rnn, profile, ())
    with pytest.raises(InvalidArgument, match="no metric 'NC' here"):
        Coverage(rnn, profile)["NC"]
    with pytest.raises(InvalidInput, match="NaN"):
        Coverage(rnn, profile).update(np.full((1, 7, 3), np.nan, np.float32))
