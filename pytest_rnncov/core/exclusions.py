"""Exclusions: conditions a team declares unreachable, each with a reason.

``MODEL:METRIC:LABEL = REASON`` names the conditions of one tracked model's metric whose
label (as the reports print it: ``t=7 N>=0.8`` for BC, ``abcab`` for a TC word) is LABEL,
or starts with LABEL and a space (``t=7``: every condition at step 7). Excluded conditions
are counted apart: the rate is covered / (total - excluded), and every report lists them
with their reason. An exclusion that names no tracked model, metric or condition is an
error, as coverage.py's configuration is: a stale exclusion would hide coverage silently.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterable

from ..errors import InvalidArgument
from .names import METRIC_NAMES

if TYPE_CHECKING:  # numpy-free at import: the plugin parses exclusions before any test runs
    from .state import ModelState

#: labels compared at most: a metric with more conditions is refused by name
MAX_LABELLED = 1_000_000


@dataclass(frozen=True)
class Exclusion:
    """One configured exclusion."""

    model: str
    metric: str
    label: str
    reason: str

    def __str__(self) -> str:
        return f"{self.model}:{self.metric}:{self.label}"


def parse_exclusion(text: str) -> Exclusion:
    """``MODEL:METRIC:LABEL = REASON`` (the reason is required)."""
    if not isinstance(text, str):
        raise InvalidArgument(f"exclusion {text!r}: give MODEL:METRIC:LABEL = REASON")
    if any(ord(c) < 32 or ord(c) == 127 for c in text):
        raise InvalidArgument(
            f"exclusion {text!r} holds a line break or control character; give one "
            "exclusion per --rnn-exclude, or per line of the ini's rnn_exclude"
        )
    target, separator, reason = text.partition(" = ")
    parts = target.strip().rsplit(":", 2)
    example = "e.g. 'mnist:TC:abcab = the data never forms this word'"
    if not separator or not reason.strip():
        raise InvalidArgument(
            f"exclusion {text!r} gives no reason; write MODEL:METRIC:LABEL = REASON, {example}"
        )
    if len(parts) != 3 or not all(p.strip() for p in parts):
        raise InvalidArgument(f"exclusion {text!r}: name MODEL:METRIC:LABEL, {example}")
    model, metric, label = (p.strip() for p in parts)
    if model == "*":  # track() refuses it as a name: such an exclusion could never apply
        raise InvalidArgument(
            f"exclusion {text!r}: '*' is not a model; an exclusion names the model whose "
            f"condition it excludes, {example}"
        )
    if metric.upper() not in METRIC_NAMES:
        raise InvalidArgument(
            f"exclusion {text!r}: unknown metric {metric!r}; use one of {', '.join(METRIC_NAMES)}"
        )
    return Exclusion(model, metric.upper(), label, " ".join(reason.split()))


def _deduplicated(exclusions: Iterable[Exclusion]) -> tuple[list[Exclusion], list[str]]:
    """``exclusions`` each once, and an error per condition given two reasons (left out
    of the list)."""
    seen: dict[str, Exclusion] = {}
    twice: dict[str, str] = {}
    for exclusion in exclusions:
        first = seen.setdefault(str(exclusion), exclusion)
        if first.reason != exclusion.reason and str(exclusion) not in twice:
            twice[str(exclusion)] = (
                f"{exclusion} is excluded twice (reasons {first.reason!r} and "
                f"{exclusion.reason!r}); keep one"
            )
    return [e for key, e in seen.items() if key not in twice], list(twice.values())


def unique_exclusions(exclusions: Iterable[Exclusion]) -> list[Exclusion]:
    """``exclusions`` each once; InvalidArgument if one condition is given two reasons
    (refused before a session's tests run, not after)."""
    unique, errors = _deduplicated(exclusions)
    if errors:
        raise InvalidArgument(errors[0])
    return unique


def apply_exclusions(
    models: "dict[str, ModelState]", exclusions: Iterable[Exclusion]
) -> "tuple[dict[str, ModelState], list[str], list[str]]":
    """Copies of ``models`` whose metric states carry the exclusions (the originals are
    untouched: data files and baselines keep what was measured); a note per exclusion of a
    model this data does not hold (a run of some tests only: ignored, said so); and an
    error per exclusion that cannot apply (no such metric or condition of its model, two
    reasons for one condition): the others still apply, and the caller fails the run."""
    import dataclasses

    import numpy as np

    from .metrics import condition_label

    chosen: dict[tuple[str, str], list[tuple[Exclusion, np.ndarray]]] = {}
    notes: list[str] = []
    unique, errors = _deduplicated(exclusions)
    for exclusion in unique:
        state = models.get(exclusion.model)
        if state is None:
            known = ", ".join(map(repr, models)) or "none"
            notes.append(
                f"RNN coverage exclusion {exclusion} ignored: model {exclusion.model!r} was "
                f"not tracked in this run (tracked: {known})"
            )
            continue
        metric = state.metrics.get(exclusion.metric)
        if metric is None:
            errors.append(
                f"exclusion {exclusion}: model {exclusion.model!r} tracks no "
                f"{exclusion.metric} (it tracks {', '.join(state.metrics)}); drop the exclusion"
            )
            continue
        if metric.total > MAX_LABELLED:
            errors.append(
                f"exclusion {exclusion}: {exclusion.metric} has {metric.total:,} conditions, "
                f"more than the {MAX_LABELLED:,} an exclusion may search"
            )
            continue
        labels = [condition_label(metric.metric, metric.config, c) for c in range(metric.total)]
        hits = np.array(
            [lab == exclusion.label or lab.startswith(exclusion.label + " ") for lab in labels],
            bool,
        )
        if not hits.any():
            shown = ", ".join(repr(lab) for lab in labels[:3]) or "it has no conditions"
            errors.append(
                f"exclusion {exclusion} matches no condition of {metric.describe} "
                f"(labels look like {shown}); copy a label from the report"
            )
            continue
        chosen.setdefault((exclusion.model, exclusion.metric), []).append((exclusion, hits))
    out = {name: state.copy() for name, state in models.items()}
    for (model, key), found in chosen.items():
        metric = out[model].metrics[key]
        excluded = np.logical_or.reduce([hits for _, hits in found])
        listed = tuple(
            (e.label, e.reason, int(hits.sum()), int((hits & metric.covered_mask).sum()))
            for e, hits in found
        )
        out[model].metrics[key] = dataclasses.replace(metric, excluded=excluded, exclusions=listed)
    return out, notes, errors
