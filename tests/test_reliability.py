"""A gate you can re-run: verdicts and files under retries, shards, crashed workers, full
disks, interrupts and concurrent writers. Each false pass and each lost file of issue 19
has a test here; faults are injected, not simulated by hand."""

from __future__ import annotations

import hashlib
import json
import multiprocessing
import os
import re
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path

import keras as keras_module  # noqa: F401  (loaded once: in-process pytester runs must not re-import TF)
import numpy as np
import pytest
from test_plugin import CONFTEST, FEEDING, FEW, TESTS

from pytest_rnncov import (
    BT,
    WT,
    Campaign,
    DataFileError,
    GaussianMutator,
    InvalidArgument,
    Oracle,
    OutputConflict,
    Profile,
    RNNModel,
    SampleWriter,
)
from pytest_rnncov.config.bars import Bars
from pytest_rnncov.core.coverage import Coverage
from pytest_rnncov.core.state import MAX_COUNT, MetricState, ModelState
from pytest_rnncov.files import Output, interrupt_after
from pytest_rnncov.plugin.checkpoints import (
    MIN_SKIPPED,
    RUNNING,
    CheckpointFolder,
    CheckpointWriter,
)
from pytest_rnncov.plugin.roles import UNFINISHED, DistController
from pytest_rnncov.reporting.baseline import load_baseline
from pytest_rnncov.reporting.data import CoverageData, combine, unsent_text
from pytest_rnncov.reporting.json_report import JsonReport
from pytest_rnncov.reporting.results import MarkerOutcome, check_models, evaluate


@pytest.fixture
def project(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_feed=TESTS)
    return pytester


def cli(*args, cwd, **kwargs):
    return subprocess.run(
        [sys.executable, "-m", "pytest_rnncov", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
        **kwargs,
    )


# -- the gate does not pass falsely ---------------------------------------------------------
def test_a_failed_ratchet_keeps_the_baseline_so_a_retry_fails_again(project):
    assert project.runpytest("--rnn-save=main").ret == 0
    path = project.path / ".rnncov" / "main.json"
    before = path.read_bytes()
    project.makepyfile(test_feed=FEW)  # fewer inputs: lower coverage
    for _ in range(2):  # the job, then its retry, unchanged
        result = project.runpytest("--rnn-compare=main", "--rnn-save=main")
        assert result.ret == 1
        result.stdout.fnmatch_lines(
            [
                "RNN coverage baseline *main.json kept: this run failed its verdict, and a "
                "baseline is written only from a run that passed"
            ]
        )
        assert path.read_bytes() == before


def test_a_ratchet_only_moves_up(project):
    assert project.runpytest("--rnn-save=main").ret == 0
    path = project.path / ".rnncov" / "main.json"
    before = path.read_bytes()
    project.makepyfile(test_feed=FEW)
    tolerated = project.runpytest(
        "--rnn-compare=main", "--rnn-save=main", "--rnn-compare-tolerance=1.0"
    )
    assert tolerated.ret == 0  # within the tolerance: the comparison passes ...
    tolerated.stdout.fnmatch_lines(
        [
            "*main.json kept: a ratchet only moves up, and this run is "
            "lower (within the tolerance): tiny *"
        ]
    )
    assert path.read_bytes() == before  # ... but the bar does not move down
    project.makepyfile(test_feed=TESTS)
    same = project.runpytest("--rnn-compare=main", "--rnn-save=main")
    assert same.ret == 0
    same.stdout.fnmatch_lines(["RNN coverage baseline saved to *main.json"])


def test_a_baseline_is_not_written_from_a_failed_gate(project):
    result = project.runpytest("--rnn-coverage=1.0", "--rnn-save=gate")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["RNN coverage baseline not saved to *gate.json: this run failed*"])
    assert not (project.path / ".rnncov" / "gate.json").exists()


FAILING = """
from conftest import inputs


def test_one(tiny):
    tiny.predict(inputs(1, n=2))


def test_two(tiny):
    assert False, "a regression the coverage does not see"
"""


def test_a_baseline_is_not_saved_or_ratcheted_from_a_run_whose_tests_failed(project):
    """The gate passes (no bar), yet a test failed: a retried job must not compare with
    a baseline this failed run lowered."""
    assert project.runpytest("--rnn-save=main").ret == 0
    path = project.path / ".rnncov" / "main.json"
    before = path.read_bytes()
    project.makepyfile(test_feed=FAILING)  # fewer inputs, and a failure
    ratchet = ["--rnn-compare=main", "--rnn-save=main", "--rnn-compare-tolerance=1.0"]
    for args in (["--rnn-save=main"], ratchet):  # the ratchet's comparison passes
        result = project.runpytest(*args)
        assert result.ret == 1
        result.stdout.fnmatch_lines(
            [
                "RNN coverage baseline *main.json kept: 1 test failed in this run, and a "
                "baseline is written only from a run that passed"
            ]
        )
        assert path.read_bytes() == before
    result = project.runpytest("--rnn-save=fresh")  # none there before: none written
    result.stdout.fnmatch_lines(["RNN coverage baseline not saved to *fresh.json: 1 test failed*"])
    assert not (project.path / ".rnncov" / "fresh.json").exists()


EXITS_ZERO = """
import pytest
from conftest import inputs


def test_one(tiny):
    tiny.predict(inputs(1, n=2))
    pytest.exit("stopping early", returncode=0)


def test_two(tiny):
    tiny.observe(inputs(2))
"""


def test_a_session_that_exits_zero_before_its_tests_ran_does_not_pass_a_gate(project):
    project.makepyfile(test_feed=EXITS_ZERO)
    result = project.runpytest("--rnn-coverage=0.9", "--rnn-report=json:r.json")
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "FAIL RNN coverage gate not applied: the session stopped after 0 of 2 tests "
            "(Exit: stopping early)*",
            "ERROR pytest-rnncov: the gate was not applied (the session stopped early) and "
            "pytest would have exited 0*",
        ]
    )
    verdict = json.loads((project.path / "r.json").read_text())["verdict"]
    assert verdict["passed"] is False and verdict["applied"] is False
    assert project.runpytest().ret == 0  # no gate asked for: pytest's own exit code
    project.makepyfile(test_feed=EXITS_ZERO.replace("returncode=0", "returncode=3"))
    assert project.runpytest("--rnn-coverage=0.9").ret == 3  # not 0: left as it is
    project.makeconftest(CONFTEST + COLLECTION_EXITS_ZERO)  # before any test ran
    result = project.runpytest("--rnn-coverage=0.05")
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "FAIL RNN coverage gate not applied: the session stopped before the tests ran.",
            "ERROR pytest-rnncov: the gate was not applied (the session stopped early)*",
        ]
    )
    # --collect-only applies no gate, stopped early or not: pytest's own exit status
    assert project.runpytest("--rnn-coverage=0.05", "--collect-only").ret == 0
    project.makeconftest(CONFTEST)
    assert project.runpytest("--rnn-coverage=0.05", "--collect-only").ret == 0


COLLECTION_EXITS_ZERO = """

def pytest_collection_modifyitems(items):
    pytest.exit("nothing to do here", returncode=0)
"""


BROKEN_TRACK = """
import numpy as np


def test_one(rnncov, tiny):
    rnncov.track(tiny.rnn, layer="nope", name="other", x_train=np.zeros((4, 6, 2)))
"""


def test_a_failed_track_replaces_the_data_file_an_earlier_run_left(project):
    """A later `report` or `combine` step must not pass on the earlier run's file."""
    assert project.runpytest("--rnn-data=d.json").ret == 0
    assert cli("report", "d.json", "--rnn-coverage=0.05", cwd=project.path).returncode == 0
    project.makepyfile(test_feed=BROKEN_TRACK.replace("tiny.rnn", "object()"))
    project.makeconftest(CONFTEST.replace('name="tiny")', 'name="tiny", layer="nope")'))
    result = project.runpytest("--rnn-data=d.json")
    result.stdout.fnmatch_lines(["RNN coverage data written to d.json"])
    again = cli("report", "d.json", "--rnn-coverage=0.05", cwd=project.path)
    assert again.returncode == 1
    assert "no model was tracked; rnncov.track() failed: " in again.stdout


def _state(metric: str, total: int, covered=(), weights=None) -> MetricState:
    state = MetricState.empty(metric, metric, total, {}, weights=weights)
    state.times[list(covered)] = 1
    return state


def _model(**metrics: MetricState) -> ModelState:
    return ModelState("m", "lstm", "lstm", (0, 0), "f", 5, dict(metrics), "p")


def test_nothing_to_cover_is_not_coverage():
    empty = _state("BT", 0)
    assert not empty.measurable and empty.rate == 0.0
    weightless = _state("WT", 2, weights=np.zeros(2))
    assert not weightless.measurable and weightless.rate == 0.0
    data = CoverageData(models={"m": _model(BT=empty, WT=weightless)})
    verdict = evaluate(data, Bars.parse("BT:0.9,WT:0.9"))
    assert verdict.passed is False  # terminal, JSON, HTML and exit code render this verdict
    assert "BT has no condition to cover (0/0)" in verdict.gate_line()
    report = JsonReport.data(data, verdict)
    assert report["verdict"]["passed"] is False
    assert report["models"]["m"]["metrics"]["BT"]["pass"] is False
    assert report["models"]["m"]["metrics"]["BT"]["rate"] == 0.0
    marker = MarkerOutcome(
        Bars.parse("0.5", ("BT",)), check_models(data.models, Bars.parse("0.5", ("BT",)))
    )
    assert not marker.passed and "has no condition to cover" in marker.message()


def test_a_configuration_with_no_condition_is_refused_when_tracked(keras):
    model = keras.Sequential(
        [keras.Input((4, 2)), keras.layers.LSTM(3, name="lstm"), keras.layers.Dense(2)]
    )
    rnn = RNNModel(model)
    profile = Profile(window=(2, 2)).fit(
        rnn, np.random.default_rng(0).normal(size=(32, 4, 2)).astype("float32")
    )
    for metric in (BT(), WT()):  # transitions need two window steps
        with pytest.raises(
            InvalidArgument,
            match=r"has no condition to cover with this profile "
            r"\(window \[2, 2\]\).*0/0",
        ):
            Coverage(rnn, profile, [metric])


@pytest.fixture(scope="module")
def measured(stacked_model, seq_inputs) -> ModelState:
    """A real model state (BC, SC, TC, KMNC) of the stacked model."""
    rnn = RNNModel(stacked_model, "lstm_b")
    coverage = Coverage(
        rnn, Profile(window=(1, 5)).fit(rnn, seq_inputs), ["BC", "SC", "TC", "KMNC"]
    )
    coverage.update(seq_inputs)
    return coverage.state("m")


def test_combine_and_report_never_pass_an_empty_metric(measured, tmp_path):
    """KMNC on neurons that never vary in training has no condition (an earlier release
    wrote such files with a rate of 100%)."""
    state = measured.copy()
    kmnc = state.metrics["KMNC"]
    kmnc.config["active"], kmnc.total, kmnc.times = [], 0, np.zeros(0, np.int64)
    data = CoverageData(models={"m": state}, runs=["r1"])
    (tmp_path / "d.json").write_text(data.dumps())
    done = cli("report", "d.json", "--rnn-coverage=KMNC:0.1", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "KMNC has no condition to cover (0/0)" in done.stdout


UNSEEDED = CONFTEST.replace("np.random.default_rng(0).normal", "np.random.default_rng().normal")


def test_workers_whose_profiles_differ_make_the_run_partial_everywhere(pytester):
    pytester.makeconftest(UNSEEDED)  # each worker fits its own profile from other data
    pytester.makepyfile(test_a=FEW, test_b=FEW.replace("test_one", "test_two"))
    result = pytester.runpytest_subprocess(
        "-n",
        "2",
        "--dist",
        "loadfile",
        "--rnn-report=json:r.json",
        "--rnn-data=d.json",
        "--rnn-save=b.json",
    )
    result.stdout.fnmatch_lines(
        [
            "*xdist worker gw? fits its own profile from x_train*give track() a profile file path*",
            "WARNING RNN coverage is partial: worker gw? (cannot combine coverage of model 'tiny'*"
            "each worker fitted its own profile*",
        ]
    )
    report = json.loads((pytester.path / "r.json").read_text())
    assert report["verdict"]["complete"] is False
    assert json.loads((pytester.path / "d.json").read_text())["missing_workers"]
    baseline = json.loads((pytester.path / "b.json").read_text())
    assert baseline["complete"] is False and len(baseline["missing_workers"]) == 1


SHARED_PROFILE = UNSEEDED.replace(
    'window=(1, 5), name="tiny")', 'window=(1, 5), name="tiny", profile="p/tiny.json")'
)


def test_workers_fit_a_profile_file_once_and_share_it(pytester):
    pytester.makeconftest(SHARED_PROFILE)  # unseeded data, but one profile file
    pytester.makepyfile(test_a=FEW, test_b=FEW.replace("test_one", "test_two"))
    result = pytester.runpytest_subprocess(
        "-n", "2", "--dist", "loadfile", "--rnn-report=json:r.json"
    )
    assert result.ret == 0, result.stdout.str()[-3000:]
    report = json.loads((pytester.path / "r.json").read_text())
    assert report["verdict"]["complete"] is True and report["models"]["tiny"]["inputs"] == 4


CRASH = """
import os
from conftest import inputs


def test_crashes(tiny):
    tiny.predict(inputs(2))
    os._exit(1)
"""


DIES_AT_THE_END = """

import os as _os


def pytest_sessionfinish(session):  # not the environment: an outer xdist run sets it
    if getattr(session.config, "workerinput", {}).get("workerid") == "gw0":
        _os._exit(1)  # its tests passed; it dies before it sends its coverage
"""


FEEDS_THEN_CRASHES = CRASH.replace(
    "def test_crashes",
    "def test_feeds(tiny):\n    tiny.predict(inputs(3, n=5))\n\n\ndef test_crashes",
)


def test_a_crashed_worker_keeps_the_coverage_of_the_tests_it_finished(pytester, monkeypatch):
    """The worker that crashed in its second test had checkpointed its first: the merged
    coverage is exactly that of a run of the tests that finished, the worker is still
    named as missing (with the last test its checkpoint holds), and the checkpoints'
    folder is gone after the session."""
    (pytester.path / "tmp").mkdir()
    monkeypatch.setenv("TMPDIR", str(pytester.path / "tmp"))
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_a_crash=FEEDS_THEN_CRASHES, test_b_feed=FEEDING)
    crashed = pytester.runpytest_subprocess(
        "-n", "2", "--dist", "loadfile", "--max-worker-restart=0", "--rnn-report=json:c.json",
        "--rnn-coverage=0.01", "-W", "ignore",
    )  # fmt: skip
    assert crashed.ret == pytest.ExitCode.TESTS_FAILED  # the crashed test fails
    crashed.stdout.fnmatch_lines(
        [
            "FAIL RNN coverage gate not applied: worker gw? (recovered through "
            "test_a_crash.py::test_feeds) did not send all its coverage data; the coverage "
            "shown is from the data that arrived."
        ]
    )
    assert list(pytester.path.rglob("*rnncov-workers-*")) == []
    assert list((pytester.path / "tmp").iterdir()) == []
    finished = pytester.runpytest_subprocess(
        "-p", "no:xdist", "-k", "not crashes", "--rnn-report=json:f.json", "-W", "ignore"
    )
    assert finished.ret == pytest.ExitCode.OK
    got = json.loads((pytester.path / "c.json").read_text())
    want = json.loads((pytester.path / "f.json").read_text())
    assert got["models"]["tiny"]["inputs"] == want["models"]["tiny"]["inputs"] == 5 + 16
    for metric in ("BC", "SC", "TC"):
        covered = got["models"]["tiny"]["metrics"][metric]["covered_ids"]
        assert covered == want["models"]["tiny"]["metrics"][metric]["covered_ids"], metric
    assert got["verdict"]["complete"] is False


