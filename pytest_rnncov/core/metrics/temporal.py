"""testRNN's temporal coverage (TC): the SAX word of the window's curve.

The curve of a signal over the window is z-normalised with the profile's statistics,
reduced to ``w`` values by fractional PAA and each value mapped to one of ``a`` symbols
by the standard normal's equiprobable breakpoints; every word of ``a**w`` is a condition
(docs/definitions.md, "TC").
"""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import InvalidArgument, RNNCovWarning, user_stacklevel
from ...validation import check_int
from .. import sax
from ..abstractions import NEEDS_POSITIVE, check_signal
from ..arrays import array_namespace, is_host, like, to_host, wide_int
from .base import BLOCK, MAX_CONDITIONS, BatchResult, Metric, Signals, best_of, check_cell_component

if TYPE_CHECKING:
    from ..profile import Profile


#: the largest SAX alphabet TC accepts: a word is written with one letter per symbol, a-z
MAX_ALPHABET = 26


class TC(Metric):
    """Temporal coverage: every SAX word of length ``w`` over ``a`` symbols."""

    name = "TC"
    reads_sums_only = True

    def __init__(
        self, component: str = "h", abstraction: str = "net", w: int = 5, a: int = 3
    ) -> None:
        check_signal(component, abstraction)
        self.component, self.abstraction = component, abstraction
        self.w = check_int("w", w, minimum=1, maximum=64, example="5")
        self.a = check_int("a", a, minimum=2, maximum=MAX_ALPHABET, example="3")
        if self.a**self.w > MAX_CONDITIONS:
            largest = max(k for k in range(1, 64) if self.a**k <= MAX_CONDITIONS)
            raise InvalidArgument(
                f"TC(w={self.w}, a={self.a}) has {self.a**self.w:,} words, more than the "
                f"{MAX_CONDITIONS:,} conditions pytest-rnncov tracks; use w <= {largest} with "
                f"a={self.a}, or a smaller alphabet"
            )

    @property
    def reads(self) -> tuple[str, ...]:
        return (self.component,)

    @property
    def reads_positive_parts(self) -> bool:
        return self.abstraction in NEEDS_POSITIVE

    def prepare(self, profile: "Profile") -> None:
        check_cell_component(self, profile, self.component)
        t1, t2 = profile.window_
        length = t2 - t1 + 1
        if self.w > length:
            warnings.warn(
                f"TC w={self.w} over a window of {length} step{'s' if length != 1 else ''}: "
                f"the PAA repeats steps, so many of the {self.a**self.w:,} words cannot "
                f"occur and a high TC bar cannot be met; TC(w={length}) measures every "
                "pattern the window can form",
                RNNCovWarning,
                stacklevel=user_stacklevel(),
            )
        self.window_ = profile.window_
        self.mu_, self.sigma_ = profile.zscore(self.component, self.abstraction)
        self.overlaps_ = sax.paa_overlaps(length, self.w)
        self.cuts_ = sax.breakpoints(self.a)

    @property
    def n_conditions(self) -> int:
        return self.a**self.w

    def paa(self, signals: Signals, rows: slice = slice(None)) -> Any:
        """z-normalised PAA values: (rows, w), in the signals' own namespace."""
        values = signals.get(self.component, self.abstraction)[rows]
        # centred, summed with integer overlap weights, then one division: a segment whose
        # mean is the profile's mean sums to 0 (the breakpoint 0, the upper symbol), where
        # weights of a rounded 1/length do not; centring first keeps a low-precision
        # matmul (TF32 on a GPU) from cancelling a large mean
        sums = (values - self.mu_) @ like(self.overlaps_.T, values, dtype=values.dtype)
        return sums / (self.overlaps_.shape[1] * self.sigma_)

    def _words(self, paa: Any) -> np.ndarray:
        """Word ids from PAA values, on the host (only B integers cross)."""
        xp = array_namespace(paa)
        place = self.a ** np.arange(self.w - 1, -1, -1, dtype=np.int64)
        if is_host(paa):  # numpy's integer matmul beats a sum along the short last axis
            return sax.symbols_of(paa, self.cuts_) @ place
        place = like(place, paa, dtype=wide_int(xp))
        return to_host(xp.sum(sax.symbols_of(paa, self.cuts_) * place, axis=-1)).astype(np.int64)

    def words(self, signals: Signals, rows: slice = slice(None)) -> np.ndarray:
        """The word (condition id) of each input."""
        return self._words(self.paa(signals, rows))

    def _word_fitness(self, distances: Any) -> Any:
        """(rows, a**w) fitness of every word from per-position distances (rows, w, a)."""
        xp = array_namespace(distances)
        out = distances[:, 0, :]
        for j in range(1, self.w):
            out = xp.reshape(out[:, :, None] + distances[:, j, None, :], (distances.shape[0], -1))
        return out

    def fitness(self, signals: Signals, rows: slice = slice(None)) -> Any:
        return self._word_fitness(sax.interval_distance(self.paa(signals, rows), self.cuts_))

    def condition_fitness(self, signals: Signals, condition: int) -> np.ndarray:
        digits = sax.word_digits(np.array([condition]), self.a, self.w)[0]
        distances = sax.interval_distance(self.paa(signals), self.cuts_)
        total = distances[:, 0, int(digits[0])]
        for j in range(1, self.w):
            total = total + distances[:, j, int(digits[j])]
        return to_host(total)

    def evaluate(self, signals: Signals, *, fitness: bool = True) -> BatchResult:
        self._check_bound()
        paa = self.paa(signals)
        words = self._words(paa)
        result = BatchResult.from_pairs(
            np.arange(len(words), dtype=np.int64), words, self.n_conditions
        )
        if fitness:
            distances = sax.interval_distance(paa, self.cuts_)
            best = np.full(self.n_conditions, np.inf)
            best_row = np.full(self.n_conditions, -1, np.int64)
            step = max(1, BLOCK // self.n_conditions)
            for start in range(0, paa.shape[0], step):
                value, row = best_of(self._word_fitness(distances[start : start + step]))
                better = value < best
                best[better] = value[better]
                best_row[better] = row[better] + start
            result.best, result.best_row = best, best_row
        return result

    def config(self) -> dict[str, Any]:
        return {
            "component": self.component,
            "abstraction": self.abstraction,
            "w": self.w,
            "a": self.a,
            "window": list(self.window_),
        }

    @classmethod
    def label_from_config(cls, config: dict[str, Any], condition: int) -> str:
        digits = sax.word_digits(np.array([condition]), config["a"], config["w"])[0]
        return sax.word_label(digits)

    def describe(self) -> str:
        return f"TC({self.component}/{self.abstraction}, w={self.w}, a={self.a})"
