"""One verdict: the exit code, the JSON ``passed`` and the terminal's last line agree in
every case; hostile options and files are usage errors before any test runs."""

from __future__ import annotations

import json

import keras  # noqa: F401  (loaded once: pytester's in-process runs must not re-import TF)
import pytest
from test_plugin import CONFTEST, TESTS


@pytest.fixture
def project(pytester):
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_feed=TESTS)
    return pytester


def outcome(result, pytester, path="r.json"):
    """(exit code, JSON passed, the last line of the terminal report)."""
    data = json.loads((pytester.path / path).read_text())
    lines = [line for line in result.stdout.lines if line.strip() and not line.startswith("=")]
    return int(result.ret), data["verdict"]["passed"], lines[-1]


@pytest.mark.parametrize(
    ("args", "code", "passed", "last"),
    [
        (["--rnn-coverage=0.05"], 0, True, "Required RNN coverage of 5% reached."),
        (["--rnn-coverage=1.0"], 1, False, "FAIL Required RNN coverage of 100% not reached: *"),
        (
            ["--rnn-coverage=BC:0.0,TC:1.0"],
            1,
            False,
            "FAIL Required RNN coverage (BC:0,TC:1) not reached: TC *% (*/243) < 100%",
        ),
        (
            ["--rnn-coverage=0.05", "-k", "nothing_matches"],
            5,
            None,
            "RNN coverage gate not applied: no test was selected.",
        ),
        ([], 0, None, "RNN coverage JSON written to r.json"),
    ],
)
def test_exit_code_json_and_terminal_agree(project, args, code, passed, last):
    result = project.runpytest(*args, "--rnn-report=json:r.json", "--rnn-report=term")
    got_code, got_passed, got_last = outcome(result, project)
    assert (got_code, got_passed) == (code, passed), result.stdout.str()[-2000:]
    assert result.stdout.fnmatch_lines([last]) is None
    assert got_last.startswith(last.split("*")[0])


def test_collect_only_does_not_apply_an_ini_gate(project):
    project.makeini("[pytest]\nrnn_coverage = 0.9\nrnn_report =\n    json:r.json\n    term\n")
    result = project.runpytest("--collect-only")
    assert result.ret == 0, result.stdout.str()
    assert "no model was tracked" not in result.stdout.str()
    code, passed, last = outcome(result, project)
    assert (
        passed is None
        and last == "RNN coverage gate not applied: only collecting (--collect-only)."
    )


def test_collect_only_keeps_the_data_file_and_deselecting_every_test_replaces_it(project):
    """--collect-only runs no test: an earlier run's data file stays. Every test
    deselected (a shard that selects none, exit 5) left it too, and a `report` step
    passed on the earlier run's coverage; the file now holds this run's: no model."""
    assert project.runpytest("--rnn-data=d.json").ret == 0
    before = (project.path / "d.json").read_text()
    listed = project.runpytest("--rnn-data=d.json", "--collect-only")
    listed.stdout.fnmatch_lines(["RNN coverage data not written to d.json: only collecting*"])
    assert (project.path / "d.json").read_text() == before
    none = project.runpytest("--rnn-data=d.json", "-k", "no_such_test")
    none.stdout.fnmatch_lines(["RNN coverage data (no test was selected) written to d.json"])
    assert json.loads((project.path / "d.json").read_text())["models"] == {}


def test_a_baseline_regression_fails_everywhere(project):
    assert project.runpytest("--rnn-save=main").ret == 0
    project.makepyfile(
        test_feed="from conftest import inputs\n\ndef test_one(tiny):\n"
        "    tiny.predict(inputs(1, n=2))\n"
    )
    result = project.runpytest(
        "--rnn-compare=main", "--rnn-report=json:r.json", "--rnn-report=term"
    )
    code, passed, last = outcome(result, project)
    assert (code, passed) == (1, False) and last.startswith("FAIL RNN coverage fell below baseline")
    data = json.loads((project.path / "r.json").read_text())
    assert data["verdict"]["baseline"]["regressions"]


