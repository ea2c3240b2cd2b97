"""The pytest plugin, run end to end in pytester projects."""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys

import keras  # noqa: F401  (loaded once here: pytester's in-process runs must not re-import TF)
import numpy as np
import pytest

from pytest_rnncov.core.metrics import METRICS
from pytest_rnncov.core.names import METRIC_NAMES

CONFTEST = """
import os
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np
import pytest


@pytest.fixture(scope="session")
def tiny(rnncov):
    import keras

    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((6, 2)), keras.layers.LSTM(4, return_sequences=True, name="lstm"),
         keras.layers.Flatten(), keras.layers.Dense(2)],
        name="tiny",
    )
    x_train = np.random.default_rng(0).normal(size=(64, 6, 2)).astype("float32")
    return rnncov.track(model, x_train=x_train, window=(1, 5), name="tiny")


def inputs(seed, n=16):
    return np.random.default_rng(seed).normal(size=(n, 6, 2)).astype("float32")
"""

TESTS = """
from conftest import inputs


def test_one(tiny):
    assert tiny.predict(inputs(1)).shape == (16, 2)


def test_two(tiny):
    tiny.observe(inputs(2))
"""


@pytest.fixture
def project(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_feed=TESTS)
    return pytester


def test_metric_names_are_defined_once():
    assert tuple(METRICS) == METRIC_NAMES


def test_gate_met_exits_zero_and_prints_the_section(project):
    result = project.runpytest("--rnn-coverage=0.05")
    result.assert_outcomes(passed=2)
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "*- RNN coverage -*",
            "model*layer*window*inputs*BC*SC*TC",
            "tiny*lstm*[[]1, 5]*32*% (*/5)*% (*/5)*% (*/243)",
            "Required RNN coverage of 5% reached.",
        ]
    )
    result.stdout.fnmatch_lines(["rnncov: gate 0.05 on BC,SC,TC, seed 0"])


def test_gate_missed_exits_one_naming_the_metric(project):
    result = project.runpytest("--rnn-coverage=1.0")
    result.assert_outcomes(passed=2)
    assert result.ret == 1
    result.stdout.fnmatch_lines(["FAIL Required RNN coverage of 100% not reached: *TC *% (*/243)*"])
    quiet = project.runpytest_subprocess("-p", "no:terminal", "--rnn-coverage=1.0")
    assert quiet.ret == 1  # no terminal reporter: the verdict goes to stderr, not nowhere
    quiet.stderr.fnmatch_lines(["FAIL Required RNN coverage of 100% not reached: *TC *% (*/243)*"])
    assert "RNN coverage" not in quiet.stdout.str()


def test_gate_with_no_tracked_model_fails_and_the_json_agrees(pytester):
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest("--rnn-coverage=0.5", "--rnn-report=json:r.json")
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        ["FAIL Required RNN coverage of 50% not reached: no model was tracked*"]
    )
    data = json.loads((pytester.path / "r.json").read_text())
    assert data["verdict"]["passed"] is False and data["verdict"]["gate"]["no_model"] is True


@pytest.mark.parametrize(
    ("given", "options", "seen", "header"),
    [
        (None, ["--rnn-coverage=0"], ("PASSIVE", "4"), True),  # set before conftest files load
        (("ACTIVE", "30"), ["--rnn-coverage=0"], ("ACTIVE", "30"), False),  # the user's wins
        (("", " "), ["--rnn-coverage=0"], ("PASSIVE", "4"), True),  # empty: refused, so unset
        (None, ["--no-rnn"], (None, None), False),  # switched off: left alone
        (None, ["@args.txt", "--rnn-coverage=0"], (None, None), False),  # --no-rnn in a file
        (None, [], ("PASSIVE", "4"), True),  # not asked for: set, and the header says so
    ],
)
def test_idle_threads_sleep_unless_the_user_chose(
    pytester, monkeypatch, given, options, seen, header
):
    """PyTorch's OpenMP runtime and numpy's OpenBLAS read their variables when they load:
    the plugin sets OMP_WAIT_POLICY=PASSIVE and OPENBLAS_THREAD_TIMEOUT=4 before conftest
    files load (and says so in the header, also in a session that asks for nothing else),
    unless they are set."""
    names = ("OMP_WAIT_POLICY", "OPENBLAS_THREAD_TIMEOUT")
    for name, value in zip(names, given or (None, None)):
        monkeypatch.delenv(name, raising=False)
        if value is not None:
            monkeypatch.setenv(name, value)
    pytester.makefile(".txt", args="--no-rnn\n")
    pytester.makeconftest(f"import os\nSEEN = tuple(os.environ.get(n) for n in {names!r})\n")
    pytester.makepyfile(
        f"from conftest import SEEN\n\ndef test_policy():\n    assert SEEN == {seen!r}\n"
    )
    result = pytester.runpytest_subprocess("-p", "no:xdist", *options)
    result.assert_outcomes(passed=1)
    said = "OMP_WAIT_POLICY=PASSIVE, OPENBLAS_THREAD_TIMEOUT=4 (set by pytest-rnncov"
    assert (said in result.stdout.str()) == header


def test_idle_threads_of_a_library_already_loaded_are_left_alone(pytester, monkeypatch):
    """A plugin loaded before this one imported numpy: OpenBLAS has read its variable, so
    the plugin sets only OMP_WAIT_POLICY and the header says only that."""
    for name in ("OMP_WAIT_POLICY", "OPENBLAS_THREAD_TIMEOUT"):
        monkeypatch.delenv(name, raising=False)
    pytester.makepyfile(early_numpy="import numpy\n")
    pytester.makeconftest(
        "import os\nSEEN = (os.environ.get('OMP_WAIT_POLICY'), "
        "os.environ.get('OPENBLAS_THREAD_TIMEOUT'))\n"
    )
    pytester.makepyfile(
        "from conftest import SEEN\n\ndef test_policy():\n    assert SEEN == ('PASSIVE', None)\n"
    )
    result = pytester.runpytest_subprocess(
        "-p", "no:xdist", "-p", "early_numpy", "--rnn-coverage=0"
    )
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["*seed 0, OMP_WAIT_POLICY=PASSIVE (set by pytest-rnncov; your own values win)"]
    )


def test_no_section_when_plugin_unused(pytester):
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest()
    assert result.ret == 0
    assert "RNN coverage" not in result.stdout.str() and "rnncov: gate" not in result.stdout.str()


HEAVY_PROBE = """
import sys

def pytest_unconfigure(config):
    heavy = [m for m in ("numpy", "tensorflow", "torch", "jax", "keras") if m in sys.modules]
    print("HEAVY", heavy)
"""


def test_an_unused_plugin_imports_nothing_heavy(pytester):
    pytester.makeconftest(HEAVY_PROBE)
    pytester.makepyfile("def test_nothing():\n    pass\n")
    result = pytester.runpytest_subprocess()
    assert result.ret == 0
    result.stdout.fnmatch_lines(["HEAVY []"])
    # under xdist too: workers that did not use the plugin are not reported as missing
    result = pytester.runpytest_subprocess("-n", "2", "-p", "xdist")
    assert result.ret == 0
    assert "RNN coverage" not in result.stdout.str()
    # asking for the plugin (a gate) sets it up: the gate then fails with no tracked model
    result = pytester.runpytest_subprocess("--rnn-coverage=0.5")
    assert result.ret == 1
    result.stdout.fnmatch_lines(["*no model was tracked*"])


