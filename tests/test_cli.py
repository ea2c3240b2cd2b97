"""``python -m pytest_rnncov``: profile fit (Keras files, PyTorch factories with a
state_dict), show, combine (the exact union of runs), report and compare, with pytest's
exit codes."""

from __future__ import annotations

import importlib.util
import io
import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest
from test_plugin import CONFTEST

HALVES = """
from conftest import inputs


def test_one(tiny):
    tiny.predict(inputs(1, n=20))


def test_two(tiny):
    tiny.predict(inputs(2, n=20))
"""


def cli(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "pytest_rnncov", *map(str, args)],
        cwd=cwd,
        capture_output=True,
        text=True,
    )


def pytest_run(*args, cwd):
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
    )


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """Data files of two half-runs and of the whole run of the same tests."""
    path = tmp_path_factory.mktemp("cli")
    (path / "conftest.py").write_text(CONFTEST)
    (path / "test_halves.py").write_text(HALVES)
    for args in (
        ["-k", "one", "--rnn-data=a.json"],
        ["-k", "two", "--rnn-data=b.json"],
        ["--rnn-data=whole.json", "--rnn-save=base.json"],
    ):
        done = pytest_run(*args, cwd=path)
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    return path


def test_combine_of_two_halves_equals_the_whole_run(runs):
    done = cli(
        "combine",
        "a.json",
        "b.json",
        "--out",
        "ab.json",
        "--rnn-coverage=0.01",
        "--report",
        "term",
        "--report",
        "json:r.json",
        cwd=runs,
    )
    assert done.returncode == 0, done.stderr
    assert "Required RNN coverage of 1% reached." in done.stdout
    assert "combined data of 2 runs written to ab.json" in done.stdout
    combined = json.loads((runs / "ab.json").read_text())["models"]["tiny"]
    whole = json.loads((runs / "whole.json").read_text())["models"]["tiny"]
    assert combined["inputs"] == whole["inputs"] == 40
    for name in ("BC", "SC", "TC"):
        for key in ("covered_ids", "times", "total"):
            assert combined["metrics"][name][key] == whole["metrics"][name][key]
    assert json.loads((runs / "r.json").read_text())["verdict"]["passed"] is True


def test_combine_applies_the_gate(runs):
    done = cli("combine", "a.json", "b.json", "--rnn-coverage=TC:0.99", cwd=runs)
    assert done.returncode == 1
    assert "FAIL Required RNN coverage (TC:0.99) not reached: TC" in done.stdout


def test_combine_refuses_runs_that_tracked_other_metrics(runs):
    """A metric tracked in one run only was once added to the union and shown and gated
    over every run's inputs (NC at 60% over 40 inputs it saw 20 of)."""
    done = pytest_run("-k", "two", "--rnn-data=b_nc.json", "--rnn-metrics=BC,SC,TC,NC", cwd=runs)
    assert done.returncode == 0, done.stdout[-2000:]
    done = cli("combine", "a.json", "b_nc.json", "--out", "mixed.json", cwd=runs)
    assert done.returncode == 4, done.stdout
    assert (
        "data file 'b_nc.json': cannot combine coverage of model 'tiny': this data tracked "
        "BC, NC, SC, TC, the data "
        "already combined BC, SC, TC; a metric tracked in only some runs would count only "
        "their inputs: give every run the same metrics"
    ) in done.stderr
    assert not (runs / "mixed.json").exists()


def test_an_empty_metric_list_is_refused_not_read_as_the_default(runs):
    for command in (("report", "whole.json"), ("combine", "a.json", "b.json", "--out", "c.json")):
        done = cli(*command, "--rnn-metrics", "", "--rnn-coverage=0.01", cwd=runs)
        assert done.returncode == 4, done.stdout
        assert "metrics '' names no metric; give e.g. BC,SC,TC" in done.stderr
    assert not (runs / "c.json").exists()  # refused before anything was written
    one = cli("combine", "a.json", "--out", "one.json", cwd=runs)
    assert "combined data of 1 run written to one.json" in one.stdout


def test_report_writes_html_from_data_files(runs):
    done = cli("report", "whole.json", "--report", "html:h", "--report", "term-detail", cwd=runs)
    assert done.returncode == 0, done.stderr
    assert (runs / "h" / "index.html").is_file()
    assert "uncovered steps" in done.stdout


def test_compare_with_a_baseline(runs):
    same = cli("compare", "whole.json", "--baseline", "base.json", cwd=runs)
    assert same.returncode == 0 and "is not below baseline base.json" in same.stdout
    worse = cli("compare", "a.json", "--baseline", "base.json", cwd=runs)
    assert worse.returncode == 1
    assert "FAIL RNN coverage fell below baseline base.json (tolerance 0): tiny" in worse.stdout


def test_report_and_combine_render_the_baseline_verdict_the_session_did(runs, tmp_path):
    """A session's reports said 'FAIL RNN coverage fell below baseline'; re-rendered with
    report or combine they could not (no --baseline), and compare prints no Markdown."""
    worse = cli("report", "a.json", "--baseline", "base.json", "--format", "markdown", cwd=runs)
    assert worse.returncode == 1, worse.stderr
    assert "- **FAIL RNN coverage fell below baseline base.json (tolerance 0): tiny" in worse.stdout
    for command in ("report", "combine"):
        same = cli(command, "whole.json", "--baseline", "base.json", cwd=runs)
        assert same.returncode == 0 and "is not below baseline base.json" in same.stdout
    loose = cli("report", "a.json", "--baseline", "base.json", "--tolerance", "1", cwd=runs)
    assert loose.returncode == 0, loose.stdout
    done = cli("report", "a.json", "--baseline", "base.json", "--tolerance", "2", cwd=runs)
    assert done.returncode == 4 and "--tolerance" in done.stderr
    done = cli("report", "a.json", "--baseline", "base.json", "--tolerance", "", cwd=runs)
    assert done.returncode == 4 and "--tolerance" in done.stderr  # not read as 0
    done = cli("report", "a.json", "--tolerance", "0.5", cwd=runs)  # as the plugin refuses it
    assert done.returncode == 4
    assert "--tolerance compares nothing without --baseline FILE" in done.stderr
    done = cli("combine", "a.json", "--baseline", "base.json", "--out", "base.json", cwd=runs)
    assert done.returncode == 4 and "base.json" in done.stderr  # never replaces what it reads


def test_show_reads_every_file_kind(runs):
    assert "tiny" in cli("show", "whole.json", cwd=runs).stdout
    assert "tiny" in cli("show", "base.json", cwd=runs).stdout


@pytest.mark.parametrize("version", [5, 4])
def test_a_gate_on_a_stopped_sessions_data_is_not_applied_as_in_the_session(
    runs, tmp_path, version
):
    """report and combine applied the bars to the data file of a session that stopped
    early (Ctrl-C, -x), which itself applied none: a cancelled shard re-rendered as a
    pass. Not applied now, and a gate asked for and never decided exits 1, as the session
    does; nor to a --lf retry's data, as its session applied none either. A file of version
    4 has no 'retries': its --lf and --sw reasons are read as retries by how they begin."""
    whole = json.loads((runs / "whole.json").read_text())

    def data_file(name, stopped, retries):
        data = whole | {"version": version, "stopped": stopped, "runs": [name]}
        data["retries"] = retries
        if version < 5:
            del data["retries"]
        (tmp_path / f"{name}.json").write_text(json.dumps(data))
        return f"{name}.json"

    stopped = data_file("x", ["stopped after 1 of 2 tests (-x)"], [])
    retry = "--lf ran only the 1 test that failed last time"
    retried = data_file("lf", [retry], [retry])
    for command, reasons in (
        (("report", stopped), "stopped after 1 of 2 tests (-x)"),
        (("combine", stopped, retried), f"stopped after 1 of 2 tests (-x); {retry}"),
        (("report", retried), retry),
    ):
        done = cli(*command, "--rnn-coverage=0.01", "--report", "json:r.json", cwd=tmp_path)
        assert done.returncode == 1, done.stdout + done.stderr
        assert (
            f"FAIL RNN coverage gate not applied: {reasons}; the coverage shown is from the "
            "tests that ran." in done.stdout
        )
        assert "Required RNN coverage" not in done.stdout
        verdict = json.loads((tmp_path / "r.json").read_text())["verdict"]
        assert verdict["applied"] is False and verdict["passed"] is False
    done = cli("report", stopped, cwd=tmp_path)  # no gate asked for: nothing undecided
    assert done.returncode == 0, done.stderr
    done = cli("compare", stopped, "--baseline", runs / "base.json", cwd=tmp_path)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "RNN coverage gate not applied: stopped after 1 of 2 tests (-x)" in done.stdout
    done = cli("report", retried, cwd=tmp_path)  # no gate asked for: the warning says it
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"WARNING RNN coverage is partial: {retry}" in done.stdout