def test_a_checkpoint_is_reported_when_no_worker_sent_anything(pytester):
    """No option asked for the plugin and the only worker crashed: its checkpoint is what
    the run measured, and it is reported (it was dropped: no worker had sent data), with
    the profile file the worker fitted and wrote (whose notice travels with the data)."""
    pytester.makeconftest(SHARED_PROFILE)
    pytester.makepyfile(test_a_crash=FEEDS_THEN_CRASHES)
    result = pytester.runpytest_subprocess("-n", "1", "--max-worker-restart=0", "-W", "ignore")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "tiny   lstm*5  *",
            "RNN coverage profile fitted from x_train and written to p/tiny.json: commit it*",
            "WARNING RNN coverage is partial: worker gw0 (recovered through "
            "test_a_crash.py::test_feeds) did not send all its coverage data*",
        ]
    )


class _Engine:
    """What a checkpoint writer reads of the session engine."""

    def __init__(self, data: CoverageData | None = None) -> None:
        self.mark = 0
        self.calls = 0
        self.profiles_written = ["p/tiny.json"]
        self._data = data or CoverageData(runs=["run-a"])

    def data_mark(self) -> int:
        return self.mark

    def data(self) -> CoverageData:
        self.calls += 1
        return self._data


def _checkpoint(path: Path, final: bool = False) -> tuple[str, str, list[str]]:
    """(the test a checkpoint file names, its retry reason, the runs of its data)."""
    content = json.loads(path.read_text())
    assert content["profiles"] == ["p/tiny.json"] and content["final"] is final
    runs = CoverageData.from_json(content["data"], "checkpoint").runs
    return content["test"], content["retry"], runs


def test_a_worker_checkpoint_is_written_when_its_data_changed_and_never_fails_a_test(tmp_path):
    path = tmp_path / "0-gw0.json"
    asked: list[str] = []

    def retry() -> str:  # asked only when a checkpoint is written, not after every test
        asked.append("")
        return "--lf ran only the 1 test" if len(asked) == 1 else ""

    writer = CheckpointWriter(str(path), retry)
    engine = _Engine()
    writer.after_test(engine, "t.py::a")  # type: ignore[arg-type]
    assert _checkpoint(path) == ("t.py::a", "--lf ran only the 1 test", ["run-a"])
    assert engine.calls == 1
    writer.after_test(engine, "t.py::b")  # type: ignore[arg-type]
    assert engine.calls == 1 and len(asked) == 1  # nothing new: not written again
    engine.mark = 1
    writer._cost = 1.0  # the last write took more than its share of the time since
    writer.after_test(engine, "t.py::c")  # type: ignore[arg-type]
    assert engine.calls == 1 and _checkpoint(path)[0] == "t.py::a" and len(asked) == 1
    writer._cost = MIN_SKIPPED  # a write this cheap is never skipped
    writer.after_test(engine, "t.py::d")  # type: ignore[arg-type]
    assert engine.calls == 2 and _checkpoint(path)[0] == "t.py::d"
    engine.mark = 2

    def fails_slowly() -> CoverageData:
        time.sleep(0.05)
        raise ZeroDivisionError

    engine.data = fails_slowly  # type: ignore[method-assign]
    writer.after_test(engine, "t.py::e")  # type: ignore[arg-type]  # no error reaches it
    assert _checkpoint(path) == ("t.py::d", "", ["run-a"])  # the last one stays
    engine.data = _Engine().data  # type: ignore[method-assign]
    writer.after_test(engine, "t.py::f")  # type: ignore[arg-type]
    assert _checkpoint(path)[0] == "t.py::d"  # a failed write counts toward the share too
    writer._cost = 1.0
    writer.final(engine)  # type: ignore[arg-type]  # whatever the share and the data
    assert _checkpoint(path, final=True) == ("t.py::f", "", ["run-a"])
    gone = CheckpointWriter(str(tmp_path / "not-here" / "0-gw1.json"), lambda: "")
    gone.after_test(_Engine(), "t.py::a")  # type: ignore[arg-type]  # its folder is gone
    assert not (tmp_path / "not-here").exists()


def test_a_checkpoint_that_cannot_be_read_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    folder = CheckpointFolder()
    nothing = ("", "", [], False, "")
    assert folder.recover("gw0")[1:] == nothing and not folder.written()  # no such worker
    Path(folder.assign("gw0")).write_text('{"test": "t.py::a", "data": {"format": ')
    assert folder.recover("gw0").data is None and folder.written()
    assert folder.recover("gw0").note.startswith("its checkpoint unreadable: the checkpoint of ")
    assert folder.recover("gw1")[1:] == nothing  # assigned only to gw0
    unread = folder.assign("gw1")
    assert folder.recover("gw1")[1:] == nothing  # assigned, never written
    Path(unread).write_text(CoverageData(runs=["run-b"]).dumps())  # data, not a checkpoint
    assert folder.recover("gw1").note.endswith("gw1: missing key 'test'")
    test = "t.py::b[" + "x" * 300 + "]"
    data = CoverageData(runs=["run-b"]).to_json()
    content = {"test": test, "retry": "", "profiles": ["p/a.json"], "final": False, "data": data}
    for key, value, problem in (
        ("retry", "drop the gate", "'retry' is no --lf or --sw reason: 'drop the gate'"),
        ("retry", "--lf " + "x" * 400, "'retry' is no --lf or --sw reason"),
        ("profiles", ["p"] * 1001, "'profiles' lists 1001 paths; at most 1000"),
        ("profiles", ["p" * 4097], "'profiles' lists 1 paths; at most 1000 of at most 4096"),
        ("final", 1, "'final' is 1 (int), not bool"),
    ):
        Path(unread).write_text(json.dumps({**content, key: value}))
        assert problem in folder.recover("gw1").note, key
    Path(unread).write_text(json.dumps(content))
    recovered, named, retry, profiles, final, said = folder.recover("gw1")
    assert recovered is not None and recovered.runs == ["run-b"]
    assert (named, retry, profiles, final) == (test, "", ["p/a.json"], False)
    assert said == "recovered through " + test[:199] + "…"  # a long id is cut
    folder.remove()
    assert list(tmp_path.iterdir()) == []


def test_several_missing_workers_are_named_in_the_plural():
    assert unsent_text(["gw1"]) == "worker gw1 did not send all its coverage data"
    assert unsent_text(["gw0", "gw1 (x)"], " then") == (
        "workers gw0, gw1 (x) did not send all their coverage data then"
    )


def test_a_checkpoint_that_cannot_be_merged_leaves_the_data_as_it_was(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    controller = DistController.__new__(DistController)  # only what receive() uses
    controller.received, controller.worker_profiles = CoverageData(), []
    folder = CheckpointFolder()
    controller.receive("gw0", CoverageData(runs=["run-a"]).dumps(), folder)
    data = CoverageData(runs=["run-a"]).to_json()
    again = {"test": "t.py::a", "retry": "", "profiles": [], "final": True, "data": data}
    Path(folder.assign("gw1")).write_text(json.dumps(again))  # the same run again
    controller.receive("gw1", None, folder, RUNNING)
    (missing,) = controller.received.missing_workers
    assert missing.startswith(
        "gw1 (still running when the session stopped; its checkpoint not merged: "
    )
    assert controller.received.runs == ["run-a"]
    lf = "--lf ran only the 1 test that failed last time"
    for worker, run, final in (("gw2", "run-b", True), ("gw3", "run-c", False)):
        data = CoverageData(runs=[run]).to_json()
        content = {"test": "t.py::z", "retry": lf, "profiles": [f"{run}.json"], "data": data}
        Path(folder.assign(worker)).write_text(json.dumps({**content, "final": final}))
    # gw2's is its final checkpoint, written at the end of its session: all its data
    assert controller.receive("gw2", None, folder) == lf
    assert controller.receive("gw3", None, folder) == lf
    assert controller.received.runs == ["run-a", "run-b", "run-c"]
    assert controller.received.missing_workers[1:] == ["gw3 (recovered through t.py::z)"]
    assert controller.worker_profiles == ["run-b.json", "run-c.json"]
    folder.remove()


DIES_AFTER_ITS_LAST_HOOK = """

import os as _os
import pytest as _pytest


@_pytest.hookimpl(hookwrapper=True)
def pytest_sessionfinish(session):
    yield  # every hook ran (the plugin's final checkpoint too); xdist has not sent its data
    if getattr(session.config, "workerinput", {}).get("workerid") == "gw0":
        _os._exit(1)
"""


def test_a_killed_worker_marks_the_baseline_partial_and_a_comparison_says_so(pytester):
    """A worker that dies after its tests passed is partial where it died before its
    final checkpoint (in a hook of the session's end: a hook may feed inputs after the
    last test), and whole where it died after it: every input it fed is there."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_a_crash=CRASH, test_b_feed=FEW)
    options = ("-n", "2", "--dist", "loadfile", "--max-worker-restart=0")
    crashed = pytester.runpytest_subprocess(*options, "--rnn-save=b.json", "--rnn-data=d.json")
    crashed.stdout.fnmatch_lines(["RNN coverage baseline not saved to b.json: 1 test failed*"])
    assert json.loads((pytester.path / "d.json").read_text())["missing_workers"]
    pytester.makeconftest(CONFTEST + DIES_AT_THE_END)
    pytester.makepyfile(test_a_crash=FEW.replace("test_one", "test_three"))
    died = pytester.runpytest_subprocess(*options, "--rnn-save=b.json", "--rnn-data=d.json")
    died.stdout.fnmatch_lines(["RNN coverage baseline (partial: marked so) saved to b.json"])
    baseline = json.loads((pytester.path / "b.json").read_text())
    # gw0 died; which file it ran (--dist loadfile) is xdist's choice
    (missing,) = json.loads((pytester.path / "d.json").read_text())["missing_workers"]
    assert missing in (
        "gw0 (recovered through test_a_crash.py::test_three)",
        "gw0 (recovered through test_b_feed.py::test_one)",
    )
    assert baseline["complete"] is False and baseline["missing_workers"] == [missing]
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_a_crash=FEW.replace("test_one", "test_two"))
    result = pytester.runpytest_subprocess("--rnn-compare=b.json", "--rnn-report=json:r.json")
    result.stdout.fnmatch_lines(
        [
            f"WARNING baseline b.json is partial: worker {missing} did not send all its "
            "coverage data when it was saved, so it is lower than a full run*"
        ]
    )
    verdict = json.loads((pytester.path / "r.json").read_text())["verdict"]
    assert verdict["baseline"]["complete"] is False
    pytester.makeconftest(CONFTEST + DIES_AFTER_ITS_LAST_HOOK)
    pytester.makepyfile(test_a_crash=FEW.replace("test_one", "test_three"))
    whole = pytester.runpytest_subprocess(*options, "--rnn-save=b.json", "--rnn-data=d.json")
    whole.stdout.fnmatch_lines(["RNN coverage baseline saved to b.json"])
    assert "WARNING" not in whole.stdout.str() and "(partial" not in whole.stdout.str()
    assert json.loads((pytester.path / "b.json").read_text())["complete"] is True
    assert json.loads((pytester.path / "d.json").read_text())["models"]["tiny"]["inputs"] == 4


# -- a user's files are not lost -------------------------------------------------------------
PROFILE_CONFTEST = CONFTEST.replace(
    'window=(1, 5), name="tiny")', 'window=(1, 5), name="tiny", profile="tiny-profile.json")'
)


def test_outputs_never_replace_the_tracked_profile(pytester):
    pytester.makeconftest(PROFILE_CONFTEST)
    pytester.makepyfile(test_feed=FEW)
    assert pytester.runpytest().ret == 0  # fits and writes the profile
    profile = pytester.path / "tiny-profile.json"
    before = profile.read_bytes()
    for option in (
        "--rnn-data=tiny-profile.json",
        "--rnn-report=json:tiny-profile.json",
        "--rnn-save=tiny-profile.json",
    ):
        result = pytester.runpytest(option)
        assert result.ret == pytest.ExitCode.USAGE_ERROR, option
        result.stderr.fnmatch_lines(
            [
                "*tiny-profile.json' would replace a profile; pytest-rnncov "
                "replaces only its own earlier*"
            ]
        )
        assert profile.read_bytes() == before


WRITES_THE_OUTPUT = (
    FEW
    + """

def test_writes(tmp_path):
    import pathlib

    pathlib.Path("out.json").write_text('{"format": "pytest-rnncov-profile"}')
"""
)


def test_an_output_created_during_the_run_is_not_replaced(pytester):
    """The file is not there when the run starts: the data file (same path) finds it
    there at the end and keeps this run's data beside it."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_feed=WRITES_THE_OUTPUT)
    result = pytester.runpytest("--rnn-data=out.json", "--rnn-coverage=0")
    assert result.ret == 1  # the gate passed, but this run's data is not where it was asked
    result.stdout.fnmatch_lines(
        [
            "Required RNN coverage of 0% reached.",
            "ERROR pytest-rnncov: --rnn-data not written to 'out.json': another process "
            "wrote that file*",
        ]
    )  # last, after the verdict: the line a reader of the log's end meets
    assert (pytester.path / "out.json").read_text() == '{"format": "pytest-rnncov-profile"}'
    kept = list(pytester.path.glob("out.conflict-*.json"))
    assert len(kept) == 1 and json.loads(kept[0].read_text())["format"] == "pytest-rnncov-data"


def test_a_profile_to_fit_where_an_output_goes_is_refused(pytester):
    """The profile does not exist when the run starts, so the outputs' check passed; the
    conflict at the end once blamed "another process" for this run's own profile."""
    pytester.makeconftest(PROFILE_CONFTEST)
    pytester.makepyfile(test_feed=FEW)
    result = pytester.runpytest("--rnn-data=tiny-profile.json")
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "*InvalidArgument: track(profile=...) '*tiny-profile.json' would collide with "
            "--rnn-data '*tiny-profile.json'; give each output its own path*"
        ]
    )
    written = json.loads((pytester.path / "tiny-profile.json").read_text())
    assert written["format"] == "pytest-rnncov-data" and written["track_errors"]
    assert not list(pytester.path.glob("*.conflict-*"))