def test_a_failed_track_is_named_instead_of_no_model(pytester):
    pytester.makeconftest("""
import pytest


@pytest.fixture(scope="session")
def dense(rnncov):
    import keras

    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, name="d")], name="plain")
    return rnncov.track(model, x_train=[[0.0] * 4])
""")
    pytester.makepyfile("def test_uses(dense):\n    pass\n")
    result = pytester.runpytest("--rnn-coverage=0.5")
    assert result.ret == 1
    text = result.stdout.str()
    assert "register one with rnncov.track" not in text
    result.stdout.fnmatch_lines(
        [
            "FAIL Required RNN coverage of 50% not reached: no model was tracked; rnncov.track() "
            "failed: ModelError (test_a_failed_track_is_named_instead_of_no_model.py::test_uses): "
            "model 'plain' has no recurrent layer*"
        ]
    )


def test_no_model_tracked_after_a_fixture_error_points_at_the_errors(pytester):
    """A fixture that was to track a model failed (a bad KERAS_BACKEND, a missing file):
    the gate's line said "register one with rnncov.track(model, ...)", which it does."""
    pytester.makeconftest("""
import pytest


@pytest.fixture(scope="session")
def model(rnncov):
    raise FileNotFoundError("model.keras")
""")
    pytester.makepyfile("def test_a(model):\n    pass\n\ndef test_b(model):\n    pass\n")
    result = pytester.runpytest("--rnn-coverage=0.5")
    assert result.ret == 1
    hint = (
        "register one with rnncov.track(model, ...); 2 tests failed or errored: a fixture "
        "that tracks one may be among them"
    )
    result.stdout.fnmatch_lines(
        [
            f"no model was tracked: {hint}",
            f"FAIL Required RNN coverage of 50% not reached: no model was tracked ({hint})",
        ]
    )


def test_tracking_the_same_name_with_another_window_is_refused(project):
    project.makepyfile(
        test_twice="""
import pytest
from pytest_rnncov import InvalidArgument


def test_twice(tiny, rnncov):
    assert rnncov.track(tiny.rnn.model, window=(1, 5), name="tiny", x_train=None) is tiny
    with pytest.raises(
        InvalidArgument, match=r"'tiny' is already tracked with another window; track the same"
    ):
        rnncov.track(tiny.rnn.model, window=(0, 3), name="tiny")
    import keras

    layer = tiny.rnn.model.get_layer("lstm")
    weights = layer.get_weights()
    layer.set_weights([w + 0.01 for w in weights])  # trained further, in place
    with pytest.raises(InvalidArgument, match="another set of weights .they changed since"):
        rnncov.track(tiny.rnn.model, name="tiny")
    layer.set_weights(weights)
    assert rnncov.track(tiny.rnn.model, name="tiny") is tiny
    copy = keras.models.clone_model(tiny.rnn.model)  # what a function-scoped fixture makes
    with pytest.raises(
        InvalidArgument,
        match=r"another model object \\(a fixture narrower than the session.* scope='session'\\)",
    ):
        rnncov.track(copy, name="tiny")
"""
    )
    assert project.runpytest("test_twice.py").ret == 0


# -- options and ini values ----------------------------------------------------------------
def test_toml_lists_in_the_ini(project):
    (project.path / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\nrnn_metrics = ["BC", "TC"]\n'
        'rnn_coverage = ["BC:0.0", "TC:0.01"]\n'
        'rnn_report = ["json:toml.json", "term"]\n'
    )
    result = project.runpytest()
    assert result.ret == 0, result.stderr.str() + result.stdout.str()
    data = json.loads((project.path / "toml.json").read_text())
    assert data["verdict"]["gate"]["gate_metrics"] == ["BC", "TC"]
    assert data["verdict"]["passed"] is True


def test_space_separated_reports_in_one_ini_line(project):
    project.makeini("[pytest]\nrnn_report = json:a.json term\n")
    result = project.runpytest()
    assert result.ret == 0
    assert (project.path / "a.json").is_file() and not (project.path / "a.json term").exists()
    result.stdout.fnmatch_lines(["*- RNN coverage -*"])


