"""What every metric shares: the batch signals, a batch's result, and the Metric protocol.

A metric is configured by its constructor (parameters are checked at once), then bound to
a fitted :class:`~pytest_rnncov.core.profile.Profile` by :meth:`Metric.bind`, which fixes
its list of conditions and gives it a :class:`~pytest_rnncov.core.state.MetricState`.
``evaluate`` turns one batch of signals into a :class:`BatchResult` (which inputs satisfied
which conditions, and the batch's best fitness per condition); the result can be added to
any number of states of the same configuration (session, running test, campaign), so the
signals of a batch are computed once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, ClassVar

import numpy as np

from ...errors import InvalidArgument, InvalidInput, ProfileError
from ..abstractions import (
    NEEDS_POSITIVE,
    Window,
    check_positive_given,
    check_signal,
    from_sums,
    given_sums,
    step_positive,
    step_total,
    sums_on_host,
)
from ..arrays import array_namespace, is_host, is_jax_array, to_host, wide_int
from ..names import MAX_CONDITIONS
from ..source import flagged_rows
from ..state import MetricState
from ..trace import Trace, check_component

if TYPE_CHECKING:
    from ..profile import Profile

#: The most conditions one metric may have (dense per-condition arrays of this length are
#: kept; TC's a**w beyond it is refused with a message saying how to shrink it).

#: Largest (rows x conditions) block of fitness values computed at once.
BLOCK = 1 << 22

TINY = np.finfo(np.float64).tiny


class Signals:
    """The signals of one traced batch over a window, computed once and shared by metrics.

    Every signal handed to a metric is checked to be finite: a NaN or inf (from an input
    beyond float32's range, or a custom adapter) raises :class:`InvalidInput` naming the
    rows, so it can never count as covering a condition. Signals live where the trace does
    (numpy, or a framework's arrays on its device); ``host()`` gives numpy ones for the
    metrics that only run on the host.
    """

    def __init__(self, trace: Trace, window: Window) -> None:
        t1, t2 = window
        if not 0 <= t1 <= t2 < trace.n_steps:
            raise InvalidInput(
                f"window {list(window)} does not fit a trace of {trace.n_steps} steps"
            )
        self.trace = trace
        self.window = (int(t1), int(t2))
        self._cache: dict[tuple[str, str], Any] = {}
        self._sums: dict[tuple[str, str], Any] = {}
        self._neurons: dict[str, Any] = {}
        self._host: "Signals | None" = None  # never self: a self-reference would leave every
        # batch's trace to the cyclic garbage collector, and memory would grow with the inputs

    def __len__(self) -> int:
        return self.trace.batch_size

    def host(self) -> "Signals":
        """These signals with the trace's steps up to the window's end on the host (itself
        when the trace is there already)."""
        if self.trace.on_host:
            return self
        if self._host is None:
            self._host = Signals(self.trace.to_host(self.window[1] + 1), self.window)
        return self._host

    @staticmethod
    def _check_finite(values: Any, what: str) -> None:
        xp = array_namespace(values)
        if bool(xp.all(xp.isfinite(values))):
            return
        finite = np.isfinite(to_host(values))
        if not finite.all():  # rows of the call (FIRST_ROW: of a batch after others)
            bad = flagged_rows(~finite)
            raise InvalidInput(
                f"the {what} signal holds NaN or inf for inputs {bad[:5].tolist()}"
                f"{', ...' if bad.size > 5 else ''}; the layer overflowed: check those inputs "
                "(values beyond float32's range?) or the adapter that produced the trace"
            ).about_rows(bad[:5])

    def get(self, component: str, abstraction: str) -> np.ndarray:
        """(B, |window|) float64 values of one signal (float32 under JAX without 64-bit
        mode)."""
        key = (component, abstraction)
        if key not in self._cache:
            values = self._signal(component, abstraction)
            self._check_finite(values, f"{component}/{abstraction}")
            self._cache[key] = values
        return self._cache[key]

    def _signal(self, component: str, abstraction: str) -> Any:
        """One signal; the per-step sums over units are computed once per component and
        shared by its signals (BC's h/net and SC's h/delta_net read the same sums). Under
        JAX both sums come to the host in one transfer and the signals are derived there:
        the metrics' few operations on them then cost no device dispatch or synchronisation
        each (``bench/bench_core.py``). A trace that holds only a component's sums (the
        forward pass summed it) gives them as they are."""
        check_signal(component, abstraction)
        sums = self._sums
        given = given_sums(self.trace, component, self.window)  # views: nothing computed
        if given is not None:
            units = self.trace.sum_units
            check_positive_given(given[1], component, abstraction)
            sums[(component, "total")], sums[(component, "positive")] = given
        else:
            states = self.trace.component(component)
            units = int(states.shape[-1])
            if is_jax_array(states) and (component, "total") not in sums:
                sums[(component, "total")], sums[(component, "positive")] = sums_on_host(
                    states, self.window
                )
            if (component, "total") not in sums:
                sums[(component, "total")] = step_total(states, self.window)
            if abstraction in NEEDS_POSITIVE and (component, "positive") not in sums:
                sums[(component, "positive")] = step_positive(states, self.window)
        positive = sums.get((component, "positive"))
        return from_sums(sums[(component, "total")], positive, abstraction, self.window, units)

    def states(self, component: str = "h") -> np.ndarray:
        """(B, |window|, U) values of ``component`` over the window (checked finite)."""
        if component not in self._neurons:
            t1, t2 = self.window
            values = self.trace.component(component)[:, t1 : t2 + 1]
            self._check_finite(values, f"{component} state")
            self._neurons[component] = values
        return self._neurons[component]

    def neurons(self, component: str = "h") -> Any:
        """(B, |window| * U) values of every (step, unit) neuron of ``component``."""
        key = (component, "neurons")
        if key not in self._cache:
            values = self.states(component)
            xp = array_namespace(values)
            self._cache[key] = xp.reshape(values, (values.shape[0], -1))
        return self._cache[key]


#: rows whose per-column counts fit a uint8 (summed a block at a time, ``column_counts``)
COUNT_BLOCK = 255


def column_counts(hit: np.ndarray) -> np.ndarray:
    """int64 count of true values in each column of a (rows, columns) numpy boolean
    matrix (of 0 and 1 bytes, as comparisons give): the rows added as uint8 vectors a
    block of ``COUNT_BLOCK`` at a time, then the blocks' counts as int64
    (``count_nonzero(axis=0)`` walks each short column on its own, slower for the few
    columns of BC and SC: ``bench/bench_update.py``)."""
    flags = hit.view(np.uint8)
    whole = len(flags) - len(flags) % COUNT_BLOCK
    counts = flags[whole:].sum(axis=0, dtype=np.int64)
    if whole and flags.shape[1]:
        blocks = flags[:whole].reshape(-1, COUNT_BLOCK, flags.shape[1])
        counts += blocks.sum(axis=1, dtype=np.uint8).sum(axis=0, dtype=np.int64)
    return counts


@dataclass
class BatchResult:
    """What one batch did to a metric's conditions.

    ``counts[c]``: how many inputs of the batch satisfied condition c. ``hits`` gives the
    (row, condition) pairs on demand (a dense boolean matrix or sparse pairs, whichever the
    metric computed). ``best`` / ``best_row``: the batch's lowest fitness per condition and
    the row giving it (None when fitness was not asked for).
    """

    counts: np.ndarray
    dense: np.ndarray | None = None
    pairs: Callable[[], tuple[np.ndarray, np.ndarray]] | None = None
    best: np.ndarray | None = None
    best_row: np.ndarray | None = None

    @classmethod
    def from_dense(cls, hit: Any) -> "BatchResult":
        """From a (rows, conditions) boolean matrix of any namespace: only the counts come
        to the host now, the matrix when ``hits()`` asks for it."""
        if is_host(hit):
            return cls(column_counts(hit), dense=hit)
        xp = array_namespace(hit)
        return cls(
            to_host(xp.sum(xp.astype(hit, wide_int(xp)), axis=0)).astype(np.int64), dense=hit
        )

    @classmethod
    def from_pairs(cls, rows: np.ndarray, conditions: np.ndarray, total: int) -> "BatchResult":
        """From (row, condition) pairs, each pair at most once."""
        return cls(
            np.bincount(conditions, minlength=total).astype(np.int64),
            pairs=lambda: (rows, conditions),
        )

    def hits(self) -> tuple[np.ndarray, np.ndarray]:
        """(rows, conditions) of every input-condition pair satisfied (computed on demand:
        only campaigns and the coverage delta need them)."""
        if self.dense is not None:
            rows, conditions = np.nonzero(to_host(self.dense))
            return rows.astype(np.int64), conditions.astype(np.int64)
        assert self.pairs is not None
        return self.pairs()


def best_of(fitness: Any) -> tuple[np.ndarray, np.ndarray]:
    """(lowest value, its first row) per column of a (rows, conditions) block, on the host."""
    xp = array_namespace(fitness)
    return (
        to_host(xp.min(fitness, axis=0)).astype(np.float64),
        to_host(xp.argmin(fitness, axis=0)).astype(np.int64),
    )


class Metric:
    """A fixed, finite list of test conditions and what inputs did to them.

    Bound state (after ``bind``): ``state_`` (a MetricState: times per condition, best
    fitness), ``best_input_`` (id of the input that gave the best fitness, -1 when unknown)
    and the attributes ``covered_``, ``times_``, ``best_fitness_`` that read the state.
    """

    name: ClassVar[str]
    #: False for metrics whose fitness is only 1 (uncovered) or 0 (covered).
    graded: ClassVar[bool] = True
    #: True for metrics that read nothing but signals (``Signals.get``), each derived from
    #: the per-step sums of a component over units: their traces may hold only those sums.
    reads_sums_only: ClassVar[bool] = False
    state_: MetricState
    best_input_: np.ndarray
    profile_: "Profile"

    # -- to implement ----------------------------------------------------------------------
    @property
    def n_conditions(self) -> int:
        raise NotImplementedError

    def prepare(self, profile: "Profile") -> None:
        """Fix the conditions from a fitted profile (``bind`` calls it on a copy)."""
        raise NotImplementedError

    def fitness(self, signals: Signals, rows: slice = slice(None)) -> np.ndarray:
        """(rows, n_conditions) fitness; a value <= 0 means the input covers the condition."""
        raise NotImplementedError

    def config(self) -> dict[str, Any]:
        """JSON-ready configuration; enough to name every condition without the profile."""
        raise NotImplementedError

    @classmethod
    def label_from_config(cls, config: dict[str, Any], condition: int) -> str:
        """Human-readable name of a condition, from ``config()``."""
        raise NotImplementedError

    def describe(self) -> str:
        """The metric's configuration in a few words (equal strings: same conditions)."""
        raise NotImplementedError

    @property
    def reads(self) -> tuple[str, ...] | None:
        """The trace components this bound metric reads (None: any of them), so that a
        trace computes no more than the metrics read."""
        return None

    @property
    def reads_positive_parts(self) -> bool:
        """Whether this bound metric may read a signal derived from the per-step sums of
        positive parts (pos, neg, delta), so that a trace of sums (``reads_sums_only``)
        must hold those beside the sums over units."""
        return True

    # -- evaluation (override for speed; these defaults use the dense fitness) -------------
    def evaluate(self, signals: Signals, *, fitness: bool = True) -> BatchResult:
        """Which inputs satisfy which condition, and (with ``fitness``) the best per condition."""
        self._check_bound()
        signals = signals.host()
        n = self.n_conditions
        rows_per_block = max(1, BLOCK // max(n, 1))
        counts = np.zeros(n, np.int64)
        best = np.full(n, np.inf) if fitness else None
        best_row = np.full(n, -1, np.int64) if fitness else None
        all_rows, all_conditions = [], []
        for start in range(0, len(signals), rows_per_block):
            block = self.fitness(signals, slice(start, start + rows_per_block))
            hit = block <= 0
            counts += column_counts(hit)
            rows, conditions = np.nonzero(hit)
            all_rows.append(rows + start)
            all_conditions.append(conditions)
            if fitness:
                assert best is not None and best_row is not None
                value, row = best_of(block)
                better = value < best
                best[better] = value[better]
                best_row[better] = row[better] + start
        rows = np.concatenate(all_rows).astype(np.int64)
        conditions = np.concatenate(all_conditions).astype(np.int64)
        return BatchResult(counts, pairs=lambda: (rows, conditions), best=best, best_row=best_row)

    def condition_fitness(self, signals: Signals, condition: int) -> np.ndarray:
        """(B,) fitness of every input for one condition (the targeted search's objective),
        on the host."""
        return to_host(self.fitness(signals)[:, int(condition)])

    # -- binding and state -----------------------------------------------------------------
    def bind(self, profile: "Profile", *, track_fitness: bool = True) -> "Metric":
        """A copy of this metric with its conditions fixed by ``profile`` and empty state."""
        bound = object.__new__(type(self))  # a shallow copy (copy.copy refuses a bound one)
        bound.__dict__.update(self.__dict__)
        bound.prepare(profile)
        n = bound.n_conditions
        if n > MAX_CONDITIONS:
            raise InvalidArgument(
                f"{bound.describe()} has {n:,} conditions, more than the {MAX_CONDITIONS:,} "
                "pytest-rnncov tracks; use a smaller configuration"
            )
        weights = bound.weights()
        if n == 0 or (weights is not None and not float(np.sum(weights)) > 0):
            raise InvalidArgument(
                f"{bound.describe()} has no condition to cover with this profile (window "
                f"{list(profile.window_)}): its rate would be 0/0, which is not coverage; "
                + (
                    "widen the window (transitions need two steps), "
                    if bound.name in ("BT", "WT")
                    else ""
                )
                + "refit the profile on data where the layer's values vary, or leave the "
                "metric out"
            )
        bound.state_ = MetricState.empty(
            bound.name,
            bound.describe(),
            n,
            bound.config(),
            track_fitness=track_fitness,
            weights=weights,
        )
        bound.profile_ = profile  # whose thresholds the conditions are
        bound.best_input_ = np.full(n, -1, np.int64)
        return bound

    def weights(self) -> np.ndarray | None:
        """Per-condition weights of a weighted rate (WT); None for plain covered / total."""
        return None

    def empty_state(self, *, track_fitness: bool = False) -> MetricState:
        """A fresh state of this bound metric's configuration."""
        self._check_bound()
        return MetricState.empty(
            self.name,
            self.describe(),
            self.n_conditions,
            self.config(),
            track_fitness=track_fitness,
            weights=self.weights(),
        )

    def absorb(self, result: BatchResult, input_ids: np.ndarray) -> np.ndarray:
        """Add a batch's result to this metric's state; returns the newly covered ids."""
        state = self.state_
        if (
            result.best is not None
            and result.best_row is not None
            and state.best_fitness is not None
        ):
            better = result.best < state.best_fitness
            self.best_input_[better] = input_ids[result.best_row[better]]
        return state.add_counts(result.counts, result.best)

    def update(self, signals: Signals, input_ids: np.ndarray) -> int:
        """Evaluate a batch and add it; return how many conditions became covered."""
        result = self.evaluate(signals, fitness=self.state_.best_fitness is not None)
        return len(self.absorb(result, input_ids))

    def _check_bound(self) -> None:
        if not hasattr(self, "state_"):
            raise ProfileError(
                f"{self.name} is not bound to a profile; use Coverage(...) or metric.bind(profile)"
            )

    def label(self, condition: int) -> str:
        """Human-readable name of a condition."""
        self._check_bound()
        if (
            isinstance(condition, bool)
            or not isinstance(condition, (int, np.integer))
            or not (0 <= condition < self.n_conditions)
        ):
            raise InvalidArgument(
                f"condition={condition!r}; {self.name} has conditions 0..{self.n_conditions - 1}"
            )
        return self.label_from_config(self.config(), int(condition))

    # read-only views of the state
    @property
    def covered_(self) -> np.ndarray:
        return self.state_.covered_mask

    @property
    def times_(self) -> np.ndarray:
        return self.state_.times

    @property
    def best_fitness_(self) -> np.ndarray:
        if self.state_.best_fitness is None:
            raise InvalidArgument(f"{self.name} does not keep fitness here (track_fitness=False)")
        return self.state_.best_fitness

    @property
    def covered(self) -> int:
        return self.state_.n_covered

    @property
    def total(self) -> int:
        return self.state_.total

    @property
    def rate(self) -> float:
        return self.state_.rate

    def covered_ids(self) -> list[int]:
        return self.state_.covered_ids().tolist()

    def merge(self, other: "Metric") -> None:
        """Union another bound metric of the same configuration and profile into this one."""
        if other is self or other.state_ is self.state_:  # itself, or a shallow copy
            raise InvalidArgument(
                f"cannot merge {self.describe()} into itself: its inputs would count twice"
            )
        mine, theirs = getattr(self, "profile_", None), getattr(other, "profile_", None)
        if mine is not theirs and (
            mine is None or theirs is None or mine.digest() != theirs.digest()
        ):
            raise InvalidArgument(
                f"cannot merge {other.describe()} bound to another profile: its conditions "
                "are another profile's thresholds; bind both metrics to one profile"
            )
        self.merge_state(other.state_)

    def merge_state(self, state: MetricState) -> None:
        """Union a state of the same configuration (ids of best inputs elsewhere are unknown)."""
        self.state_.check_compatible(state)  # before anything of this metric changes
        if state.best_fitness is not None and self.state_.best_fitness is not None:
            self.best_input_[state.best_fitness < self.state_.best_fitness] = -1
        self.state_.merge(state)

    def __copy__(self) -> "Metric":
        if hasattr(self, "state_"):
            raise InvalidArgument(
                f"copy.copy of a bound {type(self).__name__} would share its state with the "
                "copy; use copy.deepcopy"
            )
        twin = object.__new__(type(self))
        twin.__dict__.update(self.__dict__)
        return twin

    def __repr__(self) -> str:
        if hasattr(self, "state_"):
            return f"<{self.describe()}: {self.covered}/{self.total}>"
        return f"<{type(self).__name__} (unbound)>"


def check_cell_component(metric: Metric, profile: "Profile", component: str) -> None:
    """Refuse a metric asking for a component the profile's cell does not record."""
    try:
        check_component(profile.cell_, component)
    except InvalidArgument as exc:
        raise InvalidArgument(f"{type(metric).__name__}: {exc}") from None
