"""The session's outcome, computed once: coverage bars, their checks, the baseline
comparison, and whether the data is complete. Reporters (terminal, JSON, HTML) and the
pytest layer only render a :class:`Verdict`; its messages, and the marker's, live here.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Sequence

from ..config.bars import Bars, percent, percent_bar
from ..core.state import ModelState
from .baseline import Baseline, regressions
from .data import CoverageData, unsent_text


@dataclass(frozen=True)
class Check:
    """One (model, metric) against its bar; ``rate`` is None when the metric was not tracked
    (``model_tracked`` False: a bar names a model that no test tracked)."""

    model: str
    metric: str
    bar: float
    rate: float | None
    covered: int = 0
    total: int = 0
    model_tracked: bool = True
    #: False when the metric has nothing to cover (0/0): that never satisfies a bar
    measurable: bool = True
    #: the models that were tracked (named when a bar names another)
    tracked: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return self.rate is not None and self.measurable and self.rate >= self.bar

    def text(self, show_model: bool, show_bar: bool) -> str:
        """This check as the gate's line names it (of a tracked model: ``untracked_text``
        names a model no test tracked once, with all its bars)."""
        name = f"{self.model} {self.metric}" if show_model else self.metric
        if self.rate is None:
            return f"{name} not tracked ({untracked_hint(self)})"
        if not self.measurable:
            return f"{name} has no condition to cover (0/{self.total}), which is not coverage"
        bar = f" < {percent_bar(self.bar)}" if show_bar and not self.passed else ""
        rate = percent(self.rate, below=self.bar if not self.passed else None)
        return f"{name} {rate} ({self.covered}/{self.total}){bar}"

    def to_json(self, decided: bool = True) -> dict[str, Any]:
        """``decided``: whether the gate was applied (else ``passed`` is null: a check of
        partial data decides nothing)."""
        return {
            "model": self.model,
            "metric": self.metric,
            "bar": self.bar,
            "rate": self.rate,
            "covered": self.covered,
            "total": self.total,
            "passed": self.passed if decided else None,
            "model_tracked": self.model_tracked,
            "measurable": self.measurable,
        }


def untracked_hint(check: Check) -> str:
    """How to gate a metric a tracked model does not track."""
    return (
        f"to gate it, measure it: add {check.metric} to the session's --rnn-metrics or to "
        "rnncov.track(..., metrics=...)"
    )


def no_model_hint(failed_tests: int = 0) -> str:
    """What to do when no model was tracked (and the tests that failed, which may be why)."""
    n = failed_tests
    failed = (
        f"; {n} test{'s' if n != 1 else ''} failed or errored: a fixture that tracks one "
        "may be among them"
        if n
        else ""
    )
    return f"register one with rnncov.track(model, ...){failed}"


def untracked_text(checks: Sequence[Check]) -> str:
    """One model's failed checks of a model no test tracked, as one phrase."""
    first = checks[0]
    tracked = f"tracked: {', '.join(first.tracked)}" if first.tracked else "no model was tracked"
    bars = ", ".join(f"{c.metric} {percent_bar(c.bar)}" for c in checks)
    return f"model {first.model!r} is not tracked (bars {bars}; {tracked})"


def check_models(models: dict[str, ModelState], bars: Bars) -> list[Check]:
    """Every gated (model, metric) of ``models`` against ``bars``; models a bar names that
    are missing get a failed check."""
    checks = []
    for name, state in models.items():
        for metric, bar in bars.gated(name):
            m = state.metrics.get(metric)
            checks.append(
                Check(name, metric, bar, None)
                if m is None
                else Check(
                    name, metric, bar, m.rate, m.n_covered, m.n_counted, measurable=m.measurable
                )
            )
    for name in bars.named_models:
        if name not in models:
            checks.extend(
                Check(name, metric, bar, None, model_tracked=False, tracked=tuple(models))
                for metric, bar in bars.gated(name)
            )
    return checks


