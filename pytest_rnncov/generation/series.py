"""Random mutation of sensor and other multivariate time series: a random monotone time
warp of each case, then Gaussian noise.

Cases are ``(batch, steps, channels)`` arrays. Every operation is vectorised over the
batch and draws only from the ``numpy.random.Generator`` it is given, so a mutation is
reproducible from one seed.
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import numpy as np

from ..errors import InvalidArgument, InvalidInput, RNNCovWarning, user_stacklevel
from ..validation import check_float, check_int, check_range, shown
from .mutators import (
    Cases,
    Mutator,
    check_rng,
    finite_float32,
    fixed_or_range,
    in_cases_dtype,
    not_a_batch,
    numeric_array,
    refuse_nonfinite_cases,
    refuse_text,
)

#: the strongest time warp: a piece's length is then multiplied by e**10 at one standard
#: deviation already, and far stronger warps overflow float64
MAX_WARP = 10.0
#: the most pieces a series is warped in: each costs memory per case, and a piece of less
#: than a step warps nothing (10**7 pieces took 23 GB on 100 series of 20 steps)
MAX_SEGMENTS = 4096


class TimeSeriesMutator(Mutator):
    """A random time warp of each case, then Gaussian noise.

    ``warp``: the strength of the time warp (0: none, at most 10). The time axis is cut into
    ``segments`` equal pieces; each piece's length is multiplied by ``exp(warp * z)``
    (``z`` standard normal, per case and piece) and the pieces are rescaled to span the
    series again, which gives a monotone piecewise-linear map of time keeping the first and
    last step fixed. Every channel is resampled along it by linear interpolation.

    ``noise``: the noise's standard deviation, one value drawn per batch from this range
    (or fixed); ``channel_scale`` multiplies it per channel (e.g. each channel's spread).

    ``padding``: for series of different lengths padded with this value (every channel of a
    padding step equal to it) at the end, the front (``keras.utils.pad_sequences``'
    default) or both, each case's real steps (those between its leading and trailing
    padding) are warped and perturbed as a series of their own and its padding is kept;
    None (default): every step is real.
    """

    def __init__(
        self,
        noise: float | tuple[float, float] = (0.05, 0.1),
        warp: float = 0.2,
        segments: int = 4,
        channel_scale: Any = None,
        padding: float | None = None,
    ) -> None:
        self.noise = fixed_or_range("noise", noise, example="(0.05, 0.1)")
        self.warp = check_float(
            "warp", warp, minimum=0.0, maximum=MAX_WARP, example="0.2 (0 for no warp)"
        )
        self.segments = check_int(
            "segments", segments, minimum=2, maximum=MAX_SEGMENTS, example="4"
        )
        self.channel_scale = None if channel_scale is None else self._checked_scale(channel_scale)
        self.padding = None if padding is None else check_float("padding", padding, example="0.0")

    @staticmethod
    def _checked_scale(channel_scale: Any) -> np.ndarray:
        try:
            scale = np.asarray(channel_scale, np.float64)
        except (TypeError, ValueError):
            scale = np.array([np.nan])
        if scale.ndim != 1 or len(scale) == 0 or not np.isfinite(scale).all() or (scale < 0).any():
            raise InvalidArgument(
                f"channel_scale={shown(channel_scale)} must be a non-empty list of finite "
                "numbers >= 0, one "
                "per channel, e.g. channel_scale=x_train.std(axis=(0, 1))"
            )
        return scale

    @classmethod
    def from_seeds(
        cls,
        seeds: Any,
        spread: tuple[float, float] = (0.25, 0.5),
        warp: float = 0.2,
        segments: int = 4,
        padding: float | None = None,
    ) -> "TimeSeriesMutator":
        """Noise scaled to the data: each channel's standard deviation is drawn from
        ``spread`` times that channel's spread in the seeds (its per-step standard
        deviation across seeds, averaged over the steps; with ``padding``, over the real
        steps of the steps that at least two seeds reach)."""
        low, high = check_range("spread", spread, minimum=0.0, example="(0.25, 0.5)", strict=False)
        array = numeric_array(seeds, "seeds")
        if array.dtype.kind not in "biuf":
            raise not_a_batch(array, f"seeds have dtype {array.dtype}; pass numbers")
        if padding is not None:
            padding = check_float("padding", padding, example="0.0")
        span = None if padding is None or array.ndim != 3 else _real_span(array, padding)
        if padding is None and array.ndim == 3:
            _warn_if_padded(array)
        array = array.astype(np.float64)
        if array.ndim != 3 or len(array) < 2 or not np.isfinite(array).all():
            raise InvalidInput(
                f"from_seeds needs at least two finite seeds of shape (steps, "
                f"channels); got an array of shape {array.shape}"
            )
        with np.errstate(over="ignore", invalid="ignore"):  # huge seeds: named below
            per_channel = _spread(array, span, padding)
            scale = float(per_channel.mean())
        if not (np.isfinite(per_channel).all() and math.isfinite(high * scale)):
            raise InvalidInput(
                f"the seeds' spread ({scale:.3g}) is too large for a noise scale; scale the "
                "inputs (models take values of order 1), or give "
                "TimeSeriesMutator(noise=...) yourself"
            )
        if not scale > 0:
            raise InvalidInput("the seeds do not vary, so they give no scale for the noise")
        return cls(
            noise=(low * scale, high * scale),
            warp=warp,
            segments=segments,
            channel_scale=per_channel / scale,
            padding=padding,
        )

    def describe(self) -> str:
        low, high = self.noise
        per_channel = "" if self.channel_scale is None else " (scaled per channel)"
        warp = (
            "no time warp"
            if self.warp == 0
            else (f"time warp {self.warp:g} over {self.segments} segments")
        )
        kept = "" if self.padding is None else f"; padding {self.padding:g} kept"
        return f"{warp}, then Gaussian noise, std {low:.3g}-{high:.3g}{per_channel}{kept}"

    def _check_shape(self, cases: np.ndarray) -> None:
        if cases.ndim != 3:
            raise InvalidInput(
                f"cases have shape {cases.shape}; TimeSeriesMutator takes "
                "(batch, steps, channels) arrays (x[..., None] for one channel)"
            )
        if self.warp > 0 and cases.shape[1] < 2:
            raise InvalidInput(
                f"a time warp needs at least 2 time steps; cases have {cases.shape[1]}"
            )
        if self.channel_scale is not None and len(self.channel_scale) != cases.shape[2]:
            raise InvalidInput(
                f"cases have {cases.shape[2]} channels but channel_scale has "
                f"{len(self.channel_scale)} values"
            )

    def warp_positions(
        self,
        n_cases: int,
        n_steps: int,
        rng: np.random.Generator,
        lengths: np.ndarray | None = None,
    ) -> np.ndarray:
        """Where each case's warped series samples its original time axis: ``(n_cases,
        n_steps)`` positions in ``[0, n_steps - 1]``, non-decreasing, first 0 and last
        ``n_steps - 1``. With ``lengths`` (each case's real steps, at least 1), a case's
        positions span ``[0, length - 1]`` over its real steps and stay there after."""
        if lengths is None:
            ends = np.full(n_cases, n_steps - 1.0)
        else:
            given = np.asarray(lengths)
            if (
                given.shape != (n_cases,)
                or given.dtype.kind not in "iu"
                or not ((given >= 1) & (given <= n_steps)).all()
            ):
                raise InvalidArgument(
                    f"lengths={shown(lengths)} must be {n_cases} integers from 1 to "
                    f"{n_steps}, one per case"
                )
            ends = given - 1.0
        pieces = np.exp(self.warp * rng.standard_normal((n_cases, self.segments)))
        knots = np.concatenate([np.zeros((n_cases, 1)), np.cumsum(pieces, axis=1)], axis=1)
        knots *= ends[:, None] / knots[:, -1:]
        per_step = np.divide(self.segments, ends, out=np.zeros(n_cases), where=ends > 0)
        grid = np.arange(n_steps) * per_step[:, None]  # in segments
        segment = np.minimum(grid.astype(np.intp), self.segments - 1)
        fraction = grid - segment
        rows = np.arange(n_cases)[:, None]
        positions = knots[rows, segment] * (1 - fraction) + knots[rows, segment + 1] * fraction
        positions[:, 0] = 0.0
        positions[np.arange(n_cases), ends.astype(np.intp)] = ends
        # rounding can leave a position an ulp past the end or before its neighbour
        return np.maximum.accumulate(np.clip(positions, 0.0, ends[:, None]), axis=1)

    @staticmethod
    def resample(cases: np.ndarray, positions: np.ndarray) -> np.ndarray:
        """Every channel of each case linearly interpolated at its ``positions``."""
        left = np.minimum(positions.astype(np.intp), cases.shape[1] - 2)
        weight = (positions - left)[:, :, None]
        rows = np.arange(len(cases))[:, None]
        return cases[rows, left] * (1 - weight) + cases[rows, left + 1] * weight

    def mutate(self, cases: Cases, rng: np.random.Generator) -> np.ndarray:
        check_rng(rng)
        array = numeric_array(cases, "cases")
        self._check_shape(array)
        if array.dtype.kind not in "biuf":  # complex: the imaginary part would be dropped
            raise InvalidInput(f"cases have dtype {array.dtype}; a time series takes numbers")
        refuse_nonfinite_cases(array, self)
        starts, lengths = (None, None) if self.padding is None else _real_span(array, self.padding)
        mutated = array.astype(np.float64)
        if starts is not None and starts.any():  # padding at the front moves behind the series
            mutated = _rotated(mutated, starts)
        if self.warp > 0:
            positions = self.warp_positions(
                len(array), array.shape[1], rng, None if lengths is None else np.maximum(lengths, 1)
            )
            mutated = self.resample(mutated, positions)
        if self.noise[1] > 0:
            sigma = rng.uniform(*self.noise)
            scale = sigma if self.channel_scale is None else sigma * self.channel_scale
            mutated = mutated + rng.standard_normal(array.shape) * scale
        if starts is not None and lengths is not None:
            mutated[np.arange(array.shape[1]) >= lengths[:, None]] = self.padding
            if starts.any():
                mutated = _rotated(mutated, -starts)
        return in_cases_dtype(
            mutated, array.dtype, f"noise of up to {self.noise[1]:g}", "lower noise="
        )

    def encode(self, cases: Cases) -> np.ndarray:
        return np.asarray(cases, np.float32)

    def check_seeds(self, seeds: Any) -> np.ndarray:
        refuse_text(seeds, self)
        array = super().check_seeds(seeds)
        cast = finite_float32(array, "a time series")
        self._check_shape(array)
        return cast


def _real_span(cases: np.ndarray, padding: float) -> tuple[np.ndarray, np.ndarray]:
    """Each case's first real step and its count of real steps: those between its leading
    and its trailing padding (steps whose every channel is ``padding``, compared in the
    cases' own dtype: 0.1 in float32 is not 0.1 in float64). ``(batch,)`` integers each; a
    case of padding only starts at 0 with no real step."""
    n_cases, n_steps = cases.shape[:2]
    if cases.dtype.kind == "f" and not abs(padding) <= float(np.finfo(cases.dtype).max):
        return np.zeros(n_cases, np.intp), np.full(n_cases, n_steps)  # no value can be it
    value = np.asarray(padding).astype(cases.dtype) if cases.dtype.kind == "f" else padding
    real = ~(cases == value).all(axis=2)
    some = real.any(axis=1)
    starts = np.where(some, np.argmax(real, axis=1), 0)
    ends = np.where(some, n_steps - np.argmax(real[:, ::-1], axis=1), 0)
    return starts, ends - starts


def _rotated(cases: np.ndarray, shifts: np.ndarray) -> np.ndarray:
    """Each case's steps rotated left by its shift: step ``shift`` comes first."""
    steps = (np.arange(cases.shape[1]) + shifts[:, None]) % cases.shape[1]
    return np.take_along_axis(cases, steps[..., None], axis=1)


def _warn_if_padded(seeds: np.ndarray) -> None:
    """Warn when seeds of two or more channels begin or end with at least two steps that
    are 0 in every channel, as zero padding does, and no ``padding`` was given (a series of
    one channel, rain or counts, may well begin or end in zeros)."""
    if seeds.shape[1] < 3 or seeds.shape[2] < 2:  # one channel: counts (rain) end in zeros
        return
    zero = (seeds == 0).all(axis=2)
    padded = int(((zero[:, :2].all(axis=1) | zero[:, -2:].all(axis=1)) & ~zero.all(axis=1)).sum())
    if padded:
        warnings.warn(
            f"{padded} of {len(seeds)} seeds begin or end with steps that are 0 in every "
            "channel, as zero padding does; if they are padded, pass padding=0.0 (else the "
            "time warp stretches each series into its padding and the noise perturbs it)",
            RNNCovWarning,
            stacklevel=user_stacklevel(),
        )


def _spread(
    array: np.ndarray, span: tuple[np.ndarray, np.ndarray] | None, padding: float | None
) -> np.ndarray:
    """Each channel's per-step standard deviation across the seeds, averaged over the
    steps (with ``span``, the real steps of the steps that at least two seeds reach)."""
    if span is None:
        return array.std(axis=0).mean(axis=0)
    steps, (starts, lengths) = np.arange(array.shape[1]), span
    real = ((steps >= starts[:, None]) & (steps < (starts + lengths)[:, None]))[..., None]
    count = real.sum(axis=0)  # (steps, 1): the seeds that reach each step
    mean = (array * real).sum(axis=0) / np.maximum(count, 1)
    variance = (real * (array - mean) ** 2).sum(axis=0) / np.maximum(count, 1)
    reached = count[:, 0] >= 2
    if not reached.any():
        raise InvalidInput(
            f"no step is real in two seeds (padding={padding:g}), so the seeds "
            "give no spread for the noise"
        )
    return np.sqrt(variance[reached]).mean(axis=0)
