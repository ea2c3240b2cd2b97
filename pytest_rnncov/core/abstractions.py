"""Abstractions of a trace component (SPEC section 2) and the window (SPEC section 3)."""

from __future__ import annotations

import functools
from typing import Any, Callable

import numpy as np

from ..errors import InvalidArgument
from ..validation import check_window
from .arrays import array_namespace, in_parts, is_host, wide_float
from .trace import COMPONENT_MEANING, Trace

ABSTRACTIONS = ("pos", "neg", "net", "avg", "delta", "delta_net")

Window = tuple[int, int]


def resolve_window(window: Any, n_steps: int) -> Window:
    """Turn an inclusive, 0-based ``(t1, t2)`` window into non-negative step indices.

    Negative indices count from the end; ``None`` is the whole sequence.
    """
    pair = check_window(window)
    if pair is None:
        return (0, n_steps - 1)
    t1, t2 = pair
    r1 = t1 + n_steps if t1 < 0 else t1
    r2 = t2 + n_steps if t2 < 0 else t2
    if not (0 <= r1 < n_steps and 0 <= r2 < n_steps):
        raise InvalidArgument(
            f"window=({t1}, {t2}) lies outside the layer's {n_steps} steps; steps are "
            f"0..{n_steps - 1} (or {-n_steps}..-1 from the end), both ends inclusive"
        )
    if r1 > r2:
        raise InvalidArgument(
            f"window=({t1}, {t2}) starts after it ends (steps {r1} > {r2}); "
            "give the earlier step first"
        )
    return (r1, r2)


def check_signal(component: Any, abstraction: Any) -> None:
    """Raise InvalidArgument unless (component, abstraction) can name a signal of some cell.

    Whether the traced cell records ``component`` is checked when a metric is bound to a
    profile (which knows the cell).
    """
    if not isinstance(component, str) or component not in COMPONENT_MEANING:
        raise InvalidArgument(
            f"component={component!r} is not a recurrent-cell component; use one of "
            f"{', '.join(COMPONENT_MEANING)} (LSTM: f, i, o, c, h; GRU: z, r, n, h; "
            "SimpleRNN: h)"
        )
    if not isinstance(abstraction, str) or abstraction not in ABSTRACTIONS:
        raise InvalidArgument(f"abstraction={abstraction!r}; use one of {', '.join(ABSTRACTIONS)}")


def signal(trace: Trace, component: str, abstraction: str, window: Window) -> Any:
    """The abstraction of ``component`` at each step of ``window``: (B, |window|), in the
    trace's own array namespace, accumulated in float64 (float32 under JAX without 64-bit
    mode). ``delta`` and ``delta_net`` use zeros before step 0 (the initial state). The
    metrics derive their signals through ``Signals`` (one set of sums per component,
    ``sums_on_host`` for JAX arrays); the profile and the report call this on the host."""
    check_signal(component, abstraction)
    given = given_sums(trace, component, window)
    if given is not None:
        check_positive_given(given[1], component, abstraction)
        return from_sums(*given, abstraction, window, trace.sum_units)
    values = trace.component(component)
    positive = step_positive(values, window) if abstraction in NEEDS_POSITIVE else None
    total = step_total(values, window)
    return from_sums(total, positive, abstraction, window, int(values.shape[-1]))


def given_sums(
    trace: Trace, component: str, window: Window
) -> tuple[np.ndarray, np.ndarray | None] | None:
    """``step_total`` and ``step_positive`` of ``component`` when ``trace`` holds only its
    per-step sums (``Trace.step_sums``: the forward pass summed it), else None; the second
    is None where the trace holds the sums alone (the metrics read no positive parts)."""
    summed = trace.step_sums(component)
    if summed is None:
        return None
    steps = summed[:, _steps(window)]
    return steps[..., 0], (steps[..., 1] if steps.shape[2] == 2 else None)


def check_positive_given(positive: Any, component: str, abstraction: str) -> None:
    """InvalidArgument when ``abstraction`` derives from the positive parts' sums of
    ``component`` and the trace gave its sums over units alone (``positive`` None)."""
    if positive is None and abstraction in NEEDS_POSITIVE:
        raise InvalidArgument(
            f"this trace holds only the per-step sums of {component!r} over units (what the "
            f"configured metrics read), not the sums of its positive parts that "
            f"{component}/{abstraction} derives from; trace with model.trace(x) for every "
            "component"
        )


