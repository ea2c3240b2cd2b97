"""Campaigns (Alg. 1) and the GA (Alg. 2) on small constructed models."""

from __future__ import annotations

import hashlib
import json
import math
import os
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import pytest_rnncov.generation.campaign as campaign_module
import pytest_rnncov.generation.cases as cases_module
from pytest_rnncov import (
    BC,
    NC,
    SC,
    TC,
    Campaign,
    Coverage,
    DataFileError,
    GAConfig,
    GaussianMutator,
    InvalidArgument,
    InvalidInput,
    Mutator,
    Oracle,
    Profile,
    RNNCovWarning,
    RNNModel,
    SampleWriter,
)
from pytest_rnncov.generation.results import AdversarialSample, CampaignResult, CampaignSummary
from pytest_rnncov.reporting.samples import FOLDER_BYTES, MARKER, samples_folder
from pytest_rnncov.reporting.terminal import campaign_notes

STEPS, FEATURES = 5, 64


@pytest.fixture(scope="module")
def ramp_model(keras):
    """LSTM(1) whose forget gate is sigmoid(sum(x_t) / 8 - 4): 0.5 at x_t = 0.5 everywhere.

    Pushing f_t up needs many features raised together: a directed search does that, a
    random walk of small noise almost never does.
    """
    model = keras.Sequential(
        [
            keras.Input((STEPS, FEATURES)),
            keras.layers.LSTM(1, name="lstm"),
            keras.layers.Dense(2, name="head"),
        ],
        name="ramp",
    )
    kernel = np.zeros((FEATURES, 4), np.float32)
    kernel[:, 1] = 1 / 8  # forget gate block (i, f, c~, o)
    bias = np.zeros(4, np.float32)
    bias[1] = -4.0
    model.get_layer("lstm").set_weights([kernel, np.zeros((1, 4), np.float32), bias])
    model.get_layer("head").set_weights(
        [np.array([[1.0, -1.0]], np.float32), np.zeros(2, np.float32)]
    )
    return model


@pytest.fixture(scope="module")
def ramp(ramp_model):
    rnn = RNNModel(ramp_model)
    train = np.random.default_rng(0).random((100, STEPS, FEATURES), dtype=np.float32)
    return rnn, Profile().fit(rnn, train)


SEEDS = np.full((4, STEPS, FEATURES), 0.5, np.float32)
SMALL_NOISE = GaussianMutator(variance=(0.002, 0.004))


def ramp_campaign(ramp, **options):
    """A campaign on the ramp model, of the paper's schedule unless ``schedule`` says
    otherwise."""
    options.setdefault("schedule", "stall")
    rnn, profile = ramp
    return Campaign(
        rnn,
        SEEDS,
        SMALL_NOISE,
        Oracle(radius=10.0),
        profile=profile,
        metrics=[BC(alpha_max=0.9)],
        **options,
    )


def run(ramp, **options):
    campaign = ramp_campaign(ramp, **options)
    return campaign, campaign.run()


def test_ga_covers_what_random_misses_at_the_same_budget(ramp):
    _, random_only = run(ramp, budget=600, patience=10**9, seed=1)
    targeted, ga = run(ramp, budget=600, patience=1, ga=GAConfig(k=4, n=8, gamma=12), seed=1)
    assert random_only.covered["BC"] == 0
    assert ga.covered["BC"] >= 1
    assert ga.test_cases == random_only.test_cases == 600
    assert any(step["phase"] == "targeted" for step in targeted.growth)


def test_same_seed_same_suite(ramp):
    a, result_a = run(ramp, budget=300, patience=1, seed=5)
    b, result_b = run(ramp, budget=300, patience=1, seed=5)
    np.testing.assert_array_equal(a.cases(), b.cases())
    assert result_a.growth == result_b.growth
    c, _ = run(ramp, budget=300, patience=1, seed=6)
    assert not np.array_equal(a.cases(), c.cases())


def test_a_campaign_whose_cases_pass_the_memory_bound_runs_the_same(ramp, monkeypatch):
    """The paper's schedule draws parents from every case: with all but 50 cases in the
    temporary file, the campaign is the one it is with every case in memory."""
    a, result_a = run(ramp, budget=400, patience=1, seed=3)
    monkeypatch.setattr(cases_module, "CASE_MEMORY", 50 * STEPS * FEATURES * 4)
    b, result_b = run(ramp, budget=400, patience=1, seed=3)
    assert b._cases._held() == 50 and b._cases._spilled == b._cases.size - 50 > 300
    np.testing.assert_array_equal(a.cases(), b.cases())
    assert result_a.growth == result_b.growth and result_a.covered == result_b.covered


def test_a_sample_folder_is_reused_only_where_a_campaign_wrote(tmp_path):
    """SampleWriter replaces files only in a folder an earlier campaign wrote: its summary,
    or its marker when it was killed before the summary; a user's files stay."""
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    (foreign / "summary.json").write_text('{"mine": true}')
    with pytest.raises(DataFileError, match="would replace a file pytest-rnncov did not write"):
        SampleWriter(foreign)
    assert (foreign / "summary.json").read_text() == '{"mine": true}'
    loose = tmp_path / "loose"
    loose.mkdir()
    (loose / "adversarial.npz").write_bytes(b"user data")
    with pytest.raises(DataFileError, match="'adversarial.npz' but no summary.json"):
        SampleWriter(loose)
    killed = tmp_path / "killed"
    killed.mkdir()
    (killed / MARKER).write_text("written by pytest-rnncov: campaign samples\n")
    (killed / "adv_00001_seed0_0to1.png").write_bytes(b"png")
    SampleWriter(killed)
    earlier = tmp_path / "earlier"
    earlier.mkdir()
    (earlier / "summary.json").write_text('{"format": "pytest-rnncov-campaign"}')
    (earlier / "adversarial.npz").write_bytes(b"old")
    SampleWriter(earlier)
    SampleWriter(tmp_path / "new")  # created only when a sample comes
    assert not (tmp_path / "new").exists()
    for bad in ("", None):  # "" once meant the current folder
        with pytest.raises(InvalidArgument, match="campaign output folder"):
            SampleWriter(bad)
    too_long = tmp_path.joinpath(*["d" * 240] * 17)  # past Linux's 4,096-byte PATH_MAX
    with pytest.raises(DataFileError, match="cannot be used: File name too long"):
        SampleWriter(too_long)
    unlistable = tmp_path / "unlistable"
    unlistable.mkdir()

    def refused(self):
        raise PermissionError(13, "Permission denied", str(self))

    with pytest.MonkeyPatch.context() as patch:  # as root, chmod would not stop the listing
        patch.setattr(Path, "iterdir", refused)
        with pytest.raises(DataFileError, match="cannot be used: Permission denied"):
            SampleWriter(unlistable)


def test_a_reused_sample_folder_holds_only_the_last_campaigns_files(ramp, tmp_path):
    """A campaign that writes into a folder an earlier one wrote removes that one's files at
    its own first file: a re-run that finds nothing leaves no stale samples beside its
    summary; until then (an interrupted re-run) the earlier files stay whole; a file of
    another name stays."""
    rnn, profile = ramp
    folder = tmp_path / "adv"
    folder.mkdir()
    (folder / "summary.json").write_text('{"format": "pytest-rnncov-campaign"}')
    earlier = ["adv_00001_seed0_0to1.png", "adversarial.npz", "adversarial.txt", "notes.md"]
    for name in earlier:
        (folder / name).write_bytes(b"earlier")
    writer = SampleWriter(folder)
    assert sorted(p.name for p in folder.iterdir()) == [*earlier, "summary.json"]
    campaign = Campaign(  # seeds of the wrong shape: no test case, then the summary
        rnn,
        np.zeros((3, STEPS, 8)),
        SMALL_NOISE,
        Oracle(),
        profile=profile,
        metrics=[BC()],
        listeners=[writer],
    )
    with pytest.raises(InvalidInput, match="expects"):
        campaign.run()
    assert sorted(p.name for p in folder.iterdir()) == [MARKER, "notes.md", "summary.json"]
    assert json.loads((folder / "summary.json").read_text())["test_cases"] == 0


def test_samples_folders_stay_inside_the_root_and_within_name_limits(tmp_path):
    """A model named ".." once put its samples beside the --rnn-samples folder, and a test
    id of 90 CJK characters made a 300-byte folder name the file system refused; long
    names cut short stay apart by a hash of the whole."""
    taken: set[Path] = set()
    for model in ("..", ".", "a/../../b", "..\\x"):
        folder = samples_folder(tmp_path, model, "test_a.py::test_x", taken)
        assert folder.resolve().is_relative_to(tmp_path) and ".." not in folder.parts
    dots = samples_folder(tmp_path, "m", "..", taken)
    assert dots.parent == tmp_path / "m" and dots.name.startswith("session-")
    for device in ("nul", "Con", "aux.txt", "COM1", "com\u00b9", "LPT\u00b3.keras"):  # Windows
        assert samples_folder(tmp_path, device, None, taken).parent.name.startswith(f"_{device}-")
    long_a = samples_folder(tmp_path, "m", "test_u.py::test_" + "\u6d4b" * 90, taken)
    long_b = samples_folder(tmp_path, "m", "test_u.py::test_" + "\u6d4b" * 91, taken)
    assert long_a != long_b and long_a.parent == long_b.parent == tmp_path / "m"
    for folder in (long_a, long_b):
        assert len(folder.name.encode()) <= FOLDER_BYTES
        folder.mkdir(parents=True)  # the file system takes it
    short = samples_folder(tmp_path, "mnist", "test_a.py::test_x[1-2]", taken)
    digest = hashlib.sha256(b"test_a.py::test_x[1-2]").hexdigest()[:10]
    assert short == tmp_path / "mnist" / f"test_a.py__test_x_1-2_-{digest}"
    assert samples_folder(tmp_path, "mnist", None, taken) == tmp_path / "mnist" / "session"
    long_safe = "x" * 300  # no sign to replace, but too long: cut and hashed
    assert len(samples_folder(tmp_path, long_safe, None, taken).parent.name.encode()) <= 120


def test_tests_whose_ids_make_the_same_name_get_their_own_folders(tmp_path):
    """Parameters "a/b" and "a_b" made one folder name; in one process the second got a
    -2, but pytest-xdist workers cannot see each other's folders, so two campaigns wrote
    into one folder and one's summary and arrays were lost. A name that changed in the
    making now ends in a hash of the node id, whichever process makes it."""
    first = samples_folder(tmp_path, "m", "test_gen.py::test_generate[a/b]", set())
    second = samples_folder(tmp_path, "m", "test_gen.py::test_generate[a_b]", set())
    assert first != second
    assert first == samples_folder(tmp_path, "m", "test_gen.py::test_generate[a/b]", set())
    assert samples_folder(tmp_path, "a/b", None, set()) != samples_folder(
        tmp_path, "a_b", None, set()
    )


def test_an_earlier_campaigns_file_that_cannot_go_keeps_that_campaign_whole(tmp_path, monkeypatch):
    """One of the earlier campaign's files cannot be removed (immutable, open in a viewer
    on Windows): at the new campaign's first file a DataFileError names it and the fix,
    and the earlier campaign's files are all there as they were (a bare PermissionError
    once left its summary beside part of its images); once it can go, all go."""
    folder = tmp_path / "adv"
    folder.mkdir()
    earlier = ["adv_00001_seed0_0to1.png", "adv_00002_seed1_0to1.png", "adversarial.npz"]
    for name in earlier:
        (folder / name).write_text(name)
    (folder / "summary.json").write_text('{"format": "pytest-rnncov-campaign"}')
    kept = {p.name: p.read_text() for p in folder.iterdir()}
    stuck = folder / "adv_00002_seed1_0to1.png"
    replace = os.replace

    def refuse(src, dst):
        if Path(src) == stuck:
            raise PermissionError(1, "Operation not permitted")
        replace(src, dst)

    writer = SampleWriter(folder)
    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(DataFileError, match="cannot replace .*adv_00002.*Operation not perm"):
        writer._ready()
    assert sorted(p.name for p in folder.iterdir()) == sorted([*kept, MARKER])
    assert all((folder / name).read_text() == text for name, text in kept.items())
    # a file that cannot be put back either is named, not lost in a bare OSError
    first_aside = folder / ".adv_00001_seed0_0to1.png.removed"

    def refuse_twice(src, dst):
        if Path(src) == first_aside:
            raise PermissionError(1, "Operation not permitted")
        refuse(src, dst)

    monkeypatch.setattr(os, "replace", refuse_twice)
    with pytest.raises(DataFileError, match=r"could not be put back: \.adv_00001_seed0_0to1"):
        writer._ready()
    monkeypatch.undo()
    os.replace(first_aside, folder / "adv_00001_seed0_0to1.png")
    writer._ready()  # all set aside, until the new campaign's summary is written
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [MARKER, *(f".{name}.removed" for name in [*earlier, "summary.json"])]
    )


