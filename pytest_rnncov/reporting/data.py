"""``CoverageData``: everything a run measured, as one serialisable object.

The same object crosses pytest-xdist (workers to the controller), is written with
``--rnn-data`` and read back by ``python -m pytest_rnncov combine`` / ``report``, and is
what every reporter renders. It holds the coverage state of each tracked model, the
campaigns' figures and galleries, what went wrong while tracking, and the workers whose
data never arrived. Reading a data file checks every field: a malformed file is refused by
name, never half-read.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import os
import secrets
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence, TypeGuard

import numpy as np

from ..core.arrays import FLOAT32_MAX
from ..core.exclusions import Exclusion, apply_exclusions
from ..core.metrics import config_problem
from ..core.state import MetricState, ModelState, merge_models
from ..core.trace import CELL_COMPONENTS
from ..errors import DataFileError
from ..files import as_path, parse_json, read_bounded, read_envelope, write_atomic
from ..generation.results import CampaignSummary
from ..validation import path_text
from .signals import SIGNAL_SAMPLES

FORMAT = "pytest-rnncov-data"
#: version 2 added "runs" (one id per session, so a run is never combined twice); version 3
#: "stopped" (sessions that stopped before all their tests ran) and "random_tests" (tests
#: that fed inputs Hypothesis drew at random); version 4 a campaign's "samples_error";
#: version 5 "retries" (which of "stopped" ran only some tests by design: --lf, --sw)
VERSION = 5
READS = (1, 2, 3, 4, 5)
#: how a retry's reason begins (the plugin's ``_retry_reason``): files of versions 3-4,
#: which have no "retries", are read with these as their retries
RETRY_PREFIXES = ("--lf ", "--sw ")
#: the most conditions (summed over every model and metric) one file or one combination
#: may declare: memory follows this bound, not what a file claims
MAX_FILE_CONDITIONS = 2**24


@dataclass
class CoverageData:
    """What one run (or a combination of runs) measured."""

    models: dict[str, ModelState] = field(default_factory=dict)
    #: per model, normalised signals of a few inputs for the HTML report's signal figure
    signals: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: per campaign: its summary figures plus "gallery" (a few adversarial samples)
    campaigns: list[dict[str, Any]] = field(default_factory=list)
    #: what went wrong in rnncov.track() calls ("test_x: ModelError: ...")
    track_errors: list[str] = field(default_factory=list)
    #: xdist workers that finished without sending data (crashed)
    missing_workers: list[str] = field(default_factory=list)
    #: where the data came from (data files combined), for reports
    sources: list[str] = field(default_factory=list)
    #: one id per session whose coverage this holds: the same run is never counted twice
    runs: list[str] = field(default_factory=list)
    #: why sessions whose coverage this holds stopped before all their tests ran
    stopped: list[str] = field(default_factory=list)
    #: tests that fed inputs Hypothesis drew at random: another run draws others
    random_tests: list[str] = field(default_factory=list)
    #: the entries of ``stopped`` of sessions that ran only some tests by design (--lf,
    #: --sw): partial as any other stop
    retries: list[str] = field(default_factory=list)

    def merge(self, other: "CoverageData") -> None:
        """Union: coverage of the same model combines exactly; lists are concatenated.
        Data of a run already merged (a file named twice, or a copy of one, or the data
        itself) is refused; data made in code, without ``runs``, is named by its content."""
        if other is self:
            raise DataFileError(
                "this data merged into itself would count its inputs twice; merge other data"
            )
        mine, theirs = self.run_ids(), other.run_ids()
        again = sorted(set(mine) & set(theirs))
        if again:
            raise DataFileError(
                f"{', '.join(other.sources) or 'this data'} holds run {again[0]} again (a copy "
                "of a file already combined?); each run's inputs count once: drop the copy"
            )
        merge_models(self.models, other.models.values())
        for name, sample in other.signals.items():
            self.signals.setdefault(name, sample)
        self.campaigns.extend(other.campaigns)
        _union(self.track_errors, other.track_errors)
        self.missing_workers.extend(other.missing_workers)
        self.sources.extend(other.sources)
        self.runs[:] = [*mine, *theirs]
        self.stopped.extend(other.stopped)
        _union(self.random_tests, other.random_tests)
        self.retries.extend(other.retries)

    def run_ids(self) -> list[str]:
        """The ids of the runs this data holds: ``runs``, or for data made in code that
        holds coverage, the id ``to_json`` names it by (a hash of its content)."""
        if self.runs or not self.models:
            return list(self.runs)
        try:
            return list(self.to_json()["runs"])
        except (TypeError, ValueError):  # signals of the user's that JSON cannot hold
            return []

    @property
    def complete(self) -> bool:
        """Whether every worker's data arrived and every session ran all its tests."""
        return not self.missing_workers and not self.stopped

    def with_exclusions(
        self, exclusions: Sequence[Exclusion]
    ) -> tuple["CoverageData", list[str], list[str]]:
        """A copy for the verdict and the reports whose metric states carry ``exclusions``
        (this object, which data files are written from, keeps what was measured), the
        notes on exclusions of models it does not hold, and the errors of exclusions that
        cannot apply (``apply_exclusions``)."""
        if not exclusions:
            return self, [], []
        models, notes, errors = apply_exclusions(self.models, exclusions)
        return dataclasses.replace(self, models=models), notes, errors

    # -- JSON ----------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        """The file's content; data made without ``runs`` (in code, not by a session) is
        named by a hash of its content, so a copy of its file is still refused by
        ``combine``."""
        out = self._content()
        if not self.runs:
            digest = hashlib.sha256(json.dumps(out, sort_keys=True).encode()).hexdigest()
            out["runs"] = [f"content-{digest[:16]}"]
        return out

    def _content(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "models": {name: state.to_json() for name, state in self.models.items()},
            "signals": self.signals,
            "campaigns": self.campaigns,
            "track_errors": self.track_errors,
            "missing_workers": self.missing_workers,
            "sources": self.sources,
            "runs": self.runs,
            "stopped": self.stopped,
            "random_tests": self.random_tests,
            "retries": self.retries,
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), allow_nan=False, separators=(",", ":"))

    @classmethod
    def loads(cls, text: str | bytes, where: str = "coverage data") -> "CoverageData":
        """Read ``dumps`` output; anything malformed raises DataFileError naming it."""
        return cls.from_json(parse_json(text, where), where)

    @classmethod
    def from_json(cls, data: Any, where: str) -> "CoverageData":
        fields, version = read_envelope(data, where, FORMAT, READS, noun="data format")
        fields.exact_keys(
            (
                "format",
                "version",
                "models",
                "signals",
                "campaigns",
                "track_errors",
                "missing_workers",
                "sources",
            )
            + (("runs",) if version >= 2 else ())
            + (("stopped", "random_tests") if version >= 3 else ())
            + (("retries",) if version >= 5 else ())
        )
        models = read_model_states(fields.get("models", dict), where)
        signals = fields.get("signals", dict)
        for name, values in signals.items():
            _check_signals(name, values, where)
        campaigns = fields.get("campaigns", list)
        campaigns = [
            CampaignSummary.from_json(
                campaign, f"{where}, campaign {index}", legacy=version < 2
            ).to_json()
            for index, campaign in enumerate(campaigns)
        ]
        runs = fields.strings("runs") if version >= 2 else []
        if len(set(runs)) != len(runs):
            raise fields.fail("'runs' names a run twice")
        stopped = fields.strings("stopped") if version >= 3 else []
        if version >= 5:
            retries = fields.strings("retries")
            extra = Counter(retries) - Counter(stopped)  # each retry is a stop too
            if extra:
                reason = next(iter(extra))
                raise fields.fail(f"'retries' holds {reason!r}, which 'stopped' does not")
        else:
            retries = [reason for reason in stopped if reason.startswith(RETRY_PREFIXES)]
        return cls(
            models,
            dict(signals),
            list(campaigns),
            fields.strings("track_errors"),
            fields.strings("missing_workers"),
            fields.strings("sources"),
            runs,
            stopped,
            fields.strings("random_tests") if version >= 3 else [],
            retries,
        )

    def save(self, path: str | os.PathLike[str]) -> Path:
        """Write the data file (atomically; see ``Output`` for a run's guarded outputs)."""
        return write_atomic(as_path(path, "data file"), self.dumps() + "\n", "coverage data")

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "CoverageData":
        source = as_path(path, "data file")
        where = f"data file {str(source)!r}"
        text = read_bounded(source, where)
        parsed = parse_json(text, where)
        data = cls.from_json(parsed, where)
        if not data.runs:  # version 1: the content stands for the run, so copies are caught
            # however they are laid out (indented again, other line endings), and by the id
            # of its bytes, which files combined before 2026-11-29 hold
            canonical = json.dumps(parsed, sort_keys=True, separators=(",", ":"))
            ids = (hashlib.sha256(canonical.encode()), hashlib.sha256(text))
            data.runs = list(dict.fromkeys(f"file-{i.hexdigest()[:16]}" for i in ids))
        del parsed, text
        data.sources = data.sources or [path_text(source)]
        return data


def unsent_text(workers: Sequence[str], when: str = "") -> str:
    """ "worker gw1 did not send all its coverage data" (``when`` follows "data"), plural
    for several workers: how every report names the workers whose data is missing."""
    many = len(workers) > 1
    return (
        f"worker{'s' if many else ''} {', '.join(str(w) for w in workers)} did not send all "
        f"{'their' if many else 'its'} coverage data{when}"
    )


def _union(into: list[str], more: Iterable[str]) -> None:
    """Append the strings of ``more`` that ``into`` lacks, in order (linear time: a file
    may list a million)."""
    seen = set(into)
    for item in more:
        if item not in seen:
            seen.add(item)
            into.append(item)


def new_run_id() -> str:
    """A fresh id for one session's coverage data."""
    return secrets.token_hex(8)


def _declared(models: Mapping[str, Any]) -> int:
    """The conditions ``models`` (states, or their raw JSON) declare in all."""
    total = 0
    for state in models.values():
        metrics = (
            state.metrics
            if isinstance(state, ModelState)
            else (state.get("metrics") if isinstance(state, Mapping) else None)
        )
        if not isinstance(metrics, Mapping):
            continue
        for metric in metrics.values():
            count = (
                metric.total
                if isinstance(metric, MetricState)
                else (metric.get("total") if isinstance(metric, Mapping) else None)
            )
            if isinstance(count, int) and not isinstance(count, bool) and count > 0:
                total += count
    return total


def check_total_conditions(models: Mapping[str, Any], where: str) -> None:
    """Refuse, before building anything, raw model states that declare more conditions in
    all than MAX_FILE_CONDITIONS (memory would follow what the file claims)."""
    total = _declared(models)
    if total > MAX_FILE_CONDITIONS:
        raise DataFileError(
            f"{where} declares {total:,} conditions in all, more than the "
            f"{MAX_FILE_CONDITIONS:,} a file may hold; it is not one of ours"
        )


def read_model_states(raw: dict[str, Any], where: str) -> dict[str, ModelState]:
    """The model states of a file's ``models`` object, keyed by name: the total conditions
    they declare bounded first, every state checked, each under its own name."""
    check_total_conditions(raw, where)
    states = {}
    for name, state_raw in raw.items():
        state = read_model_state(state_raw, f"{where}, model {name!r}")
        if state.name != name:
            raise DataFileError(f"{where}: model {name!r} holds the state of {state.name!r}")
        states[name] = state
    return states


def read_model_state(raw: Any, where: str) -> ModelState:
    """``ModelState.from_json`` plus a check of every metric's configuration (fields, types,
    ranges, the number of conditions it implies), so that reports and comparisons built
    from the file cannot fail half-way."""
    state = ModelState.from_json(raw, where)
    components = CELL_COMPONENTS[state.cell]
    for key, metric in state.metrics.items():
        config = metric.config
        problem = config_problem(metric.metric, config, metric.total, metric.describe)
        if problem is None and config.get("window") != list(state.window):
            problem = f"'window' {config.get('window')} is not the model's {list(state.window)}"
        if problem is None and config.get("component", "h") not in components:
            problem = (
                f"'component' {config['component']!r} is not one of the {state.cell} "
                f"components {', '.join(components)}"
            )
        if problem is not None:
            raise DataFileError(f"{where}, metric {key!r}: its 'config' is malformed: {problem}")
    return state


_SIGNAL_PANELS = ("h_net_z", "f_avg_minmax", "h_delta_minmax")


def _is_count(value: Any) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**62


def _numeric_array(value: Any, where: str) -> np.ndarray:
    try:
        array = np.asarray(value, np.float64)
    except (TypeError, ValueError, OverflowError):
        raise DataFileError(f"{where} is not a numeric array") from None
    if array.size == 0 or not (np.abs(array) <= FLOAT32_MAX).all():  # NaN too
        raise DataFileError(f"{where} must be a non-empty array of numbers within float32's range")
    return array


def _check_signals(name: str, signals: Any, where: str) -> None:
    if not isinstance(signals, Mapping):
        raise DataFileError(f"{where}: the signals of {name!r} are not an object")
    steps = signals.get("steps")
    if not isinstance(steps, list) or not steps or not all(map(_is_count, steps)):
        raise DataFileError(f"{where}: the signals of {name!r} need a list of 'steps'")
    for key, values in signals.items():
        if key == "steps":
            continue
        if key not in _SIGNAL_PANELS:
            raise DataFileError(f"{where}: unknown signal panel {key!r} for {name!r}")
        array = _numeric_array(values, f"{where}: signals {name!r} {key}")
        if array.ndim != 2 or array.shape[1] != len(steps) or len(array) > SIGNAL_SAMPLES:
            raise DataFileError(
                f"{where}: signals {name!r} {key} must be at most {SIGNAL_SAMPLES} rows of "
                f"{len(steps)} values (one per step)"
            )


def combine(parts: Iterable[CoverageData]) -> CoverageData:
    """The exact union of several runs' data (a run given twice is refused)."""
    out = CoverageData()
    for part in parts:
        total = _declared(out.models) + _declared(
            {name: state for name, state in part.models.items() if name not in out.models}
        )
        if total > MAX_FILE_CONDITIONS:
            raise DataFileError(
                f"combined, the models declare {total:,} conditions, more than the "
                f"{MAX_FILE_CONDITIONS:,} pytest-rnncov holds at once; combine fewer files"
            )
        out.merge(part)
    return out