def test_a_retry_the_data_does_not_hold_as_stopped_is_refused(runs, tmp_path):
    data = json.loads((runs / "whole.json").read_text()) | {"retries": ["--lf ran only 1"]}
    (tmp_path / "d.json").write_text(json.dumps(data))
    done = cli("report", "d.json", cwd=tmp_path)
    assert done.returncode == 4
    assert "'retries' holds '--lf ran only 1', which 'stopped' does not" in done.stderr


def test_show_says_what_data_is_partial_as_report_does(runs, tmp_path):
    """show printed the table alone for data of a run that lost a worker, stopped early or
    drew at random, and for a partial baseline or JSON report."""
    data = json.loads((runs / "whole.json").read_text())
    data |= {"missing_workers": ["gw1"], "stopped": ["stopped after 1 of 2 tests (-x)"]}
    data |= {"random_tests": ["test_x.py::test_drawn"], "retries": []}
    (tmp_path / "partial.json").write_text(json.dumps(data))
    shown = cli("show", "partial.json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "tiny" in shown.stdout
    assert (
        "WARNING RNN coverage is partial: worker gw1 did not send all its coverage data"
        in shown.stdout
    )
    assert "WARNING RNN coverage is partial: stopped after 1 of 2 tests (-x)" in shown.stdout
    assert "drew at random in 1 test (test_x.py::test_drawn)" in shown.stdout
    baseline = json.loads((runs / "base.json").read_text())
    baseline |= {"complete": False, "missing_workers": ["gw1"]}
    (tmp_path / "base.json").write_text(json.dumps(baseline))
    shown = cli("show", "base.json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert "WARNING baseline base.json is partial: worker gw1" in shown.stdout
    assert cli("report", "partial.json", "--report", "json:r.json", cwd=tmp_path).returncode == 0
    shown = cli("show", "r.json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    assert (
        "WARNING RNN coverage is partial: worker gw1 did not send all its coverage data"
        in shown.stdout
    )
    assert "WARNING RNN coverage is partial: stopped after 1 of 2 tests (-x)" in shown.stdout
    assert "drew at random in test_x.py::test_drawn" in shown.stdout
    assert "gate not applied" not in shown.stdout  # no gate was asked for: none to apply
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["verdict"]["applied"] is False  # as the session that stopped said
    report["verdict"] |= {"applied": True, "skipped_reason": None}  # a whole run's, but:
    report["verdict"]["baseline"] = {
        "path": "b.json",
        "complete": False,
        "missing_workers": ["gw3"],
    }
    (tmp_path / "r.json").write_text(json.dumps(report))
    shown = cli("show", "r.json", cwd=tmp_path)
    assert (
        "WARNING baseline b.json is partial: worker gw3 did not send all its coverage data"
        in shown.stdout
    )
    report["verdict"]["baseline"]["missing_workers"] = 3  # hand-edited: refused by name
    (tmp_path / "r.json").write_text(json.dumps(report))
    shown = cli("show", "r.json", cwd=tmp_path)
    assert shown.returncode == 4 and "Traceback" not in shown.stderr
    assert "baseline: 'missing_workers' is 3 (int), not list" in shown.stderr
    report["verdict"]["baseline"]["missing_workers"] = []
    older = report | {"verdict": dict(report["verdict"])}  # written before keys were added
    for key in ("errors", "random_tests", "stopped"):
        del older["verdict"][key]
    (tmp_path / "r.json").write_text(json.dumps(older))
    shown = cli("show", "r.json", cwd=tmp_path)
    assert shown.returncode == 0, shown.stderr
    for key, value in (("applied", 1e300), ("gate", "bogus"), ("skipped_reason", 3)):
        (tmp_path / "r.json").write_text(
            json.dumps(report | {"verdict": {**report["verdict"], key: value}})
        )
        shown = cli("show", "r.json", cwd=tmp_path)
        assert shown.returncode == 4 and f"verdict: '{key}' is" in shown.stderr, shown.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["combine", "missing.json"], "no file at 'missing.json'"),
        (["combine", "bad.json"], "is not a pytest-rnncov data file"),
        (["combine", "kind-list.json"], "is not a pytest-rnncov data file"),
        (
            ["report", "kind-baseline.json"],
            "data file 'kind-baseline.json' is a pytest-rnncov baseline, not a data file "
            "(python -m pytest_rnncov show FILE prints it)",
        ),
        (
            ["compare", "a.json", "--baseline", "kind-data.json"],
            "is a pytest-rnncov data file, not",
        ),
        (["report", "kind-summary.json"], "is a pytest-rnncov campaign summary, not a data file\n"),
        (["report", "kind-html.json"], "'kind-html.json' is not a pytest-rnncov data file\n"),
        (["combine", "a.json", "--rnn-coverage=90"], "for 90% use 0.9"),
        (["combine", "a.json", "--report", "xml"], "unknown report type 'xml'"),
        (["compare", "a.json", "--baseline", "bad.json"], "is not a pytest-rnncov baseline file"),
        (["show", "bad.json"], "is not a pytest-rnncov profile, data, baseline or report file"),
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        (["combine", "a.json", "a.json"], "is given twice; each run's data counts once"),
        (["report", "a.json", "--report", "json:a.json"], "would overwrite data file"),
        (
            ["combine", "a.json", "--out", "x.json", "--report", "json:x.json"],
            "would collide with --report json:",
        ),
        (["combine", "a.json", "--out", ""], "--out '': give a file path"),
        (["combine", "a.json", "--rnn-coverage=0.1,0.2"], "is given twice"),
        # the reason, not a clash found later: a folder, a file taken for a folder, a role
        (["combine", "a.json", "b.json", "--out", "."], "--out '.' is a directory"),
        (["combine", "a.json", "--out", "a.json/x.json"], "'a.json' is not a directory"),
        (["compare", "a.json", "--baseline", "a.json"], "is given twice (also as data file)"),
        (
            ["profile", "fit", "m:f", "--weights", ".", "--x-train", "a.json", "--out", "p.json"],
            "--weights '.' is a directory",
        ),
        (
            ["profile", "fit", "a.json", "--x-train", "a.json", "--out", "p.json"],
            "cannot load 'a.json': expected a .keras, .h5 or .onnx file",
        ),
        # it said "each run's data counts once", and '' read as the current folder
        (
            ["profile", "fit", "m:f", "--weights", "a.json", "--x-train", "a.json", "--out", "p"],
            "is given twice (also as --weights); each needs its own file",
        ),
        (
            ["profile", "fit", "", "--weights", "a.json", "--x-train", "b.json", "--out", "p"],
            "MODEL '': give a model file (.keras, .h5, .onnx) or a PyTorch factory",
        ),
        *(  # int() read them: 10 and 3
            (
                ["profile", "fit", "m:f", "--x-train", "a.json", "--out", "p", option, value],
                f"argument {option}: {value!r} is not a whole number; write it in ASCII digits",
            )
            for option, value in [("--batch-size", "1_0"), ("--state-intervals", "\u0663")]
        ),
        # it said "'-1' is not a whole number"
        (
            ["profile", "fit", "m:f", "--x-train", "a.json", "--out", "p", "--batch-size", "-1"],
            "argument --batch-size: '-1' is negative; give a whole number >= 0",
        ),
        # a name --rnn-save saved: "no coverage baseline at 'base'; create it with --rnn-save"
        (
            ["compare", "a.json", "--baseline", "base"],
            "--baseline 'base': no such file; the baseline --rnn-save=base saved is "
            "'.rnncov/base.json': pass that path",
        ),
    ],
)
def test_usage_errors_exit_4_and_say_why(runs, args, message):
    (runs / "bad.json").write_text('{"format": "something else"}')
    # (the runs folder is shared: names of their own)
    (runs / "kind-list.json").write_text('{"format": ["pytest-rnncov-data"]}')
    (runs / "kind-baseline.json").write_text('{"format": "pytest-rnncov-baseline"}')
    (runs / "kind-summary.json").write_text('{"format": "pytest-rnncov-campaign"}')  # no show
    (runs / "kind-html.json").write_text('{"format": "html"}')  # a kind, but no JSON one
    (runs / "kind-data.json").write_bytes((runs / "a.json").read_bytes())
    (runs / ".rnncov").mkdir(exist_ok=True)
    (runs / ".rnncov" / "base.json").write_bytes((runs / "base.json").read_bytes())
    done = cli(*args, cwd=runs)
    assert done.returncode == 4, done.stdout + done.stderr
    assert message in done.stderr