def sums_on_host(values: Any, window: Window) -> tuple[np.ndarray, np.ndarray]:
    """``step_total`` and ``step_positive`` of JAX ``values``, computed by one compiled
    function and brought to the host in one transfer (every signal of the component is
    then derived on the host, ``from_sums``)."""
    both = np.asarray(_compiled_sums((int(window[0]), int(window[1])))(values))
    return both[0], both[1]


@functools.lru_cache(maxsize=64)
def _compiled_sums(window: Window) -> Callable[[Any], Any]:
    """Both per-step sums of one component, stacked, compiled by JAX for one window."""
    import jax

    def sums(values: Any) -> Any:
        xp = array_namespace(values)
        return xp.stack([step_total(values, window), step_positive(values, window)])

    return jax.jit(sums)


#: the abstractions that read the sum of the positive parts (the others: the plain sum)
NEEDS_POSITIVE = ("pos", "neg", "delta")


def _steps(window: Window) -> slice:
    """The steps whose sums a window's signals read: from the one before the window (when
    there is one, for the deltas) to its end."""
    t1, t2 = window
    return slice(max(t1 - 1, 0), t2 + 1)


#: rows of a host array summed at once (a positive-parts copy of them stays in cache)
HOST_ROWS = 256


def step_total(values: Any, window: Window) -> Any:
    """Sum over units of ``values`` (B, T, U) at each step of ``_steps(window)``, in the wide
    type: what every signal but pos, neg and delta derives from (``from_sums``)."""
    xp = array_namespace(values)
    if is_host(values):
        return _host_sums(values[:, _steps(window)], positive=False)
    return xp.sum(values[:, _steps(window)], axis=-1, dtype=wide_float(xp))


def step_positive(values: Any, window: Window) -> Any:
    """Sum over units of the positive parts of ``values`` at each step of ``_steps(window)``."""
    xp = array_namespace(values)
    if is_host(values):
        return _host_sums(values[:, _steps(window)], positive=True)
    return xp.sum(xp.clip(values[:, _steps(window)], min=0), axis=-1, dtype=wide_float(xp))


def _host_sums(steps: np.ndarray, positive: bool) -> np.ndarray:
    """float64 sums over the last axis of numpy (B, T, U) ``steps`` (of their positive
    parts with ``positive``): rows in parts on several threads, HOST_ROWS at a time, each
    row's sum the same as one reduction over the whole array gives."""
    out = np.empty(steps.shape[:2], np.float64)

    def part(rows: slice) -> None:
        start, stop, _ = rows.indices(len(steps))
        buffer = np.empty((min(HOST_ROWS, stop - start), *steps.shape[1:]), steps.dtype)
        for low in range(start, stop, HOST_ROWS):
            high = min(low + HOST_ROWS, stop)
            chunk = steps[low:high]
            if positive:
                chunk = np.maximum(chunk, 0, out=buffer[: high - low])
            np.sum(chunk, axis=-1, dtype=np.float64, out=out[low:high])

    in_parts(part, len(steps), steps.size)
    return out


def from_sums(total: Any, positive: Any, abstraction: str, window: Window, units: int) -> Any:
    """A signal from the per-step sums of ``step_total`` / ``step_positive`` (``positive``
    may be None unless the abstraction is in NEEDS_POSITIVE) of a layer of ``units``."""
    # sums holding inf give NaN here, quietly: the caller's finiteness check names the inputs
    # (numpy's RuntimeWarning came first, and was the error under ``-W error``)
    with np.errstate(invalid="ignore", over="ignore"):
        return _from_sums(total, positive, abstraction, window, units)


def _from_sums(total: Any, positive: Any, abstraction: str, window: Window, units: int) -> Any:
    xp = array_namespace(total)
    first = 1 if window[0] > 0 else 0  # sums begin one step early when there is a step before
    if abstraction == "avg":
        return total[:, first:] / units
    if abstraction == "net":
        return xp.abs(total[:, first:])
    if abstraction == "delta_net":
        return xp.abs(_diff(xp, total, from_zero=first == 0))
    pos = positive[:, first:]
    neg = total[:, first:] - pos
    if abstraction == "pos":
        return pos
    if abstraction == "neg":
        return neg
    # window starting at step 0: the step before is the zero state
    return xp.abs(_diff(xp, positive, from_zero=first == 0)) + xp.abs(
        _diff(xp, total - positive, from_zero=first == 0)
    )


def _diff(xp: Any, values: Any, from_zero: bool) -> Any:
    """Differences along steps; with ``from_zero`` the first is taken from a zero before."""
    if from_zero:
        values = xp.concat([xp.zeros_like(values[:, :1]), values], axis=1)
    return values[:, 1:] - values[:, :-1]
