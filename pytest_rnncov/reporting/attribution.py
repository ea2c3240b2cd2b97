"""Who covers what (``--rnn-context=test``): per test the conditions it covered, and a
minimal set of tests that covers every condition the recorded tests cover, by the greedy
set cover the campaigns use for their minimal suites (``generation.statistics``)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..core.state import ModelState
from ..generation.statistics import MinimalSuite


@dataclass(frozen=True)
class CoverageByTest:
    """One model's recorded tests."""

    #: per test (node id), per metric, the conditions it covered
    covered: dict[str, dict[str, int]]
    #: a smallest-found set of tests that covers every condition the recorded tests cover
    minimal: list[str]
    #: the other tests: each covers nothing the minimal set does not
    adds_nothing: list[str]
    #: per metric, covered conditions with no recorded test (data of a run without
    #: --rnn-context=test was combined in): the attribution is partial where not zero
    unattributed: dict[str, int]


def coverage_by_test(state: ModelState) -> CoverageByTest | None:
    """The summary of ``state``'s recorded tests (None when none were recorded)."""
    recorded = {k: m for k, m in state.metrics.items() if m.contexts is not None}
    if not state.tests or not recorded:
        return None
    rows, conditions, offset = [], [], 0
    for metric in recorded.values():
        assert metric.contexts is not None
        cond, slot = np.nonzero(metric.contexts >= 0)
        rows.append(metric.contexts[cond, slot].astype(np.int64))
        conditions.append(cond.astype(np.int64) + offset)
        offset += metric.total
    # tests in node-id order, not in the order xdist's workers happened to report them: a
    # tie goes to the first by name, and the lists come out the same in every run
    ordered = sorted(range(len(state.tests)), key=state.tests.__getitem__)
    order = np.array(ordered, np.int64)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    suite = MinimalSuite(offset)
    suite.add(order, rank[np.concatenate(rows)], np.concatenate(conditions))
    members = set(suite.members().tolist())
    covered = {
        state.tests[i]: {
            key: int(m.test_counts[i])
            if m.test_counts is not None and i < len(m.test_counts)
            else 0
            for key, m in recorded.items()
        }
        for i in ordered
    }
    unattributed = {
        key: int((m.covered_mask & ~(m.contexts >= 0).any(axis=1)).sum())
        for key, m in recorded.items()
        if m.contexts is not None
    }
    unattributed.update({k: m.n_covered for k, m in state.metrics.items() if k not in recorded})
    return CoverageByTest(
        covered,
        [state.tests[i] for i in ordered if i in members],
        [state.tests[i] for i in ordered if i not in members],
        {k: v for k, v in unattributed.items() if v},
    )


def minimal_set_text(summary: CoverageByTest) -> str:
    """What follows "N tests recorded" in every report: how many of them the minimal set
    keeps ("; 2 of them cover every condition all 3 cover"; nothing for one test)."""
    n, kept = len(summary.covered), len(summary.minimal)
    if n == 1:
        return ""
    return (
        f"; {kept} of them cover{'s' if kept == 1 else ''} every condition "
        f"{'both' if n == 2 else f'all {n}'} cover"
    )


def summary_lines(state: ModelState) -> list[str]:
    """The command line's and the terminal's lines on ``state``'s recorded tests."""
    summary = coverage_by_test(state)
    if summary is None:
        return [f"{state.name}: no tests recorded (run pytest with --rnn-context=test)"]
    n = len(summary.covered)
    lines = [f"{state.name}: {n} test{'s' if n != 1 else ''} recorded{minimal_set_text(summary)}:"]
    lines += [f"  {test}" for test in summary.minimal]
    if summary.unattributed:
        lines.append(
            "WARNING the attribution is partial: covered with no recorded test: "
            + ", ".join(f"{k} {v}" for k, v in summary.unattributed.items())
            + " (data of a run without --rnn-context=test was combined in)"
        )
    if summary.adds_nothing:
        lines.append("adding no coverage the others do not give:")
        lines += [f"  {test}" for test in summary.adds_nothing]
    lines.append("conditions covered per test:")
    for test, counts in summary.covered.items():
        lines.append(f"  {test}: " + ", ".join(f"{k} {v}" for k, v in counts.items()))
    return lines
