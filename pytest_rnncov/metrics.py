"""Coverage metrics (SPEC sections 4-5): BC, SC, TC and the neuron-level NC, KMNC, NBC, SNAC.

A metric is configured by its constructor (parameters are checked at once), then bound to
a fitted :class:`~pytest_rnncov.profile.Profile` by :meth:`Metric.bind`, which fixes its
list of conditions. ``update`` takes a batch of signals; the covered set only grows.
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar

import numpy as np

from . import sax
from .abstractions import Window, check_signal, signal
from .errors import InvalidArgument, InvalidInput, ProfileError
from .profile import Profile
from .trace import Trace

#: Largest (rows x conditions) fitness block evaluated at once.
BLOCK = 1 << 22
_TINY = np.finfo(np.float64).tiny


class Signals:
    """The signals of one traced batch over a window, computed once and shared by metrics."""

    def __init__(self, trace: Trace, window: Window) -> None:
        self.trace = trace
        self.window = window
        self._cache: dict[tuple[str, str], np.ndarray] = {}

    def __len__(self) -> int:
        return self.trace.batch_size

    def get(self, component: str, abstraction: str) -> np.ndarray:
        """(B, |window|) float64 values of one signal."""
        key = (component, abstraction)
        if key not in self._cache:
            self._cache[key] = signal(self.trace, component, abstraction, self.window)
        return self._cache[key]

    def neurons(self, component: str = "h") -> np.ndarray:
        """(B, |window| * U) values of every (step, unit) neuron of ``component``."""
        t1, t2 = self.window
        values = self.trace.component(component)[:, t1 : t2 + 1]
        return values.reshape(values.shape[0], -1)


def _fraction(name: str, value: float | None, allow_none: bool = False) -> float | None:
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise InvalidArgument(f"{name}={value!r} must be a number in [0, 1], e.g. {name}=0.8")
    return float(value)


def _positive_int(name: str, value: Any, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise InvalidArgument(f"{name}={value!r} must be an integer >= {minimum}")
    return int(value)


class Metric:
    """A fixed, finite list of test conditions and what a test suite did to them.

    State after ``bind``: ``covered_`` (bool per condition), ``times_`` (how many inputs
    satisfied each condition), ``best_fitness_`` (lowest fitness seen; <= 0 means covered)
    and ``best_input_`` (id of the input that gave it, -1 when none or merged from elsewhere).
    """

    name: ClassVar[str]
    covered_: np.ndarray
    times_: np.ndarray
    best_fitness_: np.ndarray
    best_input_: np.ndarray

    def bind(self, profile: Profile) -> "Metric":
        """A copy of this metric with its conditions fixed by ``profile``."""
        bound = copy.copy(self)
        bound._prepare(profile)
        n = bound.n_conditions
        bound.covered_ = np.zeros(n, bool)
        bound.times_ = np.zeros(n, np.int64)
        bound.best_fitness_ = np.full(n, np.inf)
        bound.best_input_ = np.full(n, -1, np.int64)
        return bound

    # -- to implement ------------------------------------------------------------------
    n_conditions: int

    def _prepare(self, profile: Profile) -> None:
        raise NotImplementedError

    def fitness(self, signals: Signals, rows: slice = slice(None)) -> np.ndarray:
        """(rows, n_conditions) fitness; a value <= 0 means the input covers the condition."""
        raise NotImplementedError

    def label(self, condition: int) -> str:
        """Human-readable name of a condition."""
        raise NotImplementedError

    def describe(self) -> str:
        """The metric's configuration in a few words."""
        raise NotImplementedError

    def detail(self) -> dict[str, Any]:
        """JSON-ready facts a report needs to name conditions without the profile."""
        return {}

    # -- shared --------------------------------------------------------------------------
    def update(
        self, signals: Signals, input_ids: np.ndarray, hits: list[np.ndarray] | None = None
    ) -> int:
        """Add a batch; return how many conditions became covered.

        With ``hits``, the (rows, conditions) boolean blocks of which input satisfied which
        condition are appended to it.
        """
        self._check_bound()
        before = int(self.covered_.sum())
        rows = max(1, BLOCK // max(self.n_conditions, 1))
        for start in range(0, len(signals), rows):
            block = slice(start, start + rows)
            fit = self.fitness(signals, block)
            hit = fit <= 0
            if hits is not None:
                hits.append(hit)
            self.covered_ |= hit.any(axis=0)
            self.times_ += hit.sum(axis=0)
            best = fit.argmin(axis=0)
            value = fit[best, np.arange(fit.shape[1])]
            better = value < self.best_fitness_
            self.best_fitness_[better] = value[better]
            self.best_input_[better] = input_ids[block][best[better]]
        return int(self.covered_.sum()) - before

    def _check_bound(self) -> None:
        if not hasattr(self, "covered_"):
            raise ProfileError(
                f"{self.name} is not bound to a profile; use Coverage(...) or metric.bind(profile)"
            )

    @property
    def covered(self) -> int:
        return int(self.covered_.sum())

    @property
    def total(self) -> int:
        return int(self.n_conditions)

    @property
    def rate(self) -> float:
        return self.covered / self.total if self.total else 1.0

    def covered_ids(self) -> list[int]:
        return np.flatnonzero(self.covered_).tolist()

    def merge(self, other: "Metric") -> None:
        """Union of covered conditions, summed coverage times, lowest fitness."""
        if type(other) is not type(self) or other.describe() != self.describe():
            raise InvalidArgument(
                f"cannot merge {other.describe()} into {self.describe()}: configurations differ"
            )
        self.covered_ |= other.covered_
        self.times_ += other.times_
        better = other.best_fitness_ < self.best_fitness_
        self.best_fitness_[better] = other.best_fitness_[better]
        self.best_input_[better] = -1

    def state(self) -> dict[str, Any]:
        """JSON-ready covered ids and coverage times (for merging across processes)."""
        return {
            "describe": self.describe(),
            "covered": self.covered_ids(),
            "times": self.times_.tolist(),
            "best_fitness": [None if not np.isfinite(v) else float(v) for v in self.best_fitness_],
        }

    def merge_state(self, state: dict[str, Any]) -> None:
        """Merge a ``state()`` from another process."""
        if state["describe"] != self.describe():
            raise InvalidArgument(
                f"cannot merge {state['describe']} into {self.describe()}: configurations differ"
            )
        self.covered_[np.asarray(state["covered"], np.int64)] = True
        self.times_ += np.asarray(state["times"], np.int64)
        other = np.array([np.inf if v is None else v for v in state["best_fitness"]])
        better = other < self.best_fitness_
        self.best_fitness_[better] = other[better]
        self.best_input_[better] = -1


class _StepMetric(Metric):
    """Conditions on a per-step signal, min-max normalised by the profile."""

    component: str
    abstraction: str

    def _prepare(self, profile: Profile) -> None:
        self.window_ = profile.window_
        self.min_, self.max_ = profile.minmax(self.component, self.abstraction)
        self.steps_ = np.arange(self.window_[0], self.window_[1] + 1)

    def detail(self) -> dict[str, Any]:
        return {"steps": self.steps_.tolist(), "labels": [self.label(i) for i in range(self.total)]}

    def normalised(self, signals: Signals, rows: slice = slice(None)) -> np.ndarray:
        """N_m of the signal at each window step: (rows, |window|)."""
        values = signals.get(self.component, self.abstraction)[rows]
        return (values - self.min_) / (self.max_ - self.min_)


class BC(_StepMetric):
    """Boundary coverage: N_m(xi_t) >= alpha_max (and <= alpha_min) for each window step t.

    Default signal: forget gate / avg (the paper); preset ``testrnn``: h / net.
    """

    name = "BC"

    def __init__(
        self,
        component: str = "f",
        abstraction: str = "avg",
        alpha_max: float = 0.8,
        alpha_min: float | None = None,
    ) -> None:
        check_signal(component, abstraction)
        self.component, self.abstraction = component, abstraction
        self.alpha_max = _fraction("alpha_max", alpha_max)
        self.alpha_min = _fraction("alpha_min", alpha_min, allow_none=True)

    @property
    def n_conditions(self) -> int:  # type: ignore[override]
        return len(self.steps_) * (1 if self.alpha_min is None else 2)

    def fitness(self, signals: Signals, rows: slice = slice(None)) -> np.ndarray:
        n = self.normalised(signals, rows)
        upper = self.alpha_max - n
        if self.alpha_min is None:
            return upper
        return np.concatenate([upper, n - self.alpha_min], axis=1)

    def label(self, condition: int) -> str:
        steps = len(self.steps_)
        t = self.steps_[condition % steps]
        if condition < steps:
            return f"t={t} N>={self.alpha_max:g}"
        return f"t={t} N<={self.alpha_min:g}"

    def describe(self) -> str:
        bounds = f"alpha_max={self.alpha_max:g}"
        if self.alpha_min is not None:
            bounds += f", alpha_min={self.alpha_min:g}"
        return f"BC({self.component}/{self.abstraction}, {bounds})"


class SC(_StepMetric):
    """Step-wise coverage: N_m(delta xi^s_t) >= alpha_sc for each window step t.

    Default signal: h / delta (the paper); preset ``testrnn``: h / delta_net.
    """

    name = "SC"

    def __init__(self, component: str = "h", abstraction: str = "delta", alpha_sc: float = 0.6) -> None:
        check_signal(component, abstraction)
        self.component, self.abstraction = component, abstraction
        self.alpha_sc = _fraction("alpha_sc", alpha_sc)

    @property
    def n_conditions(self) -> int:  # type: ignore[override]
        return len(self.steps_)

    def fitness(self, signals: Signals, rows: slice = slice(None)) -> np.ndarray:
        return self.alpha_sc - self.normalised(signals, rows)

    def label(self, condition: int) -> str:
        return f"t={self.steps_[condition]} N>={self.alpha_sc:g}"

    def describe(self) -> str:
        return f"SC({self.component}/{self.abstraction}, alpha_sc={self.alpha_sc:g})"


class TC(Metric):
    """Temporal coverage: every SAX word of length w over a symbols of the window's curve."""

    name = "TC"

    def __init__(self, component: str = "h", abstraction: str = "net", w: int = 5, a: int = 3) -> None:
        check_signal(component, abstraction)
        self.component, self.abstraction = component, abstraction
        self.w = _positive_int("w", w)
        self.a = _positive_int("a", a, minimum=2)
        if self.a**self.w > 1 << 24:
            raise InvalidArgument(
                f"a**w = {self.a}**{self.w} conditions is too many to track; lower w or a"
            )

    def _prepare(self, profile: Profile) -> None:
        t1, t2 = profile.window_
        length = t2 - t1 + 1
        if self.w > length:
            raise InvalidArgument(
                f"TC w={self.w} is larger than the window {list(profile.window_)} "
                f"({length} steps); use w <= {length} or a wider window"
            )
        self.mu_, self.sigma_ = profile.zscore(self.component, self.abstraction)
        self.paa_ = sax.paa_matrix(length, self.w)
        self.cuts_ = sax.breakpoints(self.a)
        self.digits_ = sax.word_digits(self.a, self.w)

    @property
    def n_conditions(self) -> int:  # type: ignore[override]
        return self.a**self.w

    def paa(self, signals: Signals, rows: slice = slice(None)) -> np.ndarray:
        """z-normalised PAA values: (rows, w)."""
        values = signals.get(self.component, self.abstraction)[rows]
        return ((values - self.mu_) / self.sigma_) @ self.paa_.T

    def words(self, signals: Signals, rows: slice = slice(None)) -> np.ndarray:
        """The word (condition id) of each input."""
        return sax.word_ids(sax.symbols(self.paa(signals, rows), self.cuts_), self.a)

    def fitness(self, signals: Signals, rows: slice = slice(None)) -> np.ndarray:
        dist = sax.interval_distance(self.paa(signals, rows), self.cuts_)  # (B, w, a)
        out = np.zeros((dist.shape[0], self.n_conditions))
        for j in range(self.w):
            out += dist[:, j, self.digits_[:, j]]
        return out

    def label(self, condition: int) -> str:
        return sax.word_label(self.digits_[condition])

    def detail(self) -> dict[str, Any]:
        return {"w": self.w, "a": self.a}

    def describe(self) -> str:
        return f"TC({self.component}/{self.abstraction}, w={self.w}, a={self.a})"


class _NeuronMetric(Metric):
    """A neuron is one (step, unit) of h over the window (SPEC section 5)."""

    def _prepare(self, profile: Profile) -> None:
        self.window_ = profile.window_
        self.units_ = profile.units_
        self.neurons_ = (self.window_[1] - self.window_[0] + 1) * self.units_

    def _neuron_label(self, neuron: int) -> str:
        step, unit = divmod(int(neuron), self.units_)
        return f"t={self.window_[0] + step} u={unit}"


class NC(_NeuronMetric):
    """Neuron coverage: h > threshold."""

    name = "NC"

    def __init__(self, threshold: float = 0.0) -> None:
        self.threshold = float(threshold)

    @property
    def n_conditions(self) -> int:  # type: ignore[override]
        return self.neurons_

    def fitness(self, signals: Signals, rows: slice = slice(None)) -> np.ndarray:
        return np.nextafter(self.threshold, np.inf) - signals.neurons()[rows].astype(np.float64)

    def label(self, condition: int) -> str:
        return f"{self._neuron_label(condition)} h>{self.threshold:g}"

    def describe(self) -> str:
        return f"NC(h, threshold={self.threshold:g})"


class KMNC(_NeuronMetric):
    """k-multisection neuron coverage: k equal sections of the profile's per-neuron [min, max].

    A neuron that is constant over the training data has no sections (no conditions).
    """

    name = "KMNC"

    def __init__(self, k: int = 10) -> None:
        self.k = _positive_int("k", k)

    def _prepare(self, profile: Profile) -> None:
        super()._prepare(profile)
        lo = np.asarray(profile.neuron_min_, np.float64).ravel()
        hi = np.asarray(profile.neuron_max_, np.float64).ravel()
        self.active_ = np.flatnonzero(hi > lo)
        self.lo_, self.hi_ = lo[self.active_], hi[self.active_]

    @property
    def n_conditions(self) -> int:  # type: ignore[override]
        return len(self.active_) * self.k

    def fitness(self, signals: Signals, rows: slice = slice(None)) -> np.ndarray:
        v = signals.neurons()[rows][:, self.active_].astype(np.float64)
        u = (v - self.lo_) / (self.hi_ - self.lo_) * self.k  # section coordinate
        section = np.where(u == self.k, self.k - 1, np.floor(u))
        s = np.arange(self.k, dtype=np.float64)
        u3, sec3 = u[:, :, None], section[:, :, None]
        inside = (sec3 == s) & (u3 >= 0) & (u3 <= self.k)
        dist = np.maximum(np.maximum(s - u3, u3 - (s + 1)), _TINY)
        return np.where(inside, 0.0, dist).reshape(len(v), -1)

    def label(self, condition: int) -> str:
        neuron, section = divmod(condition, self.k)
        return f"{self._neuron_label(self.active_[neuron])} section {section}"

    def describe(self) -> str:
        return f"KMNC(h, k={self.k})"


class NBC(_NeuronMetric):
    """Neuron boundary coverage: h < LB and h > UB per neuron.

    ``bounds="fixed"`` uses ``lower`` / ``upper`` (default -0.7 / 0.7); ``bounds="profile"``
    uses each neuron's min / max over the training data.
    """

    name = "NBC"
    sides: ClassVar[tuple[str, ...]] = ("lower", "upper")

    def __init__(self, lower: float = -0.7, upper: float = 0.7, bounds: str = "fixed") -> None:
        if bounds not in ("fixed", "profile"):
            raise InvalidArgument(f"bounds={bounds!r}; use 'fixed' or 'profile'")
        if not lower < upper:
            raise InvalidArgument(f"lower={lower!r} must be below upper={upper!r}")
        self.lower, self.upper, self.bounds = float(lower), float(upper), bounds

    def _prepare(self, profile: Profile) -> None:
        super()._prepare(profile)
        if self.bounds == "profile":
            self.lb_ = np.asarray(profile.neuron_min_, np.float64).ravel()
            self.ub_ = np.asarray(profile.neuron_max_, np.float64).ravel()
        else:
            self.lb_ = np.full(self.neurons_, self.lower)
            self.ub_ = np.full(self.neurons_, self.upper)

    @property
    def n_conditions(self) -> int:  # type: ignore[override]
        return self.neurons_ * len(self.sides)

    def fitness(self, signals: Signals, rows: slice = slice(None)) -> np.ndarray:
        v = signals.neurons()[rows].astype(np.float64)
        parts = {
            "lower": v - np.nextafter(self.lb_, -np.inf),  # <= 0 exactly when v < LB
            "upper": np.nextafter(self.ub_, np.inf) - v,  # <= 0 exactly when v > UB
        }
        return np.concatenate([parts[side] for side in self.sides], axis=1)

    def label(self, condition: int) -> str:
        side, neuron = divmod(condition, self.neurons_)
        return f"{self._neuron_label(neuron)} {'h<LB' if self.sides[side] == 'lower' else 'h>UB'}"

    def describe(self) -> str:
        if self.bounds == "profile":
            return f"{self.name}(h, bounds=profile min/max)"
        return f"{self.name}(h, LB={self.lower:g}, UB={self.upper:g})"


class SNAC(NBC):
    """Strong neuron activation coverage: h > UB per neuron (default UB 0.7)."""

    name = "SNAC"
    sides = ("upper",)

    def __init__(self, upper: float = 0.7, bounds: str = "fixed") -> None:
        super().__init__(lower=-np.inf, upper=upper, bounds=bounds)

    def describe(self) -> str:
        if self.bounds == "profile":
            return "SNAC(h, bounds=profile max)"
        return f"SNAC(h, UB={self.upper:g})"


def check_steps(trace: Trace, profile: Profile) -> None:
    """Refuse a trace whose length differs from the profile's."""
    if trace.n_steps != profile.n_steps_:
        raise InvalidInput(
            f"inputs give {trace.n_steps} LSTM steps but the profile was fitted on "
            f"{profile.n_steps_}; pad or cut the inputs to {profile.n_steps_} steps"
        )
