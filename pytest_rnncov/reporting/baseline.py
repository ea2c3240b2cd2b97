"""Coverage baselines: save a run's coverage to a committable JSON file and fail a later
run whose coverage falls below it (like pytest-benchmark's ``--benchmark-compare``).

A baseline holds the exact coverage state of every model (covered condition ids per
metric, with each metric's configuration), so a comparison knows which conditions were
lost and refuses to compare unlike configurations. It also says whether the run it came
from was complete (a crashed xdist worker makes it partial), so a comparison against it
knows. It is written only from a run whose verdict did not fail, and a ratchet (comparing
with and saving to one file) only moves up.
"""

from __future__ import annotations

import datetime
import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Sequence

from ..config.bars import percent
from ..core.exclusions import Exclusion, apply_exclusions
from ..core.state import ModelState
from ..errors import DataFileError
from ..files import parse_json, read_bounded, read_envelope
from .data import CoverageData, read_model_states, unsent_text

FORMAT = "pytest-rnncov-baseline"
#: version 3 added "complete" and "missing_workers"; version 2 files (no such mark) are
#: read as complete, which is what the release that wrote them assumed
VERSION = 3
READS = (2, 3)


@dataclass
class Baseline:
    """A saved baseline: model states and whether the run that made them was complete."""

    path: str
    models: dict[str, ModelState]
    missing_workers: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        return not self.missing_workers


def excluded_baseline(
    baseline: Baseline | None, exclusions: Sequence[Exclusion]
) -> Baseline | None:
    """The baseline with the same exclusions as the run it is compared with, so both sides
    count the same conditions (a baseline whose metrics no longer match is left as it is:
    the comparison then names what differs; an exclusion that cannot apply to it is left
    out, as the run's verdict fails on it)."""
    if baseline is None or not exclusions:
        return baseline
    models, _, _ = apply_exclusions(baseline.models, exclusions)
    return Baseline(baseline.path, models, list(baseline.missing_workers))


def baseline_text(data: CoverageData) -> str:
    """The baseline file's content for ``data``."""
    content = {
        "format": FORMAT,
        "version": VERSION,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "complete": not data.missing_workers,  # why_not_saved refuses a stopped run
        "missing_workers": list(data.missing_workers),
        "models": {name: state.to_json(tests=False) for name, state in data.models.items()},
    }
    return json.dumps(content, indent=1, allow_nan=False) + "\n"


def load_baseline(path: Path, ratchet: bool = False) -> Baseline:
    """The baseline file at ``path``, every field checked (DataFileError); ``ratchet``:
    read for ``--rnn-compare=X --rnn-save=X``, which says how to start one."""
    where = f"baseline {str(path)!r}"
    if not path.exists():
        if path.is_symlink():  # broken, or a loop: --rnn-save would not mend it either
            raise DataFileError(
                f"{where} is a symbolic link to nothing readable ({os.readlink(path)!r}, a "
                "missing file or a loop of links); point it at a baseline file or remove it"
            )
        if ratchet:  # --rnn-save is given already: say what the first run is
            raise DataFileError(
                f"no coverage baseline at {str(path)!r} yet: a ratchet compares with it "
                "before it saves; create it with one run with --rnn-save alone"
            )
        raise DataFileError(f"no coverage baseline at {str(path)!r}; create it with --rnn-save")
    raw = read_bounded(path, where)
    fix = "save it again with --rnn-save"
    data = parse_json(raw, where, fix=fix)
    fields, version = read_envelope(data, where, FORMAT, READS, fix=fix, noun="baseline")
    fields.exact_keys(
        ("format", "version", "models") + (("complete", "missing_workers") if version >= 3 else ()),
        optional=("created",),
    )
    missing = fields.strings("missing_workers") if version >= 3 else []
    if version >= 3 and fields.get("complete", bool) is not (not missing):
        raise fields.fail(
            f"'complete' is {data['complete']!r} but 'missing_workers' lists {len(missing)}"
        )
    if "created" in data:
        fields.get("created", str)
    models = fields.get("models", dict)
    if not models:  # comparing with nothing would always pass
        raise DataFileError(
            f"{where} holds no model; save it again with --rnn-save from a run that tracks one"
        )
    return Baseline(str(path), read_model_states(models, where), missing)


def regressions(baseline: Baseline, current: dict[str, ModelState], tolerance: float) -> list[str]:
    """What fell below the baseline by more than ``tolerance``, or cannot be compared."""
    found = []
    for name, old in baseline.models.items():
        new = current.get(name)
        if new is None:
            found.append(f"{name}: not tracked in this run")
            continue
        if (old.layer, old.cell, tuple(old.window)) != (new.layer, new.cell, tuple(new.window)):
            found.append(
                f"{name}: the baseline measured {old.cell} layer {old.layer!r} over window "
                f"{list(old.window)}, this run {new.cell} layer {new.layer!r} over "
                f"{list(new.window)}; save a new baseline with --rnn-save"
            )
            continue
        for key, before in old.metrics.items():
            after = new.metrics.get(key)
            if after is None:
                found.append(f"{name} {key}: not tracked in this run")
            elif not before.same_configuration(after):
                found.append(
                    f"{name} {key}: configured as {after.shown_beside(before)}, the "
                    f"baseline has {before.shown_beside(after)}; save a new baseline "
                    "with --rnn-save"
                )
            elif after.rate < before.rate - tolerance:
                lost = int((before.covered_mask & ~after.covered_mask).sum())
                found.append(
                    f"{name} {key} {percent(after.rate, below=before.rate)} < "
                    f"{percent(before.rate)} "
                    f"({after.n_covered}/{after.n_counted} vs "
                    f"{before.n_covered}/{before.n_counted}; "
                    f"{lost} condition{'s' if lost != 1 else ''} lost)"
                )
    return found


def why_not_saved(
    passed: bool | None,
    data: CoverageData,
    existing: Baseline | None,
    ratchet: bool,
    failed_tests: int = 0,
) -> str | None:
    """Why this run's coverage must not be saved as the baseline (None: save it).

    A baseline is written only from a run whose verdict did not fail and in which no test
    failed (``failed_tests``); a partial run never replaces a complete baseline; a
    ratchet (the compared baseline saved over) only moves up: no metric may be lower than
    in the baseline it replaces.
    """
    if passed is False:
        return "this run failed its verdict, and a baseline is written only from a run that passed"
    if failed_tests:
        return (
            f"{failed_tests} test{'s' if failed_tests != 1 else ''} failed in this run, and a "
            "baseline is written only from a run that passed"
        )
    if data.stopped:
        return f"{'; '.join(data.stopped)}, and a baseline is written only from a whole run"
    if existing is None:
        return None
    if data.missing_workers and existing.complete:
        return (
            f"this run is partial ({unsent_text(data.missing_workers)}) and the baseline is "
            "complete"
        )
    if ratchet:
        lower = [
            f"{name} {key} {percent(after.rate, below=before.rate)} < {percent(before.rate)}"
            for name, old in existing.models.items()
            if name in data.models
            for key, before in old.metrics.items()
            for after in [data.models[name].metrics.get(key)]
            if after is not None and after.rate < before.rate
        ]
        if lower:
            return (
                "a ratchet only moves up, and this run is lower (within the tolerance): "
                + ", ".join(lower)
            )
    return None