def test_reports_never_replace_a_model_or_a_foreign_page(project):
    model = project.path / "model.keras"
    model.write_bytes(b"PK\x03\x04 not really a model")
    page = project.path / "site" / "index.html"
    page.parent.mkdir()
    page.write_text("<html>the team's own page</html>")
    for option in ("--rnn-report=json:model.keras", "--rnn-report=html:site"):
        result = project.runpytest(option)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["*would replace a file pytest-rnncov did not write*"])
    assert model.read_bytes() == b"PK\x03\x04 not really a model"
    assert page.read_text() == "<html>the team's own page</html>"
    page.unlink()
    assert project.runpytest("--rnn-report=html:site").ret == 0
    assert project.runpytest("--rnn-report=html:site").ret == 0  # its own page: replaced


def test_a_data_path_naming_a_folder_is_refused(project):
    result = project.runpytest("--rnn-data=out/")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--rnn-data 'out/' ends in a separator (a folder)*"])
    assert not (project.path / "out").exists()


@pytest.fixture(scope="module")
def shard(tmp_path_factory, measured):
    path = tmp_path_factory.mktemp("shard")
    CoverageData(models={"m": measured}, runs=["run-a"]).save(path / "a.json")
    return path


def test_combine_never_replaces_a_profile_or_a_source_file(shard, tmp_path):
    for name, content in (
        ("p.json", '{"format": "pytest-rnncov-profile", "version": 2}'),
        ("conftest.py", "import os\n"),
    ):
        (tmp_path / name).write_text(content)
        (tmp_path / "a.json").write_bytes((shard / "a.json").read_bytes())
        done = cli("combine", "a.json", "--out", name, cwd=tmp_path)
        assert done.returncode == 4, done.stdout + done.stderr
        assert "would replace" in done.stderr and (tmp_path / name).read_text() == content


def _limited(limit: int):
    def apply():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit fails (EFBIG)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_a_disk_full_write_leaves_the_previous_file_whole(shard, measured, tmp_path):
    """A file size limit makes the write fail half-way: the earlier data file survives
    byte for byte and no temporary file is left."""
    (tmp_path / "a.json").write_bytes((shard / "a.json").read_bytes())
    (tmp_path / "b.json").write_text(CoverageData(models={"m": measured}, runs=["run-b"]).dumps())
    old = CoverageData(runs=["old"]).dumps().encode()
    (tmp_path / "out.json").write_bytes(old)
    done = cli(
        "combine",
        "a.json",
        "b.json",
        "--out",
        "out.json",
        cwd=tmp_path,
        preexec_fn=_limited(len(old) + 64),
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "cannot write --out to" in done.stderr and "the file there is unchanged" in done.stderr
    assert (tmp_path / "out.json").read_bytes() == old
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]


def _written_under_a_size_limit(
    function: str, path: Path, size: int, what: str, limit: int
) -> subprocess.CompletedProcess:
    """``pytest_rnncov.files.<function>(path, "x" * size, what)`` run in a child process
    whose files may not grow past ``limit`` bytes; it prints the error raised, if any
    ("DataFileError cannot ...")."""
    code = (
        "import sys; from pathlib import Path; from pytest_rnncov import files\n"
        f"try:\n    files.{function}(Path(sys.argv[1]), 'x' * {size}, {what!r})\n"
        "except Exception as exc:\n    print(type(exc).__name__, exc)\n"
    )
    return subprocess.run(
        [sys.executable, "-c", code, str(path)],
        capture_output=True,
        text=True,
        preexec_fn=_limited(limit),
    )


def test_write_atomic_under_a_size_limit_keeps_the_old_baseline(tmp_path):
    path = tmp_path / "base.json"
    path.write_text('{"format": "pytest-rnncov-baseline", "old": true}')
    done = _written_under_a_size_limit("write_atomic", path, 100_000, "the baseline", 4096)
    assert "File too large" in done.stdout and "unchanged" in done.stdout, done.stderr
    assert json.loads(path.read_text()) == {"format": "pytest-rnncov-baseline", "old": True}
    assert [p.name for p in tmp_path.iterdir()] == ["base.json"]


def _write_later(path: str, barrier, results) -> None:
    output = Output(Path(path), "pytest-rnncov-data", "--rnn-data")
    barrier.wait()  # both sessions started before either writes
    try:
        output.write(CoverageData(runs=[f"run-{os.getpid()}"]).dumps())
        results.put("written")
    except OutputConflict as exc:
        results.put(f"conflict: {exc}")


def test_two_concurrent_writers_never_lose_one(tmp_path):
    context = multiprocessing.get_context("spawn")
    barrier, results = context.Barrier(2), context.Queue()
    path = tmp_path / "d.json"
    workers = [
        context.Process(target=_write_later, args=(str(path), barrier, results)) for _ in range(2)
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    outcomes = sorted(results.get(timeout=5) for _ in workers)
    assert outcomes[1] == "written" and outcomes[0].startswith("conflict: --rnn-data not written")
    kept = list(tmp_path.glob("d.conflict-*.json"))
    assert len(kept) == 1
    runs = {tuple(CoverageData.load(p).runs) for p in (path, kept[0])}
    assert len(runs) == 2  # both sessions' data exist, whole


SLEEPY = """
import subprocess, sys
from conftest import inputs


def test_while_another_session_writes(tiny):
    tiny.predict(inputs(1))
    other = subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
                            "test_other.py", "--rnn-data=shared.json"], capture_output=True,
                           text=True)
    assert other.returncode == 0, other.stdout
"""


def test_two_sessions_writing_one_data_file_both_survive(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_main=SLEEPY, test_other=FEW)
    result = pytester.runpytest_subprocess("test_main.py", "--rnn-data=shared.json")
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "ERROR pytest-rnncov: --rnn-data not written to "
            "'shared.json': another process wrote that file while this run "
            "went on; this run's --rnn-data is in 'shared.conflict-*.json'"
        ]
    )
    shared = CoverageData.load(pytester.path / "shared.json")
    kept = CoverageData.load(next(pytester.path.glob("shared.conflict-*.json")))
    assert shared.models["tiny"].n_inputs == 2 and kept.models["tiny"].n_inputs == 16
    assert combine([shared, kept]).models["tiny"].n_inputs == 18


# -- interrupted campaigns keep what they found ----------------------------------------------
@pytest.fixture(scope="module")
def flipping(stacked_model, seq_inputs):
    rnn = RNNModel(stacked_model, "lstm_b")
    seeds = ((seq_inputs[:6] - seq_inputs.min()) / np.ptp(seq_inputs)).astype("float32")
    return rnn, Profile().fit(rnn, seq_inputs), seeds


def _campaign(flipping, folder, before=()):
    """A small campaign on the stacked model that finds failures; ``before`` are listeners
    called ahead of its SampleWriter."""
    rnn, profile, seeds = flipping
    return Campaign(
        rnn,
        seeds,
        GaussianMutator(variance=(0.05, 0.1)),
        Oracle(),
        profile=profile,
        budget=40,
        batch_size=20,
        seed=3,
        listeners=[*before, SampleWriter(folder)],
    )


def _whole_files(folder: Path) -> int:
    """Every file in ``folder`` is complete; returns the number of PNGs."""
    names = [p.name for p in folder.iterdir()]
    assert not [n for n in names if n.endswith(".tmp")], names
    pngs = list(folder.glob("adv_*.png"))
    for png in pngs:
        data = png.read_bytes()
        assert data.startswith(b"\x89PNG") and data.endswith(b"IEND\xaeB`\x82")
    if (folder / "adversarial.npz").exists():
        with np.load(folder / "adversarial.npz") as saved:
            assert len(saved["cases"]) == len(pngs)
    if (folder / "summary.json").exists():
        json.loads((folder / "summary.json").read_text())
    return len(pngs)


def test_an_interrupt_while_shrinking_keeps_the_samples_unshrunk(flipping, tmp_path, monkeypatch):
    import pytest_rnncov.generation.campaign as module

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt  # the second Ctrl-C, during shrinking

    monkeypatch.setattr(module, "shrink", interrupted)  # strings
    from pytest_rnncov.generation.shrinking import ArrayShrinking

    monkeypatch.setattr(ArrayShrinking, "run", interrupted)  # arrays, by parts
    campaign = _campaign(flipping, tmp_path / "out")
    with pytest.raises(KeyboardInterrupt):
        campaign.run()
    result = campaign.result
    assert result is not None and result.adversarial > 0 and result.shrunk is False
    assert _whole_files(tmp_path / "out") == result.adversarial
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["shrunk"] is False and summary["adversarial"] == result.adversarial


def test_a_listener_error_does_not_cost_the_others(flipping, tmp_path):
    class Broken:
        def on_finish(self, campaign, result):
            raise RuntimeError("upload failed")

    campaign = _campaign(flipping, tmp_path / "out", before=[Broken()])
    with pytest.raises(RuntimeError, match="upload failed"):
        campaign.run()
    assert campaign.result is not None and campaign.result.shrunk is True
    assert _whole_files(tmp_path / "out") == campaign.result.adversarial
    assert (tmp_path / "out" / "summary.json").exists()


def test_an_interrupt_at_every_write_keeps_whole_files(flipping, tmp_path, monkeypatch):
    import pytest_rnncov.reporting.samples as samples

    clean = _campaign(flipping, tmp_path / "clean")
    calls = {"n": 0}
    real = samples.write_atomic

    def counting(*args, **kwargs):
        calls["n"] += 1
        return real(*args, **kwargs)

    monkeypatch.setattr(samples, "write_atomic", counting)
    expected = clean.run().adversarial
    total = calls["n"]
    assert expected > 0 and total >= 2 * expected + 2  # found, shrunk, npz, summary
    for point in range(1, total + 1):
        calls["n"] = 0

        def interrupt_at(*args, point=point, **kwargs):
            calls["n"] += 1
            if calls["n"] == point:
                raise KeyboardInterrupt
            return real(*args, **kwargs)

        monkeypatch.setattr(samples, "write_atomic", interrupt_at)
        folder = tmp_path / f"at-{point}"
        campaign = _campaign(flipping, folder)
        with pytest.raises(KeyboardInterrupt):
            campaign.run()
        assert campaign.result is not None, point
        found = _whole_files(folder)
        assert found >= min(point - 1, campaign.result.adversarial) - 1, point


