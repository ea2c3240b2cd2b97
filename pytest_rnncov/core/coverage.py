"""``Coverage``: the metrics of one traced layer, fed batch by batch in bounded memory.

:meth:`Coverage.stream` is the one trace -> coverage pipeline: it runs the model batch by
batch and yields, per batch, the outputs, the trace, the signals, what was gained and the
observation (each metric's result), which tracked models, campaigns and the coverage delta
build on.
"""

from __future__ import annotations

import copy
import inspect
import secrets
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Iterable, Iterator, Mapping

import numpy as np

from ..errors import InvalidArgument, InvalidInput, RNNCovError
from ..validation import check_str
from .metrics import DEFAULT_METRICS, BatchResult, Metric, Signals, make_metric
from .profile import Profile
from .source import CheckedInputs, check_source, rows_from
from .state import MAX_COUNT, MetricState, ModelState
from .threads import numpy_work
from .trace import Trace, concat_traces

if TYPE_CHECKING:
    from .source import TraceSource

#: The most inputs a Coverage keeps copies of for the targeted search (``best_input``).
MAX_KEPT = 4096
#: how an error of a later batch says what the coverage kept (``stream``)
KEPT_NOTE = " (this coverage kept the first"

#: One batch's results per metric name, tagged with the profile and configuration that
#: produced them (a result is reused only where both are the same).
Observation = dict[str, tuple[str, BatchResult]]


def bind_metrics(
    specs: Iterable[Any], profile: Profile, preset: str, track_fitness: bool
) -> dict[str, Metric]:
    """Configured, bound metrics by name; refuses an empty list and duplicates."""
    if isinstance(specs, (str, Metric)):
        specs = (specs,)
    if specs is None or isinstance(specs, Mapping) or not isinstance(specs, Iterable):
        raise InvalidArgument(
            f"metrics={specs!r}; pass metric names or Metric instances, e.g. "
            "metrics=('BC', 'SC', 'TC')"
        )
    bound: dict[str, Metric] = {}
    for spec in specs:
        metric = make_metric(spec, preset).bind(profile, track_fitness=track_fitness)
        if metric.name in bound:
            raise InvalidArgument(f"metric {metric.name} is given twice; pass each metric once")
        bound[metric.name] = metric
    if not bound:
        raise InvalidArgument("metrics is empty; pass e.g. metrics=('BC', 'SC', 'TC')")
    return bound


def _components_read(metrics: Iterable[Metric]) -> tuple[str, ...] | None:
    """Every component some metric reads (None when one may read any)."""
    read: set[str] = set()
    for metric in metrics:
        if metric.reads is None:
            return None
        read.update(metric.reads)
    return tuple(sorted(read))


def _union(read: tuple[str, ...] | None, other: tuple[str, ...] | None) -> tuple[str, ...] | None:
    """The components two sets of metrics read (None: any)."""
    return None if read is None or other is None else tuple(sorted({*read, *other}))


def _gives_sums(model: Any, components: tuple[str, ...] | None) -> bool:
    """Whether ``model``'s forward pass gives the per-step sums of ``components`` (an
    adapter's ``gives_sums``; a source without one gives states)."""
    gives = getattr(model, "gives_sums", None)
    return callable(gives) and bool(gives(components))


def _sums_options(model: Any, positive: bool) -> dict[str, Any]:
    """``iter_traces`` options for a trace of sums: ``positive=False`` where the metrics read
    no sums of positive parts and ``model``'s ``iter_traces`` takes that option (a source
    written before it gives both sums, as it did)."""
    if positive:
        return {"summed": True}
    try:
        parameters = inspect.signature(model.iter_traces).parameters.values()
    except (TypeError, ValueError):  # no signature to read: the option is not passed
        return {"summed": True}
    takes = any(p.name == "positive" or p.kind is p.VAR_KEYWORD for p in parameters)
    return {"summed": True, "positive": False} if takes else {"summed": True}


