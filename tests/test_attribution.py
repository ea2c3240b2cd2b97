"""Per-test attribution (--rnn-context=test): the tests recorded per condition, merged
across workers and files, and the minimal set of tests (hand-checked small cases)."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_rnncov.core.state import MetricState, ModelState
from pytest_rnncov.errors import DataFileError
from pytest_rnncov.reporting.attribution import coverage_by_test, summary_lines


def state(tests, first, counts, times=None):
    """A model whose TC (4 conditions) recorded ``first[c]`` (test indices) per condition."""
    tc = MetricState.empty("TC", "TC(h/net, w=2, a=2)", 4, {"w": 2, "a": 2})
    tc.times[:] = [1 if row else 0 for row in first] if times is None else times
    tc.contexts = np.full((4, 5), -1, np.int32)
    for c, row in enumerate(first):
        tc.contexts[c, : len(row)] = row
    tc.test_counts = np.asarray(counts, np.int64)
    return ModelState("m", "lstm", "lstm", (1, 5), "0" * 16, 8, {"TC": tc}, "", list(tests))


def test_the_minimal_set_is_the_greedy_cover_without_redundant_members():
    # a covers {0, 3}, b {0, 1}, c {2, 3}: greedy takes a (ties to the earlier), then b
    # and c; then a is redundant (0 is b's, 3 is c's) and is dropped
    summary = coverage_by_test(state("abc", [[0, 1], [1], [2], [0, 2]], [2, 2, 2]))
    assert summary.minimal == ["b", "c"] and summary.adds_nothing == ["a"]
    assert summary.covered == {"a": {"TC": 2}, "b": {"TC": 2}, "c": {"TC": 2}}
    lines = summary_lines(state("abc", [[0, 1], [1], [2], [0, 2]], [2, 2, 2]))
    assert lines[0] == "m: 3 tests recorded; 2 of them cover every condition all 3 cover:"
    assert "adding no coverage the others do not give:" in lines and "  a" in lines
    # one test covering what two cover: "1 covers" (it read "1 cover")
    one = summary_lines(state("ab", [[0, 1], [0], [0], []], [3, 1]))  # a covers all b does
    assert one[0] == "m: 2 tests recorded; 1 of them covers every condition both cover:"
    # one test recorded: nothing to choose among
    alone = summary_lines(state("a", [[0], [0], [], []], [2]))
    assert alone[:2] == ["m: 1 test recorded:", "  a"]


def test_the_minimal_set_does_not_depend_on_the_order_tests_were_recorded():
    """Two tests covering the same conditions: which joined the set followed the order
    the xdist workers happened to report them in (README's --tests output changed between
    runs); a tie now goes to the first test by node id."""
    # "one" and "again" cover {0, 1}; "two" covers {2}
    reported = state(["one", "two", "again"], [[0, 2], [0, 2], [1], []], [2, 1, 2])
    swapped = state(["again", "two", "one"], [[0, 2], [0, 2], [1], []], [2, 1, 2])
    for summary in (coverage_by_test(reported), coverage_by_test(swapped)):
        assert summary.minimal == ["again", "two"] and summary.adds_nothing == ["one"]
        assert list(summary.covered) == ["again", "one", "two"]  # listed by node id


def test_merging_remaps_test_indices_and_keeps_the_first_five_per_condition():
    mine = state(["t0", "t1", "t2", "t3"], [[0, 1, 2, 3], [], [], []], [1, 1, 1, 1])
    theirs = state(["t3", "x", "y"], [[1, 0, 2], [1], [], []], [1, 2, 0])
    mine.merge(theirs)
    assert mine.tests == ["t0", "t1", "t2", "t3", "x", "y"]
    tc = mine.metrics["TC"]
    assert tc.contexts[0].tolist() == [0, 1, 2, 3, 4]  # t3 once; then x; y does not fit
    assert tc.contexts[1].tolist() == [4, -1, -1, -1, -1]
    assert tc.test_counts.tolist() == [1, 1, 1, 1, 2, 0]


def test_recorded_tests_survive_the_file_and_bad_ones_are_refused():
    original = state("abc", [[0, 1], [1], [2], [0, 2]], [2, 2, 2])
    back = ModelState.from_json(original.to_json())
    assert back.tests == ["a", "b", "c"]
    assert np.array_equal(back.metrics["TC"].contexts, original.metrics["TC"].contexts)
    assert "tests" not in original.to_json(tests=False)  # baselines leave them out
    for edit, says in [
        (lambda d: d["metrics"]["TC"]["tests"]["first"][0].append(7), "test indices below 3"),
        (lambda d: d["metrics"]["TC"]["tests"]["first"][0].append(0), "distinct"),
        (lambda d: d["metrics"]["TC"]["tests"]["first"].__setitem__(0, [[0]]), "test indices"),
        (lambda d: d["metrics"]["TC"]["tests"]["first"].__setitem__(0, [{}]), "test indices"),
        (lambda d: d["tests"].append("a"), "names a test twice"),
        (lambda d: d["metrics"]["TC"]["tests"]["counts"].append(1), "counts 4 tests"),
    ]:
        data = original.to_json()
        edit(data)
        with pytest.raises(DataFileError, match=says):
            ModelState.from_json(data)
    uncovered = state("ab", [[0], [1], [], []], [1, 1], times=[1, 0, 0, 0]).to_json()
    with pytest.raises(DataFileError, match="not covered"):
        ModelState.from_json(uncovered)


def test_the_html_report_shows_the_recorded_tests():
    from pytest_rnncov.reporting.data import CoverageData
    from pytest_rnncov.reporting.html import HtmlReport
    from pytest_rnncov.reporting.results import evaluate

    data = CoverageData(models={"m": state("abc", [[0, 1], [1], [2], [0, 2]], [2, 2, 2])})
    page = HtmlReport().render(data, evaluate(data, None))
    assert "<h3>Tests (3 recorded; 2 of them cover every condition all 3 cover)</h3>" in page
    single = CoverageData(models={"m": state("a", [[0], [0], [], []], [2])})
    assert "<h3>Tests (1 recorded)</h3>" in HtmlReport().render(single, evaluate(single, None))
    assert "Adding no coverage the others do not give: a</p>" in page
    assert '<tr><td>b</td><td class="num">2</td><td>yes</td></tr>' in page


def test_combining_a_run_without_recorded_tests_says_the_attribution_is_partial():
    recorded = state("ab", [[0], [1], [], []], [1, 1])
    unrecorded = state("", [[], [], [], []], [], times=[0, 0, 1, 1])
    unrecorded.metrics["TC"].contexts = unrecorded.metrics["TC"].test_counts = None
    recorded.merge(unrecorded)
    summary = coverage_by_test(recorded)
    assert summary.unattributed == {"TC": 2}  # conditions 2 and 3: covered by nobody known
    assert any(
        line.startswith("WARNING the attribution is partial") for line in summary_lines(recorded)
    )
    assert coverage_by_test(state("ab", [[0], [1], [], []], [1, 1])).unattributed == {}


def test_a_test_id_with_control_characters_is_refused_from_a_file():
    data = state("ab", [[0], [1], [], []], [1, 1]).to_json()
    data["tests"][1] = "a\nb\x1b[31mRED"
    with pytest.raises(DataFileError, match="control characters"):
        ModelState.from_json(data)