@dataclass(frozen=True)
class Verdict:
    """The outcome of a session (or of combined data), computed once.

    ``passed`` is False when a setting could not apply (``errors``: a stale exclusion) or
    when a gate was asked for and the data is partial (``undecided``); else None when
    nothing was asked for (no bars, no baseline) or when the gate does not apply
    (collect-only, every test deselected), and True or False otherwise. The exit code, the
    JSON ``passed`` and the terminal's last line all follow it.
    """

    bars: Bars | None = None
    applied: bool = True
    skipped_reason: str | None = None
    checks: tuple[Check, ...] = ()
    no_model: bool = False
    track_errors: tuple[str, ...] = ()
    baseline: str | None = None
    tolerance: float = 0.0
    regressions: tuple[str, ...] = ()
    missing_workers: tuple[str, ...] = ()
    #: why the sessions this data comes from stopped before all their tests ran
    stopped: tuple[str, ...] = ()
    #: tests that fed inputs Hypothesis drew at random (another run draws others)
    random_tests: tuple[str, ...] = ()
    n_models: int = 0
    #: the workers a partial baseline missed when it was saved (empty: complete)
    baseline_missing: tuple[str, ...] = ()
    #: settings that could not apply to the data (an exclusion matching no condition):
    #: each fails the verdict, whatever the bars say
    errors: tuple[str, ...] = ()
    #: the tests that failed or errored (a fixture meant to track a model may be one)
    failed_tests: int = 0
    #: the gate was not applied because the data is partial (``skipped_reason`` says how):
    #: a gate asked for and never decided fails
    undecided: bool = False

    def failed_bars(self) -> dict[tuple[str, str], float]:
        """The bar of each (model, metric) whose rate is below it: the rate is shown so."""
        return {
            (c.model, c.metric): c.bar for c in self.checks if c.rate is not None and c.rate < c.bar
        }

    @property
    def gated(self) -> bool:
        """Whether a gate was asked for: bars or a baseline to compare with."""
        return self.bars is not None or self.baseline is not None

    @property
    def gate_passed(self) -> bool | None:
        if self.bars is None or not self.applied:
            return None
        return not self.no_model and all(c.passed for c in self.checks)

    @property
    def baseline_passed(self) -> bool | None:
        if self.baseline is None or not self.applied:
            return None
        return not self.regressions

    @property
    def passed(self) -> bool | None:
        if self.errors or (self.undecided and self.gated):
            return False
        outcomes = [o for o in (self.gate_passed, self.baseline_passed) if o is not None]
        return None if not outcomes else all(outcomes)

    @property
    def complete(self) -> bool:
        return not self.missing_workers and not self.stopped

    # -- messages --------------------------------------------------------------------------
    def gate_line(self) -> str | None:
        """The gate's last line, without the FAIL prefix (None when no gate applies)."""
        if self.bars is None or not self.applied:
            return None
        single = self.bars.single
        head = (
            f"Required RNN coverage of {percent_bar(single)}"
            if single is not None
            else f"Required RNN coverage ({self.bars.describe()})"
        )
        if self.no_model:
            if self.track_errors:
                return (
                    f"{head} not reached: no model was tracked; rnncov.track() failed: "
                    + "; ".join(self.track_errors)
                )
            return f"{head} not reached: no model was tracked ({no_model_hint(self.failed_tests)})"
        failed = [c for c in self.checks if not c.passed]
        if not failed:
            return f"{head} reached."
        show_model = len({c.model for c in self.checks}) > 1
        untracked: dict[str, list[Check]] = {}
        for c in failed:
            if not c.model_tracked:
                untracked.setdefault(c.model, []).append(c)
        return f"{head} not reached: " + ", ".join(
            [
                c.text(show_model=show_model, show_bar=single is None)
                for c in failed
                if c.model_tracked
            ]
            + [untracked_text(group) for group in untracked.values()]
        )

    def baseline_line(self) -> str | None:
        if self.baseline is None or not self.applied:
            return None
        if self.regressions:
            return (
                f"RNN coverage fell below baseline {self.baseline} (tolerance "
                f"{self.tolerance:g}): " + "; ".join(self.regressions)
            )
        return f"RNN coverage is not below baseline {self.baseline}."

    def lines(self) -> list[tuple[str, str]]:
        """(text, style) lines for the end of the terminal report; style is "red" (a
        failure, prefixed FAIL), "green" or "yellow" (a warning)."""
        out: list[tuple[str, str]] = []
        said = self.applied or not self.gated  # else the not-applied line says why
        if self.missing_workers and said:
            out.append(
                (
                    "WARNING RNN coverage is partial: "
                    + unsent_text(self.missing_workers)
                    + "; the numbers miss some inputs",
                    "yellow",
                )
            )
        if self.stopped and said:
            out.append(
                (
                    "WARNING RNN coverage is partial: "
                    + "; ".join(self.stopped)
                    + " (nothing of the tests that did not run is counted)",
                    "yellow",
                )
            )
        if self.random_tests:
            n = len(self.random_tests)
            shown = ", ".join(self.random_tests[:3]) + (", ..." if n > 3 else "")
            out.append(
                (
                    f"WARNING RNN coverage counts inputs Hypothesis drew at random in {n} "
                    f"test{'s' if n != 1 else ''} ({shown}): another run draws others, so "
                    "the coverage, and the gate, can differ on a retry; make the draws "
                    "repeatable with derandomize=True in a Hypothesis settings profile, "
                    "--hypothesis-seed=N or CI=1 (Hypothesis' ci profile); a test whose own "
                    "@settings says derandomize=False draws at random under any profile: "
                    "drop that, or add @seed(N)",
                    "yellow",
                )
            )
        if self.baseline_missing and self.applied:
            out.append(
                (
                    f"WARNING baseline {self.baseline} is partial: "
                    + unsent_text(self.baseline_missing, " when it was saved")
                    + ", so it is lower than a full run; save it again from a complete run",
                    "yellow",
                )
            )
        if not self.applied and self.gated:
            line = f"RNN coverage gate not applied: {self.skipped_reason}."
            out.append(("FAIL " + line, "red") if self.undecided else (line, "yellow"))
        baseline = self.baseline_line()
        if baseline is not None:
            out.append(("FAIL " + baseline, "red") if self.regressions else (baseline, "green"))
        gate = self.gate_line()
        if gate is not None:
            out.append((gate, "green") if self.gate_passed else ("FAIL " + gate, "red"))
        out.extend((f"FAIL RNN coverage {error}", "red") for error in self.errors)
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "applied": self.applied,
            "skipped_reason": self.skipped_reason,
            "gate": None
            if self.bars is None
            else {
                "required": (
                    self.bars.single if self.bars.single is not None else self.bars.describe()
                ),
                "bars": self.bars.to_json(),
                "gate_metrics": list(self.bars.gate_metrics),
                "passed": self.gate_passed,
                "no_model": self.no_model,
                "message": self.gate_line(),
                "checks": [c.to_json(self.applied) for c in self.checks],
            },
            "baseline": None
            if self.baseline is None
            else {
                "path": self.baseline,
                "tolerance": self.tolerance,
                "passed": self.baseline_passed,
                "regressions": list(self.regressions),
                "complete": not self.baseline_missing,
                "missing_workers": list(self.baseline_missing),
            },
            "complete": self.complete,
            "missing_workers": list(self.missing_workers),
            "stopped": list(self.stopped),
            "random_tests": list(self.random_tests),
            "track_errors": list(self.track_errors),
            "errors": list(self.errors),
        }


