"""Hypothesis strategies: targeted and random mutants, replay from the database."""

from __future__ import annotations

import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis.database import InMemoryExampleDatabase

from pytest_rnncov import (
    GAConfig,
    GaussianMutator,
    InvalidArgument,
    InvalidInput,
    Mutator,
    Oracle,
    model_settings,
    random_mutants,
    targeted_mutants,
)
from pytest_rnncov.plugin.session import RNNCovSession


@pytest.fixture(scope="module")
def tracked(stacked_model, seq_inputs):
    session = RNNCovSession()
    return session.track(stacked_model, layer="lstm_b", x_train=seq_inputs, name="stacked")


def unit_seeds(seq_inputs):
    return (seq_inputs[:4] - seq_inputs.min()) / (seq_inputs.max() - seq_inputs.min())


def tc_mutants(tracked, seq_inputs):
    return targeted_mutants(
        tracked,
        unit_seeds(seq_inputs),
        GaussianMutator(),
        metric="TC",
        ga=GAConfig(k=2, n=3, gamma=2),
    )


def test_targeted_mutants_feed_the_tracked_coverage_and_replay_the_same(tracked, seq_inputs):
    strategy = tc_mutants(tracked, seq_inputs)
    runs: list[list[tuple]] = []
    for _ in range(2):
        seen: list[tuple] = []
        before = tracked.coverage.n_inputs_

        @settings(model_settings, max_examples=15, derandomize=True, database=None)
        @given(strategy)
        def check(mutant):
            seen.append(
                (
                    mutant.seed_index,
                    mutant.generations,
                    mutant.target,
                    np.asarray(mutant.case).tobytes(),
                )
            )
            assert mutant.case.shape == (7, 3)
            assert mutant.target.startswith("TC:") and len(mutant.target) == 8
            if mutant.generations == 0:
                np.testing.assert_array_equal(mutant.case, mutant.seed)
            else:
                assert mutant.fitness is not None

        check()
        assert tracked.coverage.n_inputs_ > before  # every bred input was observed
        runs.append(seen)
    assert runs[0] == runs[1]  # a pure function of the draws


def test_a_test_may_draw_targeted_mutants_of_one_metric_several_times(tracked, seq_inputs):
    """Three draws of one metric in a test case each report their fitness, the later ones
    under labels of their own (Hypothesis refuses one label twice in a test case: the
    plain call raised its InvalidArgument). A draw of 0 generations reports nothing."""
    from hypothesis import strategies as st
    from hypothesis.control import current_build_context

    labels: list[set[str]] = []

    @settings(model_settings, max_examples=5, derandomize=True, database=None)
    @given(st.lists(tc_mutants(tracked, seq_inputs), min_size=3, max_size=3))
    def check(mutants):
        bred = sum(m.generations > 0 for m in mutants)
        labels.append(set(current_build_context().data.target_observations))
        expected = ["-fitness TC", "-fitness TC (2)", "-fitness TC (3)"][:bred]
        assert labels[-1] == set(expected)

    check()
    assert any(len(seen) > 1 for seen in labels)


def test_the_target_labels_of_one_test_case_are_numbered():
    """Hand-checked: three reports under one label in one test case become "x", "x (2)"
    and "x (3)"; a report outside a test is still Hypothesis' own error."""
    from hypothesis import errors, find
    from hypothesis import strategies as st

    from pytest_rnncov.generation import strategies

    labels: list[tuple[str, ...]] = []

    def reports_three(value):
        for observation in (1.0, 2.0, 3.0):
            strategies._target(observation, "x")
        from hypothesis.control import current_build_context

        labels.append(tuple(current_build_context().data.target_observations))
        return True

    find(st.integers(), reports_three, settings=settings(database=None, max_examples=1))
    assert labels[0] == ("x", "x (2)", "x (3)")
    with pytest.raises(errors.InvalidArgument, match="outside of a test"):
        strategies._target(1.0, "x")


def test_failing_example_replays_from_the_database_and_shrinks_toward_its_seed(tracked, seq_inputs):
    seeds = unit_seeds(seq_inputs)
    oracle = Oracle()
    strategy = targeted_mutants(
        tracked,
        seeds,
        GaussianMutator(variance=(0.2, 0.3)),
        metric="SC",
        ga=GAConfig(k=2, n=4, gamma=4),
    )
    db = InMemoryExampleDatabase()
    runs: list[list[tuple]] = []
    for _ in range(2):
        seen: list[tuple] = []

        @settings(model_settings, max_examples=60, database=db, derandomize=False)
        @given(strategy)
        def label_is_stable(mutant):
            seen.append((mutant.seed_index, mutant.generations, np.asarray(mutant.case).tobytes()))
            outputs = tracked.predict(np.stack([mutant.seed, mutant.case]))
            assert oracle.decisions(outputs[:1]) == oracle.decisions(outputs[1:])

        with pytest.raises(AssertionError):
            label_is_stable()
        runs.append(seen)
    shrunk = runs[0][-1]  # Hypothesis re-runs the minimal failing example last
    assert shrunk[1] == 1  # one generation away from the seed: the seed itself never fails
    assert runs[1][0] == shrunk  # the second run starts by replaying it from the database


