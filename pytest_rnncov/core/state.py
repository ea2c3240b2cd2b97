"""The one coverage state type: what a set of inputs did to a metric's conditions.

A :class:`MetricState` is plain data (no model, no profile): the metric's configuration,
its number of conditions, how many inputs satisfied each condition (``times``; a condition
is covered when that is above zero), optionally the best fitness seen per condition (the
targeted search needs it) and the weights of WT's conditions. States of the same
configuration merge exactly (union of covered conditions, summed times, lowest fitness),
and serialise to JSON with a format version: the same object crosses pytest-xdist,
fills baselines, data files and the JSON report, and backs ``Coverage``.

A :class:`ModelState` groups the metric states of one tracked model with what they were
measured on (layer, cell, window, weights fingerprint, number of inputs).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Iterable

import numpy as np

from ..errors import InvalidArgument
from ..files import Fields
from ..validation import shown
from .names import MAX_CONDITIONS, METRIC_NAMES, TESTS_PER_CONDITION, WEIGHTED_METRICS
from .trace import CELL_COMPONENTS

STATE_VERSION = 1
#: the largest coverage time or input count kept: sums saturate here instead of wrapping
#: past int64 (the readers accept values below 2**62)
MAX_COUNT = 2**62 - 1


def _state_fields(data: Any, where: str) -> Fields:
    """The fields of a (metric or model) state, after its version (an int, not true/1.0)."""
    fields = Fields(data, where)
    version = data.get("version")
    if type(version) is not int or version != STATE_VERSION:
        raise fields.fail(
            f"state format version {shown(version)}; this pytest-rnncov reads "
            f"version {STATE_VERSION}"
        )
    return fields


def _int_list(
    fields: Fields, key: str, *, length: int | None = None, low: int = 0, high: int | None = None
) -> np.ndarray:
    values = fields.get(key, list)
    if not all(isinstance(v, int) and not isinstance(v, bool) and abs(v) < 2**62 for v in values):
        raise fields.fail(f"{key!r} must be a list of integers below 2**62")
    array = np.asarray(values, np.int64).reshape(-1)
    if length is not None and len(array) != length:
        raise fields.fail(f"{key!r} has {len(array)} entries, expected {length}")
    if len(array) and (array.min() < low or (high is not None and array.max() >= high)):
        if high is None:
            raise fields.fail(f"{key!r} holds a value below {low}")
        raise fields.fail(f"{key!r} holds values outside [{low}, {high})")
    return array


@dataclass
class MetricState:
    """Coverage of one metric's conditions: mergeable, JSON-serialisable.

    ``times[c]`` counts the inputs that satisfied condition ``c``; ``covered`` is
    ``times > 0``. ``best_fitness`` (lowest fitness seen; <= 0 means covered) is kept where
    the targeted search needs it, and ``weights`` where the rate is a weighted share (WT).
    """

    metric: str
    describe: str
    total: int
    times: np.ndarray
    config: dict[str, Any] = field(default_factory=dict)
    best_fitness: np.ndarray | None = None
    weights: np.ndarray | None = None
    #: conditions excluded by configuration (``core.exclusions``), counted apart from the
    #: figures; set only on the copy a report renders, never written to data files
    excluded: np.ndarray | None = None
    #: (label, reason, conditions, of them covered anyway) per exclusion
    exclusions: tuple[tuple[str, str, int, int], ...] = ()
    #: per condition, the first tests that covered it (indices into ``ModelState.tests``,
    #: -1 for none; shape (total, TESTS_PER_CONDITION)); None unless tests are recorded
    contexts: np.ndarray | None = None
    #: per test of ``ModelState.tests``, how many of these conditions it covered
    test_counts: np.ndarray | None = None

    @classmethod
    def empty(
        cls,
        metric: str,
        describe: str,
        total: int,
        config: dict[str, Any] | None = None,
        *,
        track_fitness: bool = False,
        weights: np.ndarray | None = None,
    ) -> "MetricState":
        return cls(
            metric,
            describe,
            int(total),
            np.zeros(int(total), np.int64),
            dict(config or {}),
            np.full(int(total), np.inf) if track_fitness else None,
            None if weights is None else np.asarray(weights, np.float64),
        )

    # -- figures -------------------------------------------------------------------------
    @property
    def covered_mask(self) -> np.ndarray:
        return self.times > 0

    @property
    def counted_mask(self) -> np.ndarray:
        """The conditions the figures count: all but the excluded ones."""
        return np.ones(self.total, bool) if self.excluded is None else ~self.excluded

    @property
    def n_excluded(self) -> int:
        return 0 if self.excluded is None else int(np.count_nonzero(self.excluded))

    @property
    def n_counted(self) -> int:
        """The conditions the figures count: all but the excluded ones."""
        return self.total - self.n_excluded

    @property
    def n_covered(self) -> int:
        """Covered conditions among those counted."""
        if self.excluded is None:
            return int(np.count_nonzero(self.times))
        return int(np.count_nonzero(self.covered_mask & ~self.excluded))

    def covered_ids(self) -> np.ndarray:
        return np.flatnonzero(self.times)

    @property
    def measurable(self) -> bool:
        """Whether there is anything to cover (conditions, and weight for WT): a rate of
        0/0 is not coverage, so an unmeasurable state never satisfies a bar."""
        weights = self._counted_weights()
        return self.n_counted > 0 and (weights is None or float(weights.sum()) > 0)

    @property
    def rate(self) -> float:
        """covered / counted, or the covered share of the counted weights (WT); 0.0 with
        nothing to cover (see ``measurable``)."""
        if not self.measurable:
            return 0.0
        weights = self._counted_weights()
        if weights is not None:
            return float(weights[self.covered_mask].sum() / float(weights.sum()))
        return self.n_covered / self.n_counted

    def _counted_weights(self) -> np.ndarray | None:
        if self.weights is None or self.excluded is None:
            return self.weights
        return np.where(self.excluded, 0.0, self.weights)

    def without_exclusions(self) -> "MetricState":
        """The raw state (what data files and baselines hold)."""
        if self.excluded is None:
            return self
        return MetricState(
            self.metric,
            self.describe,
            self.total,
            self.times,
            self.config,
            self.best_fitness,
            self.weights,
            contexts=self.contexts,
            test_counts=self.test_counts,
        )

    # -- growing -------------------------------------------------------------------------
    def add_counts(self, counts: np.ndarray, best: np.ndarray | None = None) -> np.ndarray:
        """Count one batch: ``counts[c]`` inputs satisfied condition c; ``best`` is the batch's
        lowest fitness per condition. Returns the ids that became covered."""
        before = self.covered_mask
        _add_saturating(self.times, counts)
        if best is not None and self.best_fitness is not None:
            np.minimum(self.best_fitness, best, out=self.best_fitness)
        return np.flatnonzero(self.covered_mask & ~before)

    def same_configuration(self, other: "MetricState") -> bool:
        """Same metric, same number of conditions, same configuration to the last digit."""
        return (self.metric, self.total, self.config) == (other.metric, other.total, other.config)

    def shown_beside(self, other: "MetricState") -> str:
        """This configuration as words, or as its fields where the words match ``other``'s
        (descriptions round numbers)."""
        return self.describe if self.describe != other.describe else str(self.config)

    def check_compatible(self, other: "MetricState") -> None:
        if not isinstance(other, MetricState):
            raise InvalidArgument(
                f"a MetricState combines with another MetricState (a ModelState's "
                f".metrics[name]), got {type(other).__name__}"
            )
        if not self.same_configuration(other):
            theirs, ours = other.shown_beside(self), self.shown_beside(other)
            raise InvalidArgument(
                f"cannot combine coverage of {theirs} ({other.total} conditions) with "
                f"{ours} ({self.total} conditions): the configurations differ"
            )

    def merge(self, other: "MetricState", tests: np.ndarray | None = None) -> None:
        """Union: covered conditions, summed times, lowest fitness; with ``tests`` (where
        each of ``other``'s test indices goes among this state's model's tests), the tests
        recorded per condition and per test. It checks the metric and its configuration
        only: BS, SBC, BT and WT conditions are a profile's grid cells, which the
        configuration does not identify; ``ModelState.merge`` checks the profile too."""
        self.check_compatible(other)
        _add_saturating(self.times, other.times)
        if self.best_fitness is not None and other.best_fitness is not None:
            np.minimum(self.best_fitness, other.best_fitness, out=self.best_fitness)
        if tests is not None and other.contexts is not None and other.test_counts is not None:
            self._merge_tests(other.contexts, other.test_counts, tests)

    def _merge_tests(self, contexts: np.ndarray, counts: np.ndarray, tests: np.ndarray) -> None:
        theirs = np.where(contexts >= 0, tests[np.maximum(contexts, 0)], -1)
        if self.contexts is None:
            self.contexts = np.full((self.total, TESTS_PER_CONDITION), -1, np.int32)
        for c in np.flatnonzero((theirs >= 0).any(axis=1)):  # merging only: not a hot path
            row = [int(t) for t in self.contexts[c] if t >= 0]
            row += [int(t) for t in theirs[c] if t >= 0 and t not in row]
            row = row[:TESTS_PER_CONDITION]
            self.contexts[c, : len(row)] = row
        size = int(tests.max()) + 1 if len(tests) else 0
        mine = np.zeros(0, np.int64) if self.test_counts is None else self.test_counts
        grown = np.zeros(max(size, len(mine)), np.int64)
        grown[: len(mine)] = mine
        np.maximum.at(grown, tests, counts)
        self.test_counts = grown

    def copy(self, *, track_fitness: bool | None = None) -> "MetricState":
        keep = self.best_fitness is not None if track_fitness is None else track_fitness
        return MetricState(
            self.metric,
            self.describe,
            self.total,
            self.times.copy(),
            dict(self.config),
            None if not keep or self.best_fitness is None else self.best_fitness.copy(),
            None if self.weights is None else self.weights.copy(),
            contexts=None if self.contexts is None else self.contexts.copy(),
            test_counts=None if self.test_counts is None else self.test_counts.copy(),
        )

    # -- JSON ----------------------------------------------------------------------------
    def to_json(self, *, fitness: bool = False, tests: bool = True) -> dict[str, Any]:
        """JSON-ready: covered ids and their times (sparse), configuration, weights, and the
        tests recorded per condition (``tests=False`` leaves them out: baselines)."""
        raw = self.without_exclusions()  # files hold what was measured, exclusions apart
        ids = self.covered_ids()
        out: dict[str, Any] = {
            "version": STATE_VERSION,
            "metric": self.metric,
            "describe": self.describe,
            "config": self.config,
            "total": self.total,
            "covered": raw.n_covered,
            "rate": raw.rate,
            "covered_ids": ids.tolist(),
            "times": self.times[ids].tolist(),
        }
        if self.weights is not None:
            out["weights"] = self.weights.tolist()
        if fitness and self.best_fitness is not None:
            out["best_fitness"] = [
                None if not math.isfinite(v) else v for v in self.best_fitness.tolist()
            ]
        if tests and self.contexts is not None and self.test_counts is not None:
            rows = np.flatnonzero((self.contexts >= 0).any(axis=1))
            out["tests"] = {
                "conditions": rows.tolist(),
                "first": [[int(t) for t in self.contexts[c] if t >= 0] for c in rows],
                "counts": self.test_counts.tolist(),
            }
        return out

    @classmethod
    def from_json(cls, data: Any, where: str = "metric state") -> "MetricState":
        """Read ``to_json`` output; anything malformed raises DataFileError naming it. The
        fields of its ``config`` are checked by the file readers (``CoverageData.from_json``,
        baselines), which know every metric's constructor."""
        f = _state_fields(data, where)
        f.exact_keys(
            (
                "version",
                "metric",
                "describe",
                "config",
                "total",
                "covered",
                "rate",
                "covered_ids",
                "times",
            ),
            optional=("weights", "best_fitness", "tests"),
        )
        metric = f.get("metric", str)
        describe = f.get("describe", str)
        config = f.get("config", dict)
        if metric not in METRIC_NAMES:
            raise f.fail(f"metric {metric!r} is not one of {', '.join(METRIC_NAMES)}")
        total = f.get("total", int)
        if not 0 <= total <= MAX_CONDITIONS:
            raise f.fail(f"'total' is {total}, outside [0, {MAX_CONDITIONS}]")
        ids = _int_list(f, "covered_ids", high=total)
        times = _int_list(f, "times", length=len(ids), low=1)
        if len(ids) > 1 and not (np.diff(ids) > 0).all():  # as written: sorted, no repeats
            raise f.fail("'covered_ids' must be sorted without repeats")
        full = np.zeros(total, np.int64)
        full[ids] = times
        weights = None
        if ("weights" in data) != (metric in WEIGHTED_METRICS):  # a weighted share, or not
            raise f.fail(
                f"'weights' belongs to {', '.join(WEIGHTED_METRICS)} only, and it needs them; "
                f"metric {metric!r} {'has' if 'weights' in data else 'lacks'} them"
            )
        if "weights" in data:
            raw = f.get("weights", list)
            # floats as written (an integer could be too large for float64, or rounded)
            if len(raw) != total or not all(
                isinstance(v, float) and math.isfinite(v) and v >= 0 for v in raw
            ):
                raise f.fail(f"'weights' must be {total} finite floats >= 0")
            weights = np.asarray(raw, np.float64)
        fitness = None
        if "best_fitness" in data:
            raw = f.get("best_fitness", list)
            if len(raw) != total or not all(
                v is None or (isinstance(v, float) and math.isfinite(v)) for v in raw
            ):
                raise f.fail(f"'best_fitness' must be {total} finite floats or null")
            fitness = np.array([np.inf if v is None else v for v in raw], np.float64)
        state = cls(metric, describe, total, full, dict(config), fitness, weights)
        if "tests" in data:
            state.contexts, state.test_counts = _read_tests(f, total, full)
        # redundant figures must agree with the ids exactly (both are computed the same way)
        for key, actual in (("covered", state.n_covered), ("rate", state.rate)):
            claimed = f.get(key, type(actual))
            if claimed != actual or math.copysign(1, claimed) != math.copysign(1, actual):
                raise f.fail(f"{key!r} is {claimed!r} but the covered ids give {actual!r}")
        return state


def _read_tests(fields: Fields, total: int, times: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """A metric state's "tests": per condition the first tests that covered it (each a
    covered condition, at most TESTS_PER_CONDITION distinct tests) and per test a count."""
    f = Fields(fields.get("tests", dict), f"{fields.where}, 'tests'")
    f.exact_keys(("conditions", "first", "counts"))
    conditions = _int_list(f, "conditions", high=total)
    counts = _int_list(f, "counts")
    first = f.get("first", list)
    if len(first) != len(conditions):
        raise f.fail(f"'first' has {len(first)} entries for {len(conditions)} conditions")
    if len(conditions) > 1 and not (np.diff(conditions) > 0).all():
        raise f.fail("'conditions' must be sorted without repeats")
    if len(conditions) and not (times[conditions] > 0).all():
        raise f.fail("'conditions' names a condition that is not covered")
    contexts = np.full((total, TESTS_PER_CONDITION), -1, np.int32)
    for c, row in zip(conditions.tolist(), first):
        if (
            not isinstance(row, list)
            or not 0 < len(row) <= TESTS_PER_CONDITION
            or not all(type(t) is int and 0 <= t < len(counts) for t in row)
            or len(set(row)) != len(row)  # after the type check: a nested list is unhashable
        ):
            raise f.fail(
                f"the tests of condition {c} must be 1 to {TESTS_PER_CONDITION} distinct "
                f"test indices below {len(counts)}"
            )
        contexts[c, : len(row)] = row
    return contexts, counts


@dataclass
class ModelState:
    """The coverage of one tracked model: its metric states and what they measured."""

    name: str
    layer: str
    cell: str
    window: tuple[int, int]
    fingerprint: str
    n_inputs: int
    metrics: dict[str, MetricState]
    #: digest of the profile the conditions were built from (``Profile.digest``)
    profile: str = ""
    #: the tests (node ids) the metric states' recorded tests index (``--rnn-context=test``)
    tests: list[str] = field(default_factory=list)

    def same_subject(self, other: "ModelState") -> bool:
        return (self.layer, self.cell, tuple(self.window), self.fingerprint, self.profile) == (
            other.layer,
            other.cell,
            tuple(other.window),
            other.fingerprint,
            other.profile,
        )

    def differences(self, other: "ModelState") -> list[str]:
        """What differs between the subjects of two states: "layer 'a' vs 'b'", ..."""
        pairs = {
            "layer": (repr(other.layer), repr(self.layer)),
            "cell": (other.cell, self.cell),
            "window": (str(list(other.window)), str(list(self.window))),
            "weights": (other.fingerprint, self.fingerprint),
            "profile": (other.profile or "(none)", self.profile or "(none)"),
        }
        return [f"{key} {a} vs {b}" for key, (a, b) in pairs.items() if a != b]

    def check_compatible(self, other: "ModelState") -> None:
        if not isinstance(other, ModelState):
            raise InvalidArgument(
                f"a ModelState combines with another ModelState (coverage.state(), or "
                f"ModelState.from_json of a data file's model), got {type(other).__name__}"
            )
        differ = self.differences(other)
        if differ:
            hint = {
                "layer": "trace the same layer in every run",
                "cell": "trace the same layer in every run",
                "window": "give every run the same window",
                "weights": "the runs tested different weights: combine runs of one model file",
                "profile": "if each worker fitted its own profile, give track() a profile file "
                "path (fitted once, then shared) or fit from inputs drawn with rnncov.rng()",
            }[differ[0].split(" ", 1)[0]]
            raise InvalidArgument(
                f"cannot combine coverage of model {other.name!r} with {self.name!r}: they "
                f"differ in {', '.join(differ)} (this data vs the data already combined; TC "
                f"symbols and neuron ranges come from the profile); {hint}"
            )

    def check_mergeable(self, other: "ModelState") -> None:
        """Refuse ``other`` unless ``merge`` takes it whole: the same model, the same metrics
        (one tracked in only some runs would be shown and gated over inputs it never saw)
        and each of the same configuration, all checked before anything changes."""
        self.check_compatible(other)
        if set(other.metrics) != set(self.metrics):
            raise InvalidArgument(
                f"cannot combine coverage of model {other.name!r}: this data tracked "
                f"{', '.join(sorted(other.metrics))}, the data already combined "
                f"{', '.join(sorted(self.metrics))}; a metric tracked in only some runs "
                "would count only their inputs: give every run the same metrics "
                "(metrics= of track() or Coverage(); in pytest --rnn-metrics or the "
                "rnn_metrics ini key)"
            )
        for key, state in other.metrics.items():
            self.metrics[key].check_compatible(state)

    def merge(self, other: "ModelState") -> None:
        """Union another state of the same model and metrics (``check_mergeable``: a
        refusal changes nothing)."""
        self.check_mergeable(other)
        index = {test: i for i, test in enumerate(self.tests)}
        for test in other.tests:
            if test not in index:
                index[test] = len(self.tests)
                self.tests.append(test)
        where = np.array([index[t] for t in other.tests], np.int32)  # their index -> ours
        for key, state in other.metrics.items():
            self.metrics[key].merge(state, where)
        self.n_inputs = min(self.n_inputs + other.n_inputs, MAX_COUNT)

    def copy(self) -> "ModelState":
        return ModelState(
            self.name,
            self.layer,
            self.cell,
            (self.window[0], self.window[1]),
            self.fingerprint,
            self.n_inputs,
            {k: m.copy() for k, m in self.metrics.items()},
            self.profile,
            list(self.tests),
        )

    def rates(self) -> dict[str, float]:
        return {k: m.rate for k, m in self.metrics.items()}

    def to_json(self, *, fitness: bool = False, tests: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {
            "version": STATE_VERSION,
            "name": self.name,
            "layer": self.layer,
            "cell": self.cell,
            "window": list(self.window),
            "fingerprint": self.fingerprint,
            "profile": self.profile,
            "inputs": self.n_inputs,
            "metrics": {
                k: m.to_json(fitness=fitness, tests=tests) for k, m in self.metrics.items()
            },
        }
        if tests and self.tests:
            out["tests"] = list(self.tests)
        return out

    @classmethod
    def from_json(cls, data: Any, where: str = "model state") -> "ModelState":
        f = _state_fields(data, where)
        f.exact_keys(
            (
                "version",
                "name",
                "layer",
                "cell",
                "window",
                "fingerprint",
                "profile",
                "inputs",
                "metrics",
            ),
            optional=("tests",),
        )
        name = f.get("name", str)
        window = _int_list(f, "window", length=2)
        if window[0] > window[1]:
            raise f.fail(f"'window' {window.tolist()} starts after it ends")
        n_inputs = f.get("inputs", int)
        if not 0 <= n_inputs <= MAX_COUNT:
            raise f.fail(f"'inputs' is {n_inputs}, outside [0, 2**62)")
        raw = f.get("metrics", dict)
        if not raw:  # pytest-rnncov never writes one: a model is tracked with a metric
            raise f.fail("'metrics' is empty: a model's state holds at least one metric")
        metrics = {}
        for key, value in raw.items():
            state = MetricState.from_json(value, f"{where}, metric {key!r}")
            if state.metric != key:
                raise f.fail(f"metric {key!r} holds the state of {state.metric!r}")
            metrics[key] = state
        cell = f.get("cell", str)
        if cell not in CELL_COMPONENTS:
            raise f.fail(f"cell {cell!r} is not one of {', '.join(CELL_COMPONENTS)}")
        tests = f.strings("tests") if "tests" in data else []
        if len(set(tests)) != len(tests):
            raise f.fail("'tests' names a test twice")
        if any(not t or not t.isprintable() for t in tests):  # node ids reach terminals
            raise f.fail("'tests' holds an empty test id or one with control characters")
        for key, state in metrics.items():
            if state.test_counts is not None and len(state.test_counts) != len(tests):
                raise f.fail(
                    f"metric {key!r} counts {len(state.test_counts)} tests, the model "
                    f"names {len(tests)}"
                )
        return cls(
            name,
            f.get("layer", str),
            cell,
            (int(window[0]), int(window[1])),
            f.get("fingerprint", str),
            n_inputs,
            metrics,
            f.get("profile", str),
            tests,
        )


def _add_saturating(times: np.ndarray, counts: np.ndarray) -> None:
    """``times += counts`` in place, saturating at MAX_COUNT instead of wrapping."""
    np.add(times, np.minimum(np.asarray(counts, np.int64), MAX_COUNT - times), out=times)


def merge_models(into: dict[str, ModelState], states: Iterable[ModelState]) -> None:
    """Union ``states`` into ``into`` by model name (copies; the inputs stay untouched);
    every state is checked against what it joins before any is merged."""
    states = list(states)
    for state in states:  # a refusal leaves ``into`` as it was
        if state.name in into:
            into[state.name].check_mergeable(state)
    for state in states:
        if state.name in into:
            into[state.name].merge(state)
        else:
            into[state.name] = state.copy()