@dataclass
class Chunk:
    """One batch of :meth:`Coverage.stream`, already added to the coverage."""

    #: the batch's first row in the streamed inputs
    start: int
    #: the model's outputs (None when not asked for)
    outputs: np.ndarray | None
    #: what the metrics read: some components' states, or only their per-step sums
    #: (``Trace.step_sums``) where the forward pass gives those; every component with
    #: ``stream(full_trace=True)``
    trace: Trace
    signals: Signals
    #: conditions newly covered by this batch, per metric
    gained: dict[str, int]
    #: each metric's result for this batch (reusable by another Coverage of this profile)
    observation: Observation


class Coverage:
    """BC / SC / TC (or any metrics) of one model's recurrent layer over a growing set of
    inputs.

    ``metrics`` holds names (configured by ``preset``: ``"paper"`` or ``"testrnn"``) or
    configured :class:`~pytest_rnncov.core.metrics.Metric` instances. ``update(x)`` runs the
    model batch by batch and adds each batch as it comes, so any number of inputs fits in
    memory; covered conditions only grow. With ``track_fitness`` (default), every metric
    keeps the best fitness per condition and a copy of the input that gave it for uncovered
    conditions (``best_input``), which the targeted search starts from.
    """

    def __init__(
        self,
        model: "TraceSource",
        profile: Profile,
        metrics: Iterable[Any] = DEFAULT_METRICS,
        *,
        preset: str = "paper",
        track_fitness: bool = True,
    ) -> None:
        model = check_source(model)
        if not isinstance(profile, Profile):
            raise InvalidArgument(
                f"profile={profile!r} is not a Profile; fit one with "
                "Profile().fit(model, x_train) or Profile.load(path)"
            )
        profile.check(model)
        if not isinstance(track_fitness, (bool, np.bool_)):
            raise InvalidArgument(f"track_fitness={track_fitness!r}; pass True or False")
        self.model = model
        self.profile = profile
        self.profile_digest_ = profile.digest()
        self.preset = preset
        self.metrics = bind_metrics(metrics, profile, preset, track_fitness)
        #: the trace components the metrics read (None: every component)
        self.components_ = _components_read(self.metrics.values())
        #: whether the metrics read nothing but signals, so a trace may hold only the
        #: per-step sums of those components (where the model's forward pass gives them)
        self.sums_only_ = self.components_ is not None and all(
            m.reads_sums_only for m in self.metrics.values()
        )
        #: whether some metric reads the sums of positive parts (pos, neg, delta): else a
        #: trace of sums may hold the sums over units alone
        self.positive_parts_ = any(m.reads_positive_parts for m in self.metrics.values())
        self.track_fitness = track_fitness
        self.n_inputs_ = 0
        #: a token for each Coverage whose inputs this one holds (its own, those merged in;
        #: shared by its deep copies made after it saw inputs): two that share one would
        #: count those inputs twice if merged
        self.lineage = frozenset({secrets.token_hex(8)})
        self._kept: dict[int, np.ndarray] = {}

    def __getitem__(self, name: str) -> Metric:
        if not isinstance(name, str):
            raise InvalidArgument(
                f"coverage[{name!r}]: index by metric name, one of {', '.join(self.metrics)}"
            )
        try:
            return self.metrics[name.upper()]
        except KeyError:
            raise InvalidArgument(
                f"no metric {name!r} here; this Coverage has {', '.join(self.metrics)}"
            ) from None

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and name.upper() in self.metrics

    # -- feeding -----------------------------------------------------------------------
    def update(self, x: Any) -> dict[str, int]:
        """Run ``x`` through the model batch by batch and add it; return newly covered
        conditions per metric."""
        gained = dict.fromkeys(self.metrics, 0)
        for chunk in self.stream(x, outputs=False):
            for key, value in chunk.gained.items():
                gained[key] += value
        return gained

    def stream(
        self,
        x: Any,
        *,
        outputs: bool = True,
        full_trace: bool = False,
        whole: bool = False,
        keep_inputs: bool = True,
        feeds: "Coverage | None" = None,
    ) -> Iterator[Chunk]:
        """Run ``x`` through the model batch by batch, add each batch to this coverage and
        yield it as a :class:`Chunk`.

        ``full_trace`` traces every step and component (else only through the window's
        end, and only the components the metrics read); ``whole``
        yields one chunk for all of ``x`` (its batches' traces joined); ``keep_inputs``
        keeps copies of inputs for the targeted search (``best_input``); ``feeds`` is
        another coverage of the same model the chunks' signals will also feed
        (``update_signals``), so the trace holds what its metrics read too.
        """
        inputs = CheckedInputs(self.model, x)
        until, components = (None, None) if full_trace else (self.until, self.components_)
        summed = self.sums_only_
        if feeds is not None and (
            not isinstance(feeds, Coverage) or feeds.profile_digest_ != self.profile_digest_
        ):
            raise InvalidArgument(
                f"feeds={feeds!r}; pass a Coverage of this model measured against the same "
                "profile (the chunks' signals are over this profile's window)"
            )
        positive = self.positive_parts_
        if feeds is not None and not full_trace:  # same profile: the same window and until
            components = _union(components, feeds.components_)
            summed = summed and feeds.sums_only_
            positive = positive or feeds.positive_parts_
        summed = not full_trace and summed and _gives_sums(self.model, components)
        options: dict[str, Any] = _sums_options(self.model, positive) if summed else {}

        def batches() -> Iterator[tuple[np.ndarray, np.ndarray | None, Trace]]:
            """(the batch's checked inputs, outputs, trace) in order, part by part."""
            for part in inputs:
                start = 0
                for out, trace in self.model.iter_traces(  # type: ignore[call-arg]
                    part, outputs=outputs, until=until, components=components, **options
                ):
                    yield part[start : start + trace.batch_size], out, trace
                    start += trace.batch_size

        parts: Iterable[tuple[np.ndarray | None, np.ndarray | None, Trace]] = batches()
        if whole:
            joined = list(parts)
            rows = inputs.whole
            if rows is None and keep_inputs:  # checked in parts
                rows = np.concatenate([batch for batch, _, _ in joined])
            out = None if not outputs else np.concatenate([out for _, out, _ in joined])
            parts = [(rows, out, concat_traces([trace for _, _, trace in joined]))]
        start = 0
        try:
            for batch, out, trace in parts:
                with rows_from(start):  # a refusal names rows of x, not of the batch
                    signals = self.signals(trace)
                    gained, observation = self.update_signals(
                        signals, batch if keep_inputs else None
                    )
                yield Chunk(start, out, trace, signals, gained, observation)
                start += len(signals)
        except RNNCovError as exc:
            if start and exc.args:  # a later batch failed: say what was kept
                exc.args = (
                    f"{exc.args[0]}{KEPT_NOTE} {start} of these "
                    f"{len(inputs)} inputs, whose batches went through before; n_inputs_ "
                    "counts them)",
                    *exc.args[1:],
                )
            raise

    def update_trace(self, trace: Trace, inputs: np.ndarray | None = None) -> dict[str, int]:
        """Add an already computed trace (``inputs`` kept for ``best_input`` when given)."""
        if not isinstance(trace, Trace):
            raise InvalidArgument(
                f"trace={type(trace).__name__}; pass a Trace from "
                "model.trace(x), or use update(x) for inputs"
            )
        if inputs is not None and len(inputs) != trace.batch_size:
            raise InvalidArgument(
                f"inputs has {len(inputs)} rows but the trace {trace.batch_size}; "
                "pass the inputs the trace was computed from"
            )
        gained, _ = self.update_signals(self.signals(trace), inputs)
        return gained

    def signals(self, trace: Trace) -> Signals:
        """The signals of ``trace`` over this coverage's window (checked against the profile)."""
        profile = self.profile
        # the profile's units are h's (a projected LSTM's gates are wider): compared where
        # the trace holds h, or sums of the layer's units
        units = "h" in trace.components or not trace.components
        if trace.cell != profile.cell_ or (units and trace.units != profile.units_):
            raise InvalidInput(
                f"the trace is of a {trace.cell} layer of {trace.units} units but the profile "
                f"was fitted on a {profile.cell_} layer of {profile.units_}; trace the layer "
                "the profile was fitted on (or fit a profile on this one)"
            )
        if trace.length != profile.n_steps_:
            raise InvalidInput(
                f"the inputs give a trace of {trace.length} steps but the profile was fitted "
                f"on {profile.n_steps_} steps; pad or cut the inputs to {profile.n_steps_} steps"
            )
        return Signals(trace, profile.window_)

    @property
    def until(self) -> int:
        """How many steps a trace needs for this coverage (through the window's end)."""
        return int(self.profile.window_[1]) + 1

    def observe(self, signals: Signals, reuse: Observation | None = None) -> Observation:
        """Each metric's result for one batch, reusing results of equal configuration."""
        out: Observation = {}
        for key, metric in self.metrics.items():
            # the exact configuration: describe() rounds parameters for reading
            describe = f"{id(self.profile)}|{metric.describe()}|{metric.config()!r}"
            previous = None if reuse is None else reuse.get(key)
            needs_fitness = self.track_fitness
            if (
                previous is not None
                and previous[0] == describe
                and (not needs_fitness or previous[1].best is not None)
            ):
                out[key] = previous
            else:
                out[key] = (describe, metric.evaluate(signals, fitness=needs_fitness))
        return out

    def update_signals(
        self, signals: Signals, inputs: np.ndarray | None = None, reuse: Observation | None = None
    ) -> tuple[dict[str, int], Observation]:
        """Add one batch of signals; returns (newly covered per metric, the observation),
        the observation can be handed to another Coverage of the same profile. An empty
        batch adds nothing."""
        if not len(signals):
            return dict.fromkeys(self.metrics, 0), {}
        with numpy_work():
            observation = self.observe(signals, reuse)
        ids = np.arange(self.n_inputs_, self.n_inputs_ + len(signals))
        self.n_inputs_ += len(signals)
        gained = {
            key: len(self.metrics[key].absorb(result, ids))
            for key, (_, result) in observation.items()
        }
        if inputs is not None and self.track_fitness:
            self._keep_best(inputs, ids)
        return gained, observation

    def _keep_best(self, inputs: np.ndarray, ids: np.ndarray) -> None:
        """Keep copies of the inputs that hold a best fitness of an uncovered condition."""
        wanted = self._wanted_inputs()
        keep = set(wanted.tolist())
        self._kept = {i: v for i, v in self._kept.items() if i in keep}
        fresh = wanted[(wanted >= ids[0]) & (wanted <= ids[-1])]
        for i in fresh.tolist():
            self._kept[i] = np.array(inputs[i - ids[0]], copy=True)

    def _wanted_inputs(self) -> np.ndarray:
        """Ids of the inputs holding a best fitness of an uncovered condition, at most
        MAX_KEPT of them: the closest conditions of every metric first (round robin)."""
        ranks, ids = [], []
        for metric in self.metrics.values():
            open_ = np.flatnonzero(~metric.covered_ & (metric.best_input_ >= 0))
            order = open_[np.argsort(metric.best_fitness_[open_], kind="stable")]
            ranks.append(np.arange(len(order)))
            ids.append(metric.best_input_[order])
        if not ids:
            return np.zeros(0, np.int64)
        ranked = np.concatenate(ids)[np.argsort(np.concatenate(ranks), kind="stable")]
        unique, first = np.unique(ranked, return_index=True)
        return (
            unique[np.sort(np.argsort(first, kind="stable")[:MAX_KEPT])]
            if len(unique) > MAX_KEPT
            else unique
        )

    def best_input(self, metric: str, condition: int) -> np.ndarray | None:
        """The input closest to covering an uncovered condition (None when unknown or when
        it was not among the MAX_KEPT inputs kept)."""
        chosen = self[metric]
        if (
            isinstance(condition, bool)
            or not isinstance(condition, (int, np.integer))
            or not (0 <= condition < chosen.total)
        ):
            raise InvalidArgument(
                f"condition={condition!r}; {chosen.name} has conditions 0..{chosen.total - 1}"
            )
        index = int(chosen.best_input_[int(condition)])
        return self._kept.get(index)

    # -- figures and state -------------------------------------------------------------
    def rates(self) -> dict[str, float]:
        """Coverage rate per metric."""
        return {name: m.rate for name, m in self.metrics.items()}

    def state(self, name: str | None = None) -> ModelState:
        """This coverage as the one serialisable state type (copies)."""
        if name is not None:
            check_str("name", name)
        return self._state(name, copied=True)

    def _state(self, name: str | None = None, *, copied: bool) -> ModelState:
        """This coverage as a ModelState, its metric states copied or shared."""
        model = self.model
        return ModelState(
            name or model.layer_name,
            model.layer_name,
            self.profile.cell_,
            (int(self.profile.window_[0]), int(self.profile.window_[1])),
            model.fingerprint(),
            self.n_inputs_,
            {key: m.state_.copy() if copied else m.state_ for key, m in self.metrics.items()},
            self.profile_digest_,
        )

    def __copy__(self) -> "Coverage":
        raise InvalidArgument(
            "copy.copy(coverage) would share its metrics' state with the copy; use "
            "copy.deepcopy(coverage), or merge coverage.state() into a new Coverage"
        )

    def __deepcopy__(self, memo: dict[int, Any]) -> "Coverage":
        """A copy with its own metric states, sharing the model and the profile (they are
        not coverage: a Keras model cannot even be copied)."""
        memo[id(self.model)] = self.model
        memo[id(self.profile)] = self.profile
        twin = Coverage.__new__(Coverage)
        memo[id(self)] = twin
        for key, value in self.__dict__.items():
            setattr(twin, key, copy.deepcopy(value, memo))
        if not self.n_inputs_:  # nothing seen yet: nothing the two can count twice
            twin.lineage = frozenset({secrets.token_hex(8)})
        return twin

    def __setstate__(self, state: dict[str, Any]) -> None:
        """An unpickled copy: as a deep copy (a copy of an empty Coverage, sent to a worker
        process, say, merges back)."""
        self.__dict__.update(state)
        if not self.n_inputs_:
            self.lineage = frozenset({secrets.token_hex(8)})

    def merge(self, other: "Coverage") -> None:
        """Union another Coverage of the same model, profile and metrics into this one;
        refused when both hold some of the same inputs (a copy, or one merged into both)."""
        if not isinstance(other, Coverage):
            raise InvalidArgument(f"cannot merge {type(other).__name__} into a Coverage")
        if other is self:
            raise InvalidArgument(
                "cannot merge a Coverage into itself: its inputs would count twice"
            )
        if other.n_inputs_ and other.lineage & self.lineage:
            raise InvalidArgument(
                "cannot merge a Coverage that holds inputs this one holds already (a copy "
                "of it made after it saw inputs, copy.deepcopy, or one merged into both "
                "before): those inputs would count twice; merge coverages fed different "
                "inputs, or copy one before it is fed"
            )
        self.merge_state(other.state())
        if other.n_inputs_:
            self.lineage |= other.lineage

    def merge_state(self, state: ModelState) -> None:
        """Union a state produced elsewhere (another process, a data file). The covered
        conditions are a union, but counts add up: a state merged twice counts its inputs
        twice (``python -m pytest_rnncov combine`` refuses a run given twice)."""
        if not isinstance(state, ModelState):
            raise InvalidArgument(
                f"merge_state takes a ModelState (coverage.state()), got {type(state).__name__}"
            )
        self._state(copied=False).check_mergeable(state)  # all checked before any is changed
        for key, metric in self.metrics.items():
            metric.merge_state(state.metrics[key])
        self.n_inputs_ = min(self.n_inputs_ + state.n_inputs, MAX_COUNT)

    def empty_states(self) -> dict[str, MetricState]:
        """Fresh states of these metrics' configurations (e.g. one test's coverage)."""
        return {key: m.empty_state() for key, m in self.metrics.items()}

    def summary(self) -> str:
        """A small text table: metric, configuration, covered / total, rate."""
        rows = [
            f"model {self.model.name!r}, layer {self.model.layer_name!r}, "
            f"window {list(self.profile.window_)}, inputs {self.n_inputs_}"
        ]
        width = max(len(m.describe()) for m in self.metrics.values())
        for metric in self.metrics.values():
            rows.append(
                f"  {metric.describe():<{width}}  {metric.covered:>6}/{metric.total:<6} "
                f"{metric.rate:7.1%}"
            )
        return "\n".join(rows)

    def __repr__(self) -> str:
        rates = ", ".join(f"{k}={v:.3f}" for k, v in self.rates().items())
        return f"Coverage({self.model.layer_name!r}, inputs={self.n_inputs_}, {rates})"