def test_statistics_and_saved_samples(stacked_model, seq_inputs, tmp_path):
    rnn = RNNModel(stacked_model, "lstm_b")
    profile = Profile().fit(rnn, seq_inputs)
    seeds = (seq_inputs[:6] - seq_inputs.min()) / (seq_inputs.max() - seq_inputs.min())
    campaign = Campaign(
        rnn,
        seeds,
        GaussianMutator(variance=(0.05, 0.1)),
        Oracle(radius=None),
        profile=profile,
        budget=250,
        batch_size=50,
        listeners=[SampleWriter(tmp_path / "adv")],
    )
    result = campaign.run()
    assert result.test_cases == 250
    assert result.adversarial > 0  # big noise flips the untrained model's class
    assert (tmp_path / "adv" / MARKER).is_file()  # marked from the first sample on
    ids = np.array(result.adversarial_ids)
    seeds_of = campaign.seed_indices()[ids]
    assert result.unique == len(set(seeds_of.tolist()))
    assert result.adversary_rate == pytest.approx(result.adversarial / 250)
    decisions = Oracle().decisions
    all_cases = campaign.cases()
    cases = all_cases[ids]
    assert (decisions(rnn.predict(cases)) != decisions(rnn.predict(seeds[seeds_of]))).all()
    distances = np.linalg.norm((cases - seeds[seeds_of]).reshape(len(ids), -1), axis=1)
    assert result.average_found_perturbation == pytest.approx(distances.mean(), rel=1e-5)
    assert result.average_perturbation <= result.average_found_perturbation  # shrunk
    # the minimal suite keeps every covered condition of every metric, and each member counts
    again, suite = Coverage(rnn, profile), Coverage(rnn, profile)
    again.update(all_cases)
    suite.update(all_cases[result.minimal_suite])
    for key in ("BC", "SC", "TC"):
        np.testing.assert_array_equal(suite[key].covered_, campaign.coverage[key].covered_)
        assert result.coverage_times[key] == again[key].times_.tolist()
    for member in range(len(result.minimal_suite)):
        rest = Coverage(rnn, profile)
        rest.update(np.delete(all_cases[result.minimal_suite], member, axis=0))
        assert any(rest[k].covered < suite[k].covered for k in ("BC", "SC", "TC"))
    saved = np.load(tmp_path / "adv" / "adversarial.npz")
    assert saved["cases"].shape == (result.adversarial, 7, 3)
    assert len(list((tmp_path / "adv").glob("adv_*.png"))) == result.adversarial
    summary = json.loads((tmp_path / "adv" / "summary.json").read_text())
    assert (
        summary["adversarial"] == result.adversarial
        and summary["oracle"] == "classification, radius none"
    )
    assert sum(result.failures_per_seed.values()) == result.adversarial
    assert sum(result.failures_per_class_pair.values()) == result.adversarial
    # the summary this campaign wrote reads back as it is (its diversity is below 0: the
    # reader once refused every real one, so xdist and combine dropped campaigns)
    assert -1 <= result.diversity < 0
    fields = {k: v for k, v in summary.items() if k != "format"}
    assert CampaignSummary.from_json(fields, "summary.json").to_json() == fields


class InterruptAfter(Mutator):
    def __init__(self, calls, error=KeyboardInterrupt):
        self.inner, self.calls = GaussianMutator(variance=(0.05, 0.1)), calls
        self.error = error

    def mutate(self, cases, rng):
        self.calls -= 1
        if self.calls < 0:
            raise self.error
        return self.inner.mutate(cases, rng)


@pytest.mark.parametrize(
    "error", [KeyboardInterrupt, SystemExit, pytest.fail.Exception, RuntimeError]
)
def test_interrupted_campaign_keeps_its_samples(
    stacked_model, seq_inputs, tmp_path, error, monkeypatch
):
    """Ctrl-C reports the samples as found at once: shrinking them took up to as many
    model inputs as the search (minutes after a long campaign, while a cancelled CI job
    sends SIGKILL seconds after SIGTERM); so do sys.exit and pytest's outcomes
    (pytest-timeout's signal method fails the test with pytest.fail: shrinking ran on
    past the timeout); an error still shrinks them first."""
    rnn = RNNModel(stacked_model, "lstm_b")
    profile = Profile().fit(rnn, seq_inputs)
    seeds = (seq_inputs[:6] - seq_inputs.min()) / (seq_inputs.max() - seq_inputs.min())
    campaign = Campaign(
        rnn,
        seeds,
        InterruptAfter(3, error),
        Oracle(),
        profile=profile,
        budget=10_000,
        batch_size=40,
        listeners=[SampleWriter(tmp_path / "out")],
        schedule="stall",  # three random batches of 40, then the interrupt
    )
    calls, predict = [], rnn.predict
    monkeypatch.setattr(rnn, "predict", lambda x: calls.append(len(x)) or predict(x))
    with pytest.raises(error):
        campaign.run()
    result = campaign.result
    assert result is not None and result.interrupted and result.test_cases == 120
    assert result.adversarial > 0
    saved = np.load(tmp_path / "out" / "adversarial.npz")
    assert len(saved["cases"]) == result.adversarial
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["interrupted"] is True
    assert summary["shrunk"] is result.shrunk is (error is RuntimeError)
    assert (len(calls) > 0) is (error is RuntimeError)  # shrinking's model calls
    if error is not RuntimeError:
        assert result.average_perturbation == result.average_found_perturbation


def test_a_loop_over_iterate_that_ends_early_marks_the_campaign_interrupted(ramp):
    """Ctrl-C (or a break) in the body of a user's loop over iterate() never reaches the
    campaign's code: finish() counts steps that stopped before the schedule ended and
    before the budget as interrupted, whether the loop's generator is still held or not,
    and so a Ctrl-C inside the campaign's own step. The result, and the reports' note,
    then say the campaign stopped early; a loop run to the end (or broken off once the
    budget is spent) does not."""
    rnn, profile = ramp

    def campaign(mutator=SMALL_NOISE):
        return Campaign(
            rnn, SEEDS, mutator, Oracle(), profile=profile, metrics=[BC()],
            budget=200, batch_size=10, schedule="stall", patience=100,
        )  # fmt: skip

    stopped = campaign()
    with pytest.raises(KeyboardInterrupt):
        try:
            for number, _ in enumerate(stopped.iterate()):
                if number == 3:  # the seeds' step, then 3 batches of 10
                    raise KeyboardInterrupt
        finally:
            stopped.finish()
    assert stopped.result.interrupted and stopped.result.test_cases == 30
    note = campaign_notes([stopped.result.summary("ramp").to_json()])[0]
    assert note.startswith("ramp: interrupted after 30 test cases; oracle ")
    broken_off = campaign()
    for number, _ in enumerate(broken_off.iterate()):
        if number == 1:
            break
    assert broken_off.finish().interrupted and broken_off.result.test_cases == 10
    held = campaign()
    steps = held.iterate()  # the generator outlives the loop: it is never closed
    for number, _ in enumerate(steps):
        if number == 1:
            break
    assert held.finish().interrupted and held.result.test_cases == 10
    inside = campaign(InterruptAfter(3))  # Ctrl-C while the campaign mutates its 4th batch
    with pytest.raises(KeyboardInterrupt):
        try:
            for _ in inside.iterate():
                pass
        finally:
            inside.finish()
    assert inside.result.interrupted and inside.result.test_cases == 30
    spent = campaign()
    for _ in spent.iterate():
        if spent.generated >= 200:
            break  # the budget is spent: nothing was left to do
    assert not spent.finish().interrupted
    whole = campaign()
    for _ in whole.iterate():
        pass
    assert not whole.finish().interrupted and whole.result.test_cases == 200
    assert "interrupted" not in campaign_notes([whole.result.summary("ramp").to_json()])[0]
    resumed = campaign()  # the generator held after finish() went on, its finds not counted
    steps = resumed.iterate()
    for number, _ in enumerate(steps):
        if number == 1:
            break
    result = resumed.finish()
    with pytest.raises(InvalidArgument, match=r"this campaign was finished \(finish\(\) ran\)"):
        next(steps)
    assert resumed.generated == result.test_cases == 10
    unstarted = campaign()  # its generator first started after finish(): no model call
    steps = unstarted.iterate()
    assert unstarted.finish().test_cases == 0
    with pytest.raises(InvalidArgument, match=r"this campaign was finished \(finish\(\) ran\)"):
        next(steps)
    assert unstarted.coverage.n_inputs_ == 0


class _Listener:
    """Counts its on_adversarial calls, and raises ``error`` on those in ``raises_at``
    (1 the first; None: every call)."""

    def __init__(self, raises_at=(), error=KeyboardInterrupt):
        self.raises_at, self.error, self.calls = raises_at, error, 0

    def on_adversarial(self, campaign, sample):
        self.calls += 1
        if self.raises_at is None or self.calls in self.raises_at:
            raise self.error


def noisy_campaign(stacked_model, seq_inputs, listeners, batch_size=40, shrink=False):
    """A campaign on the untrained stacked model whose large noise flips many decisions:
    several samples in every batch."""
    rnn = RNNModel(stacked_model, "lstm_b")
    return Campaign(
        rnn, seq_inputs[:6], GaussianMutator(variance=(0.5, 1.0), clip=None), Oracle(),
        profile=Profile().fit(rnn, seq_inputs), budget=400, batch_size=batch_size,
        shrink=shrink, listeners=listeners,
    )  # fmt: skip


def test_a_listener_that_interrupts_keeps_the_growth_curve_with_the_counts(
    stacked_model, seq_inputs
):
    """The growth point of a batch came after its on_adversarial calls: a listener's
    Ctrl-C left the curve one batch short of the result's counts."""
    campaign = noisy_campaign(
        stacked_model, seq_inputs, [_Listener(raises_at=None)], batch_size=20, shrink=True
    )
    with pytest.raises(KeyboardInterrupt):
        campaign.run()
    result = campaign.result
    assert result.adversarial >= 1
    assert result.growth[-1]["test_cases"] == result.test_cases


def test_bad_campaigns(ramp, tmp_path):
    rnn, profile = ramp
    oracle = Oracle()

    def make(seeds, mutator=SMALL_NOISE, **options):
        options.setdefault("profile", profile)
        return Campaign(rnn, seeds, mutator, oracle, metrics=[BC()], **options)

    with pytest.raises(InvalidInput, match="non-empty batch"):
        make(np.zeros((0, STEPS, FEATURES)))
    broken = make(np.zeros((3, STEPS, 8)))
    with pytest.raises(InvalidInput, match=r"expects \(batch, 5, 64\)"):
        broken.run()  # the model's own error, not one from saving the (empty) results
    assert broken.result is not None and broken.result.test_cases == 0
    with pytest.raises(InvalidInput, match="expects"):
        make(np.zeros((3, STEPS, 8)), listeners=[SampleWriter(tmp_path / "empty")]).run()
    assert json.loads((tmp_path / "empty" / "summary.json").read_text())["test_cases"] == 0
    with pytest.raises(InvalidArgument, match="needs profile"):
        make(SEEDS, profile=None)
    with pytest.raises(InvalidArgument, match="budget=0"):
        make(SEEDS, budget=0)
    with pytest.raises(
        InvalidArgument, match="budget=1000.* must be an integer <= 9223372036854775807"
    ):
        make(SEEDS, budget=10**309)  # a float's range: the GA's share of it would overflow
    assert make(SEEDS, budget=2**63 - 1).budget == 2**63 - 1
    for name in (5, ""):  # a name is the campaign's row in every report
        with pytest.raises(InvalidArgument, match="name=.* must be a non-empty string"):
            make(SEEDS, name=name)
    with pytest.raises(InvalidArgument, match="k=0"):
        GAConfig(k=0)
    with pytest.raises(InvalidArgument, match=r"ga=\(4, 8, 10\); pass GAConfig"):
        make(SEEDS, ga=(4, 8, 10))
    with pytest.raises(InvalidArgument, match="oracle=None; pass an Oracle"):
        Campaign(rnn, SEEDS, SMALL_NOISE, None, profile=profile)
    with pytest.raises(InvalidArgument, match="goal='x' .* must be a number in"):
        make(SEEDS, goal="x")
    with pytest.raises(InvalidArgument, match=r"batch_size=2.5 \(float\) must be an integer"):
        make(SEEDS, batch_size=2.5)
    with pytest.raises(InvalidArgument, match="seed=-1 must be an integer >= 0"):
        make(SEEDS, seed=-1)
    with pytest.raises(InvalidArgument, match="no metric 'XX' here"):
        make(SEEDS, targets=["XX"])

    class Shrinks(Mutator):
        def mutate(self, cases, rng):
            return cases[:1]

    with pytest.raises(InvalidArgument, match="Shrinks.mutate returned shape"):
        make(SEEDS, Shrinks()).run()


class Identity(Mutator):
    """Returns every case unchanged: nothing new to evaluate."""

    def mutate(self, cases, rng):
        return np.array(cases, copy=True)


@pytest.mark.parametrize("schedule", ["stall", "adaptive"])
def test_unchanged_mutants_are_discarded_not_evaluated(ramp, schedule):
    """20 batches in a row that the mutator left unchanged end the campaign: for the paper's
    schedule 20 random batches of 10; the adaptive schedule's pulls include failure sweeps
    of 8 (ga.n mutants of the one seed a batch of 10 has room for)."""
    rnn, profile = ramp
    campaign = Campaign(
        rnn,
        SEEDS,
        Identity(),
        Oracle(),
        profile=profile,
        metrics=[BC()],
        budget=100,
        batch_size=10,
        schedule=schedule,
    )
    with pytest.warns(RNNCovWarning, match="returned every case unchanged in 20 batches"):
        result = campaign.run()
    assert result.test_cases == 0
    assert result.discarded == 200 if schedule == "stall" else 8 * 20 <= result.discarded < 200
    assert len(campaign.cases()) == len(SEEDS)  # only the seeds were evaluated


@pytest.fixture(scope="module")
def threshold(keras):
    """LSTM(1) that only remembers its last step (f ~ 0, i ~ o ~ 1) with c~ = tanh(sum(x)/16),
    and a head that flips to class 0 when h > 0.755, i.e. when the last step's mean feature
    exceeds about 0.6; the seeds sit at 0.5 (h 0.746). Small random noise averages out; a
    search that follows the oracle's margin raises every feature together."""
    model = keras.Sequential(
        [
            keras.Input((STEPS, FEATURES)),
            keras.layers.LSTM(1, name="lstm"),
            keras.layers.Dense(2, name="head"),
        ],
        name="threshold",
    )
    kernel = np.zeros((FEATURES, 4), np.float32)
    kernel[:, 2] = 1 / 16
    bias = np.array([10, -10, 0, 10], np.float32)
    model.get_layer("lstm").set_weights([kernel, np.zeros((1, 4), np.float32), bias])
    model.get_layer("head").set_weights(
        [np.array([[1.0, 0.0]], np.float32), np.array([0.0, 0.755], np.float32)]
    )
    rnn = RNNModel(model)
    train = np.random.default_rng(0).random((100, STEPS, FEATURES), dtype=np.float32)
    return rnn, Profile().fit(rnn, train)