# -- sizes and arithmetic ----------------------------------------------------------------------
def test_a_file_claiming_huge_configurations_is_refused_before_allocating(tmp_path):
    tc = _state("TC", 243, covered=[1]).to_json()
    tc.update(total=2**20, describe="TC(h/net, w=10, a=4)")
    models = {
        f"m{i}": {
            **ModelState(f"m{i}", "lstm", "lstm", (1, 5), "f", 1, {}, "p").to_json(),
            "metrics": {"TC": tc},
        }
        for i in range(200)
    }
    content = CoverageData(runs=["x"]).to_json() | {"models": models}
    (tmp_path / "big.json").write_text(json.dumps(content))
    with pytest.raises(DataFileError, match=r"declares 209,715,200 conditions in all, more than"):
        CoverageData.load(tmp_path / "big.json")


def test_combined_times_saturate_instead_of_wrapping(measured, tmp_path):
    state = measured.copy()
    tc = state.metrics["TC"]
    covered = tc.covered_ids()
    tc.times[covered] = MAX_COUNT - 1
    state.n_inputs = MAX_COUNT
    for name in ("a", "b"):
        CoverageData(models={"m": state}, runs=[name]).save(tmp_path / f"{name}.json")
    done = cli("combine", "a.json", "b.json", "--out", "ab.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    combined = CoverageData.load(tmp_path / "ab.json").models["m"]  # readable again
    assert combined.metrics["TC"].n_covered == len(covered) > 0
    assert set(combined.metrics["TC"].times[covered]) == {MAX_COUNT}
    assert combined.n_inputs == MAX_COUNT


def test_a_copy_of_a_data_file_is_not_combined_twice(shard, tmp_path):
    for name in ("a.json", "copy.json"):
        (tmp_path / name).write_bytes((shard / "a.json").read_bytes())
    done = cli("combine", "a.json", "copy.json", cwd=tmp_path)
    assert done.returncode == 4
    assert "'copy.json' holds run run-a again, which 'a.json' holds already" in done.stderr
    # a combined file and one of its parts overlap too: each is named as given (the
    # combined file's own sources, a.json among them, are not what the user passed)
    assert cli("combine", "a.json", "--out", "all.json", cwd=tmp_path).returncode == 0
    again = cli("combine", "all.json", "a.json", cwd=tmp_path)
    assert again.returncode == 4
    assert "'a.json' holds run run-a again, which 'all.json' holds already" in again.stderr


def test_data_saved_without_run_ids_is_named_by_its_content(shard, tmp_path, measured):
    """Data made in code has no run id: it is written with one derived from its content
    (so a copy of its file is caught by combine), and a file of the release before, which
    wrote "runs": [], is still read, named by its content."""
    made = CoverageData(models={"m": measured})
    (tmp_path / "made.json").write_text(made.dumps())
    (tmp_path / "copy.json").write_text(made.dumps())
    assert json.loads(made.dumps())["runs"][0].startswith("content-")
    done = cli("combine", "made.json", "copy.json", cwd=tmp_path)
    assert done.returncode == 4 and "made.json' holds already" in done.stderr
    older = json.loads(made.dumps()) | {"runs": []}
    (tmp_path / "older.json").write_text(json.dumps(older))
    assert CoverageData.load(tmp_path / "older.json").runs[0].startswith("file-")
    # laid out again, it is the same run: its id came from the bytes, so it counted twice
    (tmp_path / "older-copy.json").write_text(json.dumps(older, indent=2).replace("\n", "\r\n"))
    copy = cli("combine", "older.json", "older-copy.json", cwd=tmp_path)
    assert copy.returncode == 4 and "older.json' holds already" in copy.stderr
    # a file combined before ids came from the parsed content holds the id of the bytes
    before = json.loads(made.dumps()) | {
        "runs": [f"file-{hashlib.sha256((tmp_path / 'older.json').read_bytes()).hexdigest()[:16]}"]
    }
    (tmp_path / "combined-before.json").write_text(json.dumps(before))
    again = cli("combine", "combined-before.json", "older.json", cwd=tmp_path)
    assert again.returncode == 4 and "combined-before.json' holds already" in again.stderr
    both = cli("combine", "older.json", "made.json", "--out", "both.json", cwd=tmp_path)
    assert both.returncode == 0, both.stderr


def test_a_worker_that_cannot_send_its_data_sends_its_own_run_id(measured):
    """Its fallback data (naming it as missing) once had no run id, so written with one
    derived from its content it was the same in every session where that worker failed the
    same way, and combining two such shards was refused as a copy."""
    from types import SimpleNamespace

    from pytest_rnncov.plugin.roles import DistWorker

    def broken():
        raise ValueError("cannot serialise this")

    sent = []
    for run_id in ("run-1", "run-2"):
        engine = SimpleNamespace(data=broken, run_id=run_id, profiles_written=[])
        config = SimpleNamespace(workerinput={"workerid": "gw0"}, workeroutput={})
        DistWorker(None, engine).sessionfinish(config)  # type: ignore[arg-type]
        sent.append(CoverageData.loads(config.workeroutput["rnncov"]))
    assert [data.runs for data in sent] == [["run-1"], ["run-2"]]
    assert sent[0].missing_workers == ["gw0 (ValueError: cannot serialise this)"]


def test_an_integer_of_thousands_of_digits_gets_a_plain_message(shard, tmp_path):
    """Python's own message advised sys.set_int_max_str_digits(), no fix for a user."""
    text = (shard / "a.json").read_text()
    inputs = json.loads(text)["models"]["m"]["inputs"]
    huge = re.sub(rf'"inputs": ?{inputs}\b', '"inputs": ' + "9" * 5000, text, count=1)
    assert huge != text
    (tmp_path / "big.json").write_text(huge)
    done = cli("report", "big.json", cwd=tmp_path)
    assert done.returncode == 4 and "set_int_max_str_digits" not in done.stderr
    assert "holds an integer of thousands of digits, which no pytest-rnncov file" in done.stderr


def test_compare_refuses_a_data_file_named_twice(shard, tmp_path):
    (tmp_path / "d.json").write_bytes((shard / "a.json").read_bytes())
    done = cli("compare", "d.json", "d.json", "--baseline", "b.json", cwd=tmp_path)
    assert done.returncode == 4 and "is given twice" in done.stderr


def test_a_report_piped_into_head_ends_quietly(measured, tmp_path):
    models = {}
    for i in range(3000):  # more output than a pipe holds
        state = measured.copy()
        state.name = f"model{i}"
        models[state.name] = state
    CoverageData(models=models, runs=["r"]).save(tmp_path / "many.json")
    done = subprocess.run(
        f"{sys.executable} -m pytest_rnncov report many.json | head -1",
        shell=True,
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.stdout.startswith("-") and done.stdout.count("\n") == 1, done.stderr
    assert "Traceback" not in done.stderr and "BrokenPipe" not in done.stderr


# -- still raw or silent -------------------------------------------------------------------------
def test_raw_calls_of_the_session_are_named(stacked_model, seq_inputs, tmp_path):
    from pytest_rnncov.core.metrics import BC
    from pytest_rnncov.plugin.session import RNNCovSession

    session = RNNCovSession(seed=3)
    tracked = session.track(
        stacked_model,
        layer="lstm_b",
        x_train=seq_inputs,
        name="s",
        profile=tmp_path / "missing" / "deeper" / "p.json",
    )
    assert (tmp_path / "missing" / "deeper" / "p.json").is_file()  # folders made
    with pytest.raises(InvalidArgument, match=r"unknown option 'budgett'; did you mean 'budget'"):
        tracked.campaign(seq_inputs[:2], GaussianMutator(variance=0.01), Oracle(), budgett=5)
    with pytest.raises(InvalidArgument, match=r"preset='nope'; use one of"):
        session.track(
            stacked_model,
            layer="lstm_b",
            x_train=seq_inputs,
            name="t",
            metrics=[BC()],
            preset="nope",
        )
    (tmp_path / "file").write_text("x")
    with pytest.raises(Exception) as raised:
        session.track(
            stacked_model,
            layer="lstm_b",
            x_train=seq_inputs,
            name="u",
            profile=tmp_path / "file" / "p.json",
        )
    assert type(raised.value).__name__ == "ProfileError" and "file" in str(raised.value)
    a, b = session.rng("test_accuracy"), session.rng("test_accuracy")
    assert a.random() == b.random() != session.rng("other").random()
    with pytest.raises(InvalidArgument, match=r"salt=1.5 \(float\); pass an integer >= 0 or a"):
        session.rng(1.5)


def test_another_models_profile_is_not_to_be_deleted(stacked_model, seq_inputs, tmp_path):
    from pytest_rnncov import StaleProfile

    path = tmp_path / "p.json"
    Profile(window=(-3, -1)).fit(RNNModel(stacked_model, "lstm_a"), seq_inputs).save(path)
    with pytest.raises(StaleProfile) as raised:
        Profile.load(path).check(RNNModel(stacked_model, "lstm_b"))
    message = str(raised.value)
    # not "the model changed", and a command for the layer tracked, into a new file
    assert "layer 'lstm_a' != 'lstm_b'; units 6 != 5; weights fingerprint" in message
    assert "(another layer's)); it is the profile of another layer or model, so keep it" in (
        message
    )
    assert (
        "or run: python -m pytest_rnncov profile fit MODEL --x-train X_TRAIN.npy --layer "
        "lstm_b --window=-3,-1 --out OTHER.json (MODEL:"
    ) in message
    assert "the model changed where" not in message


def test_a_bar_naming_an_untracked_model_lists_the_tracked_ones(project):
    result = project.runpytest("--rnn-coverage=mnist:TC:0.1")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*model 'mnist' is not tracked (bars TC 10%; tracked: tiny)*"])
    # with a bar for every model too: the untracked one is named once, with its bars
    result = project.runpytest("--rnn-coverage=0.01", "--rnn-coverage=mnist:TC:0.1")
    assert result.ret == 1
    line = next(x for x in result.stdout.lines if x.startswith("FAIL Required"))
    assert line.endswith(
        "not reached: model 'mnist' is not tracked (bars BC 1%, SC 1%, TC 10%; tracked: tiny)"
    )


INTERRUPTING = """
import os
import pytest_rnncov.files as files

_real, _calls = files.write_atomic, [0]


def _interrupting(*args, **kwargs):
    _calls[0] += 1
    if _calls[0] == int(os.environ["RNNCOV_INTERRUPT_AT"]):
        raise KeyboardInterrupt
    return _real(*args, **kwargs)


files.write_atomic = _interrupting
"""


def test_an_interrupt_at_every_session_write_keeps_whole_files(pytester, monkeypatch):
    pytester.makeconftest(CONFTEST + INTERRUPTING)
    pytester.makepyfile(test_feed=TESTS)
    outputs = [
        "--rnn-data=d.json",
        "--rnn-save=b.json",
        "--rnn-report=json:r.json",
        "--rnn-report=html:h",
    ]
    names = {
        "d.json": "pytest-rnncov-data",
        "b.json": "pytest-rnncov-baseline",
        "r.json": "pytest-rnncov-report",
    }
    monkeypatch.setenv("RNNCOV_INTERRUPT_AT", "0")
    assert pytester.runpytest_subprocess(*outputs).ret == 0
    before = {name: (pytester.path / name).read_bytes() for name in names}
    for point in range(1, 5):  # the data file, the baseline, the JSON, the HTML
        monkeypatch.setenv("RNNCOV_INTERRUPT_AT", str(point))
        pytester.runpytest_subprocess(*outputs)
        for name, kind in names.items():  # the old file or a whole new one
            content = (pytester.path / name).read_bytes()
            assert content == before[name] or json.loads(content)["format"] == kind
        assert (pytester.path / "h" / "index.html").read_text().rstrip().endswith("</html>")
        left = [p.name for p in pytester.path.rglob("*.tmp")]
        assert not left, (point, left)


def test_outputs_are_written_where_folders_cannot_be_locked(tmp_path, monkeypatch):
    import fcntl

    def refuse(*args):
        raise OSError(37, "No locks available")

    monkeypatch.setattr(fcntl, "flock", refuse)
    output = Output(tmp_path / "d.json", "pytest-rnncov-data", "--rnn-data")
    output.write(CoverageData(runs=["r"]).dumps())
    assert CoverageData.load(tmp_path / "d.json").runs == ["r"]


def test_outputs_follow_a_symbolic_link_and_refuse_a_hard_link(tmp_path):
    (tmp_path / "kept").mkdir()
    real = tmp_path / "kept" / "main.json"
    real.write_text(CoverageData(runs=["old"]).dumps())
    link = tmp_path / "main.json"
    link.symlink_to(real)
    Output(link, "pytest-rnncov-data", "--rnn-data").write(CoverageData(runs=["new"]).dumps())
    assert link.is_symlink() and CoverageData.load(real).runs == ["new"]  # the link stays
    other = tmp_path / "other.json"
    os.link(real, other)
    with pytest.raises(DataFileError, match=r"is hard-linked \(2 names\)"):
        Output(other, "pytest-rnncov-data", "--rnn-data")
    dangling = tmp_path / "dangling.md"  # would create its target, wherever it points
    dangling.symlink_to(tmp_path / "elsewhere" / "new.md")
    with pytest.raises(DataFileError, match="is a symbolic link to a missing file"):
        Output(dangling, "markdown", "--rnn-report=markdown:")
    assert not (tmp_path / "elsewhere").exists()


def test_a_huge_claimed_window_draws_a_bounded_times_figure(measured):
    import time

    from pytest_rnncov.reporting.html import times_figure

    bc = measured.metrics["BC"].copy()
    total = 2**20
    bc.config["window"], bc.total = [1, total], total
    bc.times = np.zeros(total, np.int64)
    bc.times[[0, 5, total - 1]] = 3
    start = time.perf_counter()
    uri = times_figure("BC", bc)
    assert time.perf_counter() - start < 20 and len(uri) < 400_000


def test_a_failed_bar_is_shown_as_written():
    state = _state("TC", 243, covered=range(13))  # 5.3498%
    data = CoverageData(models={"m": _model(TC=state)})
    line = evaluate(data, Bars.parse("TC:0.0535")).gate_line()
    assert line.endswith("TC 5% (13/243) < 5.35%"), line


def test_a_ctrl_c_while_files_are_written_is_raised_after_the_last():
    before = signal.getsignal(signal.SIGINT)
    done = []
    with pytest.raises(KeyboardInterrupt):
        with interrupt_after():
            os.kill(os.getpid(), signal.SIGINT)
            done.append("first file")  # still runs: the interrupt is held
            done.append("last file")
    assert done == ["first file", "last file"]
    assert signal.getsignal(signal.SIGINT) is before
    with interrupt_after():  # no Ctrl-C: nothing is raised
        done.append("again")


@pytest.fixture
def default_sigterm():
    """SIGTERM at its default action during the test, and as it was afterwards: the
    session running these tests turns it into an interrupt once a test of this process
    used the plugin (as a user's session does), so the order of tests decided before."""
    outer = signal.signal(signal.SIGTERM, signal.SIG_DFL)
    yield
    signal.signal(signal.SIGTERM, outer)


def test_sigterm_is_an_interrupt_where_it_would_end_the_process_unwritten(default_sigterm):
    from pytest_rnncov.files import Terminated, terminate_as_interrupt

    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    restore = terminate_as_interrupt()
    assert restore is not None
    try:
        done = []
        with pytest.raises(Terminated, match="SIGTERM"):
            with interrupt_after():  # held while files are written, as a Ctrl-C is
                os.kill(os.getpid(), signal.SIGTERM)
                done.append("last file")
        assert done == ["last file"]
        assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL  # a second one: at once
        restore = terminate_as_interrupt()
        assert restore is not None
        import multiprocessing
        import time

        # a forked child inherits the handler: Process.terminate() still ends it at once
        child = multiprocessing.get_context("fork").Process(target=time.sleep, args=(30,))
        child.start()
        time.sleep(0.5)
        child.terminate()
        child.join(10)
        assert child.exitcode == -signal.SIGTERM
    finally:
        restore()
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL

    def own(signum, frame):
        pass

    signal.signal(signal.SIGTERM, own)  # the process's own handler is left to it
    try:
        assert terminate_as_interrupt() is None
        assert signal.getsignal(signal.SIGTERM) is own
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_DFL)


def test_a_sigterm_while_files_are_written_is_named_as_such(tmp_path, monkeypatch, default_sigterm):
    from pytest_rnncov.files import Terminated, terminate_as_interrupt
    from pytest_rnncov.reporting.outputs import write_all

    write, sent = Output.write, []

    def terminated_in_write(self, content):
        if not sent:  # one SIGTERM, in the first write
            sent.append(os.kill(os.getpid(), signal.SIGTERM))
        return write(self, content)

    monkeypatch.setattr(Output, "write", terminated_in_write)
    outputs = [Output(tmp_path / f"{name}.md", "markdown", "--rnn-report") for name in "ab"]
    restore = terminate_as_interrupt()
    try:
        written, problems, interrupted = write_all([(o, "# x\n", "written to") for o in outputs])
    finally:
        if restore is not None:
            restore()
    assert interrupted and not problems
    assert written[-1] == "RNN coverage files: SIGTERM held until each was written whole"
    assert all((tmp_path / f"{name}.md").read_text() == "# x\n" for name in "ab")
    assert issubclass(Terminated, KeyboardInterrupt)


TERMINATED = """
import os
import signal

from conftest import inputs


def test_one(tiny):
    tiny.predict(inputs(1))


def test_two(tiny):
    tiny.predict(inputs(2))
    os.kill(os.getpid(), signal.SIGTERM)  # a CI job's timeout


def test_three(tiny):
    tiny.predict(inputs(3))
"""


def test_a_sigterm_keeps_what_the_session_measured_and_says_it_stopped(pytester):
    """SIGTERM ended the process at once: no data file, no report, and an earlier run's
    complete files left in place as if they were this run's."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_feed=TERMINATED.replace("os.kill", "pass  #"))
    outputs = ("--rnn-coverage=0.01", "--rnn-data=d.json", "--rnn-report=json:r.json")
    assert pytester.runpytest_subprocess(*outputs).ret == pytest.ExitCode.OK
    pytester.makepyfile(test_feed=TERMINATED)
    result = pytester.runpytest_subprocess(*outputs)
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [
            "RNN coverage data (partial: marked so) written to d.json",
            "FAIL RNN coverage gate not applied: the session stopped after 1 of 3 tests (SIGTERM)*",
        ]
    )
    data = json.loads((pytester.path / "d.json").read_text())
    assert data["stopped"] == ["the session stopped after 1 of 3 tests (SIGTERM)"]
    assert data["models"]["tiny"]["inputs"] == 32  # test_one's and test_two's
    assert json.loads((pytester.path / "r.json").read_text())["verdict"]["passed"] is False


SIGNALLING = """
import os
import signal
import pytest_rnncov.files as files
import pytest_rnncov.reporting.markdown_report as markdown_report

_write, _render = files.write_atomic, markdown_report.MarkdownReport.render
WHERE = os.environ.get("RNNCOV_SIGINT_IN", "")
_calls = []


def _ctrl_c_in_write(*args, **kwargs):
    if "did not finish" in str(args[1]):  # the mark written as the tests begin: not these
        return _write(*args, **kwargs)
    if WHERE.startswith("write"):  # "write": one Ctrl-C in the first write; "write2": two
        _calls.append(1)
        if len(_calls) == 1 or (WHERE == "write2" and len(_calls) == 2):
            os.kill(os.getpid(), signal.SIGINT)
    return _write(*args, **kwargs)


def _ctrl_c_in_render(self, *args, **kwargs):
    if WHERE == "render":
        os.kill(os.getpid(), signal.SIGINT)
    return _render(self, *args, **kwargs)


files.write_atomic = _ctrl_c_in_write
markdown_report.MarkdownReport.render = _ctrl_c_in_render
"""


def test_a_ctrl_c_after_the_tests_never_mixes_two_runs_reports(pytester, monkeypatch):
    """A Ctrl-C while the files are written lets every file finish; one while the reports
    render keeps the data file (what was measured) and leaves every report as the earlier
    run wrote it, saying so. Either way the verdict is printed and pytest exits 2 (it once
    left this run's JSON beside the last run's HTML, with a traceback and no verdict)."""
    pytester.makeconftest(CONFTEST + SIGNALLING)
    pytester.makepyfile(test_feed=TESTS)
    outputs = ["--rnn-coverage=0.01", "--rnn-data=d.json", "--rnn-report=json:r.json"]
    outputs += ["--rnn-report=markdown:r.md", "--rnn-report=term"]
    monkeypatch.setenv("RNNCOV_SIGINT_IN", "")
    assert pytester.runpytest_subprocess(*outputs).ret == 0
    files = ("d.json", "r.json", "r.md")

    def interrupted(where: str, feed: str, lines: list[str]) -> tuple[dict, dict]:
        """The files before and after a run fed ``feed`` with Ctrl-C in ``where`` (write:
        once; write2: twice; render), which exits 2 printing ``lines`` and leaves no
        temporary file."""
        before = {name: (pytester.path / name).read_bytes() for name in files}
        pytester.makepyfile(test_feed=feed)  # other inputs than the run before: other files
        monkeypatch.setenv("RNNCOV_SIGINT_IN", where)
        result = pytester.runpytest_subprocess(*outputs)
        assert result.ret == pytest.ExitCode.INTERRUPTED
        result.stdout.fnmatch_lines(lines)
        assert not list(pytester.path.rglob("*.tmp"))
        return before, {name: (pytester.path / name).read_bytes() for name in files}

    before, after = interrupted(
        "write",
        FEW,
        [
            "RNN coverage data written to *d.json",
            "RNN coverage JSON written to *r.json",
            "RNN coverage Markdown written to *r.md",
            "RNN coverage files: Ctrl-C held until each was written whole",
            "FAIL Required RNN coverage of 1% not reached: BC 0% (0/5)*",
        ],
    )
    assert all(after[name] != before[name] for name in files)
    before, after = interrupted(
        "render",
        TESTS,
        [
            "RNN coverage report not written to *r.json: interrupted while the reports rendered",
            "RNN coverage report not written to *r.md: interrupted while the reports rendered",
            "RNN coverage data written to *d.json",
            "Required RNN coverage of 1% reached.",
        ],
    )
    assert after["d.json"] != before["d.json"]
    assert all(after[name] == before[name] for name in files[1:])
    before, after = interrupted(  # a second Ctrl-C stops at once
        "write2",
        FEW,
        [
            "RNN coverage data written to *d.json",
            "RNN coverage file not written to *r.json: interrupted (a second Ctrl-C)",
            "RNN coverage file not written to *r.md: interrupted (a second Ctrl-C)",
        ],
    )
    assert after["d.json"] != before["d.json"]
    assert all(after[name] == before[name] for name in files[1:])


def test_control_characters_read_from_a_file_never_reach_the_terminal(measured, tmp_path):
    """A model name or a message in a data file holding terminal escapes (clear screen,
    colours, a bidirectional override) is printed escaped, as Python writes it."""
    state = measured.copy()
    state.name = "m\x1b[2J\u202eevil\nRequired RNN coverage of 99% reached."
    CoverageData(
        models={state.name: state},
        track_errors=["test_x: \x1b[31mModelError\x07"],
        runs=["run-c"],
    ).save(tmp_path / "a.json")
    for command in (("report", "a.json", "--rnn-coverage=0.99"), ("show", "a.json")):
        done = cli(*command, cwd=tmp_path)
        out = done.stdout + done.stderr
        assert not any(c in out for c in "\x1b\x07\u202e"), (command, out)
        assert "m\\x1b[2J\\u202eevil\\x0aRequired" in out, (command, out)
        assert not any(line.startswith("Required") for line in out.splitlines()), out
    assert "\\x1b[31mModelError\\x07" in cli("report", "a.json", cwd=tmp_path).stdout


FED = """
import pathlib

from conftest import inputs


def test_one(tiny):
    tiny.predict(inputs(1))


def test_two(tiny):
    tiny.predict(inputs(2))
    pathlib.Path("fed.flag").touch()
"""

FLAKY = """
import pathlib

from conftest import inputs


def test_big(tiny):
    tiny.predict(inputs(1, n=40))
    assert not pathlib.Path("FLAKE").exists()


def test_other(tiny):
    tiny.predict(inputs(2, n=10))
"""


SECOND_MODEL = """


@pytest.fixture(scope="session")
def small(rnncov):
    import keras

    keras.utils.set_random_seed(1)
    model = keras.Sequential(
        [keras.Input((6, 2)), keras.layers.GRU(3, name="gru"), keras.layers.Dense(2)],
        name="small",
    )
    x_train = np.random.default_rng(1).normal(size=(64, 6, 2)).astype("float32")
    return rnncov.track(model, x_train=x_train, window=(1, 5), name="small")
"""

ONE_TEST_PER_MODEL = """
import pathlib

from conftest import inputs


def test_small(small):
    small.predict(inputs(2, n=2))


def test_big(tiny):  # last: --sw, stopping at its failure, leaves no test unrun
    tiny.predict(inputs(1, n=500))
    assert not pathlib.Path("FLAKE").exists()
"""


@pytest.mark.parametrize("retry", ["--lf", "--sw"])
def test_a_retry_that_feeds_only_some_models_does_not_pass_the_gate(pytester, retry):
    """The whole run fails the gate on `small`, which only a passing test feeds; the retry
    runs the failed test, which feeds `tiny` alone. It passed the gate (exit 0), in the
    session and in `report` on its data file: a gate passed on the models a part fed said
    nothing of the model it left out. Never decided now, and a gate never decided fails."""
    pytester.makeconftest(CONFTEST + SECOND_MODEL)
    pytester.makepyfile(test_models=ONE_TEST_PER_MODEL)
    options = (retry, "--rnn-coverage=BC:0.5,SC:0.5", "--rnn-data=d.json", "-W", "ignore")
    (pytester.path / "FLAKE").touch()
    whole = pytester.runpytest_subprocess(*options)  # --sw stops at the failure: exit 2
    assert whole.ret in (pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.INTERRUPTED)
    whole.stdout.fnmatch_lines(["FAIL Required RNN coverage * not reached: *small*"])
    (pytester.path / "FLAKE").unlink()
    part = pytester.runpytest_subprocess(*options)
    assert part.ret == pytest.ExitCode.TESTS_FAILED, part.stdout.str()[-3000:]
    part.assert_outcomes(passed=1)
    part.stdout.fnmatch_lines([f"FAIL RNN coverage gate not applied: {retry} *"])
    part.stdout.no_fnmatch_line("*Required RNN coverage*reached*")
    data = json.loads((pytester.path / "d.json").read_text())
    assert list(data["models"]) == ["tiny"] and data["retries"] == data["stopped"]
    assert json.loads((pytester.path / "d.json").read_text())["models"]["tiny"]["inputs"] == 500
    done = cli("report", "d.json", "--rnn-coverage=BC:0.5,SC:0.5", cwd=pytester.path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert f"FAIL RNN coverage gate not applied: {retry} " in done.stdout


CRASH_THEN_MORE = (
    CRASH
    + """

def test_never_runs(small):  # the crash ends the session before it
    small.predict(inputs(4, n=2))
"""
)


def test_tests_xdist_never_ran_stop_the_session(pytester):
    """With --max-worker-restart=0 a crash ends the session: xdist runs no more tests and
    returns normally. The session was decided as whole (the gate applied, "stopped"
    empty), so `report` on its data file passed, where a test that feeds a model never
    ran."""
    pytester.makeconftest(CONFTEST + SECOND_MODEL)
    pytester.makepyfile(test_a_crash=CRASH_THEN_MORE, test_b_feed=FEW)
    result = pytester.runpytest_subprocess(
        "-n", "2", "--dist", "loadfile", "--max-worker-restart=0", "--rnn-coverage=0.01",
        "--rnn-data=d.json", "-W", "ignore",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    (stopped,) = json.loads((pytester.path / "d.json").read_text())["stopped"]
    assert re.fullmatch(
        r"the session stopped after [12] of 3 tests \(worker gw\d crashed and worker "
        r"restarting disabled\)",
        stopped,
    ), stopped
    result.stdout.fnmatch_lines([f"FAIL RNN coverage gate not applied: {stopped}; *"])
    done = cli("report", "d.json", "--rnn-coverage=0.01", cwd=pytester.path)
    assert done.returncode == 1, done.stdout + done.stderr


def test_items_run_twice_under_one_id_are_a_whole_session(pytester):
    """--keep-duplicates runs a file named twice: 4 items under 2 ids. The tests that ran
    were counted by id and the items by number, so the session read as stopped after 2 of
    4 tests and failed its gate."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_feed=TESTS)
    result = pytester.runpytest(
        "--keep-duplicates", "test_feed.py", "test_feed.py", "--rnn-coverage=0.01",
        "--rnn-data=d.json",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()[-3000:]
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["Required RNN coverage of 1% reached."])
    assert json.loads((pytester.path / "d.json").read_text())["stopped"] == []


COLLIDING_IDS = """
import pytest
from conftest import inputs


def test_a(tiny):
    tiny.predict(inputs(0, n=2))


@pytest.mark.parametrize("b", [1, 2], ids=["y-z", "z"])
@pytest.mark.parametrize("a", [1, 2], ids=["x", "x-y"])
def test_d(a, b, tiny):  # (1, 1) and (2, 2) are both test_d[x-y-z]
    tiny.predict(inputs(10 * a + b, n=2))
    assert (a, b) != (2, 1)
"""


def test_an_early_stop_between_two_tests_of_one_id_is_a_stop(pytester):
    """Stacked parametrize ids collide: two of the five tests are test_d[x-y-z]. -x stops
    after the fourth, before the second of them: counted by id every test had run, so the
    session was decided as whole and its data file passed `report`."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_ids=COLLIDING_IDS)
    result = pytester.runpytest("-x", "--rnn-coverage=0.01", "--rnn-data=d.json")
    result.assert_outcomes(passed=3, failed=1)
    stopped = "the session stopped after 4 of 5 tests (stopping after 1 failures)"
    assert json.loads((pytester.path / "d.json").read_text())["stopped"] == [stopped]
    result.stdout.fnmatch_lines([f"FAIL RNN coverage gate not applied: {stopped}; *"])
    whole = pytester.runpytest("--rnn-coverage=0.01", "--rnn-data=d.json")  # no -x: all ran
    whole.assert_outcomes(passed=4, failed=1)
    assert json.loads((pytester.path / "d.json").read_text())["stopped"] == []


def test_a_worker_lost_after_its_tests_passed_fails_a_gate(pytester):
    """Every test passed; one worker died at its session's end, before its final
    checkpoint: its models may be missing from what arrived, so the gate is not decided
    and the run fails (it passed on the other worker's data: exit 0)."""
    pytester.makeconftest(CONFTEST + DIES_AT_THE_END)
    pytester.makepyfile(test_a=FEW, test_b=FEW.replace("test_one", "test_two"))
    result = pytester.runpytest_subprocess(
        "-n", "2", "--dist", "loadfile", "--rnn-coverage=0.01", "--rnn-data=d.json",
        "-W", "ignore",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()[-3000:]
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(
        [
            "FAIL RNN coverage gate not applied: worker gw0 (recovered through *) did not "
            "send all its coverage data; the coverage shown is from the data that arrived."
        ]
    )
    assert json.loads((pytester.path / "d.json").read_text())["stopped"] == []
    assert cli("report", "d.json", "--rnn-coverage=0.01", cwd=pytester.path).returncode == 1


def test_a_retry_whose_worker_died_after_its_tests_is_still_a_retry(pytester):
    """The --lf reason travels in a worker's data at its end: a worker that died after its
    tests left it in its checkpoint, so the run is still marked a retry, and saves no
    baseline."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_flaky=FLAKY)
    (pytester.path / "FLAKE").touch()
    options = ("-n", "1", "--rnn-save=main", "--rnn-data=d.json", "-W", "ignore")
    assert pytester.runpytest_subprocess(*options).ret == pytest.ExitCode.TESTS_FAILED
    (pytester.path / "FLAKE").unlink()
    pytester.makeconftest(CONFTEST + DIES_AT_THE_END)
    retry = pytester.runpytest_subprocess("--lf", *options)
    retry.stdout.fnmatch_lines(
        ["*not saved to *main.json: --lf ran only the 1 test that failed last time*"]
    )
    data = json.loads((pytester.path / "d.json").read_text())
    assert data["stopped"] == ["--lf ran only the 1 test that failed last time"]
    assert data["missing_workers"] == ["gw0 (recovered through test_flaky.py::test_big)"]
    assert data["models"]["tiny"]["inputs"] == 40
    assert not (pytester.path / ".rnncov" / "main.json").exists()


@pytest.mark.parametrize("workers", [(), ("-n", "2")])
def test_a_last_failed_retry_is_partial_and_keeps_the_whole_runs_baseline(pytester, workers):
    """A CI retry of the failed tests only (--lf) replaced the whole run's baseline and
    data file with its part's coverage, marked complete: the bar dropped without a word.
    The part is now marked partial everywhere and saves no baseline, and its gate is not
    decided: the tests it left out may be all that feed a model (a retry once passed the
    gate on the models its tests fed where the whole run failed on another)."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_flaky=FLAKY)
    (pytester.path / "FLAKE").touch()
    options = ("--rnn-coverage=0.05", "--rnn-save=main", "--rnn-data=d.json", "-W", "ignore")
    (pytester.path / "FLAKE").unlink()
    assert pytester.runpytest_subprocess(*workers, *options).ret == pytest.ExitCode.OK
    baseline = (pytester.path / ".rnncov" / "main.json").read_text()
    assert json.loads(baseline)["models"]["tiny"]["inputs"] == 50
    (pytester.path / "FLAKE").touch()
    first = pytester.runpytest_subprocess(*workers, *options)
    assert first.ret == pytest.ExitCode.TESTS_FAILED  # test_big failed; the gate passed
    assert (pytester.path / ".rnncov" / "main.json").read_text() == baseline
    (pytester.path / "FLAKE").unlink()
    retry = pytester.runpytest_subprocess(*workers, "--lf", *options)
    assert retry.ret == pytest.ExitCode.TESTS_FAILED, retry.stdout.str()[-3000:]
    reason = "--lf ran only the 1 test that failed last time; the coverage shown is from the "
    retry.stdout.fnmatch_lines(
        [
            f"*RNN coverage baseline * kept: {reason}tests that ran*",
            f"FAIL RNN coverage gate not applied: {reason}tests that ran.",
        ]
    )
    retry.stdout.no_fnmatch_line("*Required RNN coverage*")  # neither reached nor failed
    retry.assert_outcomes(passed=1)  # the test passed: the undecided gate fails the run
    assert (pytester.path / ".rnncov" / "main.json").read_text() == baseline
    data = json.loads((pytester.path / "d.json").read_text())
    assert data["stopped"] == ["--lf ran only the 1 test that failed last time"]
    assert data["retries"] == data["stopped"]
    assert data["models"]["tiny"]["inputs"] == 40
    whole = pytester.runpytest_subprocess(*workers, *options)  # without --lf: whole again
    assert whole.ret == pytest.ExitCode.OK
    assert json.loads((pytester.path / "d.json").read_text())["stopped"] == []


STEPWISE = """
import pathlib

from conftest import inputs


def test_other(tiny):
    tiny.predict(inputs(2, n=10))


def test_big(tiny):
    tiny.predict(inputs(1, n=40))
    assert not pathlib.Path("FLAKE").exists()
"""


def test_the_stepwise_status_is_read_as_every_pytest_writes_it():
    """pytest 7.4-8.3 keep the stepwise status as one string, 8.4 on as a list of lines: a
    loop over the string read single characters, so --sw retries went unmarked there."""
    from pytest_rnncov.plugin import _stepwise_skipped

    status = "skipping 3 already passed items (cache from 0:00:02 ago, use --sw-reset to discard)."
    assert _stepwise_skipped(status) == 3
    assert _stepwise_skipped(["previously failed test not found, not skipping.", status]) == 3
    assert _stepwise_skipped("no previously failed tests, not skipping.") == 0
    assert _stepwise_skipped(()) == 0


def test_a_stepwise_retry_is_partial_and_keeps_the_whole_runs_baseline(pytester):
    """--sw goes on from the test that failed last time, leaving out those that passed
    before it: its run is a part, as a --lf retry's is (it replaced the baseline with one
    test's coverage)."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_steps=STEPWISE)
    options = ("--rnn-coverage=0.05", "--rnn-save=main", "--rnn-data=d.json", "-W", "ignore")
    assert pytester.runpytest_subprocess("--sw", *options).ret == pytest.ExitCode.OK
    baseline = (pytester.path / ".rnncov" / "main.json").read_text()  # both tests ran
    assert json.loads(baseline)["models"]["tiny"]["inputs"] == 50
    (pytester.path / "FLAKE").touch()
    stops = pytester.runpytest_subprocess("--sw", *options)  # stops at test_big's failure
    assert stops.ret in (pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.INTERRUPTED)
    assert (pytester.path / ".rnncov" / "main.json").read_text() == baseline  # it failed
    (pytester.path / "FLAKE").unlink()
    retry = pytester.runpytest_subprocess("--sw", *options)  # test_big alone
    assert retry.ret == pytest.ExitCode.TESTS_FAILED, retry.stdout.str()[-3000:]
    reason = "--sw skipped the 1 test that passed before the one that failed last time"
    retry.stdout.fnmatch_lines([f"FAIL RNN coverage gate not applied: {reason}; *"])
    retry.assert_outcomes(passed=1)
    assert (pytester.path / ".rnncov" / "main.json").read_text() == baseline
    assert json.loads((pytester.path / "d.json").read_text())["stopped"] == [reason]


STUCK = """
import os
import pathlib
import signal
import time

from conftest import inputs


def test_feeds_first(tiny):  # finished before the interrupt: kept in the checkpoint
    tiny.predict(inputs(3, n=5))


def test_stuck():  # once the other worker is done, Ctrl-C reaches the controller only
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for _ in range(600):
        if pathlib.Path("fed.flag").exists():
            break
        time.sleep(0.1)
    time.sleep(2)
    os.kill(os.getppid(), signal.SIGINT)
    time.sleep(8)
"""


def test_an_interrupted_xdist_run_names_the_workers_still_running(pytester):
    """A worker that had not finished when Ctrl-C stopped the controller sent no data: it is
    named, and the data file (written, as a stopped session's is) holds what the other
    worker sent and the coverage of the test the stuck one finished (its checkpoint), and
    is partial twice over."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_fed=FED, test_stuck=STUCK)
    result = pytester.runpytest_subprocess(
        "-n", "2", "--dist", "loadfile", "--rnn-coverage=0.01", "--rnn-data=d.json",
        "--rnn-report=term", "-W", "ignore",
    )  # fmt: skip
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        [
            "tiny   lstm*37  *",  # test_one's, test_two's and test_feeds_first's inputs
            "RNN coverage data (partial: marked so) written to *d.json",
            "FAIL RNN coverage gate not applied: the session stopped after 3 of 4 tests "
            "(interrupted); worker gw? (still running when the session stopped; recovered "
            "through test_stuck.py::test_feeds_first) did not send all its*",
        ]
    )
    data = json.loads((pytester.path / "d.json").read_text())
    (missing,) = data["missing_workers"]
    assert missing.endswith(
        "(still running when the session stopped; recovered through "
        "test_stuck.py::test_feeds_first)"
    )
    assert len(data["stopped"]) == 1 and data["models"]["tiny"]["inputs"] == 37


def test_a_baseline_link_to_nothing_is_named_as_such(tmp_path):
    """A broken or looping link is no missing baseline: --rnn-save would not mend it."""
    loop = tmp_path / "loop.json"
    loop.symlink_to(loop)
    broken = tmp_path / "broken.json"
    broken.symlink_to(tmp_path / "gone.json")
    for link in (loop, broken):
        with pytest.raises(DataFileError, match="is a symbolic link to nothing readable") as info:
            load_baseline(link)
        assert "--rnn-save" not in str(info.value)
    with pytest.raises(DataFileError, match="create it with --rnn-save"):
        load_baseline(tmp_path / "absent.json")


def test_a_killed_writers_temporary_file_is_removed_by_the_next_write(tmp_path, monkeypatch):
    """SIGKILL mid-write leaves `.NAME.HOST-PID.XXXX.tmp`; the next write into its folder
    removes it once its writer is gone and it is older than ORPHAN_AGE. A live writer's
    file, a fresh one and another host's are left alone. The folder is listed once per
    process, however many files are written into it (a campaign's samples folder was
    listed at every sample: quadratic in the samples)."""
    from pytest_rnncov import files

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)  # fmt: skip
    dead = int(gone.stdout)
    host = files._host()
    old = files.time.time() - files.ORPHAN_AGE - 60
    live = os.getpid()
    orphans = {
        f".d.json.{host}-{dead}.a1_x9.tmp": (old, False),  # removed
        f".d.json.{host}-{dead}.a2.tmp": (None, True),  # too fresh: maybe another host's
        f".d.json.{host}-{live}.a3.tmp": (old, True),  # a live writer
        f".d.json.0badc0de-{dead}.a4.tmp": (old, True),  # another host
        f".e.json.{host}-{dead}.a5.tmp": (old, False),  # another file's: removed too
        # a live writer's file of the target 'd.json.{host}-{dead}.x' is not d.json's
        f".d.json.{host}-{dead}.x.{host}-{live}.a6.tmp": (old, True),
    }
    for name, (mtime, _) in orphans.items():
        (tmp_path / name).write_text("part")
        if mtime is not None:
            os.utime(tmp_path / name, (mtime, mtime))
    listed = []
    listdir = files.os.listdir
    monkeypatch.setattr(files.os, "listdir", lambda p: listed.append(p) or listdir(p))
    CoverageData(runs=["r"]).save(tmp_path / "d.json")
    for name, (_, kept) in orphans.items():
        assert (tmp_path / name).exists() is kept, name
    for n in range(20):
        files.write_atomic(tmp_path / f"adv_{n}.png", b"png", "an image")
    assert len(listed) == 1  # one listing for the folder
    assert CoverageData.load(tmp_path / "d.json").runs == ["r"]
    long = tmp_path / ("x" * 240 + ".json")  # temporary names stay within 255 bytes
    CoverageData(runs=["r"]).save(long)
    assert CoverageData.load(long).runs == ["r"]


def test_a_second_ctrl_c_stops_a_held_write_at_once():
    before = signal.getsignal(signal.SIGINT)
    done = []
    with pytest.raises(KeyboardInterrupt):
        with interrupt_after():
            os.kill(os.getpid(), signal.SIGINT)
            done.append("held")
            os.kill(os.getpid(), signal.SIGINT)
            done.append("never")
    assert done == ["held"] and signal.getsignal(signal.SIGINT) is before


def test_interrupt_after_outside_the_main_thread_changes_nothing():
    import threading

    before = signal.getsignal(signal.SIGINT)
    seen = []

    def write():
        with interrupt_after():
            seen.append(signal.getsignal(signal.SIGINT))

    thread = threading.Thread(target=write)
    thread.start()
    thread.join()
    assert seen == [before]


def test_a_stopped_run_says_it_is_partial_with_or_without_a_gate(measured):
    """With no gate and no baseline there is no "gate not applied" line to say why, so the
    partial warning says it (it once showed nothing outside the JSON report)."""
    stopped = "the session stopped after 1 of 3 tests (interrupted)"
    data = CoverageData(models={"m": measured}, stopped=[stopped])
    plain = evaluate(data, None)
    assert not plain.complete and plain.to_json()["stopped"] == [stopped]
    assert plain.passed is None  # nothing asked for
    assert [text for text, _ in plain.lines()] == [
        f"WARNING RNN coverage is partial: {stopped} (nothing of the tests that did not run "
        "is counted)"
    ]
    reason = f"{stopped}; the coverage shown is from the tests that ran"
    gated = evaluate(data, Bars.parse("0.1"))  # the session's, and combine/report on its file
    assert gated.lines() == [(f"FAIL RNN coverage gate not applied: {reason}.", "red")]


@pytest.mark.parametrize("bar", ["0.01", "1.0"])
@pytest.mark.parametrize(
    ("partial", "reason"),
    [
        (
            {"stopped": ["--lf ran only the 1 test that failed last time"]},
            "--lf ran only the 1 test that failed last time; the coverage shown is from the "
            "tests that ran",
        ),
        (
            {"missing_workers": ["gw1"]},
            "worker gw1 did not send all its coverage data; the coverage shown is from the "
            "data that arrived",
        ),
    ],
)
def test_a_gate_on_partial_data_is_never_decided(measured, partial, bar, reason):
    """A retry's tests, or the workers whose data arrived, may feed none of the inputs of a
    model the whole run tracks: a gate passed on their data said nothing of that model
    (a --lf retry passed where the whole run failed). Partial data is not gated, whether
    its coverage reaches the bar (0.01) or not (1.0), and a gate asked for fails."""
    data = CoverageData(models={"m": measured}, **partial)
    verdict = evaluate(data, Bars.parse(bar))
    assert verdict.passed is False and not verdict.applied and verdict.undecided
    assert verdict.gate_passed is None  # not applied: neither passed nor failed
    assert verdict.lines() == [(f"FAIL RNN coverage gate not applied: {reason}.", "red")]
    assert verdict.to_json()["passed"] is False and verdict.to_json()["skipped_reason"] == reason
    checks = verdict.to_json()["gate"]["checks"]  # a check of partial data decides nothing
    assert checks and all(c["passed"] is None for c in checks)
    plain = evaluate(data, None)  # nothing asked for: nothing fails, the warning says it
    assert plain.passed is None and plain.lines()[0][1] == "yellow"
    whole = evaluate(CoverageData(models={"m": measured}), Bars.parse("0.01"))
    assert whole.passed is True and whole.applied and not whole.undecided


XDIST_STOP = """
from conftest import inputs


def test_one(tiny):
    tiny.predict(inputs(1))


def test_two(tiny):
    assert False
"""


def test_xdist_stopping_on_a_failure_says_so(pytester):
    """xdist stops -x with its own KeyboardInterrupt subclass: its reason is kept (it read
    'interrupted'). Eight slow tests follow the failing one, so the stop leaves some unrun
    (a stop after every test ran is no stop)."""
    pytester.makeconftest(CONFTEST)
    later = "".join(
        f"\n\ndef test_later_{k}(tiny):\n    __import__('time').sleep(1)\n" for k in range(8)
    )
    pytester.makepyfile(test_stop=XDIST_STOP + later)
    result = pytester.runpytest_subprocess(
        "-n", "2", "-x", "--rnn-coverage=0.01", "--rnn-report=term", "-W", "ignore"
    )
    assert result.ret in (pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.INTERRUPTED)
    result.stdout.fnmatch_lines(
        [
            "FAIL RNN coverage gate not applied: the session stopped after * of 10 tests "
            "(stopping after*"
        ]
    )


RANDOM_DRAWS = """
from hypothesis import Phase, example, find, given, seed, settings, strategies as st
from hypothesis.stateful import RuleBasedStateMachine, rule, run_state_machine_as_test
from conftest import inputs

OWN = dict(max_examples=3, deadline=None, database=None)


@settings(derandomize=False, **OWN)
@given(st.integers(0, 1000))
def test_random(tiny, k):
    tiny.predict(inputs(k, n=2))


@settings(derandomize=True, **OWN)
@given(st.integers(0, 1000))
def test_pinned(tiny, k):
    tiny.predict(inputs(k, n=2))


@seed(5)
@settings(derandomize=False, **OWN)
@given(st.integers(0, 1000))
def test_seeded(tiny, k):
    tiny.predict(inputs(k, n=2))


@settings(derandomize=False, **OWN)
@given(st.integers(0, 1000))
def test_random_without_a_model(k):
    pass


def feed_from_an_inner_given(tiny, derandomize):
    @settings(derandomize=derandomize, **OWN)
    @given(st.integers(0, 1000))
    def inner(k):
        tiny.predict(inputs(k, n=2))

    inner()


def test_inner_random(tiny):
    feed_from_an_inner_given(tiny, derandomize=False)


def test_inner_pinned(tiny):
    feed_from_an_inner_given(tiny, derandomize=True)


def test_find(tiny):
    find(st.integers(0, 1000), lambda k: tiny.predict(inputs(k, n=2)) is not None,
         settings=settings(database=None))  # fmt: skip


def test_machine(tiny):
    class Feeding(RuleBasedStateMachine):
        @rule(k=st.integers(0, 1000))
        def feed(self, k):
            tiny.predict(inputs(k, n=2))

    run_state_machine_as_test(
        Feeding, settings=settings(stateful_step_count=2, **OWN)
    )


@settings(phases=[Phase.explicit], **OWN)
@example(5)
@given(st.integers(0, 1000))
def test_explicit_only(tiny, k):
    tiny.predict(inputs(k, n=2))
"""


def test_coverage_from_random_hypothesis_draws_is_named(pytester, monkeypatch):
    """A gate fed by examples Hypothesis draws anew on every run can pass on a retry: the
    tests that fed such inputs are named in every report (derandomize, @seed and
    --hypothesis-seed pin the draws; a random test that feeds no model is not named, nor
    one that runs only explicit examples). The draws are seen where the inputs are fed, so
    a @given function called from a plain test (as the examples' tests do), find() and a
    state machine count too: they were missed when only the test function was read."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_draws=RANDOM_DRAWS)
    options = ["--rnn-coverage=0.01", "--rnn-report=term", "--rnn-report=json:r.json"]
    result = pytester.runpytest_subprocess(*options, "--rnn-data=d.json")
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "WARNING RNN coverage counts inputs Hypothesis drew at random in 4 tests "
            "(test_draws.py::test_random, test_draws.py::test_inner_random, "
            "test_draws.py::test_find, ...): another run draws others, *--hypothesis-seed=N*",
            "Required RNN coverage of 1% reached.",
        ]
    )
    drawn = [
        f"test_draws.py::test_{name}" for name in ("random", "inner_random", "find", "machine")
    ]
    verdict = json.loads((pytester.path / "r.json").read_text())["verdict"]
    assert verdict["random_tests"] == drawn
    data = json.loads((pytester.path / "d.json").read_text())
    assert data["random_tests"] == drawn
    pinned = pytester.runpytest_subprocess(*options, "--hypothesis-seed=3")
    assert pinned.ret == 0 and "drew at random" not in pinned.stdout.str()
    assert json.loads((pytester.path / "r.json").read_text())["verdict"]["random_tests"] == []


def test_merging_long_lists_of_names_is_linear_and_keeps_order():
    """track_errors and random_tests are unions in order; a file may list many (the merge
    once scanned the whole list for each name: quadratic)."""
    first = CoverageData(
        track_errors=[f"e{i}" for i in range(50_000)],
        random_tests=[f"t{i}" for i in range(50_000)],
        runs=["a"],
    )
    second = CoverageData(
        track_errors=[f"e{i}" for i in range(25_000, 75_000)],
        random_tests=["t1", "new", "new"],
        runs=["b"],
    )
    first.merge(second)
    assert first.track_errors == [f"e{i}" for i in range(75_000)]
    assert first.random_tests == [f"t{i}" for i in range(50_000)] + ["new"]


def test_a_target_is_tidied_once_per_process(tmp_path, monkeypatch):
    """The folder is listed for orphans at the first write of a target, not at every write
    (a campaign rewrites its text file at every sample found)."""
    from pytest_rnncov import files

    listed = []
    real = files.os.listdir
    monkeypatch.setattr(files.os, "listdir", lambda folder: listed.append(folder) or real(folder))
    for _ in range(3):
        files.write_atomic(tmp_path / "adversarial.txt", "case\n", "the cases")
    assert len(listed) == 1


def test_a_run_stopped_before_tracking_replaces_the_earlier_data_file(pytester):
    """A retried job in a kept workspace: the first run wrote a complete data file; the
    retry stops (a collection error) before any test tracks a model. The earlier file
    stayed, and combine/report passed on it."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_one=FEW)
    first = pytester.runpytest("--rnn-data=d.json", "-p", "no:cacheprovider")
    assert first.ret == 0 and CoverageData.load(pytester.path / "d.json").complete
    pytester.makepyfile(test_broken="def test_x(:\n    pass\n")
    retry = pytester.runpytest("--rnn-data=d.json", "--rnn-coverage=0.01", "-k", "nothing")
    assert retry.ret != 0
    retry.stdout.fnmatch_lines(["RNN coverage data (partial: marked so) written to d.json"])
    data = CoverageData.load(pytester.path / "d.json")
    assert not data.models and not data.complete
    assert data.stopped == [  # it said "after 0 of 0 tests"
        "the session stopped before any test was collected (1 error during collection)"
    ]
    bars = Bars.parse("0.01")
    verdict = evaluate(data, bars)  # what report/combine decide on the file
    assert verdict.passed is False
    assert verdict.lines() == [  # nothing is shown: no "coverage shown is from" tail
        (f"FAIL RNN coverage gate not applied: {data.stopped[0]}.", "red")
    ]
    # stopped while collecting, before the test loop began (Ctrl-C in a slow import)
    (pytester.path / "test_broken.py").unlink()
    assert pytester.runpytest("--rnn-data=d.json", "-p", "no:cacheprovider").ret == 0
    pytester.makepyfile(test_slow_import="raise KeyboardInterrupt\n")
    stopped = pytester.runpytest_subprocess("--rnn-data=d.json", "-p", "no:cacheprovider")
    assert stopped.ret == pytest.ExitCode.INTERRUPTED
    data = CoverageData.load(pytester.path / "d.json")
    assert not data.models and data.stopped == ["the session stopped before the tests ran"]


def test_cache_show_keeps_the_data_file(pytester):
    """--cache-show runs no test loop: it was taken for a session stopped while collecting
    and replaced the data file (rnn_data in the ini) with an empty stopped one."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_one=FEW)
    assert pytester.runpytest("--rnn-data=d.json").ret == 0
    before = (pytester.path / "d.json").read_bytes()
    shown = pytester.runpytest("--cache-show", "--rnn-data=d.json")
    assert shown.ret == 0
    assert (pytester.path / "d.json").read_bytes() == before


def test_a_lf_retry_that_tracked_no_model_replaces_the_data_file(pytester):
    """--lf reruns only a failed test that feeds no model: partial by design, not stopped;
    the earlier run's file stayed, so a `report` step gated the first run's coverage as
    the retry's. It now holds no model, marked partial."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_one=FEW + "\n\ndef test_fails():\n    assert False\n")
    first = pytester.runpytest("--rnn-data=d.json")
    assert first.ret == pytest.ExitCode.TESTS_FAILED
    assert CoverageData.load(pytester.path / "d.json").models
    retry = pytester.runpytest("--rnn-data=d.json", "--lf")
    assert retry.ret == pytest.ExitCode.TESTS_FAILED
    retry.stdout.fnmatch_lines(["RNN coverage data (partial: marked so) written to d.json"])
    data = CoverageData.load(pytester.path / "d.json")
    assert not data.models and data.retries and not data.complete
    assert evaluate(data, Bars.parse("0.01")).passed is False


KILLED = """
import os
import signal


def test_killed():
    if os.environ.get("KILL_THE_SESSION"):
        os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_killed_session_leaves_no_earlier_data_file_to_pass(pytester, monkeypatch):
    """A session SIGKILLed (the out-of-memory killer, a CI runner lost) left the earlier
    run's complete data file, which a `report` step then passed. The tests begin by
    replacing it with one that says the session did not finish."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_one=FEW, test_two=KILLED)
    assert pytester.runpytest_subprocess("--rnn-data=d.json", "-p", "no:xdist").ret == 0
    assert cli("report", "d.json", "--rnn-coverage=0", cwd=pytester.path).returncode == 0
    monkeypatch.setenv("KILL_THE_SESSION", "1")
    killed = pytester.runpytest_subprocess("--rnn-data=d.json", "-p", "no:xdist")
    assert killed.ret == -signal.SIGKILL
    data = CoverageData.load(pytester.path / "d.json")
    assert not data.models and data.stopped == [UNFINISHED]
    gated = cli("report", "d.json", "--rnn-coverage=0", cwd=pytester.path)
    assert gated.returncode == 1
    assert f"FAIL RNN coverage gate not applied: {UNFINISHED}." in gated.stdout


CTRL_C_AFTER_THE_MARK = """
import pytest_rnncov.files as files

_write = files.write_atomic


def _then_ctrl_c(path, content, *args, **kwargs):
    _write(path, content, *args, **kwargs)
    if "did not finish" in str(content):  # after the rename, before the session noted it
        raise KeyboardInterrupt


files.write_atomic = _then_ctrl_c
"""


def test_a_ctrl_c_right_after_the_mark_is_no_conflict(pytester):
    """The session took its own mark for another process's file: its data went to a
    conflict file (with the mark's run id, so `combine` refused the two) and an error
    blamed another writer."""
    pytester.makeconftest(CONFTEST + CTRL_C_AFTER_THE_MARK)
    pytester.makepyfile(test_one=FEW)
    result = pytester.runpytest_subprocess("--rnn-data=d.json", "-p", "no:xdist")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["RNN coverage data (partial: marked so) written to d.json"])
    assert "another process" not in result.stdout.str()
    assert not list(pytester.path.glob("d.conflict-*"))
    assert CoverageData.load(pytester.path / "d.json").stopped == [
        "the session stopped before the tests ran"
    ]


def test_the_unfinished_mark_yields_to_another_writer(tmp_path):
    """The mark written as the tests begin replaces only the file seen when the session
    started: another process's file stays, and the session's own write keeps its data
    beside it (OutputConflict), as before."""
    from pytest_rnncov.files import Output, OutputConflict

    path = tmp_path / "d.json"
    path.write_text(CoverageData().dumps())
    output = Output(path, "pytest-rnncov-data", "--rnn-data")
    assert output.claim(CoverageData(stopped=[UNFINISHED]).dumps())
    assert CoverageData.load(path).stopped == [UNFINISHED]
    other = CoverageData(stopped=["another session"]).dumps()
    path.write_text(other + " ")  # another writer, after the mark
    assert not output.claim(CoverageData(stopped=[UNFINISHED]).dumps())
    assert path.read_text() == other + " "
    with pytest.raises(OutputConflict):
        output.write(CoverageData().dumps())
    assert path.read_text() == other + " "


def test_profile_fit_on_a_full_disk_exits_1_as_combine_does(tmp_path):
    """A profile that cannot be written is no usage error: it exited 4, where cli.md and
    combine --out say 1."""
    import keras

    model = keras.Sequential([keras.Input((200, 2)), keras.layers.GRU(3, name="gru")])
    model.save(tmp_path / "m.keras")  # 15 kB, copied privately before it is read; the
    # profile of 200 steps, 66 kB, is past the limit
    assert (tmp_path / "m.keras").stat().st_size < 32_768
    np.save(tmp_path / "x.npy", np.random.default_rng(0).normal(size=(8, 200, 2)))
    done = cli(
        "profile", "fit", "m.keras", "--x-train", "x.npy", "--out", "p.json",
        cwd=tmp_path, preexec_fn=_limited(32_768),
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    assert "cannot write --out to 'p.json'" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "p.json").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    done = cli(  # no room for the model's private copy: said, naming where it was made
        "profile", "fit", "m.keras", "--x-train", "x.npy", "--out", "p.json",
        cwd=tmp_path, preexec_fn=_limited(64),
    )  # fmt: skip
    assert done.returncode == 4 and "Traceback" not in done.stderr
    assert "cannot copy 'm.keras' to '" in done.stderr and "set TMPDIR to a folder" in done.stderr


def test_a_failed_write_says_whether_a_file_was_there(tmp_path):
    """ "the file there is unchanged" was said of paths where no file had been."""
    from pytest_rnncov.files import write_atomic

    (tmp_path / "file").write_text("a file, not a folder")
    with pytest.raises(DataFileError, match="; no file was written there$"):
        write_atomic(tmp_path / "file" / "r.json", "{}", "the report")
    (tmp_path / "r.json").mkdir()  # something of the name that a rename cannot replace
    (tmp_path / "r.json" / "x").touch()
    with pytest.raises(DataFileError, match="; the file there is unchanged$"):
        write_atomic(tmp_path / "r.json", "{}", "the report")


def test_a_write_that_need_not_be_durable_skips_only_the_fsync(tmp_path, monkeypatch):
    """A campaign's images are written without fsync (10-20x the cost of the write), still
    through a temporary file and a rename; every other file is forced to disk."""
    from pytest_rnncov.files import write_atomic

    synced = []
    fsync = os.fsync
    monkeypatch.setattr(os, "fsync", lambda fd: synced.append(fd) or fsync(fd))
    write_atomic(tmp_path / "a.png", b"first", "an image", durable=False)
    write_atomic(tmp_path / "a.png", b"second", "an image", durable=False)
    assert synced == [] and (tmp_path / "a.png").read_bytes() == b"second"
    write_atomic(tmp_path / "r.json", "{}", "the report")
    assert len(synced) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.png", "r.json"]


def test_a_step_summary_keeps_what_a_writer_holding_it_open_appends(tmp_path, monkeypatch):
    """`pytest ... | tee -a $GITHUB_STEP_SUMMARY` holds the file open while the plugin adds
    its report: the report was a renamed copy, so everything tee wrote after it went to the
    unlinked old file and was lost."""
    from pytest_rnncov.reporting.outputs import report_output

    summary = tmp_path / "step_summary.md"
    summary.write_text("# my step")  # no final newline: a blank line is put before ours
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    with open(summary, "a") as tee:
        tee.write("\ncollected 3 items\n")
        tee.flush()
        report_output("markdown", str(summary), "--rnn-report=markdown").write("<!-- report -->\n")
        tee.write("3 passed\n")
    assert summary.read_text() == ("# my step\ncollected 3 items\n\n<!-- report -->\n3 passed\n")


def test_an_append_that_fails_part_way_is_cut_back_off(tmp_path):
    """A full disk mid-append: the step summary keeps what it held, not half a report."""
    from pytest_rnncov.files import append_whole

    summary = tmp_path / "s.md"
    summary.write_text("held\n")
    done = _written_under_a_size_limit("append_whole", summary, 5000, "the report", 1024)
    assert done.stdout.startswith("DataFileError cannot append the report to"), done.stderr
    assert "what the file held is kept" in done.stdout
    assert summary.read_text() == "held\n"
    append_whole(summary, "more", "the report")
    assert summary.read_text() == "held\n\nmore"


def test_an_append_to_something_not_a_file_is_refused_before_writing(tmp_path):
    """A FIFO blocked the append (200 kB), or took the bytes and then failed fsync."""
    from pytest_rnncov.files import append_whole

    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(DataFileError, match="it is not a regular file"):
        append_whole(tmp_path / "fifo", "x" * 200_000, "the summary")


def test_a_step_summary_is_appended_without_pread(tmp_path, monkeypatch):
    """os.pread does not exist on Windows, whose GitHub runners have step summaries too; a
    hard link to the summary is no reason to refuse it, as appending replaces nothing."""
    from pytest_rnncov.files import append_whole
    from pytest_rnncov.reporting.outputs import report_output

    monkeypatch.delattr(os, "pread")
    summary = tmp_path / "s.md"
    summary.write_text("held")
    os.link(summary, tmp_path / "other-name.md")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    report_output("markdown", str(summary), "--rnn-report=markdown").write("report\n")
    append_whole(summary, "more", "the report")
    assert (tmp_path / "other-name.md").read_text() == "held\n\nreport\n\nmore"


def test_a_step_summary_in_a_folder_that_cannot_be_written_is_appended(tmp_path, monkeypatch):
    """Appending creates nothing in the summary's folder: a folder the job cannot write in
    refused the step summary, whose file it can write (the folder is faked as read-only,
    since the suite may run as root, which os.access lets write anywhere)."""
    from pytest_rnncov.config import paths
    from pytest_rnncov.errors import DataFileError
    from pytest_rnncov.reporting.outputs import report_output

    folder = tmp_path / "runner_file_commands"
    folder.mkdir()
    summary = folder / "step_summary.md"
    summary.write_text("held\n")
    access = os.access
    monkeypatch.setattr(paths.os, "access", lambda p, mode: Path(p) != folder and access(p, mode))
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    report_output("markdown", str(summary), "--rnn-report=markdown").write("report\n")
    assert summary.read_text() == "held\n\nreport\n"
    with pytest.raises(DataFileError, match="cannot write in"):  # a file to create: refused
        report_output("markdown", str(folder / "other.md"), "--rnn-report=markdown")


def test_an_output_path_where_no_file_can_be_made_is_refused_before_the_tests(
    pytester, tmp_path, monkeypatch
):
    """Permission bits said /proc could be written (the suite may run as root, whom they
    let write anywhere): --rnn-data=/proc/x.json ran every test, then failed to write (exit
    1, said after the tests). A file is now made and removed where each output goes, before
    any test runs: a usage error (exit 4) naming the folder and why."""
    from pytest_rnncov.config import paths
    from pytest_rnncov.errors import DataFileError

    for check in (paths.check_output_file, paths.check_output_dir):
        with pytest.raises(DataFileError, match="cannot write in '/proc'"):
            check(Path("/proc/rnncov-out.json"), "--rnn-data")
    (tmp_path / "gone").symlink_to(tmp_path / "nowhere" / "dir")  # its folders would be made
    for check in (paths.check_output_file, paths.check_output_dir):  # where the link points
        with pytest.raises(DataFileError, match="/gone' is a symbolic link to nothing"):
            check(tmp_path / "gone" / "sub" / "d.json", "--rnn-data")
    (tmp_path / "gone").unlink()
    check = paths.check_output_file(tmp_path / "new" / "d.json", "--rnn-data")
    assert check == tmp_path / "new" / "d.json" and list(tmp_path.iterdir()) == []  # probe gone
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_feed=FEW)
    result = pytester.runpytest("--rnn-data=/proc/rnncov-out.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--rnn-data '/proc/rnncov-out.json': cannot write in '/proc'*"])
    result.stdout.no_fnmatch_line("*passed*")

    def full(**kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(paths.tempfile, "mkstemp", full)
    with pytest.raises(DataFileError, match="cannot write in .* failed: No space left on device"):
        paths.check_output_file(tmp_path / "d.json", "--rnn-data")


REPLAYED = """
from hypothesis import __version__, given, reproduce_failure, settings, strategies as st
from hypothesis.core import encode_failure
from conftest import inputs


@reproduce_failure(__version__, encode_failure((5,)))
@settings(derandomize=False, max_examples=3, deadline=None, database=None)
@given(st.integers(0, 1000))
def test_replayed(tiny, k):
    tiny.predict(inputs(k, n=2))
    assert k != 5
"""


def test_a_replayed_failure_is_not_named_as_drawn_at_random(pytester, monkeypatch):
    """@reproduce_failure replays one example's draws: it was named as drawing at random."""
    monkeypatch.delenv("CI", raising=False)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_replay=REPLAYED)
    result = pytester.runpytest_subprocess("--rnn-report=json:r.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # the replayed failure, as it was
    result.stdout.fnmatch_lines(["*assert 5 != 5*"])
    assert "drew at random" not in result.stdout.str()
    assert json.loads((pytester.path / "r.json").read_text())["verdict"]["random_tests"] == []
