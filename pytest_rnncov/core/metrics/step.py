"""testRNN's step-wise metrics: boundary coverage (BC) and step-wise coverage (SC).

Each has one condition per window step (BC with ``alpha_min`` two) on a signal min-max
normalised by the profile (docs/definitions.md, "BC" and "SC").
"""

from __future__ import annotations

import functools
from typing import TYPE_CHECKING, Any, Callable

import numpy as np

from ...errors import InvalidArgument
from ...validation import check_fraction
from ..abstractions import NEEDS_POSITIVE, check_signal
from ..arrays import array_namespace, is_host, to_host
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
        #: per fitness column block, the least signal value that covers it, or for a
        #: lower bound (BC's alpha_min) the least that does not (``_hits``); None where
        #: the profile's range overflows (its fitness is then not monotone: NaN at +-inf)
        self.bounds_ = self._bounds(np.float64)
        #: the same for float32 signals (JAX's without 64-bit mode), whose fitness is
        #: computed in float32: the least float32 value that covers each block
        self.bounds32_ = self._bounds(np.float32)

    def _bounds(self, dtype: type[np.floating[Any]]) -> list[Any] | None:
        """``bounds_`` for signals of ``dtype``; None where the profile's range, in that
        type, is not a positive finite number (the fitness is then not monotone)."""
        # the search tries values up to the type's largest, whose distance to the profile's
        # minimum may round to inf: monotone all the same, and no warning of the user's
        with np.errstate(over="ignore"):
            low, span = dtype(self.min_), dtype(self.max_ - self.min_)
            if not (np.isfinite(low) and np.isfinite(span) and span > 0):
                return None
            return [
                least_value(functools.partial(self._covers_not, column=j, lower=lower), dtype)
                for j, lower in enumerate(self._lower_bounds())
            ]

    @property
    def reads(self) -> tuple[str, ...] | None:
        return None if self.component is None else (self.component,)

    @property
    def reads_positive_parts(self) -> bool:
        return self.abstraction is None or self.abstraction in NEEDS_POSITIVE

    def normalised(self, signals: Signals, rows: slice = slice(None)) -> np.ndarray:
        """N_m of the signal at each window step: (rows, |window|)."""
        return self._normalised(self._values(signals, rows))

    def _values(self, signals: Signals, rows: slice = slice(None)) -> Any:
        assert self.component is not None and self.abstraction is not None
        return signals.get(self.component, self.abstraction)[rows]

    def _normalised(self, values: Any) -> Any:
        return (values - self.min_) / (self.max_ - self.min_)

    def fitness(self, signals: Signals, rows: slice = slice(None)) -> np.ndarray:
        return self._block(self._values(signals, rows))  # type: ignore[no-any-return]

    def _block(self, values: Any) -> Any:
        """(rows, n_conditions) fitness of (rows, |window|) signal values."""
        raise NotImplementedError

    def _lower_bounds(self) -> tuple[bool, ...]:
        """Per |window|-wide block of fitness columns: whether it is covered below a value
        (BC's alpha_min) rather than above one."""
        return (False,)

    def _covers_not(self, values: np.ndarray, column: int, lower: bool) -> np.ndarray:
        """Whether ``values`` (rows, 1) cover fitness block ``column``; for a lower
        bound, whether they do not (either way false below some value, true from it)."""
        return (self._block(values)[:, column] <= 0) != lower  # type: ignore[no-any-return]

    def _hits(self, values: np.ndarray) -> np.ndarray:
        """``_block(values) <= 0`` from one comparison per block with ``bounds_`` (float32
        values: ``bounds32_``): the fitness is monotone in the signal value (a subtraction
        and a division by a positive range, each rounded monotonically), so the values that
        cover a condition are those from (or, for a lower bound, below) one value of their
        type, found once."""
        bounds = self._bounds_of(values)
        assert bounds is not None
        parts = [
            values < bound if lower else values >= bound
            for bound, lower in zip(bounds, self._lower_bounds())
        ]
        return parts[0] if len(parts) == 1 else np.concatenate(parts, axis=1)

    def _bounds_of(self, values: np.ndarray) -> list[Any] | None:
        """The bounds for host ``values`` of their float type (of either byte order), None
        for another type or where the profile's range gives none."""
        return {np.float64: self.bounds_, np.float32: self.bounds32_}.get(values.dtype.type)

    def evaluate(self, signals: Signals, *, fitness: bool = True) -> BatchResult:
        self._check_bound()
        values = self._values(signals)
        fast = is_host(values) and self._bounds_of(values) is not None
        if fast and not fitness:  # counts alone
            return BatchResult.from_dense(self._hits(values))
        block = self._block(values)
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

    def _block(self, values: Any) -> Any:
        n = self._normalised(values)
        upper = self.alpha_max - n
        if self.alpha_min is None:
            return upper
        return array_namespace(n).concat([upper, n - self.alpha_min], axis=1)

    def _lower_bounds(self) -> tuple[bool, ...]:
        return (False,) if self.alpha_min is None else (False, True)

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

    def _block(self, values: Any) -> Any:
        return self.alpha_sc - self._normalised(values)

    def condition_fitness(self, signals: Signals, condition: int) -> np.ndarray:
        return self.alpha_sc - to_host(self.normalised(signals)[:, condition])

    def config(self) -> dict[str, Any]:
        return {**self._base_config(), "alpha_sc": self.alpha_sc}

    @classmethod
    def label_from_config(cls, config: dict[str, Any], condition: int) -> str:
        return f"t={config['window'][0] + condition} N>={config['alpha_sc']:g}"

    def describe(self) -> str:
        return f"SC({self.component}/{self.abstraction}, alpha_sc={self.alpha_sc:g})"


def least_value(
    true_from: Callable[[np.ndarray], Any], dtype: type[np.floating[Any]] = np.float64
) -> Any:
    """The least ``v`` of ``dtype`` (float64 or float32, from -inf to +inf) with
    ``true_from(v)`` true, for a predicate false below some value and true from it on
    (+inf where it is never true for a finite value): a bisection over the floats in their
    order, 64 steps at most (32 for float32). ``true_from`` takes a (1, 1) array of
    ``dtype`` and returns a one-element array. A float64 comes back as a Python float, a
    float32 as a numpy float32 (compared with float32 values in their own type)."""

    def holds(key: int) -> bool:
        value = np.array([[_from_key(key, dtype)]], dtype)
        return bool(np.asarray(true_from(value), bool).ravel()[0])

    low, high = _to_key(-np.inf, dtype), _to_key(np.inf, dtype)
    if holds(low):
        return _from_key(low, dtype)
    if not holds(high):
        return _from_key(high, dtype)
    while high - low > 1:  # holds(high) and not holds(low)
        middle = (low + high) // 2
        low, high = (low, middle) if holds(middle) else (middle, high)
    return _from_key(high, dtype)


#: per float type, the integer type of its bits and its sign bit
_BITS = {np.float64: (np.int64, 1 << 63), np.float32: (np.int32, 1 << 31)}


def _to_key(value: float, dtype: type[np.floating[Any]] = np.float64) -> int:
    """An integer that orders ``dtype`` values as they compare (-0.0 just below +0.0)."""
    integer, sign = _BITS[dtype]
    bits = int(np.array(value, dtype).view(integer))
    return bits if bits >= 0 else -(bits & (sign - 1)) - 1


def _from_key(key: int, dtype: type[np.floating[Any]] = np.float64) -> Any:
    integer, sign = _BITS[dtype]
    bits = key if key >= 0 else -(key + 1) | -sign
    value = np.array(bits, integer).view(dtype)[()]
    return float(value) if dtype is np.float64 else value