BC_ONLY = [BC("h", "net", alpha_max=0.9)]


def failure_campaign(
    threshold, budget=600, patience=1, mutator=SMALL_NOISE, seed=1, metrics=BC_ONLY, **options
):
    """A campaign on the threshold model (BC only unless ``metrics`` says, oracle radius 10)."""
    rnn, profile = threshold
    return Campaign(
        rnn,
        SEEDS,
        mutator,
        Oracle(radius=10.0),
        profile=profile,
        metrics=metrics,
        budget=budget,
        patience=patience,
        seed=seed,
        **options,
    )


def failure_run(threshold, **options):
    campaign = failure_campaign(threshold, **options)
    return campaign, campaign.run()


def test_the_failure_objective_finds_what_coverage_guidance_misses(threshold):
    _, coverage_only = failure_run(threshold, schedule="stall")  # the paper's
    _, failures = failure_run(threshold, objective="failure", schedule="mixed")
    assert coverage_only.adversarial == 0
    assert failures.adversarial > 0 and failures.unique >= 1
    assert set(failures.failures_per_class_pair) == {"1->0"}
    assert failures.objective == "failure" and failures.schedule == "mixed"


def test_shrunk_samples_still_fail_and_are_closer(threshold):
    rnn, _ = threshold
    # GA turns are bounded (a quarter of the budget): "both" gives the failure GA every
    # other turn, so it needs a larger budget than "failure" to reach the decision boundary
    campaign, result = failure_run(threshold, budget=1200, objective="both", schedule="mixed")
    assert result.adversarial > 0 and result.shrink_calls > 0
    oracle = campaign.oracle
    for sample in result.samples:
        outputs = rnn.predict(np.stack([sample.seed, sample.case]))
        distance = float(np.linalg.norm(sample.case - sample.seed))
        assert distance == pytest.approx(sample.distance, rel=1e-6)
        assert oracle.fails(outputs[:1], outputs[1:], np.array([distance]))[0]
        assert sample.distance <= sample.found_distance
    assert result.average_perturbation < result.average_found_perturbation
    _, unshrunk = failure_run(
        threshold, budget=1200, objective="both", schedule="mixed", shrink=False
    )
    assert unshrunk.average_perturbation == unshrunk.average_found_perturbation


