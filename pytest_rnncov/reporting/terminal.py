"""Terminal reporters: the "RNN coverage" and "RNN adversarial samples" sections and the
verdict's closing lines. They only render ``CoverageData`` and a ``Verdict``."""

from __future__ import annotations

from typing import Any, Protocol, Sequence

import numpy as np

from ..core import sax
from ..core.names import METRIC_NAMES
from ..core.state import MetricState, ModelState
from ..validation import printable
from .data import CoverageData
from .results import Verdict, no_model_hint, percent


class Reporter(Protocol):
    """What every reporter implements: render the data and the verdict."""

    def report(self, data: CoverageData, verdict: Verdict) -> Any: ...


class Writer(Protocol):
    """The part of pytest's terminal reporter the terminal reports use."""

    def write_sep(self, sep: str, title: str, **markup: bool) -> Any: ...

    def write_line(self, line: str, **markup: bool) -> Any: ...


def _ranges(steps: Sequence[int]) -> str:
    """Compact step list: 4-7, 9, 12-13."""
    runs: list[list[int]] = []
    for step in steps:
        if runs and step == runs[-1][-1] + 1:
            runs[-1].append(step)
        else:
            runs.append([step])
    return ", ".join(f"{r[0]}" if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


def table(rows: list[list[str]]) -> list[str]:
    """Rows as aligned columns, every cell as it will show (control characters escaped:
    the lines are escaped again when written, which changes nothing more)."""
    rows = [[printable(c) for c in r] for r in rows]
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]


def coverage_rows(data: CoverageData, verdict: Verdict | None = None) -> list[list[str]]:
    """The coverage table (a header row, then one row per model), or one row holding one
    cell that says why there is none. With ``verdict``, a rate that failed its bar reads
    as below it (43/48 against 0.9: 89.6%, not 90%)."""
    failed = {} if verdict is None else verdict.failed_bars()
    if not data.models:
        if data.track_errors:
            return [
                ["no model was tracked: rnncov.track() failed: " + "; ".join(data.track_errors)]
            ]
        failed_tests = 0 if verdict is None else verdict.failed_tests
        return [[f"no model was tracked: {no_model_hint(failed_tests)}"]]
    order = {name: i for i, name in enumerate(METRIC_NAMES)}
    names = sorted(
        {k for state in data.models.values() for k in state.metrics},
        key=lambda k: (order.get(k, len(order)), k),
    )
    rows = [["model", "layer", "window", "inputs"] + names]
    for state in data.models.values():
        row = [
            state.name,
            state.layer,
            f"[{state.window[0]}, {state.window[1]}]",
            str(state.n_inputs),
        ]
        for key in names:
            m = state.metrics.get(key)
            row.append("-" if m is None else coverage_cell(m, failed.get((state.name, key))))
        rows.append(row)
    return rows


def coverage_cell(m: MetricState, below: float | None = None) -> str:
    """``80% (4/5)``, or ``80% (4/5, 2 excluded)`` when conditions are counted apart; with
    ``below`` (the bar the rate failed), the rate reads as below it."""
    excluded = f", {m.n_excluded} excluded" if m.n_excluded else ""
    return f"{rate_text(m, below)} ({m.n_covered}/{m.n_counted}{excluded})"


def perturbation_text(campaign: dict[str, Any]) -> str | None:
    """A campaign's average perturbation as every report shows it (None: no sample)."""
    average = campaign.get("average_perturbation")
    return None if average is None else f"{average:.4g}"


def rate_text(m: MetricState, below: float | None = None) -> str:
    """The rate as every report shows it: ``n/a`` when every condition is excluded (the
    rate is 0.0 in numbers, which no bar accepts)."""
    return percent(m.rate, below) if m.n_counted or not m.n_excluded else "n/a"


def exclusion_lines(data: CoverageData) -> list[str]:
    """One line per configured exclusion: what it counts apart, and why."""
    lines = []
    for state in data.models.values():
        for key, m in state.metrics.items():
            for label, reason, conditions, covered in m.exclusions:
                anyway = f", {covered} of them covered anyway" if covered else ""
                lines.append(
                    f"excluded: {state.name} {key} {label!r} ({conditions} "
                    f"condition{'s' if conditions != 1 else ''}{anyway}): {reason}"
                )
    return lines


def coverage_lines(
    data: CoverageData, detail: bool = False, verdict: Verdict | None = None
) -> list[str]:
    """The rows of the "RNN coverage" section (rates as :func:`coverage_rows` shows them)."""
    rows = coverage_rows(data, verdict)
    if len(rows) == 1:
        return rows[0]
    lines = table(rows) + exclusion_lines(data)
    if data.track_errors:
        lines.append("rnncov.track() failed: " + "; ".join(data.track_errors))
    if detail:
        for state in data.models.values():
            lines.extend(detail_lines(state))
    return lines


def detail_lines(state: ModelState) -> list[str]:
    """What is left uncovered, per metric."""
    lines = [f"{state.name}:"]
    for key, m in state.metrics.items():
        lines.append("  " + _metric_detail(key, m))
    return lines