def test_gate_metrics_option_restricts_the_gate(project):
    # 32 inputs reach at most 32 of TC's 243 words (13%); NC (h > 0 on 20 neurons) is high
    everything = project.runpytest("--rnn-coverage=0.3", "--rnn-report=json:a.json")
    assert everything.ret == 1
    everything.stdout.fnmatch_lines(["FAIL Required RNN coverage of 30% not reached: *TC *"])
    only_nc = project.runpytest(
        "--rnn-coverage=0.3", "--rnn-metrics=NC", "--rnn-report=term", "--rnn-report=json:b.json"
    )
    assert only_nc.ret == 0
    only_nc.stdout.fnmatch_lines(["model*BC*SC*TC*NC*", "Required RNN coverage of 30% reached."])
    gated = json.loads((project.path / "b.json").read_text())["models"]["tiny"]["metrics"]
    assert gated["NC"]["pass"] is True and gated["TC"]["pass"] is None  # TC is not gated


def test_json_report_schema(project):
    result = project.runpytest(
        "--rnn-coverage=1.0", "--rnn-report=json:out/cov.json", "--rnn-report=term"
    )
    assert result.ret == 1
    data = json.loads((project.path / "out" / "cov.json").read_text())
    assert data["format"] == "pytest-rnncov-report" and data["version"] == 3
    assert data["verdict"]["gate"]["required"] == 1.0
    assert data["verdict"]["gate"]["gate_metrics"] == ["BC", "SC", "TC"]
    assert data["verdict"]["passed"] is False
    tiny = data["models"]["tiny"]
    assert tiny["layer"] == "lstm" and tiny["window"] == [1, 5] and tiny["inputs"] == 32
    tc = tiny["metrics"]["TC"]
    assert tc["total"] == 243 and tc["covered"] == len(tc["covered_ids"])
    assert tc["rate"] == pytest.approx(tc["covered"] / 243)
    assert tc["threshold"] == 1.0 and tc["pass"] is False
    assert data["adversarial"] == []
    result.stdout.fnmatch_lines(["RNN coverage JSON written to out/cov.json"])


def test_term_detail_lists_uncovered_steps_and_word_spread(project):
    result = project.runpytest("--rnn-report=term-detail")
    result.stdout.fnmatch_lines(
        [
            "tiny:",
            "  BC(f/avg, alpha_max=0.8): uncovered steps *",
            "  SC(h/delta, alpha_sc=0.6): uncovered steps *",
            "  TC(h/net, w=5, a=3): * of 243 words; covered words by symbol at each position: "
            "1: a *",
        ]
    )


def test_ini_options(project):
    project.makeini("[pytest]\nrnn_coverage = 1.0\nrnn_report =\n    json:ini.json\n    term\n")
    result = project.runpytest()
    assert result.ret == 1
    assert json.loads((project.path / "ini.json").read_text())["verdict"]["gate"]["required"] == 1.0
    project.makeini("[pytest]\nrnn_coverage = 90\n")
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*rnn_coverage = '90': coverage bar '90': 90 is not a fraction in [[]0, 1]; "
            "for 90% use 0.9*"
        ]
    )


@pytest.mark.parametrize(
    ("key", "message"),
    [
        ("rnn_seed", "*rnn_seed = [[]1, 2]: '[[]1, 2]' is not an integer seed; write a whole*"),
        ("rnn_data", "*rnn_data = [[]1, 2]: give one file path*"),
        ("rnn_compare_tolerance", "*rnn_compare_tolerance = [[]1, 2]: * is not a number*"),
        ("rnn_context", "*rnn_context = [[]1, 2]: the one context is test*"),
        ("rnn_samples", "*ini option rnn_samples = [[]1, 2]: give a folder, e.g. rnn_samples = *"),
    ],
)
def test_a_toml_list_for_a_one_value_key_is_refused_by_name_without_pytest_noise(
    project, key, message
):
    """pytest 9 warns plugins when a TOML list reaches a string key; the user gets only the
    plugin's usage error, which names the key and the value."""
    project.makepyprojecttoml(f"[tool.pytest.ini_options]\n{key} = [1, 2]\n")
    result = project.runpytest_subprocess()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert "Warning" not in result.stderr.str() + result.stdout.str()


@pytest.mark.skipif(
    pytest.version_tuple[:2] < (9, 2), reason="pytest < 9.2 has no [tool.pytest] type unions"
)
def test_native_toml_table_takes_numbers_and_lists_as_documented(project):
    """pytest 9's own ``[tool.pytest]`` table keeps TOML types: a seed and a tolerance may be
    numbers there, the list keys are lists (docs/options.md's example)."""
    project.makepyprojecttoml(
        "[tool.pytest]\n"
        'rnn_coverage = ["BC:0.01", "TC:0.01"]\n'
        'rnn_metrics = ["BC", "SC", "TC"]\n'
        'rnn_report = ["term", "json:reports/rnncov.json"]\n'
        "rnn_seed = 7\n"
        "rnn_compare_tolerance = 0.25\n"
    )
    result = project.runpytest()
    assert result.ret == 0
    result.stdout.fnmatch_lines(["rnncov: gate BC:0.01,TC:0.01, seed 7"])
    report = json.loads((project.path / "reports" / "rnncov.json").read_text())
    assert report["verdict"]["gate"]["passed"] is True
    project.makepyprojecttoml("[tool.pytest]\nrnn_seed = 1.5\n")
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*'rnn_seed' expects one of string | int, got float: 1.5*"])


@pytest.mark.parametrize(
    ("ini", "message"),
    [  # pytest 9.2 read number keys with int()/float() first: 0_1 was a tolerance of 1.0
        ("rnn_compare_tolerance = 0_1", "*rnn_compare_tolerance = '0_1': '0_1' holds '_'*"),
        ("rnn_seed = 1_000", "*rnn_seed = '1_000': seed '1_000' holds '_'*"),
        ("rnn_seed = \u0663", "*rnn_seed = '\u0663': seed '\u0663' holds non-ASCII characters*"),
        # the path lost its separator and a file took the folder's name
        (
            "rnn_data = sub/",
            "*: ini option rnn_data '*sub/' ends in a separator (a folder); give a file*",
        ),
        ("rnn_report = json:rep/", "*: ini option rnn_report json: '*rep/' ends in a separator*"),
        # a path from the ini file is named by its key, not by the option the user never typed
        ("rnn_samples = out.json", "*: ini option rnn_samples '*out.json' exists and is not a*"),
        (
            "rnn_data = out.json\nrnn_report = json:out.json",
            "*: ini option rnn_data '*out.json' would collide with ini option rnn_report json: *",
        ),
        # shlex's words: "No closing quotation" named neither key nor value
        ('rnn_coverage = "0.1', "*ini option rnn_coverage: No closing quotation; close each*"),
        ("rnn_coverage = *:TC:0.1", "*'*:TC:0.1': '[*]' is not a model; for every model write*"),
        (
            "rnn_exclude =\n    tiny:BC:t=1 = one\n    tiny:BC:t=1 = two",
            "*tiny:BC:t=1 is excluded twice (reasons 'one' and 'two'); keep one",
        ),
    ],
)
def test_ini_values_are_read_by_the_options_rules(project, ini, message):
    project.makefile(".json", out="{}")
    project.makeini(f"[pytest]\n{ini}\n")
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    result.stderr.fnmatch_lines([message])
    assert not (project.path / "sub").exists() and not (project.path / "rep").exists()