@pytest.mark.parametrize(
    ("make", "args", "message"),
    [
        (
            lambda p: (p / "out.json").mkdir(),
            ["--rnn-report=json:out.json"],
            "*'out.json' is a directory; give a file path*",
        ),
        (
            lambda p: (p / "f").write_text(""),
            ["--rnn-report=json:f/r.json"],
            "*'f' is not a directory*",
        ),
        (
            lambda p: None,
            ["--rnn-report=html:/dev/null"],
            "*'/dev/null' exists and is not a directory*",
        ),
        (lambda p: (p / "d").mkdir(), ["--rnn-data=d"], "*--rnn-data 'd' is a directory*"),
        (
            lambda p: (p / "b.json").mkdir(),
            ["--rnn-save=b.json"],
            "*--rnn-save 'b.json' is a directory*",
        ),
    ],
)
def test_unwritable_outputs_are_refused_before_the_tests(project, make, args, message):
    make(project.path)
    result = project.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert "passed" not in result.stdout.str()  # no test ran


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("[1, 2]", "*is not a pytest-rnncov baseline file*"),
        (b"\x89PNG\x00\xff", "*is not UTF-8 text; save it again with --rnn-save*"),
        ('{"format": "pytest-rnncov-baseline", "version": 2}', "*missing key 'models'*"),
        (
            '{"format": "pytest-rnncov-baseline", "version": 2, '
            '"models": {"tiny": {"version": 1}}}',
            "*missing key 'name'*",
        ),
        (
            '{"format": "pytest-rnncov-baseline", "version": 1, "models": {}}',
            "*baseline version 1; this pytest-rnncov reads versions 2-3*",
        ),
        (None, "*is a directory; pass a file*"),
    ],
)
def test_hostile_baselines_are_usage_errors_at_configure_time(project, content, message):
    path = project.path / "base.json"
    if content is None:
        path.mkdir()
    elif isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content)
    result = project.runpytest("--rnn-compare=base.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_nan_or_string_rates_in_a_baseline_are_refused(project):
    assert project.runpytest("--rnn-save=good.json").ret == 0
    data = json.loads((project.path / "good.json").read_text())
    for bad in ("NaN", '"high"'):
        text = json.dumps(data).replace('"rate": ', f'"rate": {bad}, "was": ', 1)
        (project.path / "bad.json").write_text(text)
        result = project.runpytest("--rnn-compare=bad.json")
        assert result.ret == pytest.ExitCode.USAGE_ERROR, bad
        result.stderr.fnmatch_lines(["*--rnn-compare: *"])


def test_no_rnn_keeps_the_ini_seed(pytester):
    pytester.makeini("[pytest]\nrnn_seed = 7\n")
    pytester.makepyfile("def test_seed(rnncov):\n    assert rnncov.seed == 7\n")
    assert pytester.runpytest("--no-rnn").ret == 0


MARKERS = """
import pytest
from conftest import inputs


@pytest.mark.rnn_coverage(min=0.01, metrics="TC")
def test_string_metrics_mean_one_metric(tiny):
    tiny.predict(inputs(3))


@pytest.mark.rnn_coverage(min="BC:0.0,TC:1.0")
def test_per_metric_bars(tiny):
    tiny.predict(inputs(4, n=3))


@pytest.mark.rnn_coverage(min="high")
def test_bad_min(tiny):
    print("the body ran")
    tiny.predict(inputs(5, n=3))


@pytest.mark.rnn_coverage(min=0.5, metrics=["ZZ"])
def test_bad_metric(tiny):
    tiny.predict(inputs(5, n=3))


@pytest.mark.rnn_coverage(min=0.5, model=[])
def test_no_model_named(tiny):
    print("the body ran")
    tiny.predict(inputs(5, n=3))


@pytest.mark.rnn_coverage(min=90)
def test_a_percentage(tiny):
    tiny.predict(inputs(5, n=3))


@pytest.mark.rnn_coverage(min=0.5, metrics="BC,,TC")
def test_an_empty_metric(tiny):
    tiny.predict(inputs(5, n=3))
"""


def test_marker_keywords_of_every_type(project):
    project.makepyfile(test_markers=MARKERS)
    result = project.runpytest("test_markers.py")
    result.assert_outcomes(passed=1, failed=6)
    result.stdout.fnmatch_lines(
        [
            "*RNN coverage of the inputs this test fed is below its bars (BC:0,TC:1):",
            "*  tiny: TC *% (*/243, * uncovered) < 100%",
        ]
    )
    result.stdout.fnmatch_lines(
        ["*rnn_coverage marker: coverage bar 'high': 'high' is not a number*"]
    )
    result.stdout.fnmatch_lines(["*rnn_coverage marker: unknown metric ZZ*"])
    result.stdout.fnmatch_lines(["*rnn_coverage marker: model=[] names no model; name a*"])
    result.stdout.fnmatch_lines(  # it read '90.0', a number no one wrote
        [
            "*rnn_coverage marker: coverage bar '90': 90 is not a fraction in [[]0, 1]; "
            "for 90% use 0.9"
        ]
    )
    result.stdout.fnmatch_lines(["*rnn_coverage marker: metrics='BC,,TC' has an empty entry*"])
    assert "the body ran" not in result.stdout.str()  # a wrong marker fails before it runs
    assert "During handling" not in result.stdout.str()  # the message once, not chained


NAMES = """
import pytest
from conftest import inputs


@pytest.mark.parametrize("name", ["a:b", "a,b", "a\\nb", " a", "*"])
def test_name(rnncov, tiny, name):
    with pytest.raises(Exception, match="cannot appear in a bar"):
        rnncov.track(tiny.rnn.model, x_train=inputs(0, n=8), window=(1, 5), name=name)


def test_a_long_name(rnncov, tiny):
    # a name of 10,000 characters padded every row of the tables to it
    with pytest.raises(Exception, match=r"model name 'LLLL*'... has 10,000 characters: pass"):
        rnncov.track(tiny.rnn.model, x_train=inputs(0, n=8), window=(1, 5), name="L" * 10_000)
    rnncov.track(tiny.rnn.model, x_train=inputs(0, n=8), window=(1, 5), name="L" * 200)


@pytest.mark.rnn_coverage(min="nosuch:TC:0.5")
def test_marker_names_another_model(tiny):
    tiny.predict(inputs(1, n=4))


@pytest.mark.rnn_coverage(min=10 ** 400)
def test_marker_bar_beyond_float(tiny):
    tiny.predict(inputs(1, n=4))
"""


def test_model_names_that_bars_cannot_name_and_markers_naming_others(project):
    project.makepyfile(test_names=NAMES)
    result = project.runpytest("test_names.py")
    result.assert_outcomes(passed=6, failed=2)
    result.stdout.fnmatch_lines(
        ["*a bar names model 'nosuch', which this test did not feed (it fed: tiny)*"]
    )
    result.stdout.fnmatch_lines(["*rnn_coverage marker: min=1000*is not a fraction in [[]0, 1]*"])
    assert "OverflowError" not in result.stdout.str()


def test_the_baseline_being_compared_is_not_overwritten(project):
    assert project.runpytest("--rnn-save=b.json").ret == 0
    before = (project.path / "b.json").read_text()
    for args in (["--rnn-data=b.json"], ["--rnn-report=json:b.json"]):
        result = project.runpytest("--rnn-compare=b.json", *args)
        assert result.ret == pytest.ExitCode.USAGE_ERROR
        result.stderr.fnmatch_lines(["*would overwrite --rnn-compare*"])
    ratchet = project.runpytest("--rnn-compare=b.json", "--rnn-save=b.json")
    assert ratchet.ret == 0  # compare with the old baseline, then replace it
    assert json.loads((project.path / "b.json").read_text())["format"] == "pytest-rnncov-baseline"
    assert before  # the first baseline was there to compare with


NOTHING_TRACKED = """
def test_nothing(rnncov):
    pass
"""


def test_a_session_that_tracked_nothing_keeps_the_baseline_and_says_so_in_the_data(project):
    """The baseline stays (nothing to save); the data file said the earlier run's
    coverage, which a `report` step then gated as this run's (a model fixture that skips
    on a runner without the model file): it now holds no model, and that gate fails."""
    from pytest_rnncov.config.bars import Bars
    from pytest_rnncov.reporting.data import CoverageData
    from pytest_rnncov.reporting.results import evaluate

    assert project.runpytest("--rnn-save=b.json", "--rnn-data=d.json").ret == 0
    baseline = (project.path / "b.json").read_text()
    project.makepyfile(test_feed=NOTHING_TRACKED)
    result = project.runpytest("--rnn-save=b.json", "--rnn-data=d.json")
    result.stdout.fnmatch_lines(
        [
            "RNN coverage baseline *b.json kept: no model was tracked",
            "RNN coverage data (no model was tracked) written to d.json",
        ]
    )
    assert (project.path / "b.json").read_text() == baseline
    data = CoverageData.load(project.path / "d.json")
    assert not data.models and data.complete
    assert evaluate(data, Bars.parse("0.1")).passed is False


def test_an_empty_baseline_is_refused(project):
    (project.path / "empty.json").write_text(
        json.dumps({"format": "pytest-rnncov-baseline", "version": 2, "models": {}})
    )
    result = project.runpytest("--rnn-compare=empty.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*holds no model*"])