def evaluate(
    data: CoverageData,
    bars: Bars | None,
    *,
    applied: bool = True,
    skipped_reason: str | None = None,
    baseline: Baseline | None = None,
    tolerance: float = 0.0,
    errors: Sequence[str] = (),
    failed_tests: int = 0,
) -> Verdict:
    """The verdict on ``data``: the one place where the session outcome is decided (the
    bars, the comparison with ``baseline`` when one is given, and ``errors``: settings
    that could not apply, each failing it); ``failed_tests`` is named when no model was
    tracked. The gate is decided on complete data only (``partial_reason``)."""
    partial = partial_reason(data)
    undecided = applied and partial is not None
    if undecided:
        applied, skipped_reason = False, partial
    checks = tuple(check_models(data.models, bars)) if bars is not None else ()
    found = (
        regressions(baseline, data.models, tolerance) if baseline is not None and applied else []
    )
    return Verdict(
        bars=bars,
        applied=applied,
        skipped_reason=skipped_reason,
        checks=checks,
        no_model=bars is not None and not data.models,
        track_errors=tuple(data.track_errors),
        baseline=None if baseline is None else baseline.path,
        tolerance=tolerance,
        regressions=tuple(found),
        missing_workers=tuple(data.missing_workers),
        stopped=tuple(data.stopped),
        random_tests=tuple(data.random_tests),
        n_models=len(data.models),
        baseline_missing=() if baseline is None else tuple(baseline.missing_workers),
        errors=tuple(errors),
        failed_tests=failed_tests,
        undecided=undecided,
    )


def partial_reason(data: CoverageData) -> str | None:
    """Why a gate on ``data`` cannot be decided (None: the data is complete). A gate
    passed on partial data says nothing of what is missing: a worker's data may hold a
    model no other worker fed, and the tests a session did not run (stopped early, or a
    ``--lf``/``--sw`` retry running only some) may be all that feed one. So partial data
    is never gated, whether or not its coverage reaches the bars."""
    reasons = list(data.stopped)
    if data.missing_workers:
        reasons.append(unsent_text(data.missing_workers))
    if not reasons:
        return None
    if not data.models:  # nothing is shown (a session stopped before its tests ran)
        return "; ".join(reasons)
    shown = "the tests that ran" if data.stopped else "the data that arrived"
    return f"{'; '.join(reasons)}; the coverage shown is from {shown}"


@dataclass
class MarkerOutcome:
    """The ``@pytest.mark.rnn_coverage`` check of one test's own inputs."""

    bars: Bars
    checks: list[Check] = field(default_factory=list)
    #: the models this test fed
    fed: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        return all(c.passed for c in self.checks)

    def message(self) -> str:
        single = self.bars.single
        head = (
            f"below {percent_bar(single)}"
            if single is not None
            else f"below its bars ({self.bars.describe()})"
        )
        lines = [f"RNN coverage of the inputs this test fed is {head}:"]
        unfed: set[str] = set()
        for c in self.checks:
            if c.passed:
                continue
            if not c.model_tracked:
                if c.model in unfed:
                    continue  # one line per unfed model, not one per metric
                unfed.add(c.model)
                lines.append(
                    f"  a bar names model {c.model!r}, which this test did not feed "
                    f"(it fed: {', '.join(self.fed) or 'none'})"
                )
            elif c.rate is None:
                lines.append(
                    f"  {c.model}: {c.metric} is not tracked for this model; {untracked_hint(c)}"
                )
            elif not c.measurable:
                lines.append(
                    f"  {c.model}: {c.metric} has no condition to cover (0/{c.total}), "
                    "which is not coverage"
                )
            else:
                bar = "" if single is not None else f" < {percent_bar(c.bar)}"
                lines.append(
                    f"  {c.model}: {c.metric} {percent(c.rate, below=c.bar)} "
                    f"({c.covered}/{c.total}, {c.total - c.covered} uncovered){bar}"
                )
        return "\n".join(lines)
