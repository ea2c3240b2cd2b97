"""Coverage delta (paper RQ4): which conditions a suspect set reaches that a reference set
does not. A backdoored model shows new internal behaviour on trigger inputs."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Sequence

from ..errors import InvalidInput, RNNCovError
from .coverage import KEPT_NOTE, Coverage

if TYPE_CHECKING:
    from .metrics import Metric
    from .profile import Profile
    from .source import TraceSource


@dataclass
class MetricDelta:
    """One metric's rates and the conditions only the suspect set reaches."""

    name: str
    describe: str
    reference_rate: float
    combined_rate: float
    new_conditions: list[int]
    new_labels: list[str]
    reached_by: dict[int, list[int]] = field(default_factory=dict)  # condition -> suspect rows


@dataclass
class DeltaReport:
    """Coverage of ``reference`` versus ``reference + suspect``, per metric."""

    n_reference: int
    n_suspect: int
    metrics: dict[str, MetricDelta]

    @property
    def any_new(self) -> bool:
        return any(m.new_conditions for m in self.metrics.values())

    def flagged(self) -> list[int]:
        """Rows of the suspect set that reach at least one new condition."""
        rows = {r for m in self.metrics.values() for rs in m.reached_by.values() for r in rs}
        return sorted(rows)

    def summary(self) -> str:
        lines = [
            f"coverage delta: {self.n_reference} reference inputs + {self.n_suspect} suspect inputs"
        ]
        for m in self.metrics.values():
            shown = ", ".join(m.new_labels[:8]) + (", ..." if len(m.new_labels) > 8 else "")
            lines.append(
                f"  {m.describe}: {m.reference_rate:.1%} -> {m.combined_rate:.1%}, "
                f"{len(m.new_conditions)} new" + (f" ({shown})" if m.new_conditions else "")
            )
        return "\n".join(lines)


def _about(which: str, exc: RNNCovError) -> RNNCovError:
    """``exc`` saying which of the two sets it is about, without the note of what the
    internal coverage kept (which means nothing to the caller)."""
    said = str(exc).split(KEPT_NOTE)[0]
    about = type(exc)(f"{which}: {said}")
    if isinstance(exc, InvalidInput) and isinstance(about, InvalidInput):
        about.about_rows(exc.rows)
    return about


def coverage_delta(
    model: "TraceSource",
    profile: "Profile",
    reference: Any,
    suspect: Any,
    metrics: Sequence["str | Metric"] = ("BC", "SC", "TC"),
    *,
    preset: str = "paper",
) -> DeltaReport:
    """Compare the coverage of ``reference`` with that of ``reference`` plus ``suspect``."""
    base = Coverage(model, profile, metrics, preset=preset, track_fitness=False)
    try:
        base.update(reference)
    except RNNCovError as exc:
        raise _about("reference", exc) from None
    reference_covered = {k: m.covered_.copy() for k, m in base.metrics.items()}
    reference_rates = base.rates()
    n_reference = base.n_inputs_
    reached: dict[str, dict[int, list[int]]] = {k: {} for k in base.metrics}
    offset = 0
    try:  # chunk by chunk: memory bounded however many suspect inputs
        for chunk in base.stream(suspect, outputs=False, keep_inputs=False):
            for key, (_, result) in chunk.observation.items():
                rows, conditions = result.hits()
                new = ~reference_covered[key][conditions]
                hits = zip((rows[new] + chunk.start).tolist(), conditions[new].tolist())
                for row, condition in hits:
                    reached[key].setdefault(condition, []).append(row)
            offset = chunk.start + len(chunk.signals)
    except RNNCovError as exc:
        raise _about("suspect", exc) from None
    out = {}
    for key, metric in base.metrics.items():
        new_ids = sorted(reached[key])
        out[key] = MetricDelta(
            key,
            metric.describe(),
            reference_rates[key],
            metric.rate,
            new_ids,
            [metric.label(c) for c in new_ids],
            {c: reached[key][c] for c in new_ids},
        )
    return DeltaReport(n_reference, offset, out)