def test_shrinking_takes_no_more_model_inputs_than_the_search(threshold, monkeypatch):
    """With the bound at 0.05 x the campaign's inputs, shrinking gets its samples in round
    robin over seeds (each seed's first sample before any second one) and takes no more
    model inputs than the bound; the samples it could not reach are reported as found."""
    rnn, _ = threshold
    campaign = failure_campaign(threshold, budget=1200, objective="both", schedule="mixed")
    for _ in campaign.iterate():
        pass
    monkeypatch.setattr(campaign_module, "SHRINK_SHARE", 0.05)
    calls, inputs = [], []
    from pytest_rnncov.generation import shrinking

    real_plan, real_predict = shrinking.array_plan, rnn.predict

    def spy(order, budget, case_shape):
        calls.append({"order": order, "max_inputs": budget})
        return real_plan(order, budget, case_shape)

    monkeypatch.setattr(shrinking, "array_plan", spy)
    monkeypatch.setattr(rnn, "predict", lambda x: inputs.append(len(x)) or real_predict(x))
    reported = []
    campaign.listeners.append(type("L", (), {"on_shrunk": lambda _, c, s: reported.extend(s)})())
    campaign.finish()
    bound = int(0.05 * campaign.generated)
    assert calls[0]["max_inputs"] == bound and 0 < sum(inputs) <= bound
    owners = [reported[k].seed_index for k in calls[0]["order"]]
    firsts = len(set(owners))
    assert len(reported) > firsts and len(set(owners[:firsts])) == firsts  # firsts first
    reached = set(calls[0]["order"][: bound // 8].tolist())  # bisection: 8 inputs each
    assert len(reached) < len(reported)
    for k, sample in enumerate(reported):
        if k not in reached:
            assert sample.distance == sample.found_distance


class FarApart(GaussianMutator):
    """SMALL_NOISE's mutants, at a distance the test sets."""

    def __init__(self, distance: float) -> None:
        super().__init__(variance=(0.002, 0.004))
        self.far = distance

    def distance(self, seeds, cases):
        return np.full(len(cases), self.far)


def test_a_distance_that_is_not_a_finite_number_is_refused_by_name(threshold):
    for bad in (np.inf, np.nan, -1.0):
        with pytest.raises(InvalidArgument, match=r"FarApart.distance holds NaN, inf or negat"):
            failure_campaign(threshold, mutator=FarApart(bad), budget=100).run()
    # finite but huge: the average stays finite (a plain mean of 1e308s overflowed, and the
    # session's data file could then not be written)
    result = Campaign(
        threshold[0], SEEDS, FarApart(1e308), Oracle(radius=None), profile=threshold[1],
        metrics=BC_ONLY, budget=1200, seed=1, objective="both", schedule="mixed",
        shrink=False,
    ).run()  # fmt: skip
    assert result.adversarial and result.average_perturbation == pytest.approx(1e308)
    json.dumps(result.summary().to_json(), allow_nan=False)


def test_stop_after_failing_seeds(threshold):
    _, result = failure_run(
        threshold, objective="failure", schedule="mixed", stop_after_failing_seeds=1
    )
    assert result.unique == 1 and result.test_cases < 600


def test_schedule_and_objective_are_validated(threshold):
    rnn, profile = threshold
    with pytest.raises(
        InvalidArgument, match="schedule='greedy'; use one of 'adaptive', 'stall', 'mixed'"
    ):
        Campaign(rnn, SEEDS, SMALL_NOISE, Oracle(), profile=profile, schedule="greedy")
    with pytest.raises(
        InvalidArgument, match="objective='fun'; use one of 'coverage', 'failure', 'both'"
    ):
        Campaign(rnn, SEEDS, SMALL_NOISE, Oracle(), profile=profile, objective="fun")


def test_the_adaptive_schedule_finds_the_failures_and_the_coverage(threshold):
    """Here only a search that follows the oracle's margin finds failures and only a
    directed search covers BC: random mutation alone covers nothing and finds nothing in 600
    cases, the paper's schedule covers BC fully in 460 cases and finds nothing. The adaptive
    schedule (the default) covers BC fully within 600 cases (its BC sweep took 144) and makes
    every seed fail within 900."""
    _, random_only = failure_run(threshold, schedule="stall", patience=10**9)
    _, paper = failure_run(threshold, schedule="stall")
    campaign, adaptive = failure_run(threshold)
    assert (random_only.adversarial, random_only.rates["BC"]) == (0, 0.0)
    assert (paper.adversarial, paper.rates["BC"]) == (0, 1.0)
    assert adaptive.schedule == "adaptive" and adaptive.objective == "both"
    assert adaptive.rates["BC"] == 1.0
    assert adaptive.test_cases == 600  # full coverage does not end it: failures are sought
    assert {g["phase"] for g in campaign.growth} >= {"random", "targeted"}
    _, longer = failure_run(threshold, budget=900)
    assert longer.rates["BC"] == 1.0 and longer.unique == len(SEEDS)
    _, again = failure_run(threshold)  # one seed, one run
    assert (again.adversarial, again.test_cases, again.rates) == (
        adaptive.adversarial,
        adaptive.test_cases,
        adaptive.rates,
    )


def test_every_adaptive_pull_is_one_batch_or_one_ga_turn_from_the_arm_it_names(threshold):
    """Random batches, failure sweeps (ga.n = 8 mutants of each open seed) and variants
    (mutants of adversarial samples, so only of failing seeds) each take at most one batch;
    BC's arm is GA turns (Alg. 2) at one condition each, generations of at most k x n = 32
    and a turn at most a quarter of the budget; together the budget."""
    campaign = failure_campaign(threshold, budget=1200, batch_size=100)
    kinds, failing, turns, previous = set(), set(), [], None
    for step in campaign.iterate():
        assert step.cases <= 100
        kind = (step.target or step.phase).split(" ")[0]
        kinds.add(kind)
        if kind.startswith("BC:"):
            assert step.cases <= 4 * 8
            if kind != previous:
                turns.append(0)
            turns[-1] += step.cases
        if kind == "failure:variants":
            seeds = campaign.seed_indices()[campaign.n_cases - step.cases :]
            assert set(seeds.tolist()) <= failing
        failing = set(np.flatnonzero(campaign._samples_per_seed).tolist())
        previous = kind
    assert {k for k in kinds if not k.startswith("BC:t=")} == {
        "seeds",
        "random",
        "failure:sweep",
        "failure:variants",
    }
    assert turns and max(turns) <= 1200 // 4
    assert campaign.generated == 1200


def test_the_adaptive_schedule_turns_on_bc_and_sc_and_sweeps_tc(threshold):
    """BC's boundaries and SC's steps are reached by climbing toward one condition: BC's
    and SC's arms run GA turns at the closest uncovered condition; TC's arm sweeps the best
    cases of its uncovered conditions in one batch."""
    metrics = [*BC_ONLY, SC("h", "delta"), TC("h", "net", w=3)]
    campaign = failure_campaign(threshold, budget=1200, metrics=metrics)
    labels = {(step.target or "").split(" ")[0] for step in campaign.iterate()}
    assert "TC:sweep" in labels
    assert not {"BC:sweep", "SC:sweep"} & labels
    assert any(label.startswith("BC:t=") for label in labels)
    assert any(label.startswith("SC:t=") for label in labels), labels


def test_sc_growth_weighs_1_though_its_arm_runs_ga_turns(threshold):
    """BC's growth weighs 3 (BC_WORTH), SC's 1: with one pull each of 100 cases, BC gaining
    0.1 and SC 0.3 in log(1 + covered), the yields per case are 3 * 0.1/100 = 1 * 0.3/100, so
    the shares are equal (105.5 of 211 cases each) and BC, 5.5 below it, goes next; SC at 3
    would have yielded 0.009 and taken 0.1/2 + 0.9 * 27/28 = 0.918 of the cases."""
    campaign = failure_campaign(threshold, budget=1200, metrics=[*BC_ONLY, SC("h", "delta")])
    assert campaign.targets == ("BC", "SC")
    now = campaign.generated
    recent = {
        "SC": [(np.array([0.0, 0.3, 0.0, 0.0]), 100, now)],
        "BC": [(np.array([0.1, 0.0, 0.0, 0.0]), 100, now)],
    }
    assert campaign._choose(["SC", "BC"], recent, {"SC": 110, "BC": 100}) == "BC"


def test_a_coverage_sweep_not_pulled_for_more_than_5_batches_goes_next(threshold):
    """Yields per case: BC's turns 3 * 0.1/100 (BC_WORTH 3), TC's sweep 0.01/100, the others
    0, so the shares give the pull to BC. Once TC's latest pull ended more than
    ADAPTIVE_REFRESH = 5 batches (500 cases of 100) ago, TC goes next whatever its yield;
    SC's arm runs GA turns (up to a quarter of the budget each), and is not pulled for
    being out of date."""
    metrics = [*BC_ONLY, SC("h", "delta"), TC("h", "net", w=3)]
    campaign = failure_campaign(threshold, budget=1200, metrics=metrics)
    assert campaign.targets == ("BC", "SC", "TC") and campaign.batch_size == 100
    assert campaign_module.ADAPTIVE_REFRESH == 5
    arms, now, nothing = ["random", "failure", "BC", "SC", "TC"], campaign.generated, np.zeros(5)
    recent = {
        "random": [(nothing, 100, now)],
        "failure": [(nothing, 100, now)],
        "BC": [(np.array([0.1, 0.0, 0.0, 0.0, 0.0]), 100, now)],
        "SC": [(nothing, 100, now - 5000)],
        "TC": [(np.array([0.0, 0.0, 0.01, 0.0, 0.0]), 100, now - 500)],
    }
    spent = dict.fromkeys(arms, 100)
    assert campaign._choose(arms, recent, spent) == "BC"
    recent["TC"] = [(np.array([0.0, 0.0, 0.01, 0.0, 0.0]), 100, now - 501)]
    assert campaign._choose(arms, recent, spent) == "TC"


def test_one_out_of_date_sweep_is_pulled_per_5_batches(threshold):
    """With two metrics that sweep (TC and NC), both last pulled more than 500 cases ago, the
    one pulled longer ago (TC) goes; the other waits until 5 batches passed since that
    choice (the shares meanwhile give BC the pull), so sweeps that yield nothing cannot
    take the schedule over however many metrics sweep."""
    metrics = [*BC_ONLY, TC("h", "net", w=3), NC()]
    campaign = failure_campaign(threshold, budget=1200, metrics=metrics)
    assert campaign.targets == ("BC", "TC", "NC")
    arms, now, nothing = ["random", "failure", "BC", "TC", "NC"], campaign.generated, np.zeros(5)
    recent = {
        "random": [(nothing, 100, now)],
        "failure": [(nothing, 100, now)],
        "BC": [(np.array([0.1, 0.0, 0.0, 0.0, 0.0]), 100, now)],
        "TC": [(nothing, 100, now - 700)],
        "NC": [(nothing, 100, now - 600)],
    }
    spent = dict.fromkeys(arms, 100)
    assert campaign._choose(arms, recent, spent) == "TC"
    recent["TC"] = [(nothing, 100, now)]
    assert campaign._choose(arms, recent, spent) == "BC"  # NC is due, but a refresh just ran
    campaign._refreshed = now - 501
    assert campaign._choose(arms, recent, spent) == "NC"


def test_an_sc_turn_that_got_closer_earns_the_share_it_closed_of_one_condition(threshold):
    """SC's turn at an uncovered step whose fitness went 0.08 -> 0.02 closed 3/4 of the way:
    with c steps covered, one more would add log(2 + c) - log(1 + c) to SC's progress, so
    the turn adds 0.75 of that (c = 0: 0.75 * log 2 = 0.5199). A turn that covered its
    step (fitness <= 0), got no closer, or was BC's earns nothing beyond what it covered;
    credits add up, and the turns at one step share one step's worth at most."""
    metrics = [*BC_ONLY, SC("h", "delta")]
    campaign = failure_campaign(threshold, budget=1200, metrics=metrics)
    assert campaign.targets == ("BC", "SC")
    sc = campaign.coverage["SC"]
    assert sc.covered == 0  # nothing run yet
    step = 0
    before = campaign._progress()
    sc.best_fitness_[step] = 0.02
    campaign._credit_turn(("SC", step), 0.08)
    assert campaign._progress() - before == pytest.approx([0.0, 0.5199, 0.0, 0.0], abs=1e-4)
    for fitness, prior in [(0.0, 0.08), (0.02, 0.02), (0.03, 0.02)]:
        sc.best_fitness_[step] = fitness
        campaign._credit_turn(("SC", step), prior)
    bc = campaign.coverage["BC"]
    assert bc.covered == 0
    bc.best_fitness_[0] = 0.01
    campaign._credit_turn(("BC", 0), 0.5)
    assert campaign._progress() - before == pytest.approx([0.0, 0.5199, 0.0, 0.0], abs=1e-4)
    sc.best_fitness_[1] = 0.05  # half the way: 0.5 * log 2 = 0.3466 more
    campaign._credit_turn(("SC", 1), 0.1)
    assert campaign._progress() - before == pytest.approx([0.0, 0.8664, 0.0, 0.0], abs=1e-4)
    # turns creeping on toward step 1 share one step's worth, counted from 0.1, where the
    # first began: 0.05 -> 0.025 closes a quarter of it (0.1733), 0.025 -> 0.0125 an eighth
    sc.best_fitness_[1] = 0.025
    campaign._credit_turn(("SC", 1), 0.05)
    assert campaign._progress() - before == pytest.approx([0.0, 1.0397, 0.0, 0.0], abs=1e-4)
    sc.best_fitness_[1] = 0.0125
    campaign._credit_turn(("SC", 1), 0.025)
    assert campaign._progress() - before == pytest.approx([0.0, 1.1263, 0.0, 0.0], abs=1e-4)


def test_sc_turns_of_the_adaptive_schedule_are_credited_after_they_end(threshold):
    """After 400 cases SC has c steps covered (1 here) and open ones. A pull of SC's arm
    (``_climb``) aims a turn at the closest open step; a turn that takes its fitness f to a
    quarter without covering it raises SC's progress by 0.75 * f / start * (log(2 + c) -
    log(1 + c)), counting c after the turn, start the fitness when the campaign's first turn
    at that step began (c = 1, f = start: 0.75 * log 1.5 = 0.3041)."""
    metrics = [*BC_ONLY, SC("h", "delta")]
    campaign = failure_campaign(threshold, budget=400, metrics=metrics)
    campaign.run()
    sc = campaign.coverage["SC"]
    covered = sc.covered
    assert 1 <= covered < sc.total
    aimed = []

    def closer(target):
        aimed.append((target, sc.best_fitness_[target[1]]))
        sc.best_fitness_[target[1]] /= 4
        yield from ()

    campaign._targeted = closer
    before = campaign._progress()
    starts = dict(campaign._credit_start)
    assert list(campaign._climb("SC")) == []
    [(target, fitness)] = aimed
    assert target[0] == "SC" and not sc.covered_[target[1]]
    start = starts.get(target, fitness)
    assert start >= fitness > 0
    expected = 0.75 * fitness / start * (math.log(2 + covered) - math.log(1 + covered))
    assert campaign._progress() - before == pytest.approx([0.0, expected, 0.0, 0.0])


def test_the_adaptive_schedule_takes_no_objective(threshold):
    rnn, profile = threshold
    with pytest.raises(
        InvalidArgument, match="objective='failure' does not apply to schedule='adaptive'"
    ):
        Campaign(
            rnn, SEEDS, SMALL_NOISE, Oracle(), profile=profile, metrics=BC_ONLY, objective="failure"
        )
    campaign = Campaign(
        rnn, SEEDS, SMALL_NOISE, Oracle(), profile=profile, metrics=BC_ONLY, objective="both"
    )
    assert (campaign.schedule, campaign.objective) == ("adaptive", "both")
    paper = Campaign(
        rnn, SEEDS, SMALL_NOISE, Oracle(), profile=profile, metrics=BC_ONLY, schedule="stall"
    )
    assert paper.objective == "coverage"


def _turn_sizes(campaign):
    """Run ``campaign``; the (cases, generations) of each GA turn it took."""
    turns = []
    targeted = campaign._targeted

    def counted(target):
        cases = generations = 0
        for step in targeted(target):
            cases, generations = cases + step.cases, generations + 1
            yield step
        turns.append((cases, generations))

    campaign._targeted = counted
    campaign.run()
    return turns


@pytest.mark.parametrize("schedule", ["stall", "mixed"])
def test_every_ga_turn_is_bounded_by_a_share_of_the_budget(ramp, schedule):
    """gamma=100 generations of 32 would be 3,200 cases; a turn may take a quarter of the
    budget (at least one generation)."""
    from pytest_rnncov.generation import campaign as module

    campaign = ramp_campaign(
        ramp, budget=2000, patience=1, ga=GAConfig(k=4, n=8, gamma=100), schedule=schedule, seed=1
    )
    turns = _turn_sizes(campaign)
    assert turns and max(cases for cases, _ in turns) <= max(32, module.TURN_SHARE * 2000)
    assert campaign.generated <= 2000


@pytest.mark.parametrize(
    "schedule, patience", [("stall", "GA_STALL"), ("adaptive", "ADAPTIVE_TURN_STALL")]
)
def test_a_ga_turn_ends_when_it_gets_no_closer(ramp, monkeypatch, schedule, patience):
    """With a GA fitness that never improves on the parent's, a turn ends after GA_STALL
    generations (8 offspring of the one best case, then 32 of the 4 best), in the adaptive
    schedule after ADAPTIVE_TURN_STALL, not gamma's 50, unless its condition got covered on
    the way (the coverage update is not patched)."""
    from pytest_rnncov.generation import campaign as module

    monkeypatch.setattr(
        BC, "condition_fitness", lambda self, signals, condition: np.full(len(signals), 9.0)
    )
    campaign = ramp_campaign(
        ramp, budget=1000, patience=1, ga=GAConfig(k=4, n=8, gamma=50), schedule=schedule, seed=1
    )
    turns = _turn_sizes(campaign)
    generations = {"GA_STALL": 3, "ADAPTIVE_TURN_STALL": 5}[patience]
    assert getattr(module, patience) == generations
    assert turns and max(g for _, g in turns) == generations
    assert (8 + 32 * (generations - 1), generations) in turns


def test_the_failure_sweep_breeds_from_every_open_seed_in_one_batch(threshold):
    """A sweep takes ga.n = 8 mutants of the best case of each seed without a failure (the
    4 seeds here; a batch of 100 has room for 12), so its batches shrink by 8 as seeds
    fail, and its cases stay within the oracle's radius of their seed."""
    campaign = failure_campaign(threshold, patience=2, seed=0)
    sweeps, failing, ids = [], 0, []
    for step in campaign.iterate():
        if step.target == "failure:sweep":
            sweeps.append((step.cases, 8 * (len(SEEDS) - failing)))
            ids.extend(range(campaign.n_cases - step.cases, campaign.n_cases))
        failing = campaign._n_failing_seeds()
    assert sweeps and all(cases == expected for cases, expected in sweeps)
    swept = campaign.cases()[ids] - SEEDS[campaign.seed_indices()[ids]]
    assert np.linalg.norm(swept.reshape(len(ids), -1), axis=1).max() <= 10.0


class Sometimes(Mutator):
    """Small noise on each case with probability 0.2; the other cases come back unchanged."""

    def mutate(self, cases, rng):
        cases = np.asarray(cases)
        out = SMALL_NOISE.mutate(cases, rng)
        keep = rng.random(len(cases)) >= 0.2
        out[keep] = cases[keep]
        return out


def test_a_sweep_the_mutator_left_unchanged_does_not_end_the_failure_search(threshold):
    """Found by a hostile-input pass: a sweep whose 8 mutants all came back unchanged (a
    one-in-six chance here) put the failure arm to rest for the rest of the campaign, and
    the run ended with 3 of the 4 seeds failing. The arm rests only once every seed fails."""
    _, result = failure_run(threshold, budget=3000, patience=2, mutator=Sometimes())
    assert result.unique == len(SEEDS)


class Flip(Mutator):
    """Every mutant is the same case, all features 0.7: past the threshold model's flip."""

    def mutate(self, cases, rng):
        return np.full_like(np.asarray(cases), 0.7)


def test_a_repeated_adversarial_case_counts_once_per_seed(threshold):
    """Every mutant of a seed is the one case all-0.7 (L2 3.58 from the seed, within the
    radius 10), which fails; mutants of it are equal to it and dropped. Many evaluated
    cases fail, but each seed has one adversarial sample."""
    rnn, profile = threshold
    campaign = Campaign(
        rnn,
        SEEDS,
        Flip(),
        Oracle(radius=10.0),
        profile=profile,
        metrics=BC_ONLY,
        budget=100,
        batch_size=10,
        schedule="stall",
        patience=10**9,
    )
    steps = list(campaign.iterate())
    failing = rnn.predict(campaign.cases()).argmax(axis=1) == 0
    assert failing.sum() > len(SEEDS)  # evaluated cases that fail, repeats included
    assert sum(step.adversarial for step in steps) == len(SEEDS)
    assert len(campaign._adversarial) == len(SEEDS) == campaign._n_failing_seeds()


def test_the_adaptive_yield_and_choice_by_hand(threshold):
    """_progress: log(1 + measure) for covered BC conditions, failing seeds and the sum over
    seeds of log(1 + samples), 8 samples per seed at most. _choose: an arm never pulled goes
    first; then with yields per case (worth 3 for BC, BC_WORTH; 0.3, 0.05) random
    3 * 0.1/100, failure 0.3 * 0.2/100, BC 3 * 0.05/50, the shares are 0.1/3 + 0.9 *
    yield**3 / sum(yield**3): 0.4815, 0.0369, 0.4815; after 300, 10 and 100 cases of 411
    the deficits are -102.1, 5.2 and 97.9: BC. An arm below half its exploration share
    (0.5 * 0.1/3 * 411 = 6.85 cases) goes first: with 0 cases, failure, although BC's
    deficit (93.1 of 401) is larger than its 14.8."""
    campaign, _ = failure_run(threshold, budget=900)
    covered = int(campaign.coverage["BC"].covered_.sum())
    per_seed = np.bincount(
        campaign.seed_indices()[campaign._adversarial], minlength=len(SEEDS)
    ).astype(float)
    assert per_seed.max() > 8  # the cap is in play
    expected = np.log1p([covered, len(SEEDS), np.log1p(np.minimum(per_seed, 8)).sum()])
    np.testing.assert_allclose(campaign._progress(), expected)
    arms = ["random", "failure", "BC"]
    now = campaign.generated
    recent = {
        "random": [(np.array([0.1, 0.0, 0.0]), 100, now)],
        "failure": [(np.array([0.0, 0.2, 0.0]), 100, now)],
        "BC": [(np.array([0.05, 0.0, 0.0]), 50, now)],
    }
    spent = {"random": 300, "failure": 10, "BC": 100}
    assert campaign._choose(arms, recent, spent) == "BC"
    assert campaign._choose(arms, {**recent, "failure": []}, spent) == "failure"
    assert campaign._choose(arms, recent, {**spent, "failure": 0}) == "failure"  # the floor
    assert campaign._choose(arms, recent, {**spent, "failure": 7}) == "BC"  # above 6.85
    spent = {"random": 300, "failure": 100, "BC": 300}  # of 701: 37.6, -74.1, 37.6; a tie
    assert campaign._choose(arms, recent, spent) == "random"  # goes to the arm listed first


def test_an_arms_yield_forgets_its_old_pulls(threshold):
    """A pull weighs 0.5 ** (cases since / (ADAPTIVE_HALF_LIFE batches)): with batches of
    10 and a half-life of 5, a pull 50 cases back weighs 1/2 and one 100 back 1/4. An arm
    whose old pull covered much (gain 0.3 in 100 cases, 100 back) and whose new one nothing
    (100 cases): (0.25 * 0.3) / (0.25 * 100 + 100) = 0.0006 per case, not 0.3 / 200 =
    0.0015; the same pulls the other way round: 0.3 / 125 = 0.0024. A gain that shrank
    counts 0."""
    from pytest_rnncov.generation import campaign as campaign_module

    campaign, _ = failure_run(threshold, budget=900, batch_size=10)
    assert campaign.batch_size == 10 and campaign_module.ADAPTIVE_HALF_LIFE == 5
    now, worth = campaign.generated, np.array([1.0, 0.3, 0.05])
    covered, nothing = np.array([0.3, 0.0, 0.0]), np.zeros(3)
    old_gain = [(covered, 100, now - 100), (nothing, 100, now)]
    assert campaign._arm_yield(old_gain, worth) == pytest.approx(0.0006)
    new_gain = [(nothing, 100, now - 100), (covered, 100, now)]
    assert campaign._arm_yield(new_gain, worth) == pytest.approx(0.0024)
    half = [(np.array([0.0, 1.0, 0.0]), 50, now - 50)]
    assert campaign._arm_yield(half, worth) == pytest.approx(0.3 / 50)  # one pull: its rate
    assert campaign._arm_yield([(-covered, 100, now)], worth) == 0.0
    # an arm not pulled for 10 million cases (batches of 1: a half-life of 5 cases; a long
    # GA turn elsewhere): its weights counted from now underflow to 0 (0 / 0); counted from
    # its latest pull, a pull 5 cases before it weighs 1/2: 0.5 * 0.3 / (50 + 100) = 0.001
    campaign.batch_size = 1
    long_ago = [(covered, 100, now - 10**7 - 5), (nothing, 100, now - 10**7)]
    assert campaign._arm_yield(long_ago, worth) == pytest.approx(0.001)


def test_sweeps_rotate_past_what_stopped_getting_closer():
    """Open indices, closest first, those swept GA_STALL (3) times without getting closer
    after the rest; a sweep that got an index closer resets its count."""
    order = Campaign._sweep_order(
        np.array([True, True, False, True]), np.array([3.0, 1.0, 0.0, 2.0]), np.array([0, 3, 0, 0])
    )
    assert order.tolist() == [3, 0, 1]
    stale = np.array([2, 2, 2])
    Campaign._mark_swept(stale, np.array([0, 2]), np.array([1.0, 1.0]), np.array([0.5, 1.0]))
    assert stale.tolist() == [0, 2, 3]


@pytest.mark.parametrize("session_reads", ["gates", "units", "sums"])
def test_a_campaign_traces_what_the_session_it_feeds_reads(keras, seq_inputs, session_reads):
    """A campaign on a tracked model feeds the session's coverage too: its traces hold what
    the session's metrics read (an LSTM's forget gate for the paper's BC, single units
    for NC) even where its own metrics read only sums of h; where both read only sums,
    the session's signal figure is drawn from the summed trace."""
    from pytest_rnncov import TC
    from pytest_rnncov.plugin.session import RNNCovSession

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((7, 3)), keras.layers.LSTM(5), keras.layers.Dense(2)])
    sums_only = (BC("h", "net"), SC("h", "delta"), TC("h", "net", w=3))
    session_metrics = {"gates": ("BC", "SC"), "units": ("NC", "SC"), "sums": sums_only}
    session = RNNCovSession(signal_figures=True)
    tracked = session.track(
        model,
        profile=Profile(window=(1, 5)).fit(RNNModel(model), seq_inputs),
        metrics=session_metrics[session_reads],
        name="m",
    )
    campaign = Campaign(
        tracked,
        seq_inputs[:4],
        GaussianMutator(variance=0.1, clip=None),
        Oracle(radius=1.0),
        budget=30,
        batch_size=10,
        metrics=sums_only[:2],
    )
    campaign.run()
    assert tracked.coverage.n_inputs_ == campaign.coverage.n_inputs_ > 0
    read = tracked.coverage.components_, tracked.coverage.sums_only_
    assert read == {"gates": (("f", "h"), True), "units": (("h",), False)}.get(
        session_reads, (("h",), True)
    )
    figure = session.data().signals["m"]
    assert len(figure["h_net_z"]) == 4 and figure["steps"] == [1, 2, 3, 4, 5]