@pytest.mark.parametrize(
    "rate, shown",
    [
        (242 / 243, "99.6%"),  # read as "100%" in the tables while the gate failed on it
        (0.9995, "99.95%"),
        (1 - 1e-9, "99.9999%"),
        (1e-9, "0.0001%"),
        (0.004, "0.4%"),
        (0.5, "50%"),
        (1.0, "100%"),
        (0.0, "0%"),
    ],
)
def test_a_rate_reads_as_100_or_0_percent_only_when_it_is(rate, shown):
    from pytest_rnncov.config.bars import percent

    assert percent(rate) == shown
    assert percent(0.8 - 1e-9, below=0.8) == "79.9999%"  # below its bar, as it reads


def test_a_rate_that_failed_its_bar_reads_below_it_in_every_report():
    """43/48 = 89.58% against 0.9 fails (the exact rate is compared); where coverage.py
    rounds to 90% and passes, the table and the reports must not show 90% beside FAIL."""

    from pytest_rnncov.config.bars import Bars
    from pytest_rnncov.core.state import MetricState, ModelState
    from pytest_rnncov.reporting.data import CoverageData
    from pytest_rnncov.reporting.html import _model_section
    from pytest_rnncov.reporting.markdown_report import MarkdownReport
    from pytest_rnncov.reporting.results import evaluate
    from pytest_rnncov.reporting.terminal import coverage_lines

    def data(covered):
        bc = MetricState.empty("BC", "f/avg", 48, {"window": [0, 3]})
        bc.times[:covered] = 1
        model = ModelState("m", "lstm", "LSTM", (0, 3), "fp", 5, {"BC": bc})
        return CoverageData(models={"m": model})

    failed = data(43)
    verdict = evaluate(failed, Bars.parse("BC:0.9"))
    assert verdict.passed is False
    assert "89.6% (43/48)" in "\n".join(coverage_lines(failed, verdict=verdict))
    assert "90%" not in "\n".join(coverage_lines(failed, verdict=verdict))
    assert "90% (43/48)" in "\n".join(coverage_lines(failed))  # no bar: rounded as usual
    assert "89.6% (43/48)" in MarkdownReport().render(failed, verdict)
    section = _model_section(failed.models["m"], None, verdict, drawn=False)
    assert section["rows"][0]["rate"] == "89.6%"
    assert "BC 89.6% (43/48) < 90%" in "\n".join(text for text, _ in verdict.lines())
    empty = data(0)
    empty.models["m"].metrics["BC"] = MetricState.empty("BC", "f/avg", 0, {"window": [0, 3]})
    nothing = evaluate(empty, Bars.parse("BC:0"))  # 0/0 fails any bar, and reads 0% still
    assert nothing.passed is False
    assert " 0% (0/0)" in "\n".join(coverage_lines(empty, verdict=nothing))  # not 0.0000%
    passed = data(44)  # 91.67%: shown as usual
    verdict = evaluate(passed, Bars.parse("BC:0.9"))
    assert verdict.passed is True
    assert "92% (44/48)" in "\n".join(coverage_lines(passed, verdict=verdict))


