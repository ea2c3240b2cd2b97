"""Abstractions of a trace component (SPEC section 2) and the window (SPEC section 3)."""

from __future__ import annotations

from typing import Any

from ..errors import InvalidArgument
from ..validation import check_window
from .arrays import array_namespace, wide_float
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
    mode). ``delta`` and ``delta_net`` use zeros before step 0 (the initial state)."""
    check_signal(component, abstraction)
    t1, t2 = window
    values = trace.component(component)
    xp = array_namespace(values)
    wide = wide_float(xp)
    if abstraction == "avg":  # summed in the wide type without a wide copy
        return xp.sum(values[:, t1 : t2 + 1], axis=-1, dtype=wide) / values.shape[-1]
    needs_previous = abstraction in ("delta", "delta_net")
    start = t1 - 1 if needs_previous and t1 > 0 else t1
    part = values[:, start : t2 + 1]
    total = xp.sum(part, axis=-1, dtype=wide)
    if abstraction == "net":
        return xp.abs(total)
    if abstraction == "delta_net":
        return xp.abs(_diff(xp, total, from_zero=start == t1))
    pos = xp.sum(xp.clip(part, min=0), axis=-1, dtype=wide)
    neg = total - pos
    if abstraction == "pos":
        return pos
    if abstraction == "neg":
        return neg
    # window starting at step 0: the step before is the zero state
    return xp.abs(_diff(xp, pos, from_zero=start == t1)) + xp.abs(
        _diff(xp, neg, from_zero=start == t1)
    )


def _diff(xp: Any, values: Any, from_zero: bool) -> Any:
    """Differences along steps; with ``from_zero`` the first is taken from a zero before."""
    if from_zero:
        values = xp.concat([xp.zeros_like(values[:, :1]), values], axis=1)
    return values[:, 1:] - values[:, :-1]