def test_a_strategy_shows_the_call_that_made_it(seq_inputs):
    """Hypothesis shows a strategy's repr (in errors and health checks); both read
    'deferred(warmed)', the name of an internal function."""
    mutator = GaussianMutator(0.01, clip=None)
    assert repr(random_mutants(seq_inputs[:3], mutator, max_rounds=2)) == (
        "deferred(random_mutants(<float32 array (3, 7, 3)>, GaussianMutator, max_rounds=2))"
    )
    assert repr(targeted_mutants("clf", seq_inputs[:3], mutator, metric="BC")) == (
        "deferred(targeted_mutants('clf', <float32 array (3, 7, 3)>, GaussianMutator, metric='BC'))"
    )


def test_random_mutants_without_model_calls(seq_inputs):
    seeds = unit_seeds(seq_inputs)

    @settings(model_settings, max_examples=20, derandomize=True, database=None)
    @given(random_mutants(seeds, GaussianMutator(), max_rounds=2))
    def check(mutant):
        assert 0 <= mutant.case.min() and mutant.case.max() <= 1
        np.testing.assert_array_equal(mutant.seed, seeds[mutant.seed_index])

    check()


def test_strategy_errors(stacked_model, seq_inputs):
    with pytest.raises(
        InvalidArgument, match=r"pass a tracked model \(rnncov.track\(model, ...\)\) or its name"
    ):
        targeted_mutants(stacked_model, seq_inputs, GaussianMutator())
    with pytest.raises(InvalidArgument, match="max_rounds=-1"):
        random_mutants(unit_seeds(seq_inputs), GaussianMutator(), max_rounds=-1)


def test_a_failing_property_notes_the_mutation_path(tracked, seq_inputs):
    strategy = targeted_mutants(
        tracked,
        unit_seeds(seq_inputs),
        GaussianMutator(),
        metric="TC",
        ga=GAConfig(k=2, n=2, gamma=2),
    )

    @settings(model_settings, max_examples=10, derandomize=True, database=None)
    @given(strategy)
    def never(mutant):
        assert mutant.generations == 0

    with pytest.raises(AssertionError) as caught:
        never()
    notes = "\n".join(getattr(caught.value, "__notes__", []))
    assert "bred toward TC:" in notes and "best fitness per generation:" in notes


def test_failure_mutants_aim_at_the_oracle(tracked, seq_inputs):
    oracle = Oracle(radius=None)
    strategy = targeted_mutants(
        tracked,
        unit_seeds(seq_inputs),
        GaussianMutator(variance=(0.2, 0.3)),
        metric="failure",
        oracle=oracle,
        ga=GAConfig(k=2, n=4, gamma=3),
    )
    seen = []

    @settings(model_settings, max_examples=15, derandomize=True, database=None)
    @given(strategy)
    def check(mutant):
        assert mutant.target == "failure"
        if mutant.generations:
            outputs = tracked.predict(np.stack([mutant.seed, mutant.case]))
            margin = oracle.failure_fitness(outputs[:1], outputs[1:], np.zeros(1))[0]
            assert margin == pytest.approx(mutant.fitness, abs=1e-6)
            seen.append(mutant.fitness)

    check()
    assert seen and min(seen) <= 0  # the search reached failing cases
    with pytest.raises(InvalidArgument, match="metric='failure' needs the oracle"):
        targeted_mutants(tracked, unit_seeds(seq_inputs), GaussianMutator(), metric="failure")