def test_a_campaign_on_a_tracked_model_keeps_its_profile(keras, seq_inputs, tmp_path):
    """Its inputs feed the tracked model's coverage, measured against that model's profile:
    another profile (other windows, other conditions) is refused; an equal one is fine."""
    from pytest_rnncov.plugin.session import RNNCovSession

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((7, 3)), keras.layers.GRU(5), keras.layers.Dense(2)])
    fit = Profile(window=(1, 5)).fit(RNNModel(model), seq_inputs)
    tracked = RNNCovSession().track(model, profile=fit, name="m")
    other = Profile(window=(0, 6)).fit(RNNModel(model), seq_inputs)
    run = {"mutator": GaussianMutator(variance=0.1, clip=None), "oracle": Oracle(), "budget": 5}
    for wrong in (other, "profile.json"):
        with pytest.raises(InvalidArgument, match="is not the profile tracked model 'm'"):
            Campaign(tracked, seq_inputs[:2], profile=wrong, **run)
    fit.save(tmp_path / "same.json")
    same = Profile.load(tmp_path / "same.json")
    assert same is not fit and same.digest() == fit.digest()
    assert Campaign(tracked, seq_inputs[:2], profile=same, **run).coverage.profile is fit


def test_time_series_failure_search_keeps_its_cases_within_the_radius(threshold):
    """TimeSeriesMutator did not move the failure search's offspring back within the
    oracle's radius (the base ``within`` left them as they were): with a mutation larger
    than the radius, as ``from_seeds`` gives on short standardised series, every case the
    sweep bred fell outside it, no case could fail, and the failure search found nothing.
    Now its cases lie within the radius and it finds failures."""
    from pytest_rnncov import TimeSeriesMutator

    campaign = failure_campaign(threshold, budget=2000, mutator=TimeSeriesMutator(noise=4.0))
    ids = []
    for step in campaign.iterate():
        if step.target == "failure:sweep":
            ids.extend(range(campaign.n_cases - step.cases, campaign.n_cases))
    result = campaign.finish()
    swept = campaign.cases()[ids] - SEEDS[campaign.seed_indices()[ids]]
    assert ids and np.linalg.norm(swept.reshape(len(ids), -1), axis=1).max() <= 10.0
    assert result.unique >= 1


@pytest.mark.parametrize("schedule", ["adaptive", "stall"])
def test_random_mutation_draws_its_parents_from_the_corpus_in_the_adaptive_schedule(ramp, schedule):
    """The adaptive schedule's random arm mutates the seeds and the best case of each
    condition (a fuzzer's queue), not every case so far; the paper's schedule draws from
    every case. The parents each random batch hands to the mutation are checked against
    the corpus of that moment."""
    # the paper's schedule with a patience that never runs out: random mutation only
    campaign = ramp_campaign(ramp, budget=3000, schedule=schedule, patience=10**9)
    metric = next(iter(campaign.coverage.metrics.values()))
    drawn, outside = [], []
    mutate, random_batch = campaign._mutate, campaign._random_batch
    in_random = []

    def spied_mutate(parents):
        if in_random:
            corpus = set(range(len(SEEDS))) | set(metric.best_input_.tolist())
            drawn.extend(parents.tolist())
            outside.extend(p for p in parents.tolist() if p not in corpus)
        return mutate(parents)

    def spied_random_batch():
        in_random.append(True)
        try:
            return random_batch()
        finally:
            in_random.pop()

    campaign._mutate, campaign._random_batch = spied_mutate, spied_random_batch
    campaign.run()
    assert len(drawn) >= 500
    if schedule == "adaptive":
        assert outside == []
    else:
        assert len(outside) > len(drawn) / 2


class _InPlaceNoise(Mutator):
    """SMALL_NOISE's draws, added to the cases it is given and returned (in place)."""

    def mutate(self, cases, rng):
        cases += SMALL_NOISE.mutate(cases, rng) - cases
        return cases


def test_a_mutator_that_changes_its_cases_in_place_is_a_mutator_all_the_same(threshold):
    """It changed the very parents its mutants were compared with: every mutant looked
    unchanged, the campaign stopped with 0 test cases and "adversary rate 0" passed."""
    copying, copied = failure_run(threshold, budget=300)
    in_place, found = failure_run(threshold, budget=300, mutator=_InPlaceNoise())
    assert found.test_cases == copied.test_cases == 300 and in_place.discarded == 0
    np.testing.assert_allclose(in_place.cases(), copying.cases(), atol=1e-6)
    assert found.adversarial == copied.adversarial


class _Finished:
    def __init__(self):
        self.calls = 0

    def on_finish(self, campaign, result):
        self.calls += 1


def test_a_campaign_finishes_once(threshold):
    """finish() after run() (the docs point to it) reported the campaign twice: a second
    row in the session's table, the listeners called again, shrinking redone."""
    listener = _Finished()
    campaign = failure_campaign(threshold, budget=200, listeners=[listener])
    with pytest.raises(InvalidArgument, match=r"finish\(\) before the campaign ran: call run"):
        campaign.finish()
    result = campaign.run()
    assert campaign.finish() is result and campaign.finish() is campaign.result
    assert listener.calls == 1


def test_a_reused_sample_writer_starts_its_folder_afresh_for_each_campaign(threshold, tmp_path):
    """Two campaigns given one SampleWriter once left 83 PNGs and an .npz of both in one
    folder beside the second's summary."""
    writer = SampleWriter(tmp_path / "adv")
    first = failure_campaign(threshold, budget=600, listeners=[writer], shrink=False).run()
    second = failure_campaign(threshold, budget=600, seed=2, listeners=[writer], shrink=False)
    found = second.run()
    assert first.adversarial > 0 and found.adversarial > 0
    arrays = np.load(tmp_path / "adv" / "adversarial.npz")
    assert len(arrays["cases"]) == found.adversarial == writer.count
    summary = json.loads((tmp_path / "adv" / "summary.json").read_text())
    assert summary["adversarial"] == found.adversarial


def test_a_listener_that_raises_keeps_no_other_listener_from_the_batchs_samples(
    stacked_model, seq_inputs, tmp_path
):
    """The first listener's Ctrl-C on a batch's third sample kept the SampleWriter after it
    from that sample and the rest of the batch: without shrinking (which hands every
    sample over again) adversarial.npz held 2 of the 25 samples summary.json counted."""
    stop = _Listener(raises_at={3})
    campaign = noisy_campaign(stacked_model, seq_inputs, [stop, SampleWriter(tmp_path / "adv")])
    with pytest.raises(KeyboardInterrupt):
        campaign.run()
    result = campaign.result
    assert result.interrupted and result.adversarial > 3 and stop.calls > 3
    assert len(np.load(tmp_path / "adv" / "adversarial.npz")["cases"]) == result.adversarial
    assert json.loads((tmp_path / "adv" / "summary.json").read_text())["adversarial"] == (
        result.adversarial
    )


def _full_disk(monkeypatch, after=0):
    """Every file write after the first ``after`` fails as on a full disk."""
    import errno

    real = os.fdopen
    written = [0]

    class Full:
        def __init__(self, stream):
            self.stream = stream

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            self.stream.close()

        def write(self, data):
            raise OSError(errno.ENOSPC, "No space left on device")

    def fdopen(*args, **kwargs):
        written[0] += 1
        stream = real(*args, **kwargs)
        return stream if written[0] <= after else Full(stream)

    monkeypatch.setattr(os, "fdopen", fdopen)


def test_a_full_disk_at_a_reruns_first_file_keeps_the_earlier_campaigns_samples(
    threshold, tmp_path, monkeypatch
):
    """A re-run's first write removed the earlier campaign's files before it failed: a
    full disk left the folder with neither campaign's samples. They are set aside until
    the new summary is written, and put back when the new campaign wrote nothing."""
    folder = tmp_path / "adv"
    failure_campaign(threshold, listeners=[SampleWriter(folder)]).run()
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert "adversarial.npz" in before and any(n.startswith("adv_") for n in before)
    _full_disk(monkeypatch)
    kept = SampleWriter(folder, keep_going=True)
    failure_campaign(threshold, seed=2, listeners=[kept]).run()
    assert "No space left on device" in kept.error
    assert kept.error.endswith("the earlier campaign's files there are left as they were")
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    with (
        pytest.raises(DataFileError, match="left as they were"),
        pytest.warns(RNNCovWarning, match="finishing the campaign that DataFileError stopped"),
    ):  # its samples, then its summary, could not be written either
        failure_campaign(threshold, seed=2, listeners=[SampleWriter(folder)]).run()
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    monkeypatch.undo()
    _full_disk(monkeypatch, after=2)  # two images of the new campaign, then a full disk
    late = SampleWriter(folder, keep_going=True)
    failure_campaign(threshold, seed=2, listeners=[late]).run()
    assert "kept in that folder as hidden '.NAME.removed' files" in late.error
    hidden = {p.name for p in folder.iterdir() if p.name.endswith(".removed")}
    assert hidden == {f".{name}.removed" for name in before if name != MARKER}
    monkeypatch.undo()
    failure_campaign(threshold, seed=3, listeners=[SampleWriter(folder)]).run()
    assert not [p for p in folder.iterdir() if p.name.endswith(".removed")]  # saved: gone


def test_two_campaigns_writing_one_sample_folder_at_once_are_refused(threshold, tmp_path):
    """Two campaigns run side by side into one folder: each one's first file removed the
    other's, and the folder ended with the PNGs of both beside one campaign's arrays. The
    second is refused while the first holds the folder; the first's files stay whole."""
    folder = tmp_path / "adv"
    first = failure_campaign(threshold, listeners=[SampleWriter(folder)], shrink=False)
    second = failure_campaign(threshold, seed=2, listeners=[SampleWriter(folder)])
    steps = first.iterate()
    while not len(first._adversarial):  # the first campaign has written its first file
        next(steps)
    with (
        pytest.raises(DataFileError, match="is in use: another campaign .* is saving its"),
        pytest.warns(RNNCovWarning, match="finishing the campaign that DataFileError stopped"),
    ):  # its summary is refused too
        second.run()
    for _ in steps:
        pass
    found = first.finish()
    assert len(np.load(folder / "adversarial.npz")["cases"]) == found.adversarial
    pngs = sorted(p.name for p in folder.glob("adv_*.png"))
    assert len(pngs) == min(found.adversarial, 1000)
    assert json.loads((folder / "summary.json").read_text())["adversarial"] == found.adversarial
    third = failure_campaign(threshold, seed=3, listeners=[SampleWriter(folder)]).run()
    assert json.loads((folder / "summary.json").read_text())["adversarial"] == third.adversarial


def test_a_reused_writer_never_puts_an_earlier_campaigns_files_over_another(
    threshold, tmp_path, monkeypatch
):
    """A writer whose campaign left the files of the campaign before aside (a late full
    disk), reused while another campaign held the folder, put those files back among
    that campaign's: the folder ended with both campaigns' PNGs."""
    folder = tmp_path / "adv"
    failure_campaign(threshold, listeners=[SampleWriter(folder)]).run()
    _full_disk(monkeypatch, after=2)
    reused = SampleWriter(folder, keep_going=True)
    failure_campaign(threshold, seed=2, listeners=[reused]).run()
    monkeypatch.undo()
    holder = failure_campaign(threshold, listeners=[SampleWriter(folder)], shrink=False)
    steps = holder.iterate()
    while not len(holder._adversarial):
        next(steps)
    failure_campaign(threshold, seed=4, listeners=[reused]).run()
    assert "is in use" in reused.error and "left as they were" not in reused.error
    for _ in steps:
        pass
    found = holder.finish()
    assert len(list(folder.glob("adv_*.png"))) == found.adversarial
    assert not list(folder.glob(".*.removed"))


