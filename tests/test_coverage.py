"""Coverage: measuring an existing test set through a model, merging, best inputs."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_rnncov import BC, Coverage, InvalidArgument, InvalidInput, Profile, RNNModel
from pytest_rnncov.core.metrics import Signals
from pytest_rnncov.core.state import MAX_COUNT
from pytest_rnncov.reporting.data import CoverageData


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
    assert whole.state("mnist").name == "mnist"
    for bad in (5, ("a",), ""):  # wrote a data file the reader refused, or a bare TypeError
        with pytest.raises(InvalidArgument, match="name="):
            whole.state(bad)
    with pytest.raises(InvalidArgument, match="into itself: its inputs would count twice"):
        first.merge(first)
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
    with pytest.raises(InvalidArgument, match=r"metrics=None; pass metric names"):
        Coverage(rnn, profile, None)
    with pytest.raises(InvalidArgument, match=r"coverage\[0\]: index by metric name"):
        Coverage(rnn, profile)[0]
    with pytest.raises(InvalidArgument, match=r"condition=99; BC has conditions 0..5"):
        Coverage(rnn, profile).best_input("BC", 99)
    with pytest.raises(InvalidArgument, match="profile=.* is not a Profile; fit one"):
        Coverage(rnn, "profile.json")


def test_an_input_beyond_float32_range_is_refused_not_counted(rnn, profile, seq_inputs):
    """float64 1e39 passes a NaN/inf check made before the cast; it is inf in float32."""
    x = seq_inputs.astype(np.float64)
    x[3, 2, 1] = 1e39
    coverage = Coverage(rnn, profile, ("TC",))
    with pytest.raises(
        InvalidInput, match=r"values beyond float32's range \(inf once cast\) in rows \[3\]"
    ):
        coverage.update(x)
    assert coverage["TC"].covered == 0 and coverage.n_inputs_ == 0


def test_merging_another_models_coverage_is_refused(rnn, profile, seq_inputs, stacked_model):
    other = RNNModel(stacked_model, "lstm_a")
    theirs = Coverage(other, Profile(window=(1, 6)).fit(other, seq_inputs))
    theirs.update(seq_inputs)
    mine = Coverage(rnn, profile)
    with pytest.raises(InvalidArgument, match="they differ in layer 'lstm_a' vs ") as caught:
        mine.merge(theirs)
    assert "weights" in str(caught.value) and "profile" in str(caught.value)
    with pytest.raises(InvalidArgument, match="configurations differ"):
        mine.merge_state(Coverage(rnn, profile, [BC(alpha_max=0.5), "SC", "TC"]).state())
    fewer = Coverage(rnn, profile, ["BC", "SC"])
    fewer.update(seq_inputs)
    with pytest.raises(
        InvalidArgument, match=r"tracked BC, SC, .* BC, SC, TC; .*metrics= of track"
    ):
        mine.merge_state(fewer.state())
    assert mine.n_inputs_ == 0 and mine["BC"].covered == 0


@pytest.mark.parametrize(
    "field, change, differ, hint",
    [
        ("layer", "other", "layer 'other' vs 'lstm'", "trace the same layer in every run"),
        ("window", (2, 6), "window [2, 6] vs [1, 5]", "give every run the same window"),
        ("fingerprint", "f" * 16, f"weights {'f' * 16} vs {'0' * 16}", "one model file"),
        ("profile", "p" * 16, f"profile {'p' * 16} vs {'1' * 16}", "give track() a profile"),
    ],
)
def test_a_combine_mismatch_names_only_what_differs(field, change, differ, hint):
    import dataclasses

    from pytest_rnncov.core.state import ModelState

    mine = ModelState("m", "lstm", "lstm", (1, 5), "0" * 16, 0, {}, "1" * 16)
    other = dataclasses.replace(mine, **{field: change})
    with pytest.raises(InvalidArgument) as caught:
        mine.check_compatible(other)
    message = str(caught.value)
    head = "cannot combine coverage of model 'm' with 'm': they differ in "
    assert message.startswith(head)
    assert message[len(head) :].split(" (this data")[0] == differ
    assert hint in message


def test_update_streams_in_batches_with_the_same_state(rnn, profile, seq_inputs):
    small = RNNModel(rnn.model, "lstm_b", batch_size=5)
    a, b = Coverage(rnn, profile), Coverage(small, profile)
    a.update(seq_inputs)
    b.update(seq_inputs)
    for name in a.metrics:
        np.testing.assert_array_equal(a[name].times_, b[name].times_)
        # float32 matmuls of other batch shapes round differently (to about 1e-7)
        np.testing.assert_allclose(a[name].best_fitness_, b[name].best_fitness_, atol=1e-6)


def test_kept_best_inputs_are_copies(rnn, profile, seq_inputs):
    coverage = Coverage(rnn, profile, [BC(alpha_max=1.0)])
    x = seq_inputs.copy()
    coverage.update(x)
    condition = int(np.flatnonzero(~coverage["BC"].covered_)[0])
    kept = coverage.best_input("BC", condition)
    assert kept is not None and kept.base is None  # owns its memory: pins no batch
    x[:] = 0
    assert np.abs(kept).sum() > 0


def test_a_result_is_reused_only_for_the_same_exact_parameters(rnn, profile, seq_inputs):
    """BC(alpha_max=n) and BC(alpha_max=the float after n) read alike ("alpha_max=...",
    six digits) but differ on an input whose N is n: a coverage handed the other's
    observation recomputes it instead of reusing it."""
    signals = Signals(rnn.trace(seq_inputs), profile.window_)
    n = BC("h", "net").bind(profile).normalised(signals)
    inside = np.sort(n[(n > 0) & (n < 1)])
    alpha = float(inside[len(inside) // 2])  # an N some input has
    above = float(np.nextafter(alpha, 1.0))
    first = Coverage(rnn, profile, (BC("h", "net", alpha_max=alpha),), track_fitness=False)
    second = Coverage(rnn, profile, (BC("h", "net", alpha_max=above),), track_fitness=False)
    assert first["BC"].describe() == second["BC"].describe()
    _, observation = first.update_signals(signals)
    second.update_signals(signals, reuse=observation)
    own = Coverage(rnn, profile, (BC("h", "net", alpha_max=above),), track_fitness=False)
    own.update_signals(signals)
    np.testing.assert_array_equal(second["BC"].times_, own["BC"].times_)
    assert (first["BC"].times_ > own["BC"].times_).any()  # the inputs at N = alpha


def test_a_refused_merge_changes_nothing_and_a_copy_cannot_count_twice(rnn, profile, seq_inputs):
    import copy

    from pytest_rnncov import TC

    first = Coverage(rnn, profile)
    first.update(seq_inputs[:5])
    before = {k: m.times_.copy() for k, m in first.metrics.items()}
    other = Coverage(rnn, profile, ("BC", "SC", TC(w=4)))  # TC of 81 words, not 243
    other.update(seq_inputs[5:])
    with pytest.raises(InvalidArgument, match="the configurations differ"):
        first.merge(other)  # BC and SC were merged before TC was refused (a bare ValueError)
    assert all(np.array_equal(first[k].times_, t) for k, t in before.items())
    state = first.state()
    with pytest.raises(InvalidArgument, match="the configurations differ"):
        state.merge(other.state())
    assert all(np.array_equal(state.metrics[k].times, t) for k, t in before.items())
    from pytest_rnncov.core.state import merge_models

    models = {"a": first.state("a"), "b": first.state("b")}
    with pytest.raises(InvalidArgument, match="the configurations differ"):
        merge_models(models, [first.state("a"), other.state("b")])  # a first, then b refused
    assert all(np.array_equal(models["a"].metrics[k].times, t) for k, t in before.items())
    assert first.n_inputs_ == 5
    # a deep copy made after inputs were seen holds them too: merging it is refused
    twin = copy.deepcopy(first)  # a Keras model's Coverage copies too (the model is shared)
    assert twin.model is first.model and twin["TC"].times_ is not first["TC"].times_
    with pytest.raises(InvalidArgument, match="would count twice"):
        first.merge(twin)
    fresh = copy.deepcopy(Coverage(rnn, profile))  # copied before any input: merges
    fresh.update(seq_inputs[5:])
    first.merge(fresh)
    assert first.n_inputs_ == len(seq_inputs)
    # one merged into two others: merging those two would count its inputs twice
    third = Coverage(rnn, profile)
    third.merge(fresh)
    with pytest.raises(InvalidArgument, match="one merged into both before"):
        third.merge(first)
    with pytest.raises(InvalidArgument, match="would count twice"):
        first.merge(fresh)  # again
    assert third.n_inputs_ == len(seq_inputs) - 5 and first.n_inputs_ == len(seq_inputs)
    empty = Coverage(rnn, profile)
    first.merge(empty)  # an empty one adds nothing, so it merges again once fed
    empty.update(seq_inputs[:2])
    first.merge(empty)
    assert first.n_inputs_ == len(seq_inputs) + 2
    with pytest.raises(InvalidArgument, match="copy.copy of a bound BC would share"):
        copy.copy(first["BC"])


@pytest.fixture
def parts_of_4(monkeypatch, rnn):
    """Inputs that a cast copies checked 4 at a time (a float64 row of 7 x 3 is 168 bytes),
    and the rows of every array ``check_input`` returns recorded."""
    from pytest_rnncov.core import source

    monkeypatch.setattr(source, "INPUT_PART_BYTES", 4 * 168)
    monkeypatch.setattr(source, "PART_MIN_ROWS", 1)
    checked: list[int] = []
    original = type(rnn).check_input

    def recording(self, x):
        out = original(self, x)
        checked.append(len(out))
        return out

    monkeypatch.setattr(type(rnn), "check_input", recording)
    return checked


def test_inputs_a_cast_copies_are_checked_and_cast_in_parts(rnn, profile, seq_inputs, parts_of_4):
    """12 float64 inputs of a float32 model, checked 4 at a time: the first row (to learn
    that the check casts), then 4, 4 and 4 (all checked before any is used), then each part
    again when it is reached; no array of all 12 is made. Coverage, outputs and the kept
    best inputs are those of the float32 inputs checked whole; a profile is theirs to float
    rounding (running statistics merge batch by batch), and the same where the model's
    batches are 4 inputs, as the parts are (parts fall on batch boundaries)."""
    x = seq_inputs.astype(np.float64)
    a, b = Coverage(rnn, profile), Coverage(rnn, profile)
    a.update(x)
    assert parts_of_4 == [1, 4, 4, 4, 4, 4, 4]
    parts_of_4.clear()
    b.update(seq_inputs)
    assert parts_of_4 == [1, 12]  # float32: the first row casts nothing: checked whole
    assert a.n_inputs_ == b.n_inputs_ == 12
    for name in a.metrics:
        np.testing.assert_array_equal(a[name].covered_, b[name].covered_)
        np.testing.assert_array_equal(a[name].best_fitness_, b[name].best_fitness_)
    condition = int(np.flatnonzero(~a["BC"].covered_)[0])
    np.testing.assert_array_equal(a.best_input("BC", condition), b.best_input("BC", condition))
    np.testing.assert_array_equal(rnn.predict(x), rnn.predict(seq_inputs))
    (chunk,) = Coverage(rnn, profile).stream(x, whole=True)
    assert chunk.outputs.shape[0] == 12
    fitted = Profile(window=(1, 6)).fit(rnn, x).to_dict()
    assert fitted["n_samples"] == 12
    for name, stats in profile.to_dict()["signals"].items():
        for stat, number in stats.items():
            assert fitted["signals"][name][stat] == pytest.approx(number, rel=1e-5, abs=1e-6)
    in_fours = RNNModel(rnn.model, "lstm_b", batch_size=4)
    same = Profile(window=(1, 6)).fit(in_fours, seq_inputs).digest()
    assert Profile(window=(1, 6)).fit(in_fours, x).digest() == same


def test_a_refused_part_refuses_the_call_before_any_input_counts(
    rnn, profile, seq_inputs, parts_of_4
):
    """A NaN in input 9 and an inf in input 11 (rows 1 and 3 of the third part) refuse the
    update before the first part feeds coverage, named as rows 9 and 11 of the inputs; a
    wrong shape is found on the whole (check_layout), as without parts."""
    x = seq_inputs.astype(np.float64)
    x[9, 2, 1] = np.nan
    x[11, 0, 0] = np.inf
    coverage = Coverage(rnn, profile)
    with pytest.raises(
        InvalidInput, match=r"NaN or inf in rows \[9, 11\]; clean or drop those rows$"
    ):
        coverage.update(x)
    assert coverage.n_inputs_ == 0
    with pytest.raises(InvalidInput, match=r"rows \[9, 11\];"):
        rnn.predict(x)
    with pytest.raises(InvalidInput, match=r"rows \[9, 11\];"):
        Profile(window=(1, 6)).fit(rnn, x)
    with pytest.raises(InvalidInput, match=r"inputs have shape \(12, 7, 2\); model 'stacked'"):
        coverage.update(x[..., :2])
    # a refused part before the last says the rest went unread; a refused first input
    # names every bad row of the first part
    x = seq_inputs.astype(np.float64)
    x[5, 0, 0] = x[7, 1, 1] = np.nan
    later = r"checked 4 at a time: those after input 7 were not read\)$"
    with pytest.raises(InvalidInput, match=r"rows \[5, 7\]; clean or drop those rows \(.*" + later):
        coverage.update(x)
    x[0, 0, 0] = x[2, 0, 0] = np.inf
    with pytest.raises(InvalidInput, match=r"rows \[0, 2\];.*those after input 3 were not read"):
        coverage.update(x)
    assert coverage.n_inputs_ == 0
    # float32 is not cast: checked whole whatever its size, every bad row named
    y = seq_inputs.copy()
    y[0, 0, 0] = y[9, 0, 0] = np.nan
    with pytest.raises(InvalidInput, match=r"rows \[0, 9\]; clean or drop those rows$"):
        coverage.update(y)
    # inputs changed between two chunks of a stream: refused, and not called unread
    x = seq_inputs.astype(np.float64)
    chunks = coverage.stream(x)
    next(chunks)
    x[8, 0, 0] = np.nan
    with pytest.raises(InvalidInput, match=r"rows \[8\]; clean or drop those rows \(this") as e:
        list(chunks)
    assert "not read" not in str(e.value)
    assert coverage.n_inputs_ == 8  # the two parts before it went through


def test_parts_hold_whole_batches(monkeypatch):
    """Rows of 16 bytes: 42,799 fit in the part's bytes, so parts of 32,768 (a multiple of
    16,384, which the batch sizes 256, 2,048 and 16,384 divide); 5 fit: parts of 2,048, the
    adapters' host batch, which a part never splits (with no such floor: 4, a power of
    two); inputs whose check casts nothing are checked whole (None)."""
    from pytest_rnncov.adapters.base import HOST_BATCH
    from pytest_rnncov.core import source

    assert source.PART_MIN_ROWS == HOST_BATCH

    class Casting:
        def check_layout(self, x):
            return x

        def check_input(self, x):
            return np.asarray(x, np.float32)

    monkeypatch.setattr(source, "INPUT_PART_BYTES", 16 * 42_799)
    assert source._part_rows(Casting(), np.zeros((50_000, 2))) == 32_768
    assert source._part_rows(Casting(), np.zeros((50_000, 2), np.float32)) is None
    monkeypatch.setattr(source, "INPUT_PART_BYTES", 16 * 5)
    assert source._part_rows(Casting(), np.zeros((6, 2))) == 2048
    monkeypatch.setattr(source, "PART_MIN_ROWS", 1)
    assert source._part_rows(Casting(), np.zeros((6, 2))) == 4
    assert [len(part) for part in source.CheckedInputs(Casting(), np.zeros((9, 2)))] == [4, 4, 1]


def test_merged_input_counts_saturate_like_combined_files(rnn, profile, seq_inputs):
    """Coverage.merge_state adds input counts as `combine` does: at MAX_COUNT it stops,
    so that its state() is still one a data file can hold."""
    full = Coverage(rnn, profile)
    full.update(seq_inputs)
    state = full.state()
    state.n_inputs = MAX_COUNT
    mine = Coverage(rnn, profile)
    mine.merge_state(state)
    mine.merge_state(state)
    assert mine.n_inputs_ == MAX_COUNT
    again = CoverageData(models={"m": mine.state("m")}, runs=["r"])
    assert CoverageData.loads(again.dumps()).models["m"].n_inputs == MAX_COUNT