STACKED = """
import pytest
from conftest import inputs


@pytest.mark.rnn_coverage(model="tiny")
def test_a_session_bar_for_another_model_is_not_this_markers(tiny, small):
    tiny.predict(inputs(1, n=3))


@pytest.mark.rnn_coverage(model="small", min=1.0)
@pytest.mark.rnn_coverage(model="tiny", min=0.0)
def test_stacked_markers_all_apply(tiny, small):
    tiny.predict(inputs(1, n=3))
    small.predict(inputs(2, n=2))


@pytest.mark.rnn_coverage(min=1.0)
@pytest.mark.rnn_coverage(min=0.0)
def test_the_lowest_of_two_markers_for_every_model_applies(tiny):
    tiny.predict(inputs(1, n=3))


@pytest.mark.rnn_coverage(min=0.0)
def test_its_own_marker_replaces_a_hooks_default(tiny):
    tiny.predict(inputs(1, n=3))


@pytest.mark.rnn_coverage(model="small", min=1.0)
class TestOnAClass:
    @pytest.mark.rnn_coverage(model="tiny", min=0.0)
    def test_the_class_marker_applies_to_its_model(self, tiny, small):
        tiny.predict(inputs(1, n=3))
        small.predict(inputs(2, n=2))

    @pytest.mark.rnn_coverage(min=0.0)
    def test_a_closer_marker_for_every_model_replaces_it(self, tiny, small):
        tiny.predict(inputs(1, n=3))
        small.predict(inputs(2, n=2))

    @pytest.mark.rnn_coverage(min=0.0)
    def test_so_the_class_models_need_not_be_fed(self, tiny):
        tiny.predict(inputs(1, n=3))


@pytest.mark.rnn_coverage(min="tiny:BC:1.0,small:BC:0.0")
class TestBarsOnAClass:
    @pytest.mark.rnn_coverage(model="tiny", min=0.0)
    def test_a_bar_for_a_model_a_closer_marker_covers_does_not_apply(self, tiny, small):
        tiny.predict(inputs(1, n=3))
        small.predict(inputs(2, n=2))


@pytest.mark.rnn_coverage(min="NC:0.5")
def test_a_metric_the_session_does_not_track(tiny):
    tiny.predict(inputs(1, n=3))


@pytest.mark.rnn_coverage(min="small:BC:0.0")
@pytest.mark.rnn_coverage(model="tiny", min=0.0)
def test_a_farther_bar_for_a_model_no_closer_marker_covers_applies(tiny):
    tiny.predict(inputs(1, n=3))


@pytest.mark.rnn_coverage(model="tiny", min="small:BC:0.0")
def test_a_bar_for_a_model_its_marker_leaves_out(tiny, small):
    print("the body ran")
    tiny.predict(inputs(1, n=3))
"""

