"""``Coverage``: the metrics of one traced model, fed batch by batch."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

import numpy as np

from .errors import InvalidArgument
from .metrics import Metric, Signals, check_steps
from .registry import make_metric
from .profile import Profile
from .trace import Trace

if TYPE_CHECKING:
    from .keras_adapter import RNNModel

DEFAULT_METRICS = ("BC", "SC", "TC")


class Coverage:
    """BC / SC / TC (or any metrics) of one model's LSTM layer over a growing set of inputs.

    ``metrics`` holds names (configured by ``preset``: ``"paper"`` or ``"testrnn"``) or
    configured :class:`~pytest_rnncov.metrics.Metric` instances. Each ``update(x)`` runs
    the model once per batch; covered conditions only grow. For every uncovered
    condition the input with the best fitness is kept (``best_input``).
    """

    def __init__(
        self,
        model: "RNNModel",
        profile: Profile,
        metrics: Iterable[str | Metric] = DEFAULT_METRICS,
        *,
        preset: str = "paper",
    ) -> None:
        profile.check(model)
        self.model = model
        self.profile = profile
        if isinstance(metrics, (str, Metric)):
            metrics = (metrics,)
        bound = [make_metric(spec, preset).bind(profile) for spec in metrics]
        if not bound:
            raise InvalidArgument("metrics is empty; pass e.g. metrics=('BC', 'SC', 'TC')")
        self.metrics: dict[str, Metric] = {}
        for metric in bound:
            if metric.name in self.metrics:
                raise InvalidArgument(f"metric {metric.name} is given twice; pass each metric once")
            self.metrics[metric.name] = metric
        self.n_inputs_ = 0
        self._kept: dict[int, np.ndarray] = {}

    def __getitem__(self, name: str) -> Metric:
        try:
            return self.metrics[name.upper()]
        except KeyError:
            raise InvalidArgument(
                f"no metric {name!r} here; this Coverage has {', '.join(self.metrics)}"
            ) from None

    def update(self, x: Any) -> dict[str, int]:
        """Run ``x`` through the model and add it; return newly covered conditions per metric."""
        x = self.model.check_input(x)
        _, trace = self.model._compute(x, with_outputs=False)
        return self.update_trace(trace, x)

    def update_trace(
        self,
        trace: Trace,
        inputs: np.ndarray | None = None,
        hits: dict[str, np.ndarray] | None = None,
    ) -> dict[str, int]:
        """Add an already computed trace (``inputs`` kept for ``best_input`` when given).

        With a ``hits`` dict, each metric's (B, conditions) boolean matrix of which input
        satisfied which condition is stored in it.
        """
        check_steps(trace, self.profile)
        ids = np.arange(self.n_inputs_, self.n_inputs_ + trace.batch_size)
        self.n_inputs_ += trace.batch_size
        signals = Signals(trace, self.profile.window_)
        gained = {}
        for name, metric in self.metrics.items():
            blocks: list[np.ndarray] | None = [] if hits is not None else None
            gained[name] = metric.update(signals, ids, blocks)
            if hits is not None and blocks is not None:
                hits[name] = np.concatenate(blocks)
        if inputs is not None:
            self._keep_best(inputs, ids)
        return gained

    def _keep_best(self, inputs: np.ndarray, ids: np.ndarray) -> None:
        wanted = np.unique(
            np.concatenate([m.best_input_[~m.covered_] for m in self.metrics.values()])
        )
        keep = set(wanted.tolist())
        self._kept = {i: v for i, v in self._kept.items() if i in keep}
        fresh = wanted[(wanted >= ids[0]) & (wanted <= ids[-1])]
        for i in fresh.tolist():
            self._kept[i] = inputs[i - ids[0]]

    def best_input(self, metric: str, condition: int) -> np.ndarray | None:
        """The input closest to covering an uncovered condition (None when unknown)."""
        index = int(self[metric].best_input_[condition])
        return self._kept.get(index)

    def rates(self) -> dict[str, float]:
        """Coverage rate per metric."""
        return {name: m.rate for name, m in self.metrics.items()}

    def merge(self, other: "Coverage") -> None:
        """Union another Coverage of the same model and metrics into this one."""
        if set(other.metrics) != set(self.metrics):
            raise InvalidArgument(
                f"cannot merge coverage of {sorted(other.metrics)} into {sorted(self.metrics)}"
            )
        for name, metric in self.metrics.items():
            metric.merge(other.metrics[name])
        self.n_inputs_ += other.n_inputs_

    def state(self) -> dict[str, Any]:
        """JSON-ready state (covered ids, coverage times) for merging across processes."""
        return {
            "n_inputs": self.n_inputs_,
            "metrics": {name: m.state() for name, m in self.metrics.items()},
        }

    def merge_state(self, state: dict[str, Any]) -> None:
        """Merge a ``state()`` produced elsewhere (e.g. an xdist worker)."""
        for name, metric_state in state["metrics"].items():
            self[name].merge_state(metric_state)
        self.n_inputs_ += int(state["n_inputs"])

    def summary(self) -> str:
        """A small text table: metric, configuration, covered / total, rate."""
        rows = [
            f"model {self.model.model.name!r}, layer {self.model.layer_name!r}, "
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