def test_ini_bars_may_space_around_their_colons(project):
    """pytest splits an ini string at spaces: 'BC: 0.5' read as the bars 'BC:' and '0.5'."""
    project.makeini("[pytest]\nrnn_coverage = BC: 0.01 TC :0.01\n")
    result = project.runpytest()
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["rnncov: gate BC:0.01,TC:0.01, seed 0"])


@pytest.mark.parametrize("value", ["99999999999999999999", "\u0662", "x", "-1"])
def test_a_wrong_blas_thread_count_is_a_usage_error(project, monkeypatch, value):
    """A huge count raised a bare ctypes OverflowError in every test; Unicode digits passed."""
    monkeypatch.setenv("RNNCOV_BLAS_THREADS", value)
    result = project.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*RNNCOV_BLAS_THREADS=*; use a number of threads from 0 to 1024*"])


def test_no_rnn_says_what_it_switched_off(project):
    """A stray --no-rnn (PYTEST_ADDOPTS, a CI template) turned a gate asked for off with
    no trace in the log; the summary now says so, as pytest-cov's --no-cov does."""
    project.makeini("[pytest]\nrnn_coverage = 0.9\n")
    result = project.runpytest("--no-rnn", "--rnn-data=d.json")
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "WARNING pytest-rnncov is off (--no-rnn): the gate (--rnn-coverage), the data "
            "file (--rnn-data) asked for but not applied"
        ]
    )
    assert not (project.path / "d.json").exists()
    project.makeini("[pytest]\n")
    quiet = project.runpytest("--no-rnn")
    assert "pytest-rnncov is off" not in quiet.stdout.str()


def test_no_rnn_refuses_a_wrong_ini_seed_once(project):
    """Under --no-rnn a wrong rnn_seed was a traceback in every test (exit 1)."""
    project.makeini("[pytest]\nrnn_seed = abc\n")
    result = project.runpytest("--no-rnn")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ini option rnn_seed = 'abc': 'abc' is not an integer seed*"])


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["--rnn-coverage=90"],
            "*--rnn-coverage: coverage bar '90': 90 is not a fraction in [[]0, 1]; for 90% use 0.9",
        ),
        (["--rnn-coverage=-0.1"], "*--rnn-coverage: *-0.1 is not a fraction in [[]0, 1]"),
        (["--rnn-coverage=high"], "*'high' is not a number*"),
        (["--rnn-coverage=XX:0.5"], "*unknown metric 'XX'*"),
        (["--rnn-coverage=BC:0.5,BC:0.6"], "*'BC:0.6' is given twice*"),
        (["--rnn-coverage=a:b:c:d"], "*write BAR, METRIC:BAR or MODEL:METRIC:BAR*"),
        (["--rnn-seed=-1"], "*-1 is not a seed in [[]0, 2**63 - 1]*"),
        (["--rnn-compare-tolerance=nan"], "*nan is not a fraction*"),
        (["--rnn-compare-tolerance=0.1"], "*compares nothing without --rnn-compare=NAME*"),
        (["--rnn-metrics=BC,XX"], "*--rnn-metrics: unknown metric XX; choose from BC,SC,TC*"),
        (["--rnn-report=xml"], "*unknown report type 'xml'*"),
        (["--rnn-seed=x"], "*'x' is not an integer seed; write a whole number, e.g. 0"),
        (["--rnn-coverage=*:*:0.5"], "*'[*]' is not a model; for every model write 0.5"),
        (["--rnn-exclude=*:BC:t=1 = r"], "*'[*]' is not a model; an exclusion names the model*"),
        (
            ["--rnn-exclude=tiny:BC:t=1 = a", "--rnn-exclude=tiny:BC:t=1 = b"],
            "*tiny:BC:t=1 is excluded twice (reasons 'a' and 'b'); keep one",
        ),
        (["--rnn-data="], "*--rnn-data='': give a file path*"),
        (
            ["--rnn-report=json:r.json", "--rnn-data=r.json"],
            "*--rnn-data * would collide with --rnn-report=json: *r.json*",
        ),
        (
            ["--rnn-report=html:out", "--rnn-report=json:out/index.html"],
            "*lies inside the folder of --rnn-report=html: *out*",
        ),
    ],
)
def test_bad_option_values(pytester, args, message):
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_no_rnn_switches_everything_off(project):
    result = project.runpytest("--no-rnn", "--rnn-coverage=1.0")
    assert result.ret == 0
    assert "RNN coverage" not in result.stdout.str()


MARKED = """
import pytest
from conftest import inputs


@pytest.mark.rnn_coverage(min=0.01, metrics=["BC", "TC"], model="tiny")
def test_enough(tiny):
    tiny.predict(inputs(3))


@pytest.mark.rnn_coverage(min=1.0, metrics=["TC"])
def test_too_little(tiny):
    tiny.predict(inputs(4, n=3))


@pytest.mark.rnn_coverage(min=0.5)
def test_feeds_nothing(tiny):
    pass


def test_unmarked_feeds_more(tiny):
    tiny.predict(inputs(5))
"""


def test_marker_passes_and_fails_with_a_message(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_marked=MARKED)
    result = pytester.runpytest()
    result.assert_outcomes(passed=2, failed=2)
    result.stdout.fnmatch_lines(
        [
            "*RNN coverage of the inputs this test fed is below 100%:",
            "*  tiny: TC *% (*/243, * uncovered)",
        ]
    )
    result.stdout.fnmatch_lines(["*this test fed no inputs to a tracked model*"])
    # 3 + 16 + 16 inputs reached the session coverage
    result.stdout.fnmatch_lines(["tiny*lstm*35*"])


