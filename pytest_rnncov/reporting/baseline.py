"""Coverage baselines: save a run's coverage to a committable JSON file and fail a later
run whose coverage falls below it (like pytest-benchmark's ``--benchmark-compare``).

A baseline holds the exact coverage state of every model (covered condition ids per
metric, with each metric's configuration), so a comparison knows which conditions were
lost and refuses to compare unlike configurations.
"""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Mapping

from ..core.state import ModelState
from ..errors import DataFileError
from ..files import parse_json, read_bounded, write_text
from .data import CoverageData, read_model_state
from .results import percent

FORMAT = "pytest-rnncov-baseline"
VERSION = 2


def save_baseline(path: Path, data: CoverageData) -> Path:
    content = {
        "format": FORMAT,
        "version": VERSION,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "models": {name: state.to_json() for name, state in data.models.items()},
    }
    return write_text(path, json.dumps(content, indent=1, allow_nan=False) + "\n", "the baseline")


def load_baseline(path: Path) -> dict[str, ModelState]:
    """The model states of a baseline file, every field checked (DataFileError)."""
    where = f"baseline {str(path)!r}"
    if not path.exists():
        raise DataFileError(f"no coverage baseline at {str(path)!r}; create it with --rnn-save")
    raw = read_bounded(path, where)
    data = parse_json(raw, where, fix="save it again with --rnn-save")
    if not isinstance(data, Mapping) or data.get("format") != FORMAT:
        raise DataFileError(f"{where} is not a pytest-rnncov baseline file")
    if data.get("version") != VERSION:
        raise DataFileError(f"{where} has baseline version {data.get('version')!r}; this "
                            f"pytest-rnncov reads version {VERSION}: save it again with --rnn-save")
    models = data.get("models")
    if not isinstance(models, Mapping):
        raise DataFileError(f"{where}: 'models' must be an object")
    if not models:  # comparing with nothing would always pass
        raise DataFileError(f"{where} holds no model; save it again with --rnn-save from a "
                            "run that tracks one")
    return {name: read_model_state(state, f"{where}, model {name!r}")
            for name, state in models.items()}


def regressions(baseline: dict[str, ModelState], current: dict[str, ModelState],
                tolerance: float) -> list[str]:
    """What fell below the baseline by more than ``tolerance``, or cannot be compared."""
    found = []
    for name, old in baseline.items():
        new = current.get(name)
        if new is None:
            found.append(f"{name}: not tracked in this run")
            continue
        if (old.layer, old.cell, tuple(old.window)) != (new.layer, new.cell, tuple(new.window)):
            found.append(
                f"{name}: the baseline measured {old.cell} layer {old.layer!r} over window "
                f"{list(old.window)}, this run {new.cell} layer {new.layer!r} over "
                f"{list(new.window)}; save a new baseline with --rnn-save")
            continue
        for key, before in old.metrics.items():
            after = new.metrics.get(key)
            if after is None:
                found.append(f"{name} {key}: not tracked in this run")
            elif not before.same_configuration(after):
                found.append(f"{name} {key}: configured as {after.shown_beside(before)}, the "
                             f"baseline has {before.shown_beside(after)}; save a new baseline "
                             "with --rnn-save")
            elif after.rate < before.rate - tolerance:
                lost = int((before.covered_mask & ~after.covered_mask).sum())
                found.append(
                    f"{name} {key} {percent(after.rate, below=before.rate)} < {percent(before.rate)} "
                    f"({after.n_covered}/{after.total} vs {before.n_covered}/{before.total}; "
                    f"{lost} conditions lost)")
    return found