HOOK = """


def pytest_collection_modifyitems(items):
    for item in items:
        if "hooks_default" in item.name:  # a default a project's hook gives
            item.add_marker(pytest.mark.rnn_coverage(min=1.0))
"""


def test_every_marker_of_a_test_applies_to_the_models_it_covers(pytester):
    """Only the closest marker applied (the others were ignored, silently), and a marker
    without min= took every --rnn-coverage bar, failing on a model the session bars named
    but the marker did not cover. Closest first is pytest's order (get_closest_marker's)."""
    from test_reliability import SECOND_MODEL

    pytester.makeconftest(CONFTEST + SECOND_MODEL + HOOK)
    pytester.makepyfile(test_stacked=STACKED)
    result = pytester.runpytest("test_stacked.py", "--rnn-coverage=tiny:BC:0,small:BC:0", "-rA")
    result.assert_outcomes(passed=6, failed=5)
    out = result.stdout.str()
    for passed in (
        "test_a_session_bar_for_another_model_is_not_this_markers",
        "test_the_lowest_of_two_markers_for_every_model_applies",
        "test_its_own_marker_replaces_a_hooks_default",
        "TestOnAClass::test_a_closer_marker_for_every_model_replaces_it",
        "TestOnAClass::test_so_the_class_models_need_not_be_fed",
        "TestBarsOnAClass::test_a_bar_for_a_model_a_closer_marker_covers_does_not_apply",
    ):
        assert f"PASSED test_stacked.py::{passed}" in out
    for name in ("test_stacked_markers_all_apply", "test_the_class_marker_applies_to_its_model"):
        result.stdout.fnmatch_lines(
            [f"*{name}*", "*below 100%:", "*small: BC *% (*, * uncovered)*"]
        )
    result.stdout.fnmatch_lines(
        [
            "*tiny: NC is not tracked for this model; to gate it, measure it: add NC to the "
            "session's --rnn-metrics or to rnncov.track(..., metrics=...)"
        ]
    )
    result.stdout.fnmatch_lines(  # the closer marker took tiny, and the bar was dropped
        [
            "*test_a_farther_bar_for_a_model_no_closer_marker_covers_applies*",
            "*a bar names model 'small', which this test did not feed (it fed: tiny)",
        ]
    )
    result.stdout.fnmatch_lines(  # it said "did not feed" a model the test fed
        [
            "*rnn_coverage marker: min='small:BC:0.0' names model 'small', which "
            "model=[[]'tiny'[]] leaves out; add it to model=, or drop its bar"
        ]
    )
    assert "the body ran" not in out