def test_plugin_import_loads_nothing_heavy(pytester):
    pytester.makepyfile("def test_nothing():\n    pass\n")
    code = (
        "import sys, pytest\n"
        f"code = pytest.main([{str(pytester.path)!r}, '-q', '-p', 'no:cacheprovider'])\n"
        "heavy = [m for m in ('tensorflow', 'keras', 'tf_keras', 'rdkit', 'nltk')\n"
        "         if m in sys.modules]\n"
        "assert 'pytest_rnncov.plugin' in sys.modules, 'plugin not loaded'\n"
        "print('HEAVY', heavy)\n"
        "sys.exit(code)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "HEAVY []" in done.stdout


XDIST_TESTS = """
import pytest
from conftest import inputs


@pytest.mark.parametrize("seed", range(6))
def test_feed(tiny, seed):
    tiny.predict(inputs(seed, n=4 + seed))
"""


def test_xdist_workers_merge_to_the_same_numbers(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_x=XDIST_TESTS)
    serial = pytester.runpytest_subprocess(
        "-n", "0", "--rnn-report=json:serial.json", "-p", "xdist"
    )
    assert serial.ret == 0
    parallel = pytester.runpytest_subprocess(
        "-n", "2", "--rnn-report=json:parallel.json", "--rnn-report=term"
    )
    assert parallel.ret == 0
    a = json.loads((pytester.path / "serial.json").read_text())["models"]["tiny"]
    b = json.loads((pytester.path / "parallel.json").read_text())["models"]["tiny"]
    assert a["inputs"] == b["inputs"] == sum(4 + s for s in range(6))
    for name in ("BC", "SC", "TC"):
        assert a["metrics"][name]["covered_ids"] == b["metrics"][name]["covered_ids"]
    parallel.stdout.fnmatch_lines(["*- RNN coverage -*", "tiny*lstm*39*"])


CRASHING = """
import os
from conftest import inputs


def test_crashes(tiny):
    tiny.predict(inputs(2))
    os._exit(1)
"""

FEEDING = """
from conftest import inputs


def test_feeds(tiny):
    tiny.predict(inputs(1))
"""


def test_crashing_worker_keeps_other_workers_data(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_a_crash=CRASHING, test_b_feed=FEEDING)
    # --dist loadfile: each file goes to its own worker
    result = pytester.runpytest_subprocess(
        "-n",
        "2",
        "--dist",
        "loadfile",
        "--max-worker-restart=0",
        "--rnn-report=json:c.json",
        "--rnn-coverage=0.01",
    )
    assert result.ret == 1  # the crashed test fails
    result.stdout.fnmatch_lines(["*worker 'gw?' crashed while running*"])
    result.stdout.fnmatch_lines(
        ["FAIL RNN coverage gate not applied: worker gw? did not send all its coverage data*"]
    )
    data = json.loads((pytester.path / "c.json").read_text())
    assert data["models"]["tiny"]["inputs"] == 16  # the other worker's inputs survive
    assert data["verdict"]["complete"] is False and len(data["verdict"]["missing_workers"]) == 1
    assert data["verdict"]["passed"] is False  # a gate on partial data is never decided


CAMPAIGN_TESTS = """
import numpy as np
from pytest_rnncov import GaussianMutator, Oracle


def test_generate(tiny, rnncov, tmp_path_factory):
    seeds = rnncov.rng().random((8, 6, 2)).astype("float32")
    campaign = tiny.campaign(seeds, GaussianMutator(variance=(0.1, 0.2)), Oracle(radius=None),
                             budget=120, output_dir="adv-out")
    result = campaign.run()
    assert result.test_cases == 120
"""


def test_campaign_results_reach_the_adversarial_section_and_json(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_gen=CAMPAIGN_TESTS)
    result = pytester.runpytest("--rnn-report=term", "--rnn-report=json:r.json", "--rnn-seed=3")
    assert result.ret == 0
    result.stdout.fnmatch_lines(
        [
            "*- RNN adversarial samples -*",
            "model*test cases*adversarial*adversary rate*unique seeds*avg perturbation*saved to",
            "tiny*120*adv-out",
        ]
    )
    data = json.loads((pytester.path / "r.json").read_text())
    (campaign,) = data["adversarial"]
    assert campaign["test_cases"] == 120 and campaign["saved_to"] == "adv-out"
    assert data["models"]["tiny"]["inputs"] == 128  # seeds + generated cases fed the session
    # a JSON report alone replaces the terminal tables: both of them, as pytest-cov does
    quiet = pytester.runpytest("--rnn-report=json:q.json", "--rnn-seed=3", "--rnn-data=d.json")
    assert quiet.ret == 0
    assert "- RNN coverage -" not in quiet.stdout.str()
    assert "- RNN adversarial samples -" not in quiet.stdout.str()
    assert json.loads((pytester.path / "q.json").read_text())["adversarial"]
    # the command line's report does the same (it kept the samples table)
    for reports, shown in ((["--report", "json:c.json"], False), ([], True)):
        done = subprocess.run(
            [sys.executable, "-m", "pytest_rnncov", "report", "d.json", *reports],
            cwd=pytester.path,
            capture_output=True,
            text=True,
        )
        assert done.returncode == 0, done.stderr
        assert ("- RNN coverage -" in done.stdout) is shown
        assert ("- RNN adversarial samples -" in done.stdout) is shown


def test_a_campaign_whose_samples_could_not_be_saved_names_no_folder(pytester):
    """The folder may hold an earlier campaign's samples: "saved to" named it anyway."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        test_gen="""
import pytest
from pytest_rnncov import DataFileError, GaussianMutator, Oracle
from pytest_rnncov.reporting.samples import SampleWriter


def test_generate(tiny, rnncov, monkeypatch):
    def full(self, campaign, result):
        raise DataFileError("cannot write the summary: No space left on device")

    monkeypatch.setattr(SampleWriter, "on_finish", full)
    seeds = rnncov.rng().random((8, 6, 2)).astype("float32")
    campaign = tiny.campaign(seeds, GaussianMutator(variance=(0.1, 0.2)), Oracle(radius=None),
                             budget=120, output_dir="adv-out")
    with pytest.raises(DataFileError, match="No space left"):
        campaign.run()
"""
    )
    result = pytester.runpytest("--rnn-report=json:r.json", "--rnn-seed=3")
    assert result.ret == 0, result.stdout.str()
    (campaign,) = json.loads((pytester.path / "r.json").read_text())["adversarial"]
    assert campaign["test_cases"] == 120 and campaign["saved_to"] is None


def test_samples_that_cannot_be_written_cost_only_the_samples(pytester):
    """The samples folder fails mid-campaign (here it becomes a file, as a full disk makes
    every write fail): the campaign went on as if nothing happened (it once stopped at the
    first sample, failed the test and cut the coverage short), the samples are named as
    not saved, and the run exits 1 with an ERROR line, as for a report it cannot write."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        test_gen="""
import shutil
from pathlib import Path
from pytest_rnncov import GaussianMutator, Oracle


class FillTheDisk:
    def on_adversarial(self, campaign, sample):
        folder = Path("adv-out")
        if not folder.is_file():
            shutil.rmtree(folder, ignore_errors=True)
            folder.write_text("not a folder")


def test_generate(tiny, rnncov):
    seeds = rnncov.rng().random((8, 6, 2)).astype("float32")
    mutator = GaussianMutator(variance=(0.5, 1.0), clip=None)  # flips the untrained model
    campaign = tiny.campaign(seeds, mutator, Oracle(radius=None),
                             budget=120, output_dir="adv-out", listeners=[FillTheDisk()])
    result = campaign.run()
    assert result.test_cases == 120 and result.adversarial > 0 and not result.interrupted
"""
    )
    result = pytester.runpytest("--rnn-report=term", "--rnn-report=json:r.json", "--rnn-seed=3")
    assert result.ret == 1, result.stdout.str()
    result.stdout.fnmatch_lines(
        [
            "ERROR pytest-rnncov: adversarial samples of a campaign on tiny not saved: cannot "
            "create 'adv-out'*",
            "*1 passed*",
        ]
    )
    result.stdout.fnmatch_lines(["tiny: *samples not saved (cannot create 'adv-out'*"])
    (campaign,) = json.loads((pytester.path / "r.json").read_text())["adversarial"]
    assert campaign["saved_to"] is None and campaign["test_cases"] == 120
    assert campaign["samples_error"].startswith("cannot create 'adv-out'")


def test_a_campaign_under_xdist_reports_what_one_process_reports(pytester):
    """A worker's campaign summary crosses to the controller as written (its diversity is
    below 0; the reader once refused it, so the worker counted as missing)."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_gen=CAMPAIGN_TESTS)
    serial = pytester.runpytest_subprocess(
        "-n", "0", "-p", "xdist", "--rnn-report=json:serial.json", "--rnn-seed=3"
    )
    parallel = pytester.runpytest_subprocess(
        "-n", "2", "--rnn-report=json:parallel.json", "--rnn-seed=3"
    )
    assert serial.ret == parallel.ret == 0, parallel.stdout.str()
    a, b = (json.loads((pytester.path / f"{n}.json").read_text()) for n in ("serial", "parallel"))
    assert b["verdict"]["complete"] is True and not b["verdict"]["missing_workers"]
    (campaign,) = b["adversarial"]
    assert campaign["diversity"] is not None and campaign["diversity"] < 0
    assert a["adversarial"] == b["adversarial"]
    assert a["models"]["tiny"]["metrics"] == b["models"]["tiny"]["metrics"]