def test_strategy_arguments_are_checked_when_the_strategy_is_made(tracked, seq_inputs):
    seeds, mutator = unit_seeds(seq_inputs), GaussianMutator()
    with pytest.raises(InvalidArgument, match="model=''; pass a tracked model"):
        targeted_mutants("", seeds, mutator)
    with pytest.raises(InvalidArgument, match=r"metric=5; pass a metric's name \('TC'"):
        targeted_mutants(tracked, seeds, mutator, metric=5)
    # an oracle was silently ignored unless the metric was "failure"
    with pytest.raises(InvalidArgument, match="oracle= is read only with metric='failure'"):
        targeted_mutants(tracked, seeds, mutator, metric="TC", oracle=Oracle())
    with pytest.raises(
        InvalidArgument, match=r"targeted_mutants\(\.\.\., metric='NC'\): no metric 'NC' here"
    ):
        targeted_mutants(tracked, seeds, mutator, metric="NC")  # a metric it does not track
    # a name no metric has, also with a model's name (was refused only at the first draw)
    for model in (tracked, "stacked"):
        with pytest.raises(
            InvalidArgument,
            match=r"metric='XX' is no metric's name \(BC, SC, TC, NC.*\); pass one the model "
            r"tracks, or 'failure' with oracle=Oracle",
        ):
            targeted_mutants(model, seeds, mutator, metric="XX")
    with pytest.raises(
        InvalidArgument, match=r"pass oracle=Oracle\(...\), not oracle=1.0 \(float\)"
    ):
        targeted_mutants(tracked, seeds, mutator, metric="failure", oracle=1.0)
    with pytest.raises(InvalidInput, match="seeds are texts .*GaussianMutator mutates numeric"):
        random_mutants(["a good film", "a bad film"], mutator)
    with pytest.raises(InvalidInput, match="seeds are texts"):
        random_mutants(np.array(["a good film", "a bad film"], dtype=object), mutator)
    # a mutator of string-token arrays with an encode of its own takes them, as before
    tokens = np.array([["a", "good", "film"], ["a", "bad", "film"]])

    class TokenSwap(Mutator):
        def mutate(self, cases, rng):
            return np.asarray(cases)[:, ::-1]

        def encode(self, cases):
            return (np.asarray(cases) == "good").astype(np.float32)

        def distance(self, seeds, cases):
            return (np.asarray(seeds) != np.asarray(cases)).mean(axis=1)

    random_mutants(tokens, TokenSwap()).validate()


class SlowToLoad(GaussianMutator):
    """A mutator whose first mutation loads a data file for 2 s, as EDAMutator's WordNet."""

    def __init__(self):
        super().__init__()
        self.loaded = False

    def prepare(self):
        self.loaded = True  # what the load would give, without the wait

    def mutate(self, cases, rng):
        if not self.loaded:
            time.sleep(2.0)
            self.loaded = True
        return super().mutate(cases, rng)


def test_a_mutators_first_load_is_not_timed_as_a_draw(seq_inputs):
    """Hypothesis' too_slow health check (draws over 1 s in all, with the default deadline)
    failed whichever test of a process drew first from an EDAMutator's strategy: WordNet
    loads in 2 s. (targeted_mutants call prepare() the same way; their model calls want
    model_settings anyway.)"""
    seeds = unit_seeds(seq_inputs)

    @settings(  # Hypothesis' defaults, which the suite's own profile relaxes
        max_examples=20, derandomize=True, database=None, deadline=200, suppress_health_check=()
    )
    @given(random_mutants(seeds, SlowToLoad()))
    def check(mutant):
        assert mutant.case.shape == seeds[0].shape

    check()


def test_a_mutant_shows_its_arrays_by_shape_and_counts_the_generations_it_ran(tracked, seq_inputs):
    """A falsifying example printed every number of both arrays (2 x 784 for MNIST); and a
    mutant that failed the oracle after one of five drawn generations said 5."""
    strategy = targeted_mutants(
        tracked,
        unit_seeds(seq_inputs),
        GaussianMutator(variance=(0.2, 0.3)),
        metric="failure",
        oracle=Oracle(radius=None),
        ga=GAConfig(k=2, n=4, gamma=6),
    )
    seen = []

    @settings(model_settings, max_examples=25, database=None)
    @given(strategy)
    def never_fails(mutant):
        seen.append(mutant)
        assert mutant.fitness is None or mutant.fitness > 0

    with pytest.raises(AssertionError) as caught:
        never_fails()
    failing = seen[-1]  # Hypothesis runs the minimal failing example last
    notes = "\n".join(caught.value.__notes__)
    plural = "" if failing.generations == 1 else "s"  # "for 1 generations" until 2026-11-30
    assert f"bred toward failure for {failing.generations} generation{plural} (" in notes
    shown = f"{failing!r}"
    assert shown.startswith("Mutant(case=<float32 array (7, 3)>, seed=<float32 array (7, 3)>, ")
    assert f"never_fails(\n    mutant={shown},\n)" in notes  # Hypothesis's failing case


def test_model_settings_are_derandomized():
    """The coverage a test's examples feed, and the gate, repeat on a retry."""
    assert model_settings.derandomize and model_settings.database is None
    assert model_settings.deadline is None


def test_the_rnncov_profile_loads_from_the_command_line(pytester):
    """--hypothesis-profile=rnncov was an INTERNALERROR: the profile was registered only
    when a test module imported the strategies, after Hypothesis loaded the profile."""
    pytester.makepyfile(
        "from hypothesis import settings\n\n"
        "def test_profile():\n"
        "    assert settings.get_current_profile_name() == 'rnncov'\n"
        "    assert settings.default.deadline is None and settings.default.derandomize\n"
    )
    result = pytester.runpytest_subprocess("-p", "no:xdist", "--hypothesis-profile=rnncov")
    result.assert_outcomes(passed=1)
