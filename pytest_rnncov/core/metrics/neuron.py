"""DeepGauge's neuron-level metrics on h over the window: NC, KMNC, NBC, SNAC.

A neuron is one (step, unit) of h in the window (docs/definitions.md, "Neuron metrics").
Each metric evaluates a batch in time linear in batch x neurons: no (batch x conditions)
matrix is built.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ...errors import InvalidArgument
from ...validation import check_choice, check_float, check_int
from ..arrays import array_namespace, like, to_host, wide_float
from .base import TINY, BatchResult, Metric, Signals, best_of

if TYPE_CHECKING:
    from ..profile import Profile


def float32_at_most(threshold: np.ndarray | float) -> np.ndarray:
    """The largest float32 not above ``threshold``: for float32 ``v``, ``v > threshold``
    exactly when ``v > float32_at_most(threshold)``. (Not ``v >=`` the smallest float32
    above it: for a threshold of 0 that is a subnormal, which XLA on the CPU flushes to 0,
    so JAX read every 0 as above 0.)"""
    t = np.asarray(threshold, np.float64)
    with np.errstate(over="ignore"):  # beyond float32's range: +-inf; below its lowest: -inf
        low = t.astype(np.float32)
        below = np.nextafter(low, np.float32(-np.inf))
    return np.where(low.astype(np.float64) > t, below, low).astype(np.float32)


def float32_at_least(threshold: np.ndarray | float) -> np.ndarray:
    """The smallest float32 not below ``threshold``: for float32 ``v``, ``v < threshold``
    exactly when ``v < float32_at_least(threshold)``."""
    t = np.asarray(threshold, np.float64)
    with np.errstate(over="ignore"):  # beyond float32's range: +-inf; above its largest: inf
        high = t.astype(np.float32)
        above = np.nextafter(high, np.float32(np.inf))
    return np.where(high.astype(np.float64) < t, above, high).astype(np.float32)


def _float32_or_wide(v: Any) -> tuple[Any, bool]:
    """Neuron values to compare with thresholds: float32 ones as they are (compared with
    the thresholds rounded for float32, exactly), others (a float64 or float16 trace) in
    the wide type, compared with the thresholds themselves; and whether they are float32."""
    xp = array_namespace(v)
    if v.dtype == xp.float32:
        return v, True
    wide = wide_float(xp)
    return xp.astype(v, wide), wide == xp.float32


class _NeuronMetric(Metric):
    @property
    def reads(self) -> tuple[str, ...]:
        return ("h",)

    def prepare(self, profile: "Profile") -> None:
        self.window_ = profile.window_
        self.units_ = int(profile.neuron_min_.shape[-1])
        self.neurons_ = (self.window_[1] - self.window_[0] + 1) * self.units_

    def _values(self, signals: Signals, rows: slice = slice(None)) -> Any:
        v = signals.neurons("h")[rows]
        xp = array_namespace(v)
        return xp.astype(v, wide_float(xp))

    def _neuron_config(self) -> dict[str, Any]:
        return {"window": list(self.window_), "units": self.units_}

    @staticmethod
    def _neuron_label(config: dict[str, Any], neuron: int) -> str:
        step, unit = divmod(int(neuron), int(config["units"]))
        return f"t={config['window'][0] + step} u={unit}"


class NC(_NeuronMetric):
    """Neuron coverage: h > threshold."""

    name = "NC"

    def __init__(self, threshold: float = 0.0) -> None:
        self.threshold = check_float("threshold", threshold, example="0.0")

    @property
    def n_conditions(self) -> int:
        return self.neurons_

    def _above(self) -> float:
        with np.errstate(over="ignore"):  # float64's largest threshold: inf, never reached
            return float(np.nextafter(self.threshold, np.inf))

    def fitness(self, signals: Signals, rows: slice = slice(None)) -> np.ndarray:
        return self._above() - self._values(signals, rows)

    def condition_fitness(self, signals: Signals, condition: int) -> np.ndarray:
        return self._above() - to_host(signals.neurons("h")[:, int(condition)]).astype(np.float64)

    def evaluate(self, signals: Signals, *, fitness: bool = True) -> BatchResult:
        self._check_bound()
        v, single = _float32_or_wide(signals.neurons("h"))
        # v > threshold exactly when v > the largest float32 not above it (float64: itself)
        bound = float32_at_most(self.threshold) if single else self.threshold
        result = BatchResult.from_dense(v > like(bound, v, dtype=v.dtype))
        if fitness:
            result.best, result.best_row = best_of(self._above() - self._values(signals))
        return result

    def config(self) -> dict[str, Any]:
        return {**self._neuron_config(), "threshold": self.threshold}

    @classmethod
    def label_from_config(cls, config: dict[str, Any], condition: int) -> str:
        return f"{cls._neuron_label(config, condition)} h>{config['threshold']:g}"

    def describe(self) -> str:
        return f"NC(h, threshold={self.threshold:g})"


class KMNC(_NeuronMetric):
    """k-multisection neuron coverage: k equal sections of the profile's per-neuron [min, max].

    A neuron constant over the training data has no sections (no conditions). A value equal
    to the maximum falls in the last section.
    """

    name = "KMNC"

    def __init__(self, k: int = 10) -> None:
        self.k = check_int("k", k, minimum=1, example="10")

    def prepare(self, profile: "Profile") -> None:
        super().prepare(profile)
        lo = np.asarray(profile.neuron_min_, np.float64).ravel()
        hi = np.asarray(profile.neuron_max_, np.float64).ravel()
        self.active_ = np.flatnonzero(hi > lo)
        self.lo_, self.hi_ = lo[self.active_], hi[self.active_]
        self.scale_ = self.k / (self.hi_ - self.lo_)  # u = (v - min) * k / (max - min)
        self.all_active_ = len(self.active_) == len(lo)

    @property
    def n_conditions(self) -> int:
        return len(self.active_) * self.k

    def _coordinates(self, signals: Signals, rows: slice = slice(None)) -> np.ndarray:
        """Section coordinate u of each active neuron: section s is [s, s + 1) (k: last);
        computed on the host (the bucketing needs numpy)."""
        v = signals.host().neurons("h")[rows]
        v = v.astype(np.float64) if self.all_active_ else v[:, self.active_].astype(np.float64)
        u = v - self.lo_
        u *= self.scale_
        # the range decides, not the rounding: the maximum can land a hair above k and a
        # value just above it on k (lo gives 0 exactly; below it stays below 0)
        np.minimum(u, self.k, out=u, where=v <= self.hi_)
        np.maximum(u, np.nextafter(float(self.k), np.inf), out=u, where=v > self.hi_)
        return u

    def fitness(self, signals: Signals, rows: slice = slice(None)) -> np.ndarray:
        u = self._coordinates(signals, rows)
        section = np.where(u == self.k, self.k - 1, np.floor(u))
        s = np.arange(self.k, dtype=np.float64)
        u3, sec3 = u[:, :, None], section[:, :, None]
        inside = (sec3 == s) & (u3 >= 0) & (u3 <= self.k)
        dist = np.maximum(np.maximum(s - u3, u3 - (s + 1)), TINY)
        return np.where(inside, 0.0, dist).reshape(len(u), -1)

    def condition_fitness(self, signals: Signals, condition: int) -> np.ndarray:
        neuron, s = divmod(int(condition), self.k)
        u = self._coordinates(signals)[:, neuron]
        section = np.where(u == self.k, self.k - 1, np.floor(u))
        inside = (section == s) & (u >= 0) & (u <= self.k)
        return np.where(inside, 0.0, np.maximum(np.maximum(s - u, u - (s + 1)), TINY))

    def evaluate(self, signals: Signals, *, fitness: bool = True) -> BatchResult:
        """Buckets per neuron: -1 (below the range), the k sections, k (above the range)."""
        self._check_bound()
        k, n_neurons = self.k, len(self.active_)
        u = self._coordinates(signals)
        batch = len(u)
        bucket = np.floor(u)
        bucket[u == k] = k - 1
        np.clip(bucket, -1, k, out=bucket)
        width = k + 2
        key = bucket.astype(np.int64)
        key += np.arange(n_neurons, dtype=np.int64) * width + 1
        key = key.ravel()
        per_bucket = np.bincount(key, minlength=n_neurons * width).reshape(n_neurons, width)
        counts = per_bucket[:, 1 : k + 1].reshape(-1).astype(np.int64)

        def pairs() -> tuple[np.ndarray, np.ndarray]:
            inside = (bucket >= 0) & (bucket < k)
            rows = np.broadcast_to(np.arange(batch, dtype=np.int64)[:, None], u.shape)[inside]
            conditions = (np.arange(n_neurons, dtype=np.int64) * k)[None, :] + bucket.astype(
                np.int64
            )
            return rows, conditions[inside]

        result = BatchResult(counts, pairs=pairs)
        if fitness:
            result.best, result.best_row = self._best(u, key, per_bucket)
        return result

    def _best(
        self, u: np.ndarray, key: np.ndarray, per_bucket: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray]:
        """Exact lowest fitness per (neuron, section) and the first row giving it, from the
        nearest values below and above each section (buckets are ordered by value)."""
        k, n_neurons = self.k, per_bucket.shape[0]
        width = k + 2
        flat_u = u.ravel()
        flat_row = np.repeat(np.arange(len(u), dtype=np.int64), u.shape[1])
        size = n_neurons * width
        high = np.full(size, -np.inf)
        np.maximum.at(high, key, flat_u)
        low = np.full(size, np.inf)
        np.minimum.at(low, key, flat_u)
        first = np.full(size, len(u), np.int64)  # first row in each bucket (inside: fitness 0)
        np.minimum.at(first, key, flat_row)
        at_high = flat_u == high[key]
        high_row = np.full(size, len(u), np.int64)
        np.minimum.at(high_row, key[at_high], flat_row[at_high])
        at_low = flat_u == low[key]
        low_row = np.full(size, len(u), np.int64)
        np.minimum.at(low_row, key[at_low], flat_row[at_low])
        high, low = high.reshape(n_neurons, width), low.reshape(n_neurons, width)
        high_row, low_row = high_row.reshape(n_neurons, width), low_row.reshape(n_neurons, width)
        first = first.reshape(n_neurons, width)
        filled = per_bucket > 0
        index = np.arange(width)
        # the last non-empty bucket strictly below section s (bucket s + 1 in this layout)
        last = np.maximum.accumulate(np.where(filled, index, -1), axis=1)
        below_bucket = last[:, :k]  # for section s: buckets 0..s (i.e. sections -1..s-1)
        # the first non-empty bucket strictly above section s
        first_filled = np.minimum.accumulate(np.where(filled, index, width)[:, ::-1], axis=1)[
            :, ::-1
        ]
        above_bucket = first_filled[:, 2:]  # for section s: buckets s + 1..k
        s = np.arange(k, dtype=np.float64)[None, :]
        neurons = np.arange(n_neurons)[:, None]
        has_below = below_bucket >= 0
        has_above = above_bucket < width
        below_value = np.where(has_below, s - high[neurons, np.maximum(below_bucket, 0)], np.inf)
        below_row = np.where(has_below, high_row[neurons, np.maximum(below_bucket, 0)], len(u))
        above_value = np.where(
            has_above,
            np.maximum(low[neurons, np.minimum(above_bucket, width - 1)] - (s + 1), TINY),
            np.inf,
        )
        above_row = np.where(
            has_above, low_row[neurons, np.minimum(above_bucket, width - 1)], len(u)
        )
        inside = filled[:, 1 : k + 1]
        value = np.where(inside, 0.0, np.minimum(below_value, above_value))
        tie = below_value == above_value
        row = np.where(
            inside,
            first[:, 1 : k + 1],
            np.where(
                tie,
                np.minimum(below_row, above_row),
                np.where(below_value < above_value, below_row, above_row),
            ),
        )
        row = np.where(np.isfinite(value), row, -1)
        return value.reshape(-1), row.reshape(-1)

    def config(self) -> dict[str, Any]:
        return {**self._neuron_config(), "k": self.k, "active": self.active_.tolist()}

    @classmethod
    def label_from_config(cls, config: dict[str, Any], condition: int) -> str:
        neuron, section = divmod(int(condition), int(config["k"]))
        return f"{cls._neuron_label(config, config['active'][neuron])} section {section}"

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
        check_choice("bounds", bounds, ("fixed", "profile"))
        self.lower = check_float("lower", lower, allow_infinite=True)  # SNAC's: no lower side
        self.upper = check_float("upper", upper)
        if "lower" in self.sides and not math.isfinite(self.lower):
            raise InvalidArgument(
                f"lower={self.lower!r} leaves half of NBC's conditions (h < lower) "
                "uncoverable, so its rate could not pass 50%; for the upper side alone use "
                "SNAC(upper=...)"
            )
        if not self.lower < self.upper:
            raise InvalidArgument(f"lower={self.lower!r} must be below upper={self.upper!r}")
        self.bounds = bounds

    def prepare(self, profile: "Profile") -> None:
        super().prepare(profile)
        if self.bounds == "profile":
            self.lb_ = np.asarray(profile.neuron_min_, np.float64).ravel()
            self.ub_ = np.asarray(profile.neuron_max_, np.float64).ravel()
        else:
            self.lb_ = np.full(self.neurons_, self.lower)
            self.ub_ = np.full(self.neurons_, self.upper)
        with np.errstate(over="ignore"):  # at float64's limits: +-inf, never reached
            self.below_ = np.nextafter(self.lb_, -np.inf)  # v <= below_ exactly when v < LB
            self.above_ = np.nextafter(self.ub_, np.inf)  # v >= above_ exactly when v > UB
        self.lower32_ = float32_at_least(self.lb_)  # float32 v < LB exactly when v < this
        self.upper32_ = float32_at_most(self.ub_)  # float32 v > UB exactly when v > this

    @property
    def n_conditions(self) -> int:
        return self.neurons_ * len(self.sides)

    def _side_fitness(self, side: str, v: Any) -> Any:
        with np.errstate(over="ignore"):  # a bound beyond float32's range, for float32 v: inf
            if side == "lower":
                return v - like(self.below_, v, dtype=v.dtype)
            return like(self.above_, v, dtype=v.dtype) - v

    def fitness(self, signals: Signals, rows: slice = slice(None)) -> Any:
        v = self._values(signals, rows)
        return array_namespace(v).concat(
            [self._side_fitness(side, v) for side in self.sides], axis=1
        )

    def condition_fitness(self, signals: Signals, condition: int) -> np.ndarray:
        side, neuron = divmod(int(condition), self.neurons_)
        v = to_host(signals.neurons("h")[:, neuron]).astype(np.float64)
        if self.sides[side] == "lower":
            return v - self.below_[neuron]
        return self.above_[neuron] - v

    def evaluate(self, signals: Signals, *, fitness: bool = True) -> BatchResult:
        self._check_bound()
        v, single = _float32_or_wide(signals.neurons("h"))
        # v < LB exactly when v < the smallest float32 not below LB; v > UB exactly when
        # v > the largest not above it (float64: the bounds themselves)
        lower, upper = (self.lower32_, self.upper32_) if single else (self.lb_, self.ub_)
        parts = {
            "lower": lambda: v < like(lower, v, dtype=v.dtype),
            "upper": lambda: v > like(upper, v, dtype=v.dtype),
        }
        hit = array_namespace(v).concat([parts[side]() for side in self.sides], axis=1)
        result = BatchResult.from_dense(hit)
        if fitness:
            result.best, result.best_row = best_of(self.fitness(signals))
        return result

    def config(self) -> dict[str, Any]:
        return {
            **self._neuron_config(),
            "sides": list(self.sides),
            "bounds": self.bounds,
            "lower": self.lower if math.isfinite(self.lower) else None,  # JSON has no -inf
            "upper": self.upper,
        }

    @classmethod
    def label_from_config(cls, config: dict[str, Any], condition: int) -> str:
        neurons = (config["window"][1] - config["window"][0] + 1) * config["units"]
        side, neuron = divmod(int(condition), neurons)
        mark = "h<LB" if config["sides"][side] == "lower" else "h>UB"
        return f"{cls._neuron_label(config, neuron)} {mark}"

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
