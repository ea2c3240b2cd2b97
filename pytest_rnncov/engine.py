"""The session engine behind the pytest plugin: tracked models and their coverage records.

Nothing here imports TensorFlow at module level; models are wrapped only when a test asks.
Records (``ModelRecord``) are plain data, so xdist workers can ship them to the controller.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import numpy as np

from .errors import InvalidArgument, ProfileError

if TYPE_CHECKING:
    from .coverage import Coverage
    from .keras_adapter import RNNModel
    from .profile import Profile
    from .trace import Trace

GATE_METRICS = ("BC", "SC", "TC")


@dataclass
class MetricRecord:
    """Coverage of one metric detached from any model: mergeable and JSON-ready."""

    name: str
    describe: str
    covered: np.ndarray
    times: np.ndarray
    detail: dict[str, Any] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return int(self.covered.size)

    @property
    def n_covered(self) -> int:
        return int(self.covered.sum())

    @property
    def rate(self) -> float:
        """covered / total, or the covered share of ``detail["weights"]`` (WT)."""
        weights = self.detail.get("weights")
        if weights is not None:
            w = np.asarray(weights, np.float64)
            return float(w[self.covered].sum() / w.sum()) if w.sum() else 1.0
        return self.n_covered / self.total if self.total else 1.0

    def merge(self, other: "MetricRecord") -> None:
        if other.describe != self.describe or other.total != self.total:
            raise InvalidArgument(
                f"cannot merge {other.describe} into {self.describe}: configurations differ"
            )
        self.covered = self.covered | other.covered
        self.times = self.times + other.times

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "describe": self.describe,
            "total": self.total,
            "covered": np.flatnonzero(self.covered).tolist(),
            "times": self.times.tolist(),
            "detail": self.detail,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "MetricRecord":
        covered = np.zeros(int(data["total"]), bool)
        covered[np.asarray(data["covered"], np.int64)] = True
        return cls(data["name"], data["describe"], covered,
                   np.asarray(data["times"], np.int64), data.get("detail", {}))


@dataclass
class ModelRecord:
    """The session coverage of one tracked model."""

    name: str
    layer: str
    window: tuple[int, int]
    n_inputs: int
    metrics: dict[str, MetricRecord]
    #: normalised signals of the first inputs seen (for the HTML report's signal plots)
    signals: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_coverage(cls, name: str, coverage: "Coverage") -> "ModelRecord":
        return cls(
            name,
            coverage.model.layer_name,
            (int(coverage.profile.window_[0]), int(coverage.profile.window_[1])),
            coverage.n_inputs_,
            {
                key: MetricRecord(key, m.describe(), m.covered_.copy(), m.times_.copy(), m.detail())
                for key, m in coverage.metrics.items()
            },
        )

    def merge(self, other: "ModelRecord") -> None:
        if (other.layer, tuple(other.window)) != (self.layer, tuple(self.window)):
            raise InvalidArgument(
                f"model {self.name!r} is tracked as layer {self.layer!r} window "
                f"{list(self.window)} here and {other.layer!r} {list(other.window)} elsewhere"
            )
        for key, metric in other.metrics.items():
            if key in self.metrics:
                self.metrics[key].merge(metric)
            else:
                self.metrics[key] = metric
        self.n_inputs += other.n_inputs
        if not self.signals:
            self.signals = other.signals

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "layer": self.layer,
            "window": list(self.window),
            "n_inputs": self.n_inputs,
            "metrics": {k: m.to_dict() for k, m in self.metrics.items()},
            "signals": self.signals,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "ModelRecord":
        return cls(
            data["name"], data["layer"], tuple(data["window"]), int(data["n_inputs"]),
            {k: MetricRecord.from_dict(m) for k, m in data["metrics"].items()},
            data.get("signals", {}),
        )


def merge_records(into: dict[str, ModelRecord], records: Iterable[ModelRecord]) -> None:
    """Union ``records`` into ``into`` (by model name)."""
    for record in records:
        if record.name in into:
            into[record.name].merge(record)
        else:
            into[record.name] = ModelRecord.from_dict(record.to_dict())


@dataclass
class Shortfall:
    """A metric below a required rate."""

    model: str
    metric: str
    rate: float
    covered: int
    total: int


def shortfalls(
    records: dict[str, ModelRecord], required: float, metrics: Sequence[str]
) -> list[Shortfall]:
    """Every (model, metric) whose rate is below ``required``."""
    missing = []
    for record in records.values():
        for key in metrics:
            metric = record.metrics.get(key)
            if metric is None:
                missing.append(Shortfall(record.name, key, 0.0, 0, 0))
            elif metric.rate < required:
                missing.append(
                    Shortfall(record.name, key, metric.rate, metric.n_covered, metric.total)
                )
    return missing


#: How many inputs the HTML report plots the internal signals of.
SIGNAL_SAMPLES = 4


def sample_signals(trace: "Trace", profile: "Profile") -> dict[str, Any]:
    """The paper's signal figure for the first inputs: z-normalised h/net, min-max normalised
    f/avg and h/delta over the window (signals the profile cannot normalise are left out)."""
    from .abstractions import signal
    from .errors import DegenerateProfile

    rows = trace[: SIGNAL_SAMPLES]
    window = profile.window_
    out: dict[str, Any] = {"steps": list(range(window[0], window[1] + 1))}
    for key, component, abstraction, kind in (
        ("h_net_z", "h", "net", "z"), ("f_avg_minmax", "f", "avg", "m"),
        ("h_delta_minmax", "h", "delta", "m"),
    ):
        try:
            values = signal(rows, component, abstraction, window)
            if kind == "z":
                mu, sigma = profile.zscore(component, abstraction)
                values = (values - mu) / sigma
            else:
                low, high = profile.minmax(component, abstraction)
                values = (values - low) / (high - low)
        except DegenerateProfile:
            continue
        out[key] = np.round(values, 5).tolist()
    return out


class TrackedModel:
    """A model registered with the session: every input fed through it counts toward the
    session coverage of ``name`` (and toward the running test's, for the marker)."""

    def __init__(self, session: "RNNCovSession", name: str, rnn: "RNNModel", coverage: "Coverage",
                 metric_specs: Sequence[Any], preset: str) -> None:
        self.session = session
        self.name = name
        self.rnn = rnn
        self.coverage = coverage
        self._metric_specs = tuple(metric_specs)
        self._preset = preset
        self.signals: dict[str, Any] = {}

    @property
    def profile(self) -> "Profile":
        return self.coverage.profile

    def run(self, x: Any) -> tuple[np.ndarray, "Trace"]:
        """Outputs and trace of ``x`` from one batched model call; both feed coverage."""
        outputs, trace, _ = self._run_and_feed(x)
        return outputs, trace

    def predict(self, x: Any) -> np.ndarray:
        """The model's outputs for ``x``; the inputs feed coverage."""
        return self.run(x)[0]

    def trace(self, x: Any) -> "Trace":
        """The trace of ``x``; the inputs feed coverage."""
        return self.run(x)[1]

    def observe(self, x: Any) -> dict[str, int]:
        """Feed ``x`` to coverage; return how many conditions became covered per metric."""
        return self._run_and_feed(x)[2]

    def _run_and_feed(self, x: Any) -> tuple[np.ndarray, "Trace", dict[str, int]]:
        x = self.rnn.check_input(x)
        outputs, trace = self.rnn._compute(x, with_outputs=True)
        assert outputs is not None
        return outputs, trace, self._feed(trace, x)

    def _feed(self, trace: "Trace", x: np.ndarray) -> dict[str, int]:
        if not self.signals:
            self.signals = sample_signals(trace, self.profile)
        gained = self.coverage.update_trace(trace, x)
        test = self.session._test_coverage
        if test is not None:
            if self.name not in test:
                from .coverage import Coverage

                test[self.name] = Coverage(
                    self.rnn, self.profile, self._metric_specs, preset=self._preset
                )
            test[self.name].update_trace(trace)
        return gained

    def plot_signals(self, x: Any) -> None:
        """Choose the inputs (up to 4) whose internal signals the HTML report plots; by
        default, the first inputs the model saw. They do not feed coverage."""
        self.signals = sample_signals(self.rnn.trace(x), self.profile)

    def campaign(self, seeds: Any, mutator: Any, oracle: Any, **options: Any) -> Any:
        """A :class:`~pytest_rnncov.campaign.Campaign` on this model (see its options)."""
        from .campaign import Campaign

        return Campaign(self, seeds, mutator, oracle, **options)

    def delta(self, reference: Any, suspect: Any, metrics: Sequence[Any] | None = None) -> Any:
        """:func:`~pytest_rnncov.delta.coverage_delta` on this model and profile. Neither set
        feeds the session coverage."""
        from .delta import coverage_delta

        return coverage_delta(self.rnn, self.profile, reference, suspect,
                              metrics if metrics is not None else self._metric_specs,
                              preset=self._preset)

    def record(self) -> ModelRecord:
        record = ModelRecord.from_coverage(self.name, self.coverage)
        record.signals = self.signals
        return record

    def __repr__(self) -> str:
        return f"TrackedModel({self.name!r}, {self.coverage!r})"


class RNNCovSession:
    """What the ``rnncov`` fixture hands out: register models with :meth:`track`."""

    def __init__(self, seed: int = 0, metrics: Sequence[str] = GATE_METRICS) -> None:
        self.seed = seed
        self.default_metrics = tuple(metrics)
        self.models: dict[str, TrackedModel] = {}
        self.merged: dict[str, ModelRecord] = {}
        self.campaigns: list[dict[str, Any]] = []
        self._test_coverage: dict[str, "Coverage"] | None = None

    def rng(self, salt: int = 0) -> np.random.Generator:
        """A numpy generator derived from the session seed (``--rnn-seed``)."""
        return np.random.default_rng([self.seed, salt])

    def track(
        self,
        model: Any,
        *,
        profile: "Profile | str | os.PathLike[str] | None" = None,
        x_train: Any = None,
        window: Sequence[int] | None = None,
        name: str | None = None,
        layer: str | int | None = None,
        direction: str = "forward",
        metrics: Sequence[Any] | None = None,
        preset: str = "paper",
    ) -> TrackedModel:
        """Register ``model`` (a Keras model or an RNNModel) once for the session.

        ``profile`` is a fitted Profile or the path of a profile file. A path that does not
        exist yet is fitted from ``x_train`` (with ``window``) and saved there, so the next
        run loads it. Without ``profile``, ``x_train`` is required and the profile is fitted
        in memory. ``metrics`` defaults to BC, SC, TC plus any metric ``--rnn-metrics`` names.
        """
        from .coverage import Coverage
        from .keras_adapter import RNNModel

        rnn = model if isinstance(model, RNNModel) else RNNModel(model, layer, direction=direction)
        key = name or str(rnn.model.name)
        if key in self.models:
            tracked = self.models[key]
            if tracked.rnn.model is rnn.model and tracked.rnn.layer_name == rnn.layer_name:
                return tracked
            raise InvalidArgument(
                f"a model named {key!r} is already tracked; pass another name= to track()"
            )
        fitted = self._profile(rnn, profile, x_train, window)
        specs = tuple(metrics) if metrics is not None else self.default_metrics
        coverage = Coverage(rnn, fitted, specs, preset=preset)
        self.models[key] = TrackedModel(self, key, rnn, coverage, specs, preset)
        return self.models[key]

    @staticmethod
    def _profile(rnn: "RNNModel", profile: Any, x_train: Any, window: Sequence[int] | None) -> "Profile":
        from .abstractions import resolve_window
        from .profile import Profile

        if isinstance(profile, Profile):
            return profile
        if profile is None:
            if x_train is None:
                raise InvalidArgument(
                    "track() needs a profile: pass profile=Profile or a profile file path, "
                    "or x_train=... to fit one"
                )
            return Profile(window=window).fit(rnn, x_train)
        path = Path(profile)
        if path.exists():
            loaded = Profile.load(path)
            if window is not None and resolve_window(window, loaded.n_steps_) != tuple(loaded.window_):
                raise ProfileError(
                    f"profile {str(path)!r} was fitted for window {list(loaded.window_)}, "
                    f"not {list(window)}; delete the file to refit it"
                )
            loaded.check(rnn)
            return loaded
        if x_train is None:
            raise InvalidArgument(
                f"no profile file at {str(path)!r}; pass x_train=... to fit and save it there"
            )
        fitted = Profile(window=window).fit(rnn, x_train)
        path.parent.mkdir(parents=True, exist_ok=True)
        fitted.save(path)
        return fitted

    # -- per-test coverage (for @pytest.mark.rnn_coverage) -------------------------------
    def start_test(self) -> None:
        self._test_coverage = {}

    def stop_test(self) -> dict[str, "Coverage"]:
        fed, self._test_coverage = self._test_coverage or {}, None
        return fed

    # -- records -----------------------------------------------------------------------
    def records(self) -> dict[str, ModelRecord]:
        """Session coverage per model: this process's models plus merged worker records."""
        out: dict[str, ModelRecord] = {}
        merge_records(out, self.merged.values())
        merge_records(out, (m.record() for m in self.models.values()))
        return out

    def merge_worker(self, data: dict[str, Any]) -> None:
        merge_records(self.merged, (ModelRecord.from_dict(r) for r in data.get("models", [])))
        self.campaigns.extend(data.get("campaigns", []))

    def worker_data(self) -> dict[str, Any]:
        return {
            "models": [r.to_dict() for r in self.records().values()],
            "campaigns": self.campaigns,
        }
