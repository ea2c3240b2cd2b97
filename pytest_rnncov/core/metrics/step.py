"""testRNN's step-wise metrics: boundary coverage (BC) and step-wise coverage (SC).

Each has one condition per window step (BC with ``alpha_min`` two) on a signal min-max
normalised by the profile (docs/definitions.md, "BC" and "SC").
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import InvalidArgument
from ...validation import check_fraction
from ..abstractions import check_signal
from ..arrays import array_namespace, to_host
from .base import BatchResult, Metric, Signals, best_of, check_cell_component

if TYPE_CHECKING:
    from ..profile import Profile

#: BC's signal when none is given: the paper's forget gate / avg for LSTMs; h / net (the
#: testRNN tool's choice) for cells without a forget gate.
BC_DEFAULT_SIGNAL = {"lstm": ("f", "avg"), "gru": ("h", "net"), "simple_rnn": ("h", "net")}


class _StepMetric(Metric):
    """Conditions on a per-step signal, min-max normalised by the profile."""

    component: str | None
    abstraction: str | None
    reads_sums_only = True

    def _default_signal(self, cell: str) -> tuple[str, str]:
        raise NotImplementedError

    def prepare(self, profile: "Profile") -> None:
        if self.component is None or self.abstraction is None:
            component, abstraction = self._default_signal(profile.cell_)
            self.component = self.component or component
            self.abstraction = self.abstraction or abstraction
        check_cell_component(self, profile, self.component)
        self.window_ = profile.window_
        self.min_, self.max_ = profile.minmax(self.component, self.abstraction)
        self.steps_ = np.arange(self.window_[0], self.window_[1] + 1)

    @property
    def reads(self) -> tuple[str, ...] | None:
        return None if self.component is None else (self.component,)

    def normalised(self, signals: Signals, rows: slice = slice(None)) -> np.ndarray:
        """N_m of the signal at each window step: (rows, |window|)."""
        assert self.component is not None and self.abstraction is not None
        values = signals.get(self.component, self.abstraction)[rows]
        return (values - self.min_) / (self.max_ - self.min_)

    def evaluate(self, signals: Signals, *, fitness: bool = True) -> BatchResult:
        self._check_bound()
        block = self.fitness(signals)
        result = BatchResult.from_dense(block <= 0)
        if fitness:
            result.best, result.best_row = best_of(block)
        return result

    def _base_config(self) -> dict[str, Any]:
        return {
            "component": self.component,
            "abstraction": self.abstraction,
            "window": list(self.window_),
        }


class BC(_StepMetric):
    """Boundary coverage: N_m(xi_t) >= alpha_max (and <= alpha_min) for each window step t.

    Default signal: forget gate / avg for LSTMs (the paper), h / net for GRU and SimpleRNN;
    preset ``testrnn``: h / net.
    """

    name = "BC"

    def __init__(
        self,
        component: str | None = None,
        abstraction: str | None = None,
        alpha_max: float = 0.8,
        alpha_min: float | None = None,
    ) -> None:
        if component is not None or abstraction is not None:
            check_signal(component or "h", abstraction or "net")
        self.component, self.abstraction = component, abstraction
        self.alpha_max = check_fraction("alpha_max", alpha_max)
        self.alpha_min = check_fraction("alpha_min", alpha_min, allow_none=True)
        if self.alpha_min is not None and not self.alpha_min < self.alpha_max:
            raise InvalidArgument(
                f"alpha_min={self.alpha_min!r} must be below alpha_max={self.alpha_max!r}: BC's "
                "conditions are N >= alpha_max (the top boundary) and N <= alpha_min (the "
                "bottom one); pass e.g. alpha_min=0.2 with alpha_max=0.8"
            )

    def _default_signal(self, cell: str) -> tuple[str, str]:
        return BC_DEFAULT_SIGNAL[cell]

    @property
    def n_conditions(self) -> int:
        return len(self.steps_) * (1 if self.alpha_min is None else 2)

    def fitness(self, signals: Signals, rows: slice = slice(None)) -> np.ndarray:
        n = self.normalised(signals, rows)
        upper = self.alpha_max - n
        if self.alpha_min is None:
            return upper
        return array_namespace(n).concat([upper, n - self.alpha_min], axis=1)

    def condition_fitness(self, signals: Signals, condition: int) -> np.ndarray:
        steps = len(self.steps_)
        n = to_host(self.normalised(signals)[:, condition % steps])
        return self.alpha_max - n if condition < steps else n - self.alpha_min

    def config(self) -> dict[str, Any]:
        return {**self._base_config(), "alpha_max": self.alpha_max, "alpha_min": self.alpha_min}

    @classmethod
    def label_from_config(cls, config: dict[str, Any], condition: int) -> str:
        t1, t2 = config["window"]
        steps = t2 - t1 + 1
        t = t1 + condition % steps
        if condition < steps:
            return f"t={t} N>={config['alpha_max']:g}"
        return f"t={t} N<={config['alpha_min']:g}"

    def describe(self) -> str:
        bounds = f"alpha_max={self.alpha_max:g}"
        if self.alpha_min is not None:
            bounds += f", alpha_min={self.alpha_min:g}"
        signal = f"{self.component}/{self.abstraction}" if self.component else "default signal"
        return f"BC({signal}, {bounds})"


class SC(_StepMetric):
    """Step-wise coverage: N_m(delta xi^s_t) >= alpha_sc for each window step t.

    Default signal: h / delta (the paper); preset ``testrnn``: h / delta_net.
    """

    name = "SC"

    def __init__(
        self, component: str = "h", abstraction: str = "delta", alpha_sc: float = 0.6
    ) -> None:
        check_signal(component, abstraction)
        self.component, self.abstraction = component, abstraction
        self.alpha_sc = check_fraction("alpha_sc", alpha_sc)

    @property
    def n_conditions(self) -> int:
        return len(self.steps_)

    def fitness(self, signals: Signals, rows: slice = slice(None)) -> np.ndarray:
        return self.alpha_sc - self.normalised(signals, rows)

    def condition_fitness(self, signals: Signals, condition: int) -> np.ndarray:
        return self.alpha_sc - to_host(self.normalised(signals)[:, condition])

    def config(self) -> dict[str, Any]:
        return {**self._base_config(), "alpha_sc": self.alpha_sc}

    @classmethod
    def label_from_config(cls, config: dict[str, Any], condition: int) -> str:
        return f"t={config['window'][0] + condition} N>={config['alpha_sc']:g}"

    def describe(self) -> str:
        return f"SC({self.component}/{self.abstraction}, alpha_sc={self.alpha_sc:g})"