STOPPING = """
from conftest import inputs


def test_one(tiny):
    tiny.predict(inputs(1))


def test_two(tiny):
    raise {error}


def test_three(tiny):
    tiny.predict(inputs(3))
"""


@pytest.mark.parametrize(
    ("error", "args", "status", "ran", "why"),
    [  # Ctrl-C inside test_two: it did not finish; -x: it failed, so it ran
        ("KeyboardInterrupt", (), pytest.ExitCode.INTERRUPTED, 1, "interrupted"),
        ("AssertionError", ("-x",), pytest.ExitCode.TESTS_FAILED, 2, "stopping after 1 failures"),
    ],
)
def test_a_stopped_session_says_after_how_many_tests_and_keeps_their_coverage(
    pytester, error, args, status, ran, why
):
    """Ctrl-C or -x: the gate is not applied, for the true reason (it once read 'the session
    stopped before the tests ran'), every report shows the coverage of what ran, and the
    data file keeps it, marked partial (it was once not written), while no baseline is
    saved from it."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_stop=STOPPING.format(error=error))
    result = pytester.runpytest_subprocess(
        *args,
        "--rnn-coverage=0.01",
        "--rnn-report=term",
        "--rnn-report=json:r.json",
        "--rnn-data=d.json",
        "--rnn-save=b.json",
    )
    assert result.ret == status
    stopped = f"the session stopped after {ran} of 3 tests ({why})"
    reason = f"{stopped}; the coverage shown is from the tests that ran"
    result.stdout.fnmatch_lines(
        [
            "tiny   lstm*16  *",  # test_one's 16 inputs
            f"RNN coverage baseline not saved to *b.json: {reason}",
            "RNN coverage data (partial: marked so) written to *d.json",
            f"FAIL RNN coverage gate not applied: {reason}.",
        ]
    )
    verdict = json.loads((pytester.path / "r.json").read_text())["verdict"]
    assert verdict["applied"] is False and verdict["skipped_reason"] == reason
    assert verdict["complete"] is False and verdict["stopped"] == [stopped]
    assert not (pytester.path / "b.json").exists()
    data = json.loads((pytester.path / "d.json").read_text())
    assert data["stopped"] == [stopped] and data["models"]["tiny"]["inputs"] == 16
    report = pytester.run(
        sys.executable, "-m", "pytest_rnncov", "report", "d.json", "--rnn-coverage=0.01"
    )
    assert report.ret == 1, report.stdout.str()  # as the session: the gate never decided
    report.stdout.fnmatch_lines([f"FAIL RNN coverage gate not applied: {reason}."])
    report = pytester.run(sys.executable, "-m", "pytest_rnncov", "report", "d.json")
    assert report.ret == 0, report.stdout.str()
    report.stdout.fnmatch_lines(
        [
            f"WARNING RNN coverage is partial: {stopped} (nothing of the tests that did not "
            "run is counted)"
        ]
    )


@pytest.mark.parametrize("workers", [(), ("-n", "2")])
def test_a_profile_track_fitted_and_wrote_is_named_once(pytester, workers):
    """track(profile=PATH) fits a missing profile and writes it, for the team to commit:
    the report says so (it once said nothing), once however many workers ran; a run that
    loads it says nothing."""
    pytester.makeconftest(
        CONFTEST.replace(
            'window=(1, 5), name="tiny"', 'window=(1, 5), name="tiny", profile="prof/p.json"'
        )
    )
    pytester.makepyfile(test_feed=TESTS)
    line = "RNN coverage profile fitted from x_train and written to prof/p.json: commit it*"
    first = pytester.runpytest_subprocess(*workers, "--rnn-coverage=0.01")
    assert first.ret == 0
    first.stdout.fnmatch_lines([line])
    assert first.stdout.str().count("fitted from x_train and written to") == 1
    assert (pytester.path / "prof" / "p.json").is_file()
    again = pytester.runpytest_subprocess(*workers, "--rnn-coverage=0.01")
    assert again.ret == 0 and "fitted from x_train" not in again.stdout.str()


def test_x_failing_the_last_test_stops_nothing(pytester):
    """-x whose failure is the last test: pytest raises its stop after every test ran, so
    the run is complete (it once read "stopped after 3 of 3 tests" and applied no gate;
    its failed test keeps a baseline from being saved)."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_last=TESTS + "\n\ndef test_three(tiny):\n    raise AssertionError\n")
    result = pytester.runpytest_subprocess(
        "-x", "--rnn-coverage=0.01", "--rnn-data=d.json", "--rnn-save=b.json"
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "*RNN coverage baseline not saved to *b.json: 1 test failed in this run*",
            "Required RNN coverage of 1% reached.",
        ]
    )
    assert "partial" not in result.stdout.str()
    assert json.loads((pytester.path / "d.json").read_text())["stopped"] == []


def test_the_reason_names_files_or_collectors_that_did_not_collect():
    from pytest_rnncov.plugin import _uncollected_reason

    assert _uncollected_reason(["a.py", "b.py"]) == (
        "2 test files could not be collected (a.py, b.py), so their tests did not run"
    )
    assert _uncollected_reason(["a.py::test_f"]) == (  # a parametrize error, say
        "1 test collector could not be collected (a.py::test_f), so its tests did not run"
    )


RERUNS = """


def pytest_runtest_protocol(item, nextitem):  # each test run 3 times, as rerun plugins do
    from _pytest.runner import runtestprotocol

    item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
    for _ in range(3):
        runtestprotocol(item, nextitem=nextitem, log=True)
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
    return True
"""


def test_a_test_run_again_counts_once_toward_the_tests_that_ran(pytester):
    """A test run three times (pytest-rerunfailures) sent three teardown reports: -x after
    1 of 3 tests once read as "every test ran" (3 teardowns for 3 tests)."""
    pytester.makeconftest(CONFTEST + RERUNS)
    pytester.makepyfile(test_stop=STOPPING.format(error="AssertionError"))
    result = pytester.runpytest_subprocess("-x", "--rnn-coverage=0.01", "--rnn-data=d.json")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["FAIL RNN coverage gate not applied: the session stopped after 2 of 3*"]
    )


def test_files_that_did_not_collect_make_the_run_partial(pytester):
    """--continue-on-collection-errors: a test file that failed to import ran none of its
    tests, so the run is partial like a stopped one (it once saved a baseline marked
    complete and printed no warning)."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        test_fine=FEW,
        test_broken="import module_that_does_not_exist\n\ndef test_two(tiny):\n    pass\n",
    )
    result = pytester.runpytest_subprocess(
        "--continue-on-collection-errors",
        "--rnn-coverage=0.01",
        "--rnn-data=d.json",
        "--rnn-save=b.json",
    )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    why = "1 test file could not be collected (test_broken.py), so its tests did not run"
    reason = f"{why}; the coverage shown is from the tests that ran"
    result.stdout.fnmatch_lines(
        [
            f"RNN coverage baseline not saved to *b.json: {reason}",
            "RNN coverage data (partial: marked so) written to *d.json",
            f"FAIL RNN coverage gate not applied: {reason}.",
        ]
    )
    assert not (pytester.path / "b.json").exists()
    assert json.loads((pytester.path / "d.json").read_text())["stopped"] == [why]


FEW = """
from conftest import inputs


def test_one(tiny):
    tiny.predict(inputs(1, n=2))