def _metric_detail(key: str, m: MetricState) -> str:
    """What ``m`` left uncovered, of the conditions it counts (exclusions apart)."""
    counted = m.counted_mask
    missing = np.flatnonzero(~m.covered_mask & counted)
    if key in ("BC", "SC"):
        t1, t2 = m.config["window"]
        steps = sorted({t1 + int(c) % (t2 - t1 + 1) for c in missing})
        return f"{m.describe}: uncovered steps {_ranges(steps) or 'none'}" + (
            f" ({len(missing)} condition{'s' if len(missing) != 1 else ''})" if len(missing) else ""
        )
    if key == "TC":
        w, a = int(m.config["w"]), int(m.config["a"])
        digits = sax.word_digits(np.flatnonzero(m.covered_mask & counted), a, w)
        spread = " | ".join(
            f"{j + 1}: "
            + " ".join(f"{chr(97 + s)} {int((digits[:, j] == s).sum())}" for s in range(a))
            for j in range(w)
        )
        excluded = f" ({m.n_excluded} excluded)" if m.n_excluded else ""
        return (
            f"{m.describe}: {m.n_covered} of {m.n_counted} words{excluded}; covered words "
            f"by symbol at each position: {spread}"
        )
    return f"{m.describe}: {len(missing)} conditions uncovered"


def _rate(rate: float) -> str:
    """A percentage that never shows a non-zero rate as 0% (11 of 5,000: 0.22%)."""
    if 0 < rate < 0.01:
        return f"{rate * 100:.2g}%"
    return percent(rate)


def adversarial_rows(campaigns: Sequence[dict[str, Any]]) -> list[list[str]]:
    """The adversarial samples table: a header row, then one row per campaign."""
    rows = [
        [
            "model",
            "test cases",
            "adversarial",
            "adversary rate",
            "unique seeds",
            "avg perturbation",
            "saved to",
        ]
    ]
    for c in campaigns:
        rows.append(
            [
                str(c.get("model", "?")),
                str(c["test_cases"]),
                str(c["adversarial"]),
                _rate(c["adversary_rate"]) if c["test_cases"] else "-",
                str(c["unique"]),
                perturbation_text(c) or "-",
                str(c.get("saved_to") or "-"),
            ]
        )
    return rows


def adversarial_lines(campaigns: Sequence[dict[str, Any]]) -> list[str]:
    """The rows of the "RNN adversarial samples" section, one per campaign."""
    return table(adversarial_rows(campaigns)) + campaign_notes(campaigns)


def campaign_note(campaign: dict[str, Any]) -> str:
    """What a campaign's row does not say: whether it stopped early or kept its samples
    unshrunk, its oracle and mutator, its discarded mutants ("" when nothing)."""
    notes = []
    if campaign.get("interrupted"):
        notes.append(f"interrupted after {campaign['test_cases']} test cases")
    if campaign.get("shrunk") is False:
        notes.append("samples as found (not shrunk)")
    notes += [f"{key} {campaign[key]}" for key in ("oracle", "mutator") if campaign.get(key)]
    if campaign.get("discarded"):
        notes.append(f"{campaign['discarded']} unchanged mutants discarded")
    if campaign.get("samples_error"):
        notes.append(f"samples not saved ({campaign['samples_error']})")
    return "; ".join(notes)


def campaign_notes(campaigns: Sequence[dict[str, Any]]) -> list[str]:
    """One line per campaign with a ``campaign_note``, after its model's name."""
    return [f"{c.get('model', '?')}: {note}" for c in campaigns if (note := campaign_note(c))]


class TermReport:
    """The terminal sections and the verdict lines (control characters of names read from
    files escaped)."""

    def __init__(
        self, writer: Writer, *, detail: bool = False, coverage: bool = True, samples: bool = True
    ) -> None:
        self.writer = writer
        self.detail = detail
        self.coverage = coverage
        self.samples = samples

    def report(self, data: CoverageData, verdict: Verdict) -> None:
        self.sections(data, verdict)
        self.verdict(verdict)

    def sections(self, data: CoverageData, verdict: Verdict | None = None) -> None:
        """The "RNN coverage" and the adversarial samples sections (each when shown)."""
        if self.coverage:
            self.writer.write_sep("-", "RNN coverage")
            for line in coverage_lines(data, self.detail, verdict):
                self.writer.write_line(printable(line))
        if data.campaigns and self.samples:
            self.writer.write_sep("-", "RNN adversarial samples")
            for line in adversarial_lines(data.campaigns):
                self.writer.write_line(printable(line))

    def verdict(self, verdict: Verdict) -> None:
        for text, style in verdict.lines():
            markup = {
                "red": {"red": True, "bold": True},
                "green": {"green": True},
                "yellow": {"yellow": True},
            }[style]
            self.writer.write_line(printable(text), **markup)


class LinesWriter:
    """A Writer that collects plain lines (for the command line and tests)."""

    def __init__(self) -> None:
        self.lines: list[str] = []

    def write_sep(self, sep: str, title: str, **markup: bool) -> None:
        self.lines.append(f" {title} ".center(72, sep))

    def write_line(self, line: str, **markup: bool) -> None:
        self.lines.append(line)