@pytest.fixture
def model_files(keras, tmp_path, seq_inputs, stacked_model):
    """A folder holding the stacked model as m.keras and training inputs as x.npy."""
    stacked_model.save(tmp_path / "m.keras")
    np.save(tmp_path / "x.npy", seq_inputs)
    return tmp_path


def test_profile_fit_of_an_unsafe_file_names_the_commands_switch(keras, model_files):
    model = keras.Sequential(
        [keras.Input((7, 3)), keras.layers.Lambda(lambda x: x * 2), keras.layers.LSTM(2)]
    )
    model.save(model_files / "lambda.keras")
    done = cli(
        "profile", "fit", "lambda.keras", "--x-train", "x.npy", "--out", "p.json",
        cwd=model_files,
    )  # fmt: skip
    assert done.returncode == 4
    assert "Lambda layer" in done.stderr and "pass --unsafe-load" in done.stderr
    assert "safe_mode=False" not in done.stderr  # the Python argument, not this command's


@pytest.mark.parametrize("backend", ["jx", "JAX", "openvino"])  # openvino: not installed
def test_a_keras_backend_keras_cannot_load_is_named(model_files, backend):
    """Keras raised a bare ValueError ("Unable to import backend : jx") through the CLI."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest_rnncov", "profile", "fit", "m.keras", "--x-train",
         "x.npy", "--out", "p.json"],
        cwd=model_files, capture_output=True, text=True,
        env={**os.environ, "KERAS_BACKEND": backend},
    )  # fmt: skip
    assert done.returncode == 4, done.stderr
    assert "Traceback" not in done.stderr
    assert f"Keras 3 cannot load KERAS_BACKEND={backend!r}" in done.stderr
    assert "set KERAS_BACKEND to tensorflow, jax or torch (lower case)" in done.stderr
    assert not (model_files / "p.json").exists()


def test_profile_fit_says_its_warnings_as_its_own_lines(keras, tmp_path):
    """They read "<frozen runpy>:88: RNNCovWarning: ...": Python names the first frame
    outside the package, which under python -m is runpy's."""
    model = keras.Sequential(
        [keras.Input((6, 2)), keras.layers.Masking(0.0), keras.layers.GRU(3, name="gru")]
    )
    model.save(tmp_path / "m.keras")
    x = np.random.default_rng(0).normal(size=(4, 6, 2)).astype(np.float32)
    x[0, 4:] = 0.0  # padded at the end: the window's last steps are masked in one input
    np.save(tmp_path / "x.npy", x)
    done = cli("profile", "fit", "m.keras", "--x-train", "x.npy", "--out", "p.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "python -m pytest_rnncov profile: warning: 1 of 4 training inputs" in done.stderr
    assert "runpy" not in done.stderr and "RNNCovWarning" not in done.stderr
    strict = subprocess.run(  # -W error makes the warning an error: one line, exit 4
        [sys.executable, "-W", "error", "-m", "pytest_rnncov", "profile", "fit", "m.keras",
         "--x-train", "x.npy", "--out", "q.json"],
        cwd=tmp_path, capture_output=True, text=True,
    )  # fmt: skip
    assert strict.returncode == 4 and "Traceback" not in strict.stderr, strict.stderr
    assert "python -m pytest_rnncov profile: error: 1 of 4 training inputs" in strict.stderr


def test_profile_fit_from_a_model_file_and_a_npy(model_files):
    tmp_path = model_files
    done = cli(
        "profile",
        "fit",
        "m.keras",
        "--x-train",
        "x.npy",
        "--layer",
        "lstm_b",
        "--window",
        "1,5",
        "--out",
        "p.json",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "profile of lstm layer 'lstm_b' (window [1, 5], 12 training inputs)" in done.stdout
    for notice in ("absl::InitializeLog", "port.cc", "cudart_stub.cc", "cuda_platform.cc"):
        assert notice not in done.stderr  # TensorFlow's start-up notices (tests/test_tf_notices)
    shown = cli("show", "p.json", cwd=tmp_path)
    assert "lstm layer 'lstm_b', 5 units, 7 steps, window [1, 5]" in shown.stdout
    # a pickled object array is never unpickled
    (tmp_path / "evil.npy").write_bytes(b"")
    np.save(tmp_path / "evil.npy", np.array([object()], dtype=object), allow_pickle=True)
    refused = cli(
        "profile", "fit", "m.keras", "--x-train", "evil.npy", "--out", "q.json", cwd=tmp_path
    )
    assert refused.returncode == 4 and "is not a numpy .npy/.npz file of numbers" in refused.stderr
    # numpy's advice (allow_pickle=True: run code from the file) is not passed on; garbage
    # reads as pickled data to numpy; a folder is named as one
    (tmp_path / "garbage.npy").write_bytes(b"not an array" * 8)
    (tmp_path / "dir.npy").mkdir()
    import zipfile

    with zipfile.ZipFile(tmp_path / "headless.npz", "w") as archive:
        archive.writestr("x.npy", b"no numpy header here")  # numpy hands back its bytes
    np.savez(tmp_path / "empty.npz")
    for name, said in (
        ("evil.npy", "pickled Python objects, which are never loaded"),
        ("garbage.npy", "pickled Python objects, which are never loaded"),
        ("headless.npz", "'headless.npz' member 'x' is not a numpy array (no .npy header)"),
        ("empty.npz", "'empty.npz' holds no array; save the inputs with numpy.savez"),
        ("dir.npy", "'dir.npy' is a folder; name the .npy or .npz file inside it"),
        (".", "'.' is a folder; name the .npy or .npz file inside it"),  # not "overwrite"
        ("/dev/zero", "'/dev/zero' is not a regular file"),  # not "no file at"
        ("", "--x-train '': give the .npy or .npz file"),  # not "'' is a folder"
    ):
        refused = cli(
            "profile", "fit", "m.keras", "--x-train", name, "--out", "q.json", cwd=tmp_path
        )
        assert refused.returncode == 4 and said in refused.stderr, refused.stderr
        assert "allow_pickle" not in refused.stderr
    bad_window = cli(
        "profile",
        "fit",
        "m.keras",
        "--x-train",
        "x.npy",
        "--window",
        "a,b",
        "--out",
        "q.json",
        cwd=tmp_path,
    )
    assert bad_window.returncode == 4 and "give two step indices" in bad_window.stderr


def test_repeated_bars_add_up(runs):
    done = cli(
        "combine", "a.json", "b.json", "--rnn-coverage=BC:0.99", "--rnn-coverage=TC:0.01", cwd=runs
    )
    assert done.returncode == 1
    assert "FAIL Required RNN coverage (BC:0.99,TC:0.01) not reached: BC" in done.stdout


def test_a_layer_in_other_digits_is_a_name(model_files):
    """'²' is a digit to str.isdigit but no integer: it names a layer (and none exists)."""
    tmp_path = model_files
    done = cli(
        "profile",
        "fit",
        "m.keras",
        "--x-train",
        "x.npy",
        "--out",
        "p.json",
        "--layer",
        "\u00b2",
        cwd=tmp_path,
    )
    assert done.returncode == 4, done.stderr
    assert "'\u00b2'" in done.stderr and "Traceback" not in done.stderr


def test_an_html_report_folder_holding_an_input_is_refused_as_what_it_is(runs):
    done = cli("report", "a.json", "--report", "html:.", cwd=runs)
    assert done.returncode == 4
    assert "is a folder holding data file" in done.stderr, done.stderr
    assert "would overwrite" not in done.stderr  # it would not: it writes index.html


def test_links_and_inputs_are_not_overwritten(runs, tmp_path):
    (runs / "link.json").unlink(missing_ok=True)
    (runs / "link.json").symlink_to(runs / "a.json")
    for args in (
        ["report", "a.json", "--report", "json:link.json"],
        ["combine", "a.json", "link.json"],
    ):
        done = cli(*args, cwd=runs)
        assert done.returncode == 4, done.stdout + done.stderr
        assert "would overwrite" in done.stderr or "is given twice" in done.stderr
    assert json.loads((runs / "a.json").read_text())["format"] == "pytest-rnncov-data"


def test_profile_fit_does_not_overwrite_its_inputs(model_files, seq_inputs):
    tmp_path = model_files
    for out in ("x.npy", "m.keras"):
        done = cli("profile", "fit", "m.keras", "--x-train", "x.npy", "--out", out, cwd=tmp_path)
        assert done.returncode == 4 and "would overwrite" in done.stderr, done.stderr
    assert np.load(tmp_path / "x.npy").shape == seq_inputs.shape


def test_show_reads_a_json_report(runs):
    assert cli("report", "whole.json", "--report", "json:shown.json", cwd=runs).returncode == 0
    shown = cli("show", "shown.json", cwd=runs)
    assert shown.returncode == 0, shown.stderr
    assert "JSON report, passed: None" in shown.stdout and "tiny: BC " in shown.stdout
    report = json.loads((runs / "shown.json").read_text())
    for rate in (1e300, -5.0):  # once printed as 1000...0% and -500.0%
        report["models"]["tiny"]["metrics"]["TC"]["rate"] = rate
        (runs / "odd.json").write_text(json.dumps(report))
        shown = cli("show", "odd.json", cwd=runs)
        assert shown.returncode == 4
        assert f"model 'tiny' TC: rate {rate!r} is not a fraction in [0, 1]" in shown.stderr


def test_profile_fit_takes_a_window_counted_from_the_end(model_files):
    tmp_path = model_files
    done = cli(
        "profile",
        "fit",
        "m.keras",
        "--x-train",
        "x.npy",
        "--layer",
        "lstm_b",
        "--window",
        "-3,-1",
        "--out",
        "p.json",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "(window [4, 6]" in done.stdout
    bad = cli(
        "profile",
        "fit",
        "m.keras",
        "--x-train",
        "x.npy",
        "--window",
        "-3,x",
        "--out",
        "q.json",
        cwd=tmp_path,
    )
    assert bad.returncode == 4 and "give two step indices" in bad.stderr


@pytest.mark.parametrize(
    "options, message",
    [
        (["--window", "3,40"], "error: --window 3,40 lies outside the layer's 7 steps"),
        (["--window", "5,2"], "error: --window 5,2 starts after it ends"),
        (["--state-components", "0"], "error: --state-components 0 must be an integer >= 1"),
        (
            ["--state-components", "64", "--state-intervals", "2000"],
            "error: --state-intervals 2000 ** --state-components 64 abstract states are",
        ),
    ],
)
def test_profile_fit_errors_name_its_options(model_files, options, message):
    """The Profile's checks name its keyword arguments (window=(3, 40)); on the command
    line they name the options the user typed."""
    done = cli(
        "profile",
        "fit",
        "m.keras",
        "--x-train",
        "x.npy",
        *options,
        "--out",
        "q.json",
        cwd=model_files,
    )
    assert done.returncode == 4
    assert message in done.stderr, done.stderr
    assert "window=" not in done.stderr and "state_" not in done.stderr
    assert not (model_files / "q.json").exists()


def _table_cells(line):
    return [c.strip() for c in line.strip().strip("|").split(" | ")]


def test_report_prints_markdown_with_the_terminal_reports_figures(runs):
    text = cli("report", "whole.json", cwd=runs).stdout
    term_row = next(line for line in text.splitlines() if line.startswith("tiny "))
    figures = [f for f in term_row.split("  ") if "%" in f]  # "NN% (a/b)" per metric
    done = cli("report", "whole.json", "--format", "markdown", "--rnn-coverage=TC:0.99", cwd=runs)
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert lines[0] == "<!-- pytest-rnncov report -->"
    header = lines.index("| model | layer | window | inputs | BC | SC | TC |")
    assert lines[header + 1] == "| --- | --- | --- | ---: | ---: | ---: | ---: |"
    row = _table_cells(lines[header + 2])
    assert row[0] == "tiny" and row[3] == "40"
    assert [f.strip() for f in figures] == row[4:]
    assert lines[-1].startswith("- **FAIL Required RNN coverage (TC:0.99) not reached: TC")


def test_markdown_report_file_fills_an_empty_job_summary_and_never_a_users_file(runs):
    summary = runs / "step_summary.md"
    summary.write_text("")  # as the CI runner hands it to a step
    done = cli("report", "whole.json", "--report", f"markdown:{summary}", cwd=runs)
    assert done.returncode == 0, done.stderr
    first = summary.read_text()
    assert first.startswith("<!-- pytest-rnncov report -->\n### RNN coverage")
    again = cli("report", "a.json", "--report", f"markdown:{summary}", cwd=runs)
    assert again.returncode == 0, again.stderr  # its own earlier report is replaced
    assert summary.read_text() != first
    notes = runs / "notes.md"
    notes.write_text("# release notes\n")
    refused = cli("report", "whole.json", "--report", "markdown:notes.md", cwd=runs)
    assert refused.returncode != 0
    assert "would replace a file pytest-rnncov did not write" in refused.stderr
    assert notes.read_text() == "# release notes\n"
    no_suffix = runs / "step_summary_0a1b"  # GitHub's name for it
    no_suffix.write_text("")
    done = cli("report", "whole.json", "--report", f"markdown:{no_suffix}", cwd=runs)
    assert done.returncode == 0, done.stderr
    package = runs / "pkg"
    package.mkdir()
    (package / "__init__.py").write_text("")  # empty, and a user's file all the same
    refused = cli("report", "whole.json", "--report", "markdown:pkg/__init__.py", cwd=runs)
    assert refused.returncode != 0
    assert "would replace an empty .py file, a source or configuration file" in refused.stderr
    assert (package / "__init__.py").read_text() == ""
    mktemp = runs / "tmp.T5gZQrHHNB"  # mktemp's name: its "suffix" is no file type
    mktemp.write_text("")
    done = cli("report", "whole.json", "--report", f"markdown:{mktemp}", cwd=runs)
    assert done.returncode == 0, done.stderr


def test_markdown_cells_show_hostile_names_literally():
    from pytest_rnncov.reporting.markdown_report import escape

    assert escape("a|b<i>x</i>\nrow_1") == "a\\|b&lt;i&gt;x&lt;/i&gt; row\\_1"
    # GitHub's mathematics, and control characters and direction overrides as in the terminal
    assert escape("cost $x^2$") == "cost \\$x^2\\$"
    assert escape("a\u202eb\x1b[31m") == "a\\\\u202eb\\\\x1b\\[31m"


def test_markdown_lines_are_not_read_as_headings_lists_or_links():
    """A campaign note '- # Big heading: ...' rendered as a heading inside the list, and a
    name holding www.e.com as a link."""
    from pytest_rnncov.reporting.markdown_report import escape, escape_line

    assert escape_line("# Big heading: 3 samples") == "\\# Big heading: 3 samples"
    assert escape_line("12. x") == "12\\. x" and escape_line("- x") == "\\- x"
    assert escape_line("model 1. x") == "model 1. x"  # only at the start
    assert escape("see www.e.com, http://e.org") == "see www\\.e.com, http\\://e.org"
    assert escape("v1.www.x") == "v1.www.x"
    assert escape("lstm_www.e.com") == "lstm\\_www\\.e.com"  # GitHub links after a _


def test_plugin_writes_the_markdown_report_instead_of_the_terminal_tables(runs):
    done = pytest_run("--rnn-report=markdown:plugin.md", cwd=runs)
    assert done.returncode == 0, done.stdout[-2000:]
    assert "RNN coverage Markdown written to plugin.md" in done.stdout
    assert " RNN coverage --" not in done.stdout
    assert (runs / "plugin.md").read_text().startswith("<!-- pytest-rnncov report -->")


def _uncovered_bc_label(path):
    """The label of one uncovered BC condition in a data file (from its state)."""
    from pytest_rnncov.core.metrics import condition_label
    from pytest_rnncov.reporting.data import CoverageData

    bc = CoverageData.load(path).models["tiny"].metrics["BC"]
    missing = np.flatnonzero(~bc.covered_mask)
    assert len(missing), "the fixture's run covers every BC condition: nothing to exclude"
    return bc, condition_label("BC", bc.config, int(missing[0]))


def test_an_exclusion_counts_a_condition_apart_in_every_report(runs):
    bc, label = _uncovered_bc_label(runs / "whole.json")
    spec = f"tiny:BC:{label} = the layer never gets there"
    shown = (
        f"{round(100 * bc.n_covered / (bc.total - 1))}% ({bc.n_covered}/{bc.total - 1}, 1 excluded)"
    )
    done = cli(
        "combine", "whole.json", "--out", "excl.json", "--rnn-exclude", spec,
        "--report", "term", "--report", "json:excl-report.json", "--report", "markdown:excl.md",
        cwd=runs,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert shown in done.stdout
    assert f"excluded: tiny BC '{label}' (1 condition): the layer never gets there" in done.stdout
    metric = json.loads((runs / "excl-report.json").read_text())["models"]["tiny"]["metrics"]["BC"]
    assert (metric["counted"], metric["covered"]) == (bc.total - 1, bc.n_covered)
    assert metric["excluded"] == [
        {"label": label, "reason": "the layer never gets there", "conditions": 1, "covered": 0}
    ]
    assert "- excluded: tiny BC" in (runs / "excl.md").read_text()
    # the combined data holds what was measured
    raw = json.loads((runs / "excl.json").read_text())["models"]["tiny"]["metrics"]["BC"]
    assert (raw["covered"], raw["total"]) == (bc.n_covered, bc.total)


def test_compare_counts_exclusions_apart_as_report_does(runs):
    """report --baseline applied exclusions to both sides; compare took none, so the two
    could disagree on the same files."""
    _, label = _uncovered_bc_label(runs / "whole.json")
    excluded = ("--rnn-exclude", f"tiny:BC:{label} = far")
    for command in (("compare",), ("report", "--report", "term")):
        done = cli(*command, "whole.json", "--baseline", "base.json", *excluded, cwd=runs)
        assert done.returncode == 0 and "is not below baseline base.json" in done.stdout
        stale = ("--rnn-exclude", "tiny:TC:zzzzz = gone")
        done = cli(*command, "whole.json", "--baseline", "base.json", *stale, cwd=runs)
        assert done.returncode == 1, done.stdout + done.stderr
        assert "FAIL RNN coverage exclusion tiny:TC:zzzzz matches no condition" in done.stdout


def test_a_stale_exclusion_fails_the_command_and_the_session(runs):
    """The command decides as the session does: the verdict fails on a stale exclusion
    (exit 1, the last line, the JSON report), the other exclusions still apply and the
    reports are written; combine still writes the data it combined."""
    _, label = _uncovered_bc_label(runs / "whole.json")
    for command in (
        ["report", "whole.json"],
        ["combine", "whole.json", "--out", "stale-combined.json"],
    ):
        done = cli(
            *command, "--rnn-exclude", "tiny:TC:zzzzz = gone", "--rnn-exclude",
            f"tiny:BC:{label} = far", "--rnn-coverage", "0.01", "--report", "term",
            "--report", "json:stale-cli.json", cwd=runs,
        )  # fmt: skip
        assert done.returncode == 1, done.stdout + done.stderr
        lines = done.stdout.strip().splitlines()
        verdict_line = lines[-1] if command[0] == "report" else lines[-2]  # then: where it went
        assert verdict_line.startswith(
            "FAIL RNN coverage exclusion tiny:TC:zzzzz matches no condition"
        )
        assert f"excluded: tiny BC '{label}' (1 condition): far" in done.stdout
        verdict = json.loads((runs / "stale-cli.json").read_text())["verdict"]
        assert verdict["passed"] is False and verdict["gate"]["passed"] is True
        assert verdict["errors"][0].startswith("exclusion tiny:TC:zzzzz matches no condition")
    assert json.loads((runs / "stale-combined.json").read_text())["models"]["tiny"]
    session = pytest_run(
        "-k", "one", "--rnn-exclude=tiny:TC:zzzzz = gone", f"--rnn-exclude=tiny:BC:{label} = far",
        "--rnn-coverage=0.01", "--rnn-report=term", "--rnn-report=json:stale-report.json",
        cwd=runs,
    )  # fmt: skip
    # the verdict fails on it: the last line, the JSON and the exit code agree
    assert session.returncode == 1, session.stdout[-2000:]
    ours = session.stdout.strip().splitlines()[-2]  # pytest's own summary line is last
    assert ours.startswith("FAIL RNN coverage exclusion tiny:TC:zzzzz matches no condition")
    assert "Required RNN coverage of 1% reached." in session.stdout  # the bars themselves
    verdict = json.loads((runs / "stale-report.json").read_text())["verdict"]
    assert verdict["passed"] is False and verdict["gate"]["passed"] is True
    assert verdict["errors"][0].startswith("exclusion tiny:TC:zzzzz matches no condition")
    # the exclusion that does apply still applies
    assert f"excluded: tiny BC '{label}' (1 condition): far" in session.stdout


def test_the_ini_exclusions_reach_the_gate(runs):
    from pytest_rnncov.core.metrics import condition_label

    bc, _ = _uncovered_bc_label(runs / "whole.json")
    lines = "".join(
        f"    tiny:BC:{condition_label('BC', bc.config, int(c))} = never reached\n"
        for c in np.flatnonzero(~bc.covered_mask)
    )  # every condition the run misses
    ini = runs / "pytest.ini"
    ini.write_text(f"[pytest]\nrnn_exclude =\n{lines}")
    try:
        done = pytest_run("--rnn-coverage=BC:1.0", cwd=runs)
    finally:
        ini.unlink()
    assert done.returncode == 0, done.stdout[-2000:]
    assert "Required RNN coverage (BC:1) reached." in done.stdout
    failing = pytest_run("--rnn-coverage=BC:1.0", cwd=runs)
    assert failing.returncode == 1


TORCH_MODELS = """
\"\"\"PyTorch factories, imported by the command line.\"\"\"

from torch import nn


class Net(nn.Module):
    def __init__(self, hidden=4, layers=1):
        super().__init__()
        self.rnn = nn.LSTM(3, hidden, num_layers=layers, batch_first=True)
        self.head = nn.Linear(hidden, 2)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out[:, -1])


def make():
    return Net()


def make_wide():
    return Net(hidden=5)


def make_deep():
    return Net(layers=2)


def broken():
    raise RuntimeError("no GPU here")


class Pick(nn.Module):
    def forward(self, out):
        return out[0]


def sequential():
    \"\"\"Recurrent modules named "1" (index 0) and "3" (index 1).\"\"\"
    return nn.Sequential(
        nn.Linear(3, 3), nn.LSTM(3, 4, batch_first=True), Pick(),
        nn.GRU(4, 2, batch_first=True), Pick(),
    )


def state_only():
    return Net().state_dict()


def exits():
    import sys

    sys.exit(0)  # a CI step must not pass on this
"""


class Trap:
    """Unpickling it unsafely (``torch.load(weights_only=False)``) creates ``marker``."""

    def __init__(self, marker):
        self.marker = str(marker)

    def __reduce__(self):
        return (open, (self.marker, "w"))


@pytest.fixture(scope="module")
def torch_files(tmp_path_factory):
    """A folder holding mymodels.py, the state_dict of mymodels.make() as w.pt, the whole
    pickled module as whole.pt, a training checkpoint, a trap as trap.pt and inputs as
    x.npy; and the module whose weights w.pt holds."""
    torch = pytest.importorskip("torch")
    path = tmp_path_factory.mktemp("torch_cli")
    (path / "mymodels.py").write_text(TORCH_MODELS)
    spec = importlib.util.spec_from_file_location("mymodels", path / "mymodels.py")
    models = importlib.util.module_from_spec(spec)
    sys.modules["mymodels"] = models  # so that torch.save can pickle a whole Net
    try:
        spec.loader.exec_module(models)
        torch.manual_seed(0)
        net = models.make()
        torch.save(net.state_dict(), path / "w.pt")
        torch.save(net, path / "whole.pt")
        torch.save({"model": net.state_dict(), "epoch": 3}, path / "checkpoint.pt")
    finally:
        del sys.modules["mymodels"]
    torch.save({"head.weight": Trap(path / "ran")}, path / "trap.pt")
    np.save(path / "x.npy", np.random.default_rng(0).normal(size=(12, 7, 3)).astype(np.float32))
    return path, net


def test_profile_fit_from_a_pytorch_factory_and_its_state_dict(torch_files):
    from pytest_rnncov import Profile, RNNModel

    path, net = torch_files
    done = cli(
        "profile",
        "fit",
        "mymodels:make",
        "--weights",
        "w.pt",
        "--x-train",
        "x.npy",
        "--layer",
        "rnn",
        "--window",
        "1,5",
        "--out",
        "p.json",
        cwd=path,
    )
    assert done.returncode == 0, done.stderr
    assert "profile of lstm layer 'rnn' (window [1, 5], 12 training inputs)" in done.stdout
    assert "Warning" not in done.stderr
    expected = Profile(window=(1, 5)).fit(RNNModel(net, "rnn"), np.load(path / "x.npy"))
    assert Profile.load(path / "p.json").text() == expected.text()


def test_profile_fit_checks_an_output_index_of_a_pytorch_model(torch_files):
    """``--output 7`` on a model returning one tensor wrote a profile and exited 0 (the
    pass fitting a profile stops at the traced layer, before the outputs)."""
    path, _ = torch_files
    args = ("profile", "fit", "mymodels:make", "--weights", "w.pt", "--x-train", "x.npy")
    done = cli(*args, "--out", "p7.json", "--output", "7", cwd=path)
    assert done.returncode == 4
    assert (
        "--output 7; model Net returns one tensor, not a tuple: leave --output out (or pass "
        "--output 0)" in done.stderr
    )
    assert not (path / "p7.json").exists()
    assert cli(*args, "--out", "p0.json", "--output", "0", cwd=path).returncode == 0


@pytest.mark.parametrize(("given", "seen"), [(None, "PASSIVE 4"), ("ACTIVE", "ACTIVE 30")])
def test_profile_fit_sets_idle_thread_waits_before_torch_loads(
    torch_files, monkeypatch, given, seen
):
    """PyTorch's OpenMP runtime and numpy's OpenBLAS read their variables when imported:
    `profile fit` sets OMP_WAIT_POLICY=PASSIVE and OPENBLAS_THREAD_TIMEOUT=4 before it
    loads numpy and the model's module, unless the user set a value."""
    path, _ = torch_files
    (path / "policy.py").write_text(
        "import os\n\nSEEN = os.environ.get('OMP_WAIT_POLICY'), "
        "os.environ.get('OPENBLAS_THREAD_TIMEOUT')\n\nfrom mymodels import make\n"
        "\n\ndef noted():\n    open('seen.txt', 'w').write(' '.join(SEEN))\n    return make()\n"
    )
    monkeypatch.delenv("OMP_WAIT_POLICY", raising=False)
    monkeypatch.delenv("OPENBLAS_THREAD_TIMEOUT", raising=False)
    if given is not None:
        monkeypatch.setenv("OMP_WAIT_POLICY", given)
        monkeypatch.setenv("OPENBLAS_THREAD_TIMEOUT", "30")
    done = cli(
        "profile", "fit", "policy:noted", "--weights", "w.pt", "--x-train", "x.npy",
        "--layer", "rnn", "--out", "policy.json", cwd=path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert (path / "seen.txt").read_text() == seen


@pytest.mark.parametrize(
    ("model", "weights", "message"),
    [
        ("mymodels.make", "w.pt", "has no ':' between the module and the function; give it as"),
        ("mymodels:", "w.pt", "names no function; give it as module:function"),
        ("nomodels:make", "w.pt", "no module 'nomodels' on sys.path (with the current directory"),
        ("mymodels:nothing", "w.pt", "has no 'nothing'; it defines Net, make, make_wide"),
        ("mymodels:broken", "w.pt", "raised RuntimeError: no GPU here; it is called with no"),
        ("mymodels:state_only", "w.pt", "returned a collections.OrderedDict, not a torch.nn"),
        ("mymodels:exits", "w.pt", "called sys.exit(0); it is called with no arguments"),
        ("mymodels:make", "none.pt", "does not exist; save the weights with torch.save(model.st"),
        ("mymodels:make", "checkpoint.pt", "holds a dict whose 'model' is a collections.Or"),
        ("mymodels:make_wide", "w.pt", "other shapes rnn.weight_ih_l0 (16, 3) (the module's (20"),
        ("mymodels:make_deep", "w.pt", "missing rnn.weight_ih_l1, rnn.weight_hh_l1, rnn.bias_ih"),
        ("mymodels:make", None, "needs its weights: add --weights FILE"),
        ("m.keras", "w.pt", "the model file 'm.keras' holds its own weights: drop --weights"),
    ],
)
def test_pytorch_usage_errors_exit_4_and_name_the_value_and_the_fix(
    torch_files, model, weights, message
):
    path, _ = torch_files
    extra = [] if weights is None else ["--weights", weights]
    done = cli("profile", "fit", model, *extra, "--x-train", "x.npy", "--out", "q.json", cwd=path)
    assert done.returncode == 4, done.stdout + done.stderr
    assert message in done.stderr and "Traceback" not in done.stderr
    assert repr(model) in done.stderr or repr(weights) in done.stderr
    assert not (path / "q.json").exists()


@pytest.mark.parametrize(  # io.open pickles as _io.open from Python 3.12
    ("weights", "named"),
    [("whole.pt", "mymodels.Net"), ("trap.pt", f"{io.open.__module__}.open")],
)
def test_a_weights_file_holding_more_than_tensors_is_refused_unread(torch_files, weights, named):
    import torch

    path, _ = torch_files
    done = cli(
        "profile",
        "fit",
        "mymodels:make",
        "--weights",
        weights,
        "--x-train",
        "x.npy",
        "--out",
        "q.json",
        cwd=path,
    )
    assert done.returncode == 4, done.stdout + done.stderr
    assert f"weights file {weights!r} holds more than tensors: it names {named}" in done.stderr
    assert "Save only the weights: torch.save(model.state_dict(), path)" in done.stderr
    assert not (path / "ran").exists()  # the trap never ran
    if weights == "trap.pt":  # and it is armed: loading it unsafely springs it
        torch.load(path / weights, weights_only=False)["head.weight"].close()
        assert (path / "ran").exists()
        (path / "ran").unlink()


def test_a_factory_module_in_the_current_folder_off_sys_path_is_named(torch_files, monkeypatch):
    """A script run from the folder holding mymodels.py (its sys.path starts with the
    script's own folder) was told to run from that folder, where it already was."""
    from pytest_rnncov import InvalidArgument, load_torch_model

    path, _ = torch_files
    monkeypatch.chdir(path)
    here = os.getcwd()
    monkeypatch.setattr(sys, "path", [p for p in sys.path if os.path.abspath(p or ".") != here])
    with pytest.raises(
        InvalidArgument, match=r"mymodels.py \(or mymodels/\) is in the current directory .* not"
    ):
        load_torch_model("mymodels:make", "w.pt")
    (path / "weights").mkdir(exist_ok=True)  # a data folder of the module's name: no hint
    with pytest.raises(InvalidArgument, match=r"no module 'weights' on sys.path \(without"):
        load_torch_model("weights:make", "w.pt")


def test_pytorch_factories_need_torch(torch_files, monkeypatch):
    from pytest_rnncov import MissingResource, load_torch_model

    path, _ = torch_files
    monkeypatch.setitem(sys.modules, "torch", None)  # as if torch were not installed
    with pytest.raises(MissingResource, match=r"pip install 'pytest-rnncov\[torch\]'"):
        load_torch_model("mymodels:make", path / "w.pt")


def test_load_torch_model_takes_a_callable_and_returns_the_module_in_eval_mode(torch_files):
    import torch

    from pytest_rnncov import load_torch_model

    path, net = torch_files
    loaded = load_torch_model(type(net), path / "w.pt")  # the class is a factory too
    assert isinstance(loaded, type(net)) and not loaded.training
    assert all(torch.equal(loaded.state_dict()[k], v) for k, v in net.state_dict().items())


def test_a_weights_archive_that_unpacks_to_more_than_it_holds_is_refused_unread(
    torch_files, tmp_path
):
    """A state_dict re-zipped with deflate made torch.load allocate 1 GB from a 1 MB
    file before any check; torch.save never compresses."""
    import zipfile

    from pytest_rnncov import DataFileError, load_torch_model

    path, net = torch_files
    with zipfile.ZipFile(path / "w.pt") as original:
        entries = [(info, original.read(info)) for info in original.infolist()]
    with zipfile.ZipFile(tmp_path / "deflated.pt", "w", zipfile.ZIP_DEFLATED) as packed:
        for info, data in entries:
            packed.writestr(info.filename, data)
    with pytest.raises(DataFileError, match=r"entry '.*' is compressed, which torch.save never"):
        load_torch_model(type(net), tmp_path / "deflated.pt")
    # an entry claiming more bytes than the file has (its header edited)
    raw = bytearray((path / "w.pt").read_bytes())
    central = raw.rindex(b"PK\x01\x02")  # the last entry's central directory header
    raw[central + 24 : central + 28] = (2**31).to_bytes(4, "little")  # its unpacked size
    (tmp_path / "claims.pt").write_bytes(bytes(raw))
    with pytest.raises(DataFileError, match="claim .* bytes, more than the file's"):
        load_torch_model(type(net), tmp_path / "claims.pt")
    with pytest.raises(DataFileError, match="'/dev/zero' is not a regular file"):
        load_torch_model(type(net), "/dev/zero")
    assert load_torch_model(type(net), path / "w.pt") is not None  # torch.save's own file


def test_per_test_attribution_through_xdist_and_the_report(runs):
    """Each test's recorded count equals what a run of that test alone covered."""
    done = pytest_run("-n", "2", "--rnn-context=test", "--rnn-data=ctx.json", cwd=runs)
    assert done.returncode == 0, done.stdout[-2000:]
    alone = {
        "test_halves.py::test_one": json.loads((runs / "a.json").read_text()),
        "test_halves.py::test_two": json.loads((runs / "b.json").read_text()),
    }
    report = cli("report", "ctx.json", "--tests", "--report", "json:ctx-report.json", cwd=runs)
    assert report.returncode == 0, report.stderr
    model = json.loads((runs / "ctx-report.json").read_text())["models"]["tiny"]
    assert sorted(model["tests"]) == sorted(alone)
    for test, data in alone.items():
        metrics = data["models"]["tiny"]["metrics"]
        expected = {key: metrics[key]["covered"] for key in ("BC", "SC", "TC")}
        assert model["test_summary"]["covered"][test] == expected
        line = f"  {test}: " + ", ".join(f"{k} {v}" for k, v in expected.items())
        assert line in report.stdout
    # each covered condition names the tests that covered it, and only those
    for key in ("BC", "SC", "TC"):
        recorded = model["metrics"][key]["tests"]
        assert recorded["conditions"] == model["metrics"][key]["covered_ids"]
        for condition, first in zip(recorded["conditions"], recorded["first"]):
            names = {model["tests"][i] for i in first}
            covering = {
                t for t, d in alone.items()
                if condition in d["models"]["tiny"]["metrics"][key]["covered_ids"]
            }  # fmt: skip
            assert names == covering
    summary = model["test_summary"]
    assert sorted(summary["minimal"] + summary["adds_nothing"]) == sorted(alone)
    markdown = cli("report", "ctx.json", "--tests", "--format", "markdown", cwd=runs)
    assert "### RNN coverage by test\n\n```text\ntiny: 2 tests recorded" in markdown.stdout


def test_a_ctrl_c_while_report_writes_says_which_files_were_written(runs, monkeypatch, capsys):
    """The command holds a Ctrl-C until its last file is written whole, prints the report
    and which files it wrote, then exits 2 (it once exited printing neither)."""
    import os
    import signal

    from pytest_rnncov import cli as command
    from pytest_rnncov import files

    real, calls, ctrl_c_in = files.write_atomic, [], [1]

    def ctrl_c_in_a_write(*args, **kwargs):
        calls.append(1)
        if len(calls) == ctrl_c_in[0]:
            os.kill(os.getpid(), signal.SIGINT)
        return real(*args, **kwargs)

    monkeypatch.setattr(files, "write_atomic", ctrl_c_in_a_write)
    monkeypatch.chdir(runs)
    reports = ["--report", "json:held.json", "--report", "markdown:held.md"]
    assert command.main(["report", "whole.json", *reports]) == command.INTERRUPTED
    out, err = capsys.readouterr()
    assert "RNN coverage JSON written to" in out and "RNN coverage Markdown written to" in out
    assert "RNN coverage files: Ctrl-C held until each was written whole" in out
    assert err.strip().endswith("report: interrupted")
    assert json.loads((runs / "held.json").read_text())  # whole, not half-written
    calls.clear()  # combine, a Ctrl-C in the report's write: its --out, written before
    ctrl_c_in[0] = 2  # the reports, is named too
    combine = ["combine", "a.json", "b.json", "--out", "held-ab.json", "--report", "json:h2.json"]
    assert command.main(combine) == command.INTERRUPTED
    out, err = capsys.readouterr()
    assert "RNN coverage JSON written to" in out and "held until each was written whole" in out
    assert "combined data of 2 runs written to held-ab.json" in out
    assert err.strip().endswith("combine: interrupted")
    # a Ctrl-C in the --out write itself: held until it is whole, and said
    calls.clear()
    ctrl_c_in[0] = 1
    (runs / "held-ab.json").unlink()
    assert command.main(combine) == command.INTERRUPTED
    out, err = capsys.readouterr()
    assert "combined data of 2 runs written to held-ab.json" in out
    assert json.loads((runs / "held-ab.json").read_text())["models"]
    # ... and one while the reports render (before any is written): --out is named
    from pytest_rnncov.reporting.json_report import JsonReport

    def ctrl_c_while_rendering(self, data, verdict):
        raise KeyboardInterrupt

    monkeypatch.setattr(JsonReport, "render", ctrl_c_while_rendering)
    calls.clear()
    ctrl_c_in[0] = 0
    assert command.main(combine) == command.INTERRUPTED
    out, err = capsys.readouterr()
    assert "combined data of 2 runs written to held-ab.json" in out
    # ... and the reports that were not: the folder held the new data beside old reports
    assert "reports not written: interrupted while they were drawn (the files there are as" in err
    assert "h2.json" in err


def test_a_reader_that_went_away_leaves_the_exit_code_as_it_was(tmp_path):
    """``show missing.json 2>&1 | head -0``: the error could not be printed, and the
    command exited 1 from the broken pipe instead of its own 4 (and 0 for a good file)."""
    for args, code in ((["show", "missing.json"], 4), (["--help"], 0)):
        process = subprocess.Popen(
            [sys.executable, "-m", "pytest_rnncov", *args],
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )
        process.stdout.close()  # before the command writes anything
        assert process.wait(timeout=120) == code


def test_an_escaped_lone_surrogate_is_refused_as_a_file_error_not_a_traceback(runs):
    """'\\ud800' in a JSON string parses, but no UTF-8 output can hold it: report, combine
    and the plugin's Markdown report crashed printing or writing it (a paired escape, an
    emoji, is a character and reads as one)."""
    text = (runs / "whole.json").read_text()
    (runs / "half.json").write_text(text.replace('"tiny"', '"t\\ud800iny"', 1))
    (runs / "pair.json").write_text(text.replace('"tiny"', '"t\\ud83d\\ude00iny"'))
    for args in (["report", "half.json"], ["combine", "half.json", "a.json"]):
        done = cli(*args, "--rnn-coverage=0.01", cwd=runs)
        assert done.returncode == 4, done.stderr
        assert "half.json" in done.stderr and "'\\ud800', an escaped lone surrogate" in done.stderr
        assert "Traceback" not in done.stderr
    done = cli("report", "pair.json", "--report", "markdown:pair.md", cwd=runs)
    assert done.returncode == 0, done.stderr
    assert "t\U0001f600iny" in (runs / "pair.md").read_text()
    baseline = (runs / "base.json").read_text().replace('"tiny"', '"t\\ud800iny"', 1)
    (runs / "half-base.json").write_text(baseline)
    done = pytest_run("--rnn-compare=half-base.json", "--rnn-report=markdown:m.md", cwd=runs)
    assert done.returncode == 4 and "an escaped lone surrogate" in done.stderr
    assert not (runs / "m.md").exists()


def test_a_source_named_in_no_encoding_is_written_as_it_shows(runs, tmp_path):
    """A file name that is not UTF-8 went into 'sources' as a lone surrogate: combine
    exited 0 and wrote a file that report then refused."""
    name = os.fsdecode(b"job\xe9.json")
    shutil.copy(runs / "a.json", tmp_path / name)
    done = cli("combine", name, "--out", "combined.json", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads((tmp_path / "combined.json").read_text())["sources"] == ["job\\udce9.json"]
    assert cli("report", "combined.json", cwd=tmp_path).returncode == 0
    from pytest_rnncov.validation import path_text  # campaigns' saved_to: the same

    assert path_text(tmp_path / name) == f"{tmp_path}/job\\udce9.json"


def test_stdout_that_cannot_be_written_is_an_error_not_a_gate_failure(runs):
    """> /dev/full (a full disk under a job summary): a traceback and exit 1, which CI
    reads as the gate failing."""
    with open("/dev/full", "w") as full:
        done = subprocess.run(
            [sys.executable, "-m", "pytest_rnncov", "report", "whole.json"],
            cwd=runs,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
        )
    assert done.returncode == 4, done.stderr
    assert "could not write to stdout (No space left on device)" in done.stderr
    assert "Traceback" not in done.stderr and "Exception ignored" not in done.stderr


def test_a_bar_given_again_takes_the_later_value_as_in_the_plugin(runs):
    done = cli("report", "whole.json", "--rnn-coverage=BC:0.99", "--rnn-coverage=BC:0.01", cwd=runs)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "BC:0.01" in done.stdout and "0.99" not in done.stdout
    refused = cli("report", "whole.json", "--rnn-coverage=BC:0.99,BC:0.01", cwd=runs)
    assert refused.returncode == 4 and "is given twice" in refused.stderr


def test_what_an_array_file_holds_decides_not_its_name(model_files):
    """An .npz whose name ends otherwise could not be read: without the key "pick one
    with --x-train-key", with it "is one array: drop --x-train-key"."""
    x = np.load(model_files / "x.npy")
    with open(model_files / "inputs.NPZ", "wb") as file:
        np.savez(file, a=x, b=x[:2])
    done = cli(
        "profile", "fit", "m.keras", "--x-train", "inputs.NPZ", "--x-train-key", "a",
        "--out", "p.json", cwd=model_files,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"{len(x)} training inputs" in done.stdout
    refused = cli(
        "profile", "fit", "m.keras", "--x-train", "x.npy", "--x-train-key", "a",
        "--out", "q.json", cwd=model_files,
    )  # fmt: skip
    assert refused.returncode == 4
    assert "'x.npy' is one array (.npy): drop --x-train-key" in refused.stderr


def test_profile_fit_takes_a_number_as_a_layers_name_where_the_model_has_one(torch_files):
    """nn.Sequential names its children by digits: a profile of layer '1' (which a stale
    profile's hint names so) was refitted on the recurrent layer of index 1, '3'."""
    import torch

    path, _ = torch_files
    sys.path.insert(0, str(path))
    try:
        import mymodels

        torch.manual_seed(0)
        torch.save(mymodels.sequential().state_dict(), path / "seq.pt")
    finally:
        sys.path.remove(str(path))
        sys.modules.pop("mymodels", None)
    for layer, traced in (("1", "lstm layer '1'"), ("3", "gru layer '3'"), ("0", "lstm layer '1'")):
        done = cli(
            "profile", "fit", "mymodels:sequential", "--weights", "seq.pt", "--x-train",
            "x.npy", "--layer", layer, "--out", f"seq{layer}.json", cwd=path,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert f"profile of {traced} " in done.stdout  # '0' is no recurrent name: an index
    refused = cli(
        "profile", "fit", "mymodels:sequential", "--weights", "seq.pt", "--x-train", "x.npy",
        "--layer", "2", "--out", "bad.json", cwd=path,
    )  # fmt: skip
    assert refused.returncode == 4
    assert "--layer 2 is no index of a recurrent module (0 to 1)" in refused.stderr


def test_option_words_leave_quoted_names_and_paths_alone(tmp_path):
    """profile fit rewrites RNNModel's and Profile's argument names into its options; it
    rewrote a folder named batch_size=32 in a path too."""
    folder = tmp_path / "batch_size=32"
    folder.mkdir()
    (folder / "m.onnx").write_bytes(b"not a model")
    np.save(tmp_path / "x.npy", np.zeros((2, 3, 1), np.float32))
    done = cli(
        "profile", "fit", "batch_size=32/m.onnx", "--x-train", "x.npy", "--out", "p.json",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 4
    assert "batch_size=32/m.onnx'" in done.stderr and "--batch-size" not in done.stderr
    missing = cli("profile", "fit", "gone.onnx", "--x-train", "x.npy", "--out", "p.json",
                  cwd=tmp_path)  # fmt: skip
    assert "'gone.onnx' is no file" in missing.stderr
    assert "pass the path of a .keras, .h5 or .onnx file" in missing.stderr


def test_option_words_make_one_command_of_a_layer_and_its_direction():
    """'pass layer='bi', direction='backward'' became '--layer 'bi', --direction ...': the
    comma went into the layer's name when copied; an ONNX node's direction= is its own."""
    from pytest_rnncov.cli import _in_option_words
    from pytest_rnncov.errors import ModelError

    said = _in_option_words(
        ModelError("layer='bi/backward' is not a recurrent module of Net; for one direction "
                   "of a layer pass layer='bi', direction='backward'")
    )  # fmt: skip
    assert type(said) is ModelError
    assert str(said).endswith("pass --layer 'bi' --direction 'backward'")
    node = "node 'x' has direction='reverse'; ONNX"
    assert str(_in_option_words(ModelError(node))) == node


def test_a_markdown_report_is_added_to_the_ci_step_summary(runs, monkeypatch):
    """$GITHUB_STEP_SUMMARY is the step's: every command appends to it. A report there was
    refused when an earlier command had written to it, and a second pytest run in the step
    replaced the first one's report."""
    summary = runs / "gh_summary.md"
    summary.write_text("## Unit tests\n\n42 passed\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    done = cli("report", "whole.json", "--report", f"markdown:{summary}", cwd=runs)
    assert done.returncode == 0, done.stderr
    first = summary.read_text()
    assert first.startswith(
        "## Unit tests\n\n42 passed\n\n<!-- pytest-rnncov report -->\n### RNN coverage"
    )
    again = cli("report", "a.json", "--report", "markdown:gh_summary.md", cwd=runs)
    assert again.returncode == 0, again.stderr  # named relatively: the same file
    both = summary.read_text()
    assert both.startswith(first) and both.count("<!-- pytest-rnncov report -->") == 2
    monkeypatch.delenv("GITHUB_STEP_SUMMARY")  # any other file is a user's, as before
    refused = cli("report", "whole.json", "--report", f"markdown:{summary}", cwd=runs)
    assert refused.returncode != 0
    assert "would replace a file pytest-rnncov did not write" in refused.stderr
    assert summary.read_text() == both