"""


def test_baseline_save_and_compare(project):
    saved = project.runpytest("--rnn-save=main")
    assert saved.ret == 0
    path = project.path / ".rnncov" / "main.json"
    data = json.loads(path.read_text())
    assert data["format"] == "pytest-rnncov-baseline" and data["version"] == 3
    tc = data["models"]["tiny"]["metrics"]["TC"]
    assert tc["total"] == 243 and len(tc["covered_ids"]) == tc["covered"]
    saved.stdout.fnmatch_lines(["RNN coverage baseline saved to *main.json"])
    same = project.runpytest("--rnn-compare=main")
    assert same.ret == 0
    same.stdout.fnmatch_lines(["RNN coverage is not below baseline *main.json."])
    # fewer inputs: lower coverage than the baseline
    project.makepyfile(test_feed=FEW)
    worse = project.runpytest("--rnn-compare=main")
    assert worse.ret == 1
    worse.stdout.fnmatch_lines(
        [
            "FAIL RNN coverage fell below baseline *main.json (tolerance 0): "
            "*tiny TC *% < *% (*/243 vs */243; * condition* lost)*"
        ]
    )
    tolerated = project.runpytest("--rnn-compare=main", "--rnn-compare-tolerance=1.0")
    assert tolerated.ret == 0


def test_compare_with_a_missing_baseline_is_a_usage_error(project):
    result = project.runpytest("--rnn-compare=nothing")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*--rnn-compare: no coverage baseline at *nothing.json*; create it with --rnn-save*"]
    )
    # a ratchet's first run: --rnn-save is there already, so the advice is the first run
    ratchet = project.runpytest("--rnn-compare=nothing", "--rnn-save=nothing")
    assert ratchet.ret == pytest.ExitCode.USAGE_ERROR
    ratchet.stderr.fnmatch_lines(
        [
            "*no coverage baseline at *nothing.json* yet: a ratchet compares with it before it "
            "saves; create it with one run with --rnn-save alone*"
        ]
    )


def test_plugin_works_without_xdist(project):
    result = project.runpytest_subprocess("-p", "no:xdist", "--rnn-coverage=0.05")
    assert result.ret == 0, result.stdout.str()[-2000:]
    result.stdout.fnmatch_lines(["Required RNN coverage of 5% reached."])


STATES = """
from conftest import inputs


def test_feed(tiny):
    tiny.plot_signals(inputs(9, n=2))
    tiny.predict(inputs(1, n=40))
"""


def test_deepstellar_metrics_through_the_plugin(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_states=STATES)
    result = pytester.runpytest(
        "--rnn-metrics=BC,SC,TC,BS,SBC,BT,WT",
        "--rnn-coverage=0.0",
        "--rnn-report=json:s.json",
        "--rnn-report=term",
    )
    assert result.ret == 0
    result.stdout.fnmatch_lines(["model*BC*SC*TC*BS*SBC*BT*WT"])
    data = json.loads((pytester.path / "s.json").read_text())
    tiny = data["models"]["tiny"]["metrics"]
    assert tiny["BS"]["describe"] == "BS(h, PCA 4 x 10 intervals)"  # 4 units: 4 directions
    assert 0 < tiny["BS"]["covered"] <= tiny["BS"]["total"]
    assert 0 <= tiny["WT"]["rate"] <= 1


def test_repeated_coverage_options_add_up(project):
    """A second --rnn-coverage adds its bars; it does not replace the first."""
    result = project.runpytest(
        "--rnn-coverage=BC:0.99",
        "--rnn-coverage=TC:0.01",
        "--rnn-report=json:j.json",
        "--rnn-report=term",
    )
    assert result.ret == 1
    result.stdout.fnmatch_lines(["FAIL Required RNN coverage (BC:0.99,TC:0.01) not reached: BC*"])
    report = json.loads((project.path / "j.json").read_text())
    assert report["verdict"]["passed"] is False
    assert report["verdict"]["gate"]["required"] == "BC:0.99,TC:0.01"


def test_every_metric_reaches_the_data_file_and_json(project):
    """SNAC's one-sided bound (no lower bound) is written as null, not -inf."""
    result = project.runpytest(
        "--rnn-metrics=BC,SC,TC,NC,KMNC,NBC,SNAC,BS,SBC,BT,WT",
        "--rnn-data=d.json",
        "--rnn-report=json:r.json",
        "-n",
        "2",
        "-p",
        "xdist",
    )
    assert result.ret == 0, result.stdout.str()
    data = json.loads((project.path / "d.json").read_text())
    snac = data["models"]["tiny"]["metrics"]["SNAC"]
    assert snac["config"]["lower"] is None and snac["total"] == 20  # 5 steps x 4 units
    assert json.loads((project.path / "r.json").read_text())["models"]["tiny"]["metrics"]["SNAC"]


TRACK_RAISES = """
import pytest


def test_model_raises(rnncov):
    class Broken:
        def __getattr__(self, name):
            raise OverflowError("the model's own error")

    with pytest.raises(Exception):
        rnncov.track(Broken(), x_train=None)
"""


def test_a_track_that_raised_is_reported_as_such(pytester):
    pytester.makepyfile(test_broken=TRACK_RAISES)
    result = pytester.runpytest("--rnn-coverage=0.5")
    assert result.ret == 1
    assert "no model was tracked (register" not in result.stdout.str()
    result.stdout.fnmatch_lines(["*rnncov.track* failed*"])


UNSENDABLE = """
import os

from pytest_rnncov.reporting.data import CoverageData

_dumps = CoverageData.dumps


def _fails_with_models(self):  # the worker's data, not the note that names the failure
    if os.environ.get("PYTEST_XDIST_WORKER") and self.models:
        raise ValueError("cannot serialise this")
    return _dumps(self)


CoverageData.dumps = _fails_with_models
"""


def test_a_worker_that_cannot_send_its_data_says_why(pytester):
    pytester.makeconftest(CONFTEST + UNSENDABLE)
    pytester.makepyfile(test_feed=FEEDING)
    result = pytester.runpytest_subprocess("-n", "1", "--rnn-coverage=0.01")
    assert result.ret == 1
    result.stdout.fnmatch_lines(
        [
            "FAIL RNN coverage gate not applied: worker gw0 (ValueError: "
            "cannot serialise this) did not send all its coverage data*"
        ]
    )


def test_signal_figures_are_computed_only_for_an_html_report_or_a_data_file(
    stacked_model, seq_inputs
):
    from pytest_rnncov.plugin.session import RNNCovSession

    for wanted in (False, True):
        session = RNNCovSession(signal_figures=wanted)
        tracked = session.track(stacked_model, layer="lstm_b", x_train=seq_inputs, name="s")
        tracked.predict(seq_inputs)
        figure = session.data().signals.get("s")
        assert (figure is not None) == wanted
        if wanted:  # the first 4 inputs fed, over the window
            assert len(figure["h_net_z"]) == 4 and len(figure["steps"]) == 7