def test_a_campaign_left_unfinished_in_this_process_frees_its_folder_once_garbage(
    threshold, tmp_path
):
    """A loop over iterate() that raised left its writer's lock held in a reference cycle
    until the garbage collector ran: the next test's campaign on the folder failed with
    "is in use" while nothing was writing there."""
    import gc

    class Keeps:  # a listener holding its campaign: a reference cycle
        def on_adversarial(self, campaign, sample):
            self.campaign = campaign

    folder = tmp_path / "adv"
    abandoned = failure_campaign(threshold, listeners=[Keeps(), SampleWriter(folder)])
    steps = abandoned.iterate()
    while not len(abandoned._adversarial):
        next(steps)
    gc.disable()  # the cycle stays until a collection: none happens on its own here
    try:
        del abandoned, steps
        again = failure_campaign(threshold, seed=2, listeners=[SampleWriter(folder)]).run()
    finally:
        gc.enable()
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["adversarial"] == again.adversarial > 0


def test_the_lock_is_gone_with_the_writer_even_where_a_forked_child_lives(tmp_path):
    """A flock belongs to the open file, which a forked child shares: closing it in the
    parent kept the folder locked while the child lived."""
    import multiprocessing
    import time

    from pytest_rnncov.reporting.samples import _lock_folder

    class Owner:
        pass

    tmp_path.joinpath("adv").mkdir()
    owner = Owner()
    release = _lock_folder(tmp_path / "adv", owner)
    child = multiprocessing.get_context("fork").Process(target=time.sleep, args=(30,))
    child.start()
    try:
        release()
        _lock_folder(tmp_path / "adv", Owner())()  # taken and released: not in use
    finally:
        child.kill()
        child.join()


def test_a_read_only_marker_still_locks(tmp_path, monkeypatch):
    """The marker was opened for writing to lock it: a read-only marker (a folder copied
    from a read-only checkout) failed every campaign."""
    from pytest_rnncov.reporting.samples import _lock_folder

    folder = tmp_path / "adv"
    folder.mkdir()
    (folder / MARKER).write_text("written by pytest-rnncov: campaign samples\n")
    real = os.open

    def read_only(path, flags, *args):
        if Path(path).name == MARKER and flags & os.O_RDWR:
            raise PermissionError(13, "Permission denied")
        return real(path, flags, *args)

    monkeypatch.setattr(os, "open", read_only)

    class Owner:
        pass

    holder = Owner()
    release = _lock_folder(folder, holder)
    with pytest.raises(DataFileError, match="is in use"):
        _lock_folder(folder, Owner())
    release()


def test_a_killed_campaigns_files_never_replace_the_fallback_it_set_aside(
    threshold, tmp_path, monkeypatch
):
    """A killed campaign (no summary) set the complete campaign's files aside; the next
    campaign set its partial files aside over them, and a full disk then left a hidden
    mix of both under names that clash. The complete campaign's files stay the fallback
    until a campaign saves its summary."""
    folder = tmp_path / "adv"
    failure_campaign(threshold, listeners=[SampleWriter(folder)]).run()
    complete = {p.name: p.read_bytes() for p in folder.iterdir() if p.name != MARKER}
    killed_writer = SampleWriter(folder)
    killed = failure_campaign(threshold, seed=2, listeners=[killed_writer], shrink=False)
    steps = killed.iterate()
    while killed_writer.count < 1:  # a PNG of its own written, the earlier files aside
        next(steps)
    assert len(list(folder.glob(".*.removed"))) == len(complete)
    killed_writer._release()  # as the kernel does for a killed process
    _full_disk(monkeypatch)  # the next campaign cannot write its first file
    failing = SampleWriter(folder, keep_going=True)
    failure_campaign(threshold, listeners=[failing]).run()
    assert failing.error.endswith(
        "the files an earlier campaign had set aside there are back in view"
    )
    assert {p.name: p.read_bytes() for p in folder.iterdir() if p.name != MARKER} == complete
    monkeypatch.undo()
    _full_disk(monkeypatch, after=2)  # two files, then a full disk: the fallback stays
    late = SampleWriter(folder, keep_going=True)
    failure_campaign(threshold, listeners=[late]).run()
    assert "kept in that folder as hidden" in late.error
    hidden = {p.name[1:-8]: p.read_bytes() for p in folder.glob(".*.removed")}
    assert hidden == complete


def test_a_second_ctrl_c_stops_the_listener_calls_at_once(stacked_model, seq_inputs):
    """Every Ctrl-C after the first was swallowed until every listener had every sample of
    the batch (up to 65,536)."""
    stops, counts = _Listener(raises_at=None), _Listener()
    campaign = noisy_campaign(stacked_model, seq_inputs, [stops, counts])
    with pytest.raises(KeyboardInterrupt):
        campaign.run()
    assert campaign.result.adversarial > 2
    assert stops.calls == 2 and counts.calls == 1  # the second sample's Ctrl-C ends it


def test_a_ctrl_c_after_a_listeners_error_stops_the_calls_and_is_raised(stacked_model, seq_inputs):
    """With a listener's error pending, a Ctrl-C was swallowed: the calls went on through
    the batch and the ordinary error was raised, so a pytest session did not stop."""
    fails = _Listener(raises_at={1}, error=RuntimeError("listener bug"))
    stops = _Listener(raises_at={2})
    campaign = noisy_campaign(stacked_model, seq_inputs, [fails, stops])
    with pytest.raises(KeyboardInterrupt) as raised:
        campaign.run()
    assert fails.calls == 2 and stops.calls == 2
    assert repr(raised.value.__context__) == "RuntimeError('listener bug')"  # not dropped


def test_an_unfinished_campaigns_leftover_that_cannot_go_is_named(tmp_path, monkeypatch):
    """With an earlier campaign's files set aside, the files an unfinished campaign left in
    view were removed quietly, and one that could not go stayed among the new campaign's."""
    folder = tmp_path / "adv"
    folder.mkdir()
    (folder / MARKER).write_text("written by pytest-rnncov: campaign samples\n")
    (folder / ".summary.json.removed").write_text('{"format": "pytest-rnncov-campaign"}')
    (folder / ".adv_00001_seed0_0to1.png.removed").write_bytes(b"complete")
    for name in ("adv_00001_seed3_0to1.png", "adv_00002_seed4_0to1.png"):
        (folder / name).write_bytes(b"partial")
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    stuck = folder / "adv_00002_seed4_0to1.png"
    replace = os.replace

    def refuse(src, dst):
        if Path(src) == stuck:
            raise PermissionError(1, "Operation not permitted")
        replace(src, dst)

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(DataFileError, match="cannot replace .*adv_00002.*Operation not perm"):
        SampleWriter(folder)._ready()
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before
    monkeypatch.undo()
    SampleWriter(folder)._ready()
    assert sorted(p.name for p in folder.iterdir()) == sorted(
        [MARKER, ".summary.json.removed", ".adv_00001_seed0_0to1.png.removed"]
    )


def test_a_fallback_that_cannot_all_come_back_keeps_its_summary_aside(tmp_path, monkeypatch):
    """A full disk at the first file put the set-aside files back but one (held open), said
    they were back, and left the summary in view: the next campaign took the folder for a
    finished one and removed the sample still set aside."""
    folder = tmp_path / "adv"
    folder.mkdir()
    (folder / MARKER).write_text("written by pytest-rnncov: campaign samples\n")
    (folder / ".summary.json.removed").write_text('{"format": "pytest-rnncov-campaign"}')
    (folder / ".adv_00001_seed0_0to1.png.removed").write_bytes(b"complete")
    replace = os.replace

    def held(src, dst):
        if str(src).endswith(".png.removed"):
            raise PermissionError(13, "Permission denied")
        replace(src, dst)

    _full_disk(monkeypatch)
    monkeypatch.setattr(os, "replace", held)
    writer = SampleWriter(folder, keep_going=True)
    writer._kept(lambda: writer._write(writer._ready() / "adv_00001_s9.png", b"new", "an image"))
    assert "could not be: .adv_00001_seed0_0to1.png.removed" in writer.error
    assert ".summary.json.removed (was summary.json, kept aside with them)" in writer.error
    monkeypatch.undo()
    writer._release()  # as its campaign's end does
    SampleWriter(folder)._ready()  # an unfinished folder: the fallback stays
    assert (folder / ".adv_00001_seed0_0to1.png.removed").read_bytes() == b"complete"


class _FailsToFinish:
    def on_finish(self, campaign, result):
        raise RuntimeError("listener failed")


