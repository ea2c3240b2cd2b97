"""Exclusions: conditions counted apart, each with a reason (hand-checked figures)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from pytest_rnncov.core.exclusions import Exclusion, apply_exclusions, parse_exclusion
from pytest_rnncov.core.state import MetricState, ModelState
from pytest_rnncov.errors import InvalidArgument


def model_state() -> ModelState:
    """BC over window [1, 5] (conditions t=1..5 N>=0.8), step 3 uncovered; TC w=2, a=3
    (words aa..cc), words aa and bc covered."""
    bc = MetricState.empty("BC", "BC(h/net)", 5, {"window": [1, 5], "alpha_max": 0.8})
    bc.times[[0, 1, 3, 4]] = 1
    tc = MetricState.empty("TC", "TC(h/net, w=2, a=3)", 9, {"w": 2, "a": 3})
    tc.times[[0, 5]] = [3, 1]  # aa, bc
    return ModelState("m", "lstm", "lstm", (1, 5), "0" * 16, 10, {"BC": bc, "TC": tc}, "")


def test_parse_reads_model_metric_label_and_reason():
    assert parse_exclusion("my:model:TC:abcab = the data never forms it") == Exclusion(
        "my:model", "TC", "abcab", "the data never forms it"
    )
    assert parse_exclusion("m:bc:t=7 N>=0.8 =  no  input   gets there").label == "t=7 N>=0.8"


@pytest.mark.parametrize(
    "text, says",
    [
        ("m:TC:abcab", "gives no reason"),
        ("m:TC:abcab =   ", "gives no reason"),
        ("m:XX:abcab = why", "unknown metric 'XX'"),
        ("TC:abcab = why", "name MODEL:METRIC:LABEL"),
        ("m::abcab = why", "name MODEL:METRIC:LABEL"),
    ],
)
def test_parse_refuses_a_malformed_exclusion_saying_how_to_write_it(text, says):
    with pytest.raises(InvalidArgument, match=says):
        parse_exclusion(text)


def test_excluded_conditions_are_counted_apart_and_files_keep_what_was_measured():
    state = model_state()
    models, notes, _ = apply_exclusions(
        {"m": state},
        [
            parse_exclusion("m:BC:t=3 = the layer never saturates there"),
            parse_exclusion("m:TC:bc = covered, but excluded"),
            parse_exclusion("m:TC:cc = unreachable"),
        ],
    )
    assert notes == []
    bc, tc = models["m"].metrics["BC"], models["m"].metrics["TC"]
    assert (bc.n_covered, bc.n_counted, bc.n_excluded, bc.rate) == (4, 4, 1, 1.0)
    # TC: 9 words, bc and cc excluded: 7 counted, of them aa covered
    assert (tc.n_covered, tc.n_counted, tc.rate) == (1, 7, 1 / 7)
    assert tc.exclusions == (("bc", "covered, but excluded", 1, 1), ("cc", "unreachable", 1, 0))
    # the originals and what files are written from are untouched
    assert state.metrics["BC"].rate == 0.8 and state.metrics["BC"].excluded is None
    written = tc.to_json()
    assert (written["covered"], written["rate"], written["total"]) == (2, 2 / 9, 9)
    assert MetricState.from_json(written).rate == 2 / 9


def test_a_step_label_excludes_every_condition_of_that_step():
    bc = MetricState.empty(
        "BC", "BC", 10, {"window": [1, 5], "alpha_max": 0.8, "alpha_min": 0.2}
    )  # t=1..5 N>=0.8, then t=1..5 N<=0.2
    state = ModelState("m", "lstm", "lstm", (1, 5), "0" * 16, 0, {"BC": bc}, "")
    models, _, _ = apply_exclusions({"m": state}, [parse_exclusion("m:BC:t=2 = why")])
    assert np.flatnonzero(models["m"].metrics["BC"].excluded).tolist() == [1, 6]
    exact, _, _ = apply_exclusions({"m": state}, [parse_exclusion("m:BC:t=2 N<=0.2 = why")])
    assert np.flatnonzero(exact["m"].metrics["BC"].excluded).tolist() == [6]


def test_weighted_rates_drop_the_excluded_weights():
    wt = MetricState.empty("WT", "WT", 3, {}, weights=np.array([1.0, 2.0, 5.0]))
    wt.times[1] = 1
    state = ModelState("m", "lstm", "lstm", (1, 5), "0" * 16, 0, {"WT": wt}, "")
    models, _, _ = apply_exclusions(
        {"m": state}, [parse_exclusion("m:WT:training transition #2 = x")]
    )
    assert models["m"].metrics["WT"].rate == 2.0 / 3.0  # was 2/8


@pytest.mark.parametrize(
    "text, says",
    [
        ("m:TC:zz = why", r"matches no condition of TC\(h/net, w=2, a=3\) \(labels look like 'aa'"),
        ("m:NC:t=1 = why", "model 'm' tracks no NC"),
    ],
)
def test_an_exclusion_that_names_nothing_is_an_error_and_the_others_still_apply(text, says):
    exclusions = [parse_exclusion(text), parse_exclusion("m:BC:t=3 = never reached")]
    models, notes, errors = apply_exclusions({"m": model_state()}, exclusions)
    assert len(errors) == 1 and re.search(says, errors[0]) and notes == []
    assert models["m"].metrics["BC"].exclusions == (("t=3", "never reached", 1, 0),)


def test_an_exclusion_of_a_model_this_run_did_not_track_is_noted_not_applied():
    models, notes, _ = apply_exclusions({"m": model_state()}, [parse_exclusion("x:TC:aa = why")])
    assert notes == [
        "RNN coverage exclusion x:TC:aa ignored: model 'x' was not tracked in this run "
        "(tracked: 'm')"
    ]
    assert models["m"].metrics["TC"].excluded is None


def test_the_html_and_markdown_reports_list_the_exclusions():
    from pytest_rnncov.reporting.data import CoverageData
    from pytest_rnncov.reporting.html import HtmlReport
    from pytest_rnncov.reporting.markdown_report import MarkdownReport
    from pytest_rnncov.reporting.results import evaluate

    data, _, _ = CoverageData(models={"m": model_state()}).with_exclusions(
        [parse_exclusion("m:BC:t=3 = the layer <never> gets there")]
    )
    verdict = evaluate(data, None)
    page = HtmlReport().render(data, verdict)
    assert '<td class="num">4 (1 excluded)</td>' in page
    assert "excluded: m BC &#39;t=3&#39; (1 condition): the layer &lt;never&gt; gets there" in page
    text = MarkdownReport().render(data, verdict)
    assert "| m | lstm | \\[1, 5\\] | 10 | 100% (4/4, 1 excluded) | 22% (2/9) |" in text
    assert "- excluded: m BC 't=3' (1 condition): the layer &lt;never&gt; gets there" in text


def test_a_line_break_or_a_second_reason_for_one_condition_is_refused():
    with pytest.raises(InvalidArgument, match="holds a line break or control character"):
        parse_exclusion("m:BC:t=3 = a\nm:BC:t=2 = b")
    twice = [parse_exclusion("m:BC:t=3 = a"), parse_exclusion("m:BC:t=3 = b")] * 2
    models, _, errors = apply_exclusions({"m": model_state()}, twice)
    assert errors == ["m:BC:t=3 is excluded twice (reasons 'a' and 'b'); keep one"]
    assert models["m"].metrics["BC"].excluded is None  # neither reason is chosen


def test_a_metric_with_every_condition_excluded_shows_no_rate():
    from pytest_rnncov.reporting.terminal import coverage_cell

    models, _, _ = apply_exclusions(
        {"m": model_state()}, [parse_exclusion(f"m:BC:t={t} = why") for t in range(1, 6)]
    )
    bc = models["m"].metrics["BC"]
    assert coverage_cell(bc) == "n/a (0/0, 5 excluded)" and not bc.measurable
    assert coverage_cell(model_state().metrics["BC"]) == "80% (4/5)"


def test_every_report_shows_no_rate_where_every_condition_is_excluded():
    """The terminal and Markdown said n/a, the HTML a pink 0% and `show` of the JSON report
    'BC 0.0%'."""
    import json

    from pytest_rnncov.config.bars import Bars
    from pytest_rnncov.reporting.data import CoverageData
    from pytest_rnncov.reporting.html import HtmlReport
    from pytest_rnncov.reporting.json_report import JsonReport, read_report
    from pytest_rnncov.reporting.markdown_report import MarkdownReport
    from pytest_rnncov.reporting.results import evaluate

    data, _, _ = CoverageData(models={"m": model_state()}).with_exclusions(
        [parse_exclusion(f"m:BC:t={t} = why") for t in range(1, 6)]
    )
    verdict = evaluate(data, Bars.parse("BC:0.5"))
    assert verdict.passed is False  # nothing to cover satisfies no bar
    page = HtmlReport().render(data, verdict)
    assert '<td class="num">n/a</td>' in page and '<td class="num">0%</td>' not in page
    assert "n/a (0/0, 5 excluded)" in MarkdownReport().render(data, verdict)
    _, rates = read_report(json.loads(JsonReport().render(data, verdict)), "r.json")
    assert rates["m"].pop("BC") is None and None not in rates["m"].values() and rates["m"]


def test_the_detail_lines_count_what_the_table_counts():
    from pytest_rnncov.reporting.data import CoverageData
    from pytest_rnncov.reporting.terminal import coverage_lines

    exclusions = ["m:BC:t=3 = never", "m:TC:aa = covered anyway", "m:TC:ab = never"]
    data, _, errors = CoverageData(models={"m": model_state()}).with_exclusions(
        [parse_exclusion(text) for text in exclusions]
    )
    assert not errors
    text = "\n".join(coverage_lines(data, detail=True))
    assert "BC(h/net): uncovered steps none" in text  # step 3 is excluded
    # words aa and bc covered, aa and ab excluded: 1 of the 7 counted; "b" once at position 1
    assert "TC(h/net, w=2, a=3): 1 of 7 words (2 excluded); covered words by symbol" in text
    assert "1: a 0 b 1 c 0 | 2: a 0 b 0 c 1" in text


def test_the_html_figures_show_excluded_conditions_grey_not_uncovered(monkeypatch):
    import matplotlib
    import matplotlib.pyplot as plt

    from pytest_rnncov.reporting import html

    figures = []
    monkeypatch.setattr(html, "_figure", lambda fig, colors=0: figures.append(fig) or "")
    exclusions = [parse_exclusion("m:BC:t=3 = never"), parse_exclusion("m:TC:ab = never")]
    models, _, _ = apply_exclusions({"m": model_state()}, exclusions)
    html.times_figure("BC", models["m"].metrics["BC"])
    html.words_figure(models["m"].metrics["TC"])
    try:
        bars, words = figures
        colors = [matplotlib.colors.to_hex(p.get_facecolor()) for p in bars.axes[0].patches]
        grey, green = (matplotlib.colors.to_hex(c) for c in ("tab:grey", "tab:green"))
        assert colors == [green, green, grey, green, green]  # step 3 was red, with an x
        assert not any(len(c.get_offsets()) for c in bars.axes[0].collections)
        assert len(words.axes[0].images) == 2 and "grey: excluded" in words.axes[0].get_title()
    finally:
        for figure in figures:
            plt.close(figure)