@pytest.mark.parametrize("first", ["predict", "campaign", "signals"])
def test_the_signal_figure_plots_h_delta_where_the_metrics_read_sums_over_units_alone(
    seq_inputs, first
):
    """Under the testrnn preset the pass gives h's sums over units alone, which the
    figure's h/delta cannot derive from: the first inputs fed (by a test or a campaign)
    are traced again for it, and the figure is the one their states give (the LSTM's
    f/avg too). Signals fed
    without their inputs leave h/delta out, with a warning."""
    from pytest_rnncov import Campaign, GaussianMutator, Oracle, Profile, RNNCovWarning, RNNModel
    from pytest_rnncov.plugin.session import RNNCovSession
    from pytest_rnncov.reporting.signals import sample_signals

    keras.utils.set_random_seed(3)
    model = keras.Sequential([keras.Input((7, 3)), keras.layers.LSTM(5), keras.layers.Dense(2)])
    session = RNNCovSession(signal_figures=True)
    profile = Profile(window=(1, 5)).fit(RNNModel(model), seq_inputs)
    tracked = session.track(model, profile=profile, name="m", preset="testrnn")
    assert tracked.coverage.sums_only_ and not tracked.coverage.positive_parts_
    mutator = GaussianMutator(variance=0.1, clip=None)
    if first == "predict":
        tracked.predict(seq_inputs)
        plotted = seq_inputs[:4]
    elif first == "campaign":
        campaign = Campaign(tracked, seq_inputs[:5], mutator, Oracle(radius=1.0), budget=5)
        campaign.run()
        plotted = seq_inputs[:4]  # the first batch: the seeds
    else:
        (chunk,) = tracked.coverage.stream(seq_inputs)
        assert chunk.trace.step_sums("h").shape[2] == 1
        with pytest.warns(RNNCovWarning, match="leaves out h/delta"):
            tracked.feed(chunk.signals, chunk.observation)
            figure = session.data().signals["m"]
        assert "h_delta_minmax" not in figure and len(figure["h_net_z"]) == 4
        return
    figure = session.data().signals["m"]
    expected = sample_signals(tracked.rnn.trace(plotted), tracked.profile)
    assert set(figure) == {"steps", "h_net_z", "f_avg_minmax", "h_delta_minmax"}
    assert figure == expected


NAMED_STRATEGY = """
import numpy as np
from hypothesis import given, settings
from conftest import inputs
from pytest_rnncov import GaussianMutator, GAConfig, targeted_mutants

SEEDS = inputs(3, n=4)
MUTATOR = GaussianMutator(variance=0.1, clip=None)


@settings(max_examples=8, deadline=None, database=None, derandomize=True)
@given(targeted_mutants("tiny", SEEDS, MUTATOR, ga=GAConfig(k=2, n=3, gamma=2)))
def test_named(tiny, mutant):
    assert mutant.case.shape == (6, 2)
    seen.append(mutant)


@settings(max_examples=2, deadline=None, database=None)
@given(targeted_mutants("nobody", SEEDS, MUTATOR))
def test_unknown(tiny, mutant):
    pass


seen = []


def test_zz_bred_inputs_counted(tiny):
    assert any(m.generations for m in seen)
    assert tiny.coverage.n_inputs_ > 0
"""


def test_given_strategy_names_its_model_and_resolves_it_from_the_session(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_named=NAMED_STRATEGY)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--hypothesis-show-statistics")
    result.assert_outcomes(passed=2, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*no model named 'nobody' is tracked in this session (tracked: 'tiny'); the test "
            "must request the fixture*",
            "*test_named.py::test_named:*",  # the statistics section is not empty
        ]
    )


def test_a_named_strategy_resolves_its_model_with_the_plugin_switched_off(pytester):
    """--no-rnn: "rnncov.track still returns working models", but a strategy naming one
    said that no model of that name was tracked."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_named=NAMED_STRATEGY)
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--no-rnn")
    result.assert_outcomes(passed=2, failed=1)  # test_unknown names no tracked model
    result.stdout.fnmatch_lines(["*no model named 'nobody' is tracked in this session*"])
    assert "RNN coverage" not in result.stdout.str()


def test_a_named_strategy_before_any_model_was_tracked_says_which_fixture_is_missing(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        test_alone="""
from hypothesis import given, settings
from conftest import inputs
from pytest_rnncov import GaussianMutator, targeted_mutants


@settings(max_examples=2, deadline=None, database=None)
@given(targeted_mutants("tiny", inputs(3, n=4), GaussianMutator(variance=0.1, clip=None)))
def test_alone(mutant):
    pass
"""
    )
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*no model named 'tiny' is tracked in this session (tracked: none yet); the test "
            "must request the fixture*"
        ]
    )


SAMPLE_TESTS = """
from pytest_rnncov import GaussianMutator, Oracle


def run(tiny, rnncov, **options):
    seeds = rnncov.rng().random((8, 6, 2)).astype("float32")
    mutator = GaussianMutator(variance=(4.0, 9.0), clip=None)
    return tiny.campaign(seeds, mutator, Oracle(radius=None), budget=200, **options).run()


def test_kept(tiny, rnncov):
    assert run(tiny, rnncov).adversarial > 0
    assert run(tiny, rnncov).adversarial > 0  # a second campaign of the same test


def test_own_folder(tiny, rnncov):
    run(tiny, rnncov, output_dir="mine")  # output_dir wins
"""


def test_xdist_workers_never_share_a_samples_folder(pytester):
    """Parameters "a/b" and "a_b" made one folder name; each worker gave it out, so two
    campaigns wrote into one folder and one campaign's summary and arrays were lost."""
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        test_pair="""
import pytest
from test_samples import run

@pytest.mark.parametrize("k", ["a/b", "a_b"])
def test_generate(tiny, rnncov, k):
    assert run(tiny, rnncov).adversarial > 0
"""
    )
    pytester.makepyfile(test_samples=SAMPLE_TESTS.split("def test_kept")[0])
    result = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "-n", "2", "--rnn-samples=out", "test_pair.py"
    )
    assert result.ret == 0, result.stdout.str()[-2000:]
    folders = sorted((pytester.path / "out" / "tiny").iterdir())
    assert len(folders) == 2
    for folder in folders:
        summary = json.loads((folder / "summary.json").read_text())
        assert summary["adversarial"] == len(np.load(folder / "adversarial.npz")["cases"]) > 0


def test_samples_folder_keeps_every_campaigns_samples_for_ci(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_samples=SAMPLE_TESTS)
    pytester.makeini("[pytest]\nrnn_samples = artifacts/samples\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--rnn-seed=3")
    assert result.ret == 0, result.stdout.str()[-2000:]
    root = pytester.path / "artifacts" / "samples" / "tiny"
    folders = sorted(p.name for p in root.iterdir())
    digest = hashlib.sha256(b"test_samples.py::test_kept").hexdigest()[:10]
    assert folders == [
        f"test_samples.py__test_kept-{digest}",
        f"test_samples.py__test_kept-{digest}-2",
    ]
    for name in folders:
        assert (root / name / "summary.json").is_file()
        assert (root / name / "adversarial.npz").is_file()
    assert (pytester.path / "mine" / "summary.json").is_file()
    # the campaign whose output_dir won says so (its samples silently missed the artifact)
    result.stdout.fnmatch_lines(
        ["*RNNCovWarning: ini option rnn_samples=*artifacts/samples* is set, and this "
         "campaign's output_dir='mine' wins: its samples are saved there, not in that "
         "folder; drop output_dir= to keep them with the others"]
    )  # fmt: skip
    bad = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--rnn-samples=conftest.py")
    assert bad.ret == 4
    bad.stderr.fnmatch_lines(["*--rnn-samples*conftest.py*is not a directory*"])
    empty = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--rnn-samples=")
    assert empty.ret == 4  # not the ini's folder, and not silently nothing
    empty.stderr.fnmatch_lines(["*--rnn-samples=''*give a folder*"])
    clash = pytester.runpytest_subprocess(
        "-p", "no:cacheprovider", "--rnn-samples=out", "--rnn-data=out/tiny"
    )
    assert clash.ret == 4  # before any test ran, not "another process wrote that file"
    clash.stderr.fnmatch_lines(["*--rnn-samples*is a folder holding --rnn-data*"])
    assert not (pytester.path / "out").exists()
    (pytester.path / "loop").symlink_to(pytester.path / "loop")
    loop = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--rnn-samples=loop")
    assert loop.ret == 4  # before any test ran, not in every campaign's test
    loop.stderr.fnmatch_lines(["*--rnn-samples*loop' is a symbolic link to nothing*"])
    inside = pytester.runpytest_subprocess("-p", "no:cacheprovider", "--rnn-samples=loop/sub")
    assert inside.ret == 4  # a loop above the folder too
    inside.stderr.fnmatch_lines(["*--rnn-samples*sub': '*loop' is a symbolic link to nothing*"])
    pytester.makeini("[pytest]\nrnn_samples =\n")  # empty in the ini: unset, as every key
    shutil.rmtree(pytester.path / "artifacts")
    unset = pytester.runpytest_subprocess("-p", "no:cacheprovider")
    assert unset.ret == 0, unset.stdout.str()[-2000:]
    assert not (pytester.path / "artifacts").exists()
    unset.stdout.no_fnmatch_line("*rnn_samples=*is set*")  # output_dir='mine' overrides nothing