def test_an_interrupt_is_raised_whatever_a_listener_raises_while_finishing(threshold):
    """A Ctrl-C in run() was replaced by a listener's error from finish(): under pytest an
    ordinary failure, and the session went on."""
    campaign = failure_campaign(
        threshold, mutator=InterruptAfter(2), listeners=[_FailsToFinish()], budget=10_000
    )
    with pytest.warns(RNNCovWarning, match="that KeyboardInterrupt stopped: RuntimeError"):
        with pytest.raises(KeyboardInterrupt):
            campaign.run()
    assert campaign.result is not None and campaign.result.interrupted
    strict = failure_campaign(  # warnings as errors: the warning replaced the Ctrl-C
        threshold, mutator=InterruptAfter(2), listeners=[_FailsToFinish()], budget=10_000
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(KeyboardInterrupt) as raised:
            strict.run()
    if sys.version_info >= (3, 11):  # the listener's error is in the traceback, as a note
        assert "while finishing the campaign: RuntimeError('listener failed')" in (
            raised.value.__notes__
        )


def test_a_mutant_the_model_overflows_on_is_named_by_its_seed():
    """The campaign stopped with "the h/net signal holds NaN or inf for inputs [3]", the
    row of an internal batch the user cannot see; it now names the seeds those mutants
    came from, and keeps what was found."""
    import torch

    class Relu(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = torch.nn.RNN(3, 4, batch_first=True, nonlinearity="relu")
            self.head = torch.nn.Linear(4, 2)

        def forward(self, x):
            return self.head(self.rnn(x)[0][:, -1])

    class Blow(GaussianMutator):
        def mutate(self, cases, rng):  # one mutant of a large scale, within float32
            out = super().mutate(cases, rng)
            out[3] = np.float32(1e30)
            return out

    torch.manual_seed(0)
    net = Relu().eval()
    with torch.no_grad():
        net.rnn.weight_hh_l0.copy_(torch.eye(4) * 100)  # 1e30 grows past float32 in 6 steps
    rnn = RNNModel(net)
    x = np.random.default_rng(0).normal(size=(40, 6, 3)).astype(np.float32)
    campaign = Campaign(
        rnn, x[:5], Blow(variance=0.01, clip=None), Oracle(),
        profile=Profile().fit(rnn, x), budget=200, seed=0,
    )  # fmt: skip
    with pytest.raises(InvalidInput, match=r"inputs \[3\].* batch those inputs are mutants of"):
        campaign.run()
    assert campaign.result is not None and campaign.result.interrupted
    assert campaign.result.test_cases == 0  # the first batch overflowed: it is not counted


def test_an_overflow_names_the_row_of_the_inputs_not_of_a_batch():
    """Coverage.update and coverage_delta numbered the row within the batch that held it
    ("inputs [3]" for input 11 in batches of 8), and coverage_delta spoke of its own
    internal coverage's n_inputs_."""
    import torch

    from pytest_rnncov import coverage_delta

    torch.manual_seed(0)
    net = torch.nn.RNN(3, 4, batch_first=True, nonlinearity="relu")
    with torch.no_grad():
        net.weight_hh_l0.copy_(torch.eye(4) * 100)

    class Last(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = net

        def forward(self, x):
            return self.rnn(x)[0][:, -1]

    rnn = RNNModel(Last().eval(), batch_size=8)
    x = np.random.default_rng(0).normal(size=(40, 6, 3)).astype(np.float32)
    profile = Profile().fit(rnn, x)
    bad = x[:20].copy()
    bad[11] = 1e30
    with pytest.raises(InvalidInput, match=r"inputs \[11\]") as raised:
        Coverage(rnn, profile, ["BC"]).update(bad)
    assert raised.value.rows == (11,)
    with pytest.raises(InvalidInput, match=r"^suspect: .*inputs \[11\]") as raised:
        coverage_delta(rnn, profile, x[:5], bad, ["BC"])
    assert "n_inputs_" not in str(raised.value) and raised.value.rows == (11,)


def test_a_tracked_models_overflowing_outputs_name_the_row_of_the_inputs():
    """The tracked model checked a batch's outputs after the stream had moved on: input 11
    of batches of 8 was named as row 3."""
    import torch

    from pytest_rnncov.plugin.session import RNNCovSession

    class Scaled(torch.nn.Module):  # finite states, outputs beyond float32 for x = 1e10
        def __init__(self):
            super().__init__()
            self.rnn = torch.nn.RNN(3, 4, batch_first=True)

        def forward(self, x):
            return self.rnn(x)[0][:, -1] * x[:, -1, :1] ** 4

    torch.manual_seed(0)
    rnn = RNNModel(Scaled().eval(), batch_size=8)
    x = np.random.default_rng(0).normal(size=(40, 6, 3)).astype(np.float32)
    tracked = RNNCovSession().track(rnn, profile=Profile().fit(rnn, x), name="m")
    bad = x[:20].copy()
    bad[11, -1, 0] = 1e10
    with pytest.raises(InvalidInput, match=r"rows \[11\]") as raised:
        tracked.predict(bad)
    assert raised.value.rows == (11,)


def test_failure_fitness_checks_its_distances(threshold):
    outputs = np.array([[0.2, 0.8], [0.6, 0.4], [0.5, 0.5]])
    oracle = Oracle(radius=1.0)
    for distances, said in (
        (np.full(3, np.nan), "distances holds NaN, inf or negative values"),
        (np.ones(2), "distances gave 2 values for 3 cases"),
        ("abc", "distances must be numbers"),
    ):
        with pytest.raises(InvalidInput, match=said):
            oracle.failure_fitness(outputs, outputs[::-1], distances)


def test_mutation_sizes_are_bounded():
    from pytest_rnncov import TimeSeriesMutator, random_mutants

    with pytest.raises(InvalidArgument, match="segments=10000000"):
        TimeSeriesMutator(segments=10**7)
    with pytest.raises(InvalidArgument, match="max_rounds=1000000000"):
        random_mutants(SEEDS, SMALL_NOISE, max_rounds=10**9)


class _Writing:
    """What a SampleWriter reads of a campaign: its mutator's kind of case and clip."""

    def __init__(self, array_cases):
        self.mutator = type("M", (), {"array_cases": array_cases, "clip": (0.0, 1.0)})()
        self.name = "m"


def _sample(n, case):
    output = np.array([0.2, 0.8])
    return AdversarialSample(n, n, case, case, output, output[::-1], "1", "0", 0.1)


def test_a_sample_writer_costs_time_in_proportion_to_its_samples(tmp_path, monkeypatch):
    """6,000 text samples rewrote adversarial.txt 6,000 times (22 s, 5.4 GB written for a
    1.8 MB file) and 6,003 images took two fsynced PNGs each (91 s around a 0.6 s
    campaign). The text is rewritten when the samples doubled (1, 2, 4, ..., 64: 7 times
    for 100) and at the end; images get a PNG for the first MAX_IMAGES only, not forced to
    disk one by one (fsync cost 10-20x the write); the text is."""
    from pytest_rnncov.reporting import samples as samples_module

    written, durable = [], {}
    write = samples_module.write_atomic

    def recorded(path, *args, **kwargs):
        written.append(path.name)
        durable[path.suffix] = kwargs.get("durable", True)
        return write(path, *args, **kwargs)

    monkeypatch.setattr(samples_module, "write_atomic", recorded)
    text = _Writing(array_cases=False)
    writer = SampleWriter(tmp_path / "text")
    found_text = [_sample(n, f"case {n}") for n in range(100)]
    for sample in found_text:
        writer.on_adversarial(text, sample)
    assert written.count("adversarial.txt") == 7
    lines = (tmp_path / "text" / "adversarial.txt").read_text().splitlines()
    assert len(lines) == 1 + 64  # the header, then the samples when they reached 64
    writer.on_shrunk(text, found_text)
    assert len((tmp_path / "text" / "adversarial.txt").read_text().splitlines()) == 1 + 100
    monkeypatch.setattr(samples_module, "MAX_IMAGES", 3)
    images = _Writing(array_cases=True)
    writer = SampleWriter(tmp_path / "images")
    found = [_sample(n, np.full((4, 4), n / 10, np.float32)) for n in range(5)]
    for sample in found:
        writer.on_adversarial(images, sample)
    writer.on_shrunk(images, found)
    pngs = sorted(p.name for p in (tmp_path / "images").glob("adv_*.png"))
    assert pngs == [f"adv_0000{n}_seed{n - 1}_1to0.png" for n in (1, 2, 3)]
    assert durable[".txt"] is True and durable[".png"] is False


def test_a_text_sample_is_one_line_of_six_columns_whatever_it_holds(tmp_path):
    r"""A seed 'good\tbad\nmovie \x1b[2J' shifted the columns, split the sample over two
    lines and put a terminal escape into the file."""
    writer = SampleWriter(tmp_path)
    hostile = "good\tbad\nmovie \x1b[2J \\x09 \u202e"
    writer.on_adversarial(_Writing(array_cases=False), _sample(0, hostile))
    header, line = (tmp_path / "adversarial.txt").read_text().split("\n")[:2]
    assert len(header.split("\t")) == len(line.split("\t")) == 6
    seed = line.split("\t")[4]
    assert seed == "good\\x09bad\\x0amovie \\x1b[2J \\\\x09 \\u202e"
    assert (tmp_path / "adversarial.txt").read_text().count("\n") == 2


def test_a_long_campaigns_summary_thins_its_growth_to_what_a_file_may_hold(ramp):
    """One growth point per model call: a campaign of 100,001 calls wrote a data file that
    report and combine then refused ("'growth' holds more than 100000 points")."""
    result = ramp_campaign(ramp, budget=40, batch_size=10).run()
    point = result.growth[-1]
    result.growth = [dict(point, test_cases=n) for n in range(100_001)]
    summary = result.summary("ramp").to_json()
    growth = summary["growth"]
    assert len(growth) == 2_000 and growth[0]["test_cases"] == 0
    assert growth[-1]["test_cases"] == 100_000
    steps = np.diff([p["test_cases"] for p in growth])
    assert steps.min() >= 50 and steps.max() <= 51  # evenly spaced: 100,000 / 1,999
    assert CampaignSummary.from_json(summary, "the summary").growth == growth
    assert len(result.growth) == 100_001  # the result keeps every point


def test_the_variants_arm_keeps_its_parents_grouped_by_seed_as_samples_are_found(threshold):
    """The variants arm sorted every adversarial id by seed at every pull (39% of a
    300,000-case campaign's time); the grouping is now kept up to date by inserting the
    new ones, and must equal a stable sort of all of them by seed."""
    campaign = failure_campaign(threshold, budget=2_000, schedule="adaptive", shrink=False)
    steps = campaign.iterate()
    checked = 0
    for step in steps:
        if step.target == "failure:variants":
            ids = campaign._adversarial[: len(campaign._by_seed)]
            owners = campaign.seed_indices()[ids]
            np.testing.assert_array_equal(campaign._by_seed, ids[np.argsort(owners, kind="stable")])
            checked += 1
    assert checked >= 3 and len(np.unique(campaign.seed_indices()[campaign._adversarial])) > 1


def test_the_variants_arm_draws_failing_seeds_by_their_failure_rate(threshold):
    """Variants draw a failing seed with weight (samples + 1) / (mutants + 2). With two
    failing seeds set to rates 1 and 1/2 and the others to about 1e-4, 2/3 of a batch
    comes from the first: 133.3 of 200, binomial sd 6.7; drawing every failing seed
    equally would give each 200 / failing (66.7 or 50)."""
    campaign = failure_campaign(threshold, budget=5_000, batch_size=200, shrink=False)
    for _ in campaign.iterate():
        if np.count_nonzero(campaign._samples_per_seed) >= 3:
            break
    samples = campaign._samples_per_seed
    failing = np.flatnonzero(samples)
    assert len(failing) >= 3
    first, second = failing[:2]
    campaign._cases_per_seed[failing] = 10_000 * (samples[failing] + 1)
    campaign._cases_per_seed[first] = samples[first] - 1  # (s + 1) / (s - 1 + 2) = 1
    campaign._cases_per_seed[second] = 2 * samples[second]  # (s + 1) / (2s + 2) = 1/2
    before = campaign.n_cases
    step = campaign._variants()
    assert step is not None and step.cases == 200
    drawn = campaign.seed_indices()[before:]
    assert set(drawn.tolist()) <= set(failing.tolist())
    assert abs(int((drawn == first).sum()) - 133.3) <= 5 * 6.7
    assert abs(int((drawn == second).sum()) - 66.7) <= 5 * 6.7


def test_an_image_renamed_by_shrinking_leaves_the_fallback_of_its_name(tmp_path):
    """A sample whose decision moved in shrinking gets a new PNG name, and its old PNG was
    removed by renaming it to '.NAME.removed' first: that replaced the hidden file of the
    same name an unfinished campaign had set aside, the fallback kept for a full disk."""
    import dataclasses

    folder = tmp_path / "adv"
    folder.mkdir()
    (folder / MARKER).write_text("written by pytest-rnncov: campaign samples\n")
    (folder / ".summary.json.removed").write_text('{"format": "pytest-rnncov-campaign"}')
    fallback = folder / ".adv_00001_seed0_1to0.png.removed"
    fallback.write_bytes(b"the earlier campaign's")
    images, writer = _Writing(array_cases=True), SampleWriter(folder)
    found = _sample(0, np.full((4, 4), 0.5, np.float32))
    writer.on_adversarial(images, found)
    assert (folder / "adv_00001_seed0_1to0.png").is_file()
    writer.on_shrunk(images, [dataclasses.replace(found, case_decision="2")])
    assert (folder / "adv_00001_seed0_1to2.png").is_file()
    assert not (folder / "adv_00001_seed0_1to0.png").exists()
    assert fallback.read_bytes() == b"the earlier campaign's"


def test_finishing_makes_a_part_of_the_samples_at_a_time(threshold, tmp_path, monkeypatch):
    """finish() built every adversarial sample as an object at once, and a SampleWriter
    kept every one until the campaign ended (464 MB and 1.1 GB more at the end of a
    campaign that found 247,887). Now the samples are shrunk SHRINK_ROWS at a time and made
    SAMPLE_PART at a time as they are read: here no more than two parts and the result's
    KEEP_SAMPLES are alive at once; the samples, the statistics and adversarial.npz are
    those of shrinking every sample at once with the same bound and order."""
    from pytest_rnncov.generation import results, shrinking
    from pytest_rnncov.generation.shrinking import shrink
    from pytest_rnncov.reporting import samples as samples_module

    rnn, _ = threshold
    campaign = failure_campaign(
        threshold,
        budget=2_000,
        schedule="adaptive",
        listeners=[SampleWriter(tmp_path / "adv")],
    )
    for _ in campaign.iterate():
        pass
    ids = campaign._adversarial.copy()
    seed_index = campaign.seed_indices()[ids]
    assert len(ids) > 60 and len(set(seed_index.tolist())) > 1
    found = campaign._adversarial_outputs.take(np.arange(len(ids)))
    monkeypatch.setattr(campaign_module, "SHRINK_SHARE", 0.1)  # some samples left as found
    expected = shrink(
        campaign.mutator,
        campaign.oracle,
        rnn.predict,
        SEEDS[seed_index],
        campaign._seed_outputs[seed_index],
        campaign.cases()[ids],
        found,
        order=campaign_module._round_robin(seed_index),
        max_inputs=int(0.1 * campaign.generated),
    )
    reached = np.flatnonzero((expected.cases != campaign.cases()[ids]).any(axis=(1, 2)))
    assert 0 < len(reached) < len(ids)

    class Counted(AdversarialSample):
        alive = peak = 0

        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            Counted.alive += 1
            Counted.peak = max(Counted.peak, Counted.alive)

        def __del__(self):
            Counted.alive -= 1

    seen = []

    class Reader:
        def on_shrunk(self, campaign, samples):
            assert len(samples) == len(ids)
            for sample in samples:  # read, not kept
                seen.append((sample.case_id, sample.case.copy(), sample.distance))
                seen[-1] += (sample.seed_decision, sample.case_decision)

    campaign.listeners.insert(0, Reader())
    monkeypatch.setattr(campaign_module, "AdversarialSample", Counted)
    monkeypatch.setattr(shrinking, "SHRINK_ROWS", 7)
    monkeypatch.setattr(results, "SAMPLE_PART", 5)
    monkeypatch.setattr(campaign_module, "SAMPLE_PART", 5)
    monkeypatch.setattr(samples_module, "SAMPLE_PART", 5)
    monkeypatch.setattr(campaign_module, "KEEP_SAMPLES", 3)
    result = campaign.finish()
    assert result.shrunk is True and 0 < Counted.peak <= 2 * 5 + 3
    assert [s[0] for s in seen] == ids.tolist()
    np.testing.assert_array_equal(np.stack([s[1] for s in seen]), expected.cases)
    np.testing.assert_array_equal([s[2] for s in seen], expected.distances)
    assert result.average_perturbation == pytest.approx(expected.distances.mean(), rel=1e-12)
    pairs = {}
    for *_, seed_decision, case_decision in seen:
        pairs[f"{seed_decision}->{case_decision}"] = (
            pairs.get(f"{seed_decision}->{case_decision}", 0) + 1
        )
    assert result.failures_per_class_pair == pairs
    owners, counts = np.unique(seed_index, return_counts=True)
    assert result.failures_per_seed == dict(zip(owners.tolist(), counts.tolist()))
    assert [s.case_id for s in result.samples] == ids[:3].tolist()
    with np.load(tmp_path / "adv" / "adversarial.npz") as saved:
        np.testing.assert_array_equal(saved["cases"], expected.cases)
        assert saved["cases"].dtype == np.float32
        np.testing.assert_array_equal(saved["seeds"], SEEDS[seed_index])
        np.testing.assert_array_equal(saved["seed_index"], seed_index)
        np.testing.assert_array_equal(saved["distances"], expected.distances)
        np.testing.assert_array_equal(saved["case_outputs"], expected.outputs)
        np.testing.assert_array_equal(saved["seed_outputs"], campaign._seed_outputs[seed_index])


def test_a_writer_keeps_its_samples_in_temporary_files_and_says_when_it_cannot(
    tmp_path, monkeypatch
):
    """The writer keeps what its files need of each sample in unlinked temporary files,
    not in memory: adversarial.npz reads back as np.savez_compressed writes it; a
    temporary folder with no room, or a sample of another shape than the first, is a
    DataFileError that says what to do (kept in ``error`` with keep_going)."""
    import dataclasses
    import errno
    import tempfile

    from pytest_rnncov.reporting import samples as samples_module

    images = _Writing(array_cases=True)
    found = [_sample(n, np.full((3, 2), n, np.float32)) for n in range(4)]
    writer = SampleWriter(tmp_path / "adv")
    for sample in found:
        writer.on_adversarial(images, sample)
    assert writer.count == 4
    writer.on_finish(images, _result_of(4))
    expected = tmp_path / "expected.npz"
    np.savez_compressed(
        expected,
        cases=np.stack([s.case for s in found]),
        seeds=np.stack([s.seed for s in found]),
        seed_index=np.arange(4),
        case_outputs=np.stack([s.case_output for s in found]),
        seed_outputs=np.stack([s.seed_output for s in found]),
        distances=np.full(4, 0.1),
    )
    with np.load(tmp_path / "adv" / "adversarial.npz") as saved, np.load(expected) as wanted:
        assert sorted(saved.files) == sorted(wanted.files)
        for name in wanted.files:
            assert saved[name].dtype == wanted[name].dtype, name
            np.testing.assert_array_equal(saved[name], wanted[name])

    writer = SampleWriter(tmp_path / "shapes")
    writer.on_adversarial(images, found[0])
    odd = dataclasses.replace(found[1], seed_output=np.array(["a", "b"]))
    with pytest.raises(DataFileError, match=r"sample 2's seed_output is <U1\[2\], the first"):
        writer.on_adversarial(images, odd)
        writer.on_finish(images, _result_of(2))
    writer = SampleWriter(tmp_path / "shapes")
    writer.on_adversarial(images, found[0])
    with pytest.raises(
        DataFileError,
        match=r"sample 2's case is float32\[4, 2\], the first sample's float32\[3, 2\]",
    ):
        writer.on_adversarial(images, _sample(1, np.zeros((4, 2), np.float32)))
        writer.on_finish(images, _result_of(2))

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(tempfile, "TemporaryFile", full)
    monkeypatch.setattr(samples_module, "SAMPLE_PART", 1)  # into the files at once
    with pytest.raises(DataFileError, match="No space left on device; give the temporary"):
        SampleWriter(tmp_path / "full").on_adversarial(images, found[0])
    kept = SampleWriter(tmp_path / "kept", keep_going=True)
    kept.on_adversarial(_Writing(array_cases=False), _sample(0, "a b"))
    assert "temporary file: No space left on device" in kept.error
    monkeypatch.setattr(samples_module, "SAMPLE_PART", 1000)  # at the end: the same error
    kept = SampleWriter(tmp_path / "late", keep_going=True)
    kept.on_adversarial(images, found[0])
    assert kept.error is None
    kept.on_finish(images, _result_of(1))
    assert "temporary file: No space left on device" in kept.error
    assert not (tmp_path / "late" / "adversarial.npz").exists()


def _result_of(adversarial):
    """A CampaignResult of ``adversarial`` samples, for a writer's summary."""
    return CampaignResult(
        test_cases=10,
        adversarial=adversarial,
        unique=1,
        average_perturbation=0.1,
        distance="L2",
        rates={},
        covered={},
        totals={},
        coverage_times={},
        minimal_suite=[],
        diversity=None,
        growth=[],
    )


def test_adversarial_samples_read_as_a_list_does(monkeypatch):
    """A finished campaign's samples: len, indexing (negative too), slicing (a list),
    iteration a part at a time, IndexError past the end, as a list."""
    from pytest_rnncov.generation import results
    from pytest_rnncov.generation.results import AdversarialSamples

    asked = []

    def make(positions):
        asked.append(positions.tolist())
        return [_sample(int(p), f"case {p}") for p in positions]

    monkeypatch.setattr(results, "SAMPLE_PART", 4)
    samples = AdversarialSamples(10, make)
    assert len(samples) == 10 and repr(samples) == "<10 adversarial samples>"
    assert samples[-1].case_id == 9 and samples[2].case == "case 2"
    assert [s.case_id for s in samples[7:]] == [7, 8, 9] and samples[3:1] == []
    with pytest.raises(IndexError):
        samples[10]
    asked.clear()
    assert [s.case_id for s in samples] == list(range(10))
    assert asked == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]


def _text_lines(folder):
    return (folder / "adversarial.txt").read_text().splitlines()[1:]


def test_a_writer_interrupted_while_spooling_keeps_its_files_whole(tmp_path, monkeypatch):
    """Review, 2026-11-30: the samples of a flush were dropped before they were written,
    so a Ctrl-C or a full temporary folder in the middle of one left column files of
    different lengths (adversarial.npz unreadable, its summary counting samples it did not
    hold), a Ctrl-C while adversarial.txt was copied left the next lines written over the
    earlier ones, and one while on_shrunk read the samples left a text file of its header
    alone. A flush is now all or none (the samples stay pending), the copy always ends at
    the file's end, and the shrunk samples replace the found ones once all were read; a
    lone surrogate in a text case is escaped, not an encoding error."""
    import dataclasses
    import errno
    import shutil as shutil_module
    import tempfile

    from pytest_rnncov.reporting import samples as samples_module

    monkeypatch.setattr(samples_module, "SAMPLE_PART", 2)
    images = _Writing(array_cases=True)
    found = [_sample(n, np.full((3, 2), n, np.float32)) for n in range(5)]
    write_column = samples_module._Spool._write_column
    failures = {"seeds": [KeyboardInterrupt()], "distances": [OSError(errno.ENOSPC, "full")]}

    def failing(self, column, field, part, first):
        if failures.get(column):
            raise failures[column].pop()
        return write_column(self, column, field, part, first)

    monkeypatch.setattr(samples_module._Spool, "_write_column", failing)
    writer = SampleWriter(tmp_path / "arrays")
    writer.on_adversarial(images, found[0])
    with pytest.raises(KeyboardInterrupt):  # cases written, seeds interrupted
        writer.on_adversarial(images, found[1])
    with pytest.raises(DataFileError, match="temporary file: full"):  # at distances
        writer.on_adversarial(images, found[2])
    for sample in found[3:]:
        writer.on_adversarial(images, sample)
    writer.on_finish(images, _result_of(5))
    with np.load(tmp_path / "arrays" / "adversarial.npz") as saved:
        np.testing.assert_array_equal(saved["cases"], np.stack([s.case for s in found]))
        np.testing.assert_array_equal(saved["seeds"], np.stack([s.seed for s in found]))
        np.testing.assert_array_equal(saved["distances"], np.full(5, 0.1))

    text = _Writing(array_cases=False)
    lines = [_sample(n, f"case {n} \udc80") for n in range(7)]
    copy, interrupted = shutil_module.copyfileobj, []

    def copy_once_interrupted(*args, **kwargs):
        if not interrupted:
            interrupted.append(True)
            raise KeyboardInterrupt
        return copy(*args, **kwargs)

    monkeypatch.setattr(samples_module.shutil, "copyfileobj", copy_once_interrupted)
    writer = SampleWriter(tmp_path / "text")
    with pytest.raises(KeyboardInterrupt):  # the first sample's copy into the file
        writer.on_adversarial(text, lines[0])
    for sample in lines[1:]:
        writer.on_adversarial(text, sample)

    shrunk = [dataclasses.replace(s, case=f"small {s.case_id}") for s in lines]

    class Interrupting(list):
        """Interrupted while read the first time (Ctrl-C in on_shrunk)."""

        reads = 0

        def __iter__(self):
            Interrupting.reads += 1
            if Interrupting.reads == 1:
                yield self[0]
                raise KeyboardInterrupt
            yield from super().__iter__()

    with pytest.raises(KeyboardInterrupt):
        writer.on_shrunk(text, Interrupting(shrunk))
    assert len(_text_lines(tmp_path / "text")) in (4, 7)  # as found, whole: rewritten at 4
    writer.on_finish(text, _result_of(7))
    assert _text_lines(tmp_path / "text") == [
        f"{n}\t0.1\t1\t0\tcase {n} \\udc80\tsmall {n}" for n in range(7)
    ]
    assert writer._spool._files == {}  # the temporary files released with the summary

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(tempfile, "TemporaryFile", full)
    kept = SampleWriter(tmp_path / "kept", keep_going=True)
    for sample in lines[:2]:
        kept.on_adversarial(text, sample)
    assert "No space left on device" in kept.error and kept._spool._files == {}


def test_adversarial_samples_pickle_as_the_list_of_them(threshold):
    import pickle

    campaign = failure_campaign(threshold, budget=400, schedule="adaptive", shrink=False)
    campaign.run()
    samples = campaign._final_samples(None)
    restored = pickle.loads(pickle.dumps(samples))
    assert type(restored) is list and len(restored) == len(samples) > 0
    assert [s.case_id for s in restored] == [s.case_id for s in samples]
    np.testing.assert_array_equal(restored[-1].case, samples[-1].case)


def test_a_writer_saves_the_samples_an_interrupt_kept_from_it(threshold, tmp_path, monkeypatch):
    """Review, 2026-11-30: a Ctrl-C after the campaign recorded a batch's samples and
    before the writer received them (a listener ahead of it, or the making of the
    samples) left adversarial.npz and the PNGs short of the samples summary.json counted,
    once a Ctrl-C no longer shrank (which handed the writer every sample again). The
    writer now reads the campaign's own samples at the end."""
    import zipfile

    campaign = failure_campaign(
        threshold,
        budget=600,
        schedule="adaptive",
        listeners=[SampleWriter(tmp_path / "adv", keep_going=True)],
    )
    made, real = [], campaign._samples

    def interrupted(*args, **kwargs):
        made.append(1)
        if len(made) == 2 and not campaign.interrupted:  # the second batch with samples
            raise KeyboardInterrupt  # never reaches the writer
        return real(*args, **kwargs)

    monkeypatch.setattr(campaign, "_samples", interrupted)
    with pytest.raises(KeyboardInterrupt):
        campaign.run()
    result = campaign.result
    assert result.shrunk is False and len(campaign.samples) == result.adversarial
    summary = json.loads((tmp_path / "adv" / "summary.json").read_text())
    assert summary["adversarial"] == result.adversarial > 0
    with np.load(tmp_path / "adv" / "adversarial.npz") as saved:
        np.testing.assert_array_equal(saved["cases"], campaign.cases()[campaign._adversarial])
    assert len(list((tmp_path / "adv").glob("adv_*.png"))) == result.adversarial

    # a Ctrl-C in the archive's last close is raised as it is, not as a DataFileError
    campaign = failure_campaign(threshold, budget=600, schedule="adaptive", shrink=False)
    writer = SampleWriter(tmp_path / "zip", keep_going=True)
    campaign.listeners.append(writer)
    close = zipfile._ZipWriteFile.close

    def interrupted_close(self):
        if self._zinfo.filename == "distances.npy":
            raise KeyboardInterrupt
        return close(self)

    monkeypatch.setattr(zipfile._ZipWriteFile, "close", interrupted_close)
    with pytest.raises(KeyboardInterrupt):
        campaign.run()
    assert writer.error is None and campaign.result.adversarial > 0
    assert not (tmp_path / "zip" / "adversarial.npz").exists()


def test_finish_after_a_ctrl_c_in_a_loop_over_iterate_does_not_shrink(threshold, monkeypatch):
    """finish() in the finally of a loop a Ctrl-C stopped reports the samples as found,
    as run() does; after a break it shrinks them."""
    for stop in (KeyboardInterrupt, StopIteration):
        campaign = failure_campaign(threshold, budget=2_000, schedule="adaptive")
        rnn = campaign.rnn
        calls = []
        monkeypatch.setattr(
            rnn, "predict", lambda x, calls=calls, p=rnn.predict: calls.append(len(x)) or p(x)
        )

        def loop():
            try:
                for _ in campaign.iterate():
                    if len(campaign._adversarial) >= 5:
                        if stop is KeyboardInterrupt:
                            raise KeyboardInterrupt
                        break
            finally:
                campaign.finish()

        if stop is KeyboardInterrupt:
            with pytest.raises(KeyboardInterrupt):
                loop()
        else:
            loop()
        result = campaign.result
        assert result.interrupted and result.adversarial > 0
        assert result.shrunk is (stop is StopIteration) and bool(calls) is result.shrunk


def test_a_writer_refuses_arrays_of_python_objects(tmp_path):
    """Their bytes would have been saved: the objects' addresses (np.savez_compressed
    pickled them, which loading with allow_pickle=False refuses anyway)."""
    writer = SampleWriter(tmp_path / "adv")
    images = _Writing(array_cases=True)
    case = np.array([1, "a", None], dtype=object)
    writer.on_adversarial(images, _sample(0, case))
    with pytest.raises(DataFileError, match="sample 1's case is an array of Python objects"):
        writer.on_finish(images, _result_of(1))


class _Levels(Mutator):
    """A user's own string mutator, written as the docs say: each case is a number as
    text, the model input every feature at that level; mutation moves the level."""

    array_cases = False
    distance_name = "level change"

    def mutate(self, cases, rng):
        return [f"{float(c) + rng.normal(0, 0.1):.4f}" for c in cases]

    def encode(self, cases):
        levels = np.array([float(c) for c in cases], np.float32)
        return np.broadcast_to(levels[:, None, None], (len(cases), STEPS, FEATURES)).copy()

    def distance(self, seeds, cases):
        return np.abs(np.array([float(c) - float(s) for s, c in zip(seeds, cases)]))


def test_a_users_own_string_mutator_runs_a_campaign(ramp):
    """array_cases = False with encode and distance is all a string mutator needs: the
    GA climbs the forget gate by mutating the text (a level of 1 puts f at sigmoid(4))."""
    rnn, profile = ramp
    campaign = Campaign(
        rnn,
        ["0.5", "0.5"],
        _Levels(),
        Oracle(radius=10.0),
        profile=profile,
        metrics=[BC(alpha_max=0.9)],
        budget=300,
        patience=1,
        seed=1,
    )
    result = campaign.run()
    assert result.test_cases == 300
    assert all(isinstance(case, str) for case in campaign.cases())
    assert result.covered["BC"] >= 1


def test_a_string_mutator_without_a_distance_or_returning_numbers_is_named(ramp):
    rnn, profile = ramp

    class NoDistance(_Levels):
        distance = Mutator.distance

    with pytest.raises(InvalidArgument, match="NoDistance has string cases .* override distance"):
        Campaign(rnn, ["0.5"], NoDistance(), Oracle(radius=1.0), profile=profile, metrics=[BC()])

    class Numbers(_Levels):
        def mutate(self, cases, rng):
            return [0.5 for _ in cases]

    campaign = Campaign(
        rnn, ["0.5"], Numbers(), Oracle(radius=1.0), profile=profile, metrics=[BC()], budget=10
    )
    with pytest.raises(InvalidArgument, match=r"Numbers.mutate returned 0.5 \(float\)"):
        campaign.run()
    with pytest.raises(InvalidInput, match="seeds are empty"):
        Campaign(rnn, [], _Levels(), Oracle(radius=1.0), profile=profile, metrics=[BC()])