@pytest.mark.parametrize(
    ("option", "reason"),
    [
        ("--setup-only", "only setting up fixtures (--setup-only)"),
        ("--setup-plan", "only planning the fixtures' setup (--setup-plan)"),
        ("--fixtures", "only listing fixtures (--fixtures)"),
        ("--fixtures-per-test", "only listing each test's fixtures (--fixtures-per-test)"),
    ],
)
def test_options_that_run_no_test_apply_no_gate_and_keep_the_files(project, option, reason):
    """--setup-only ran the fixtures (tracking the model) but no test: its 0% replaced a
    good baseline and data file and failed the gate; --fixtures printed a false error."""
    outputs = ("--rnn-save=main", "--rnn-data=d.json", "--rnn-report=json:r.json")
    assert project.runpytest(*outputs).ret == 0
    files = [project.path / ".rnncov" / "main.json", project.path / "d.json"]
    before = [f.read_text() for f in files]
    result = project.runpytest(option, "--rnn-coverage=0.9", *outputs)
    assert result.ret == 0
    result.stdout.fnmatch_lines([f"RNN coverage gate not applied: {reason}*"])
    result.stdout.no_fnmatch_line("*ERROR pytest-rnncov*")
    assert [f.read_text() for f in files] == before
    verdict = json.loads((project.path / "r.json").read_text())["verdict"]
    assert verdict["applied"] is False and verdict["passed"] is None  # this session's


def test_setup_only_stopped_by_a_fixture_error_keeps_the_files(project):
    """With -x, a fixture error stopped a --setup-only session, which then wrote its 0
    inputs to the data file as the coverage of the tests that ran (none did)."""
    project.makepyfile(
        test_broken="import pytest\n\n@pytest.fixture\ndef broken():\n    raise RuntimeError\n\n"
        "def test_b(tiny, broken):\n    pass\n"
    )
    assert project.runpytest("--rnn-data=d.json", "-k", "one or two").ret == 0
    data = (project.path / "d.json").read_text()
    result = project.runpytest("--setup-only", "-x", "--rnn-data=d.json", "--rnn-coverage=0.05")
    result.stdout.fnmatch_lines(["RNN coverage gate not applied: only setting up fixtures*"])
    assert (project.path / "d.json").read_text() == data


def test_a_bar_on_the_command_line_overrides_one_in_addopts(project, monkeypatch):
    """A bar in addopts and another for the same metrics on the command line read as one
    bar given twice (exit 4): the later one applies, as pytest's own options do."""
    project.makeini("[pytest]\naddopts = --rnn-coverage=1.0 --rnn-report=json:r.json\n")
    assert project.runpytest().ret == 1
    result = project.runpytest("--rnn-coverage=0.05")
    assert result.ret == 0
    gate = json.loads((project.path / "r.json").read_text())["verdict"]["gate"]
    assert gate["required"] == 0.05
    monkeypatch.setenv("PYTEST_ADDOPTS", "--rnn-coverage=BC:0.01")
    result = project.runpytest("--rnn-coverage=BC:0.02,TC:0.01")
    assert result.ret == 0  # BC's later bar, 0.02, beside the ini's 1.0 for the others
    result = project.runpytest("--rnn-coverage=BC:0.02,BC:0.01")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*coverage bar 'BC:0.01' is given twice*"])


def test_relative_ini_paths_are_under_the_rootdir(project):
    """rnn_data = out/d.json wrote to out/d.json under whichever folder pytest ran from."""
    project.makeini("[pytest]\nrnn_data = out/d.json\nrnn_report = json:out/r.json\n")
    sub = project.mkdir("sub")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(sub)
        result = project.runpytest_subprocess(str(project.path))
    assert result.ret == 0
    assert (project.path / "out" / "d.json").is_file()
    assert (project.path / "out" / "r.json").is_file()
    assert not (sub / "out").exists()


MODULES_SEEN = """
import sys


def test_record_our_modules(rnncov):
    loaded = sorted(m for m in sys.modules if m.startswith("pytest_rnncov"))
    open("modules.txt", "w").write("\\n".join(loaded))
"""


def test_the_options_do_not_change_which_of_our_modules_the_tests_see(pytester):
    """Hypothesis draws some values from the constants of the local modules loaded so far,
    and an editable install of pytest-rnncov is local code: an HTML report, imported for
    its option at start-up, made a derandomized property test draw other examples (and
    fail), and --rnn-coverage loaded the reports' modules where a plain run did not. Once
    the engine runs, the same modules are loaded whatever the options."""
    pytester.makepyfile(test_modules=MODULES_SEEN)
    seen = {}
    for options in (
        [],
        ["--rnn-coverage=0"],
        ["--rnn-report=html:html", "--rnn-report=json:r.json", "--rnn-data=d.json"],
        ["--rnn-samples=samples", "--rnn-context=test", "--rnn-save=b.json"],
        ["--no-rnn"],
    ):
        result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *options)
        result.assert_outcomes(passed=1)  # (the gate fails: no model was tracked)
        seen[" ".join(options)] = (pytester.path / "modules.txt").read_text()
    assert "pytest_rnncov.reporting.html" in seen[""]
    differ = {k: set(v.split()) ^ set(seen[""].split()) for k, v in seen.items()}
    assert not any(differ.values()), differ


def test_a_toml_number_that_an_older_pytest_refuses_is_a_usage_error():
    """pytest < 9.2 raises a bare TypeError for [tool.pytest]'s rnn_seed = 1 (a string key
    there): an INTERNALERROR, and under --no-rnn too once the seed was read there."""
    from pytest_rnncov.plugin.options import _ini

    class OlderPytest:
        def getini(self, name):
            raise TypeError(f"config option '{name}' expects a string, got int: 1")

    with pytest.raises(pytest.UsageError, match=r"rnn_seed: .* got int: 1; this pytest reads"):
        _ini(OlderPytest(), "rnn_seed")
    with pytest.raises(  # a list key: quoting it would be refused again
        pytest.UsageError, match=r"rnn_coverage: .*; give a list of strings \(rnn_coverage = \["
    ):
        _ini(OlderPytest(), "rnn_coverage")
