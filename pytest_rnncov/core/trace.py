"""The trace of a recurrent layer: its gates and states at every step (SPEC section 1)."""

from __future__ import annotations

from typing import Any, Mapping

import numpy as np

from ..errors import InvalidArgument
from ..validation import check_int
from .arrays import array_namespace, is_host, to_host

#: The components each cell type records, in trace order.
CELL_COMPONENTS: dict[str, tuple[str, ...]] = {
    "lstm": ("f", "i", "o", "c", "h"),
    "gru": ("z", "r", "n", "h"),
    "simple_rnn": ("h",),
}

#: What each component is, for messages and the definitions page.
COMPONENT_MEANING = {
    "f": "forget gate",
    "i": "input gate",
    "o": "output gate",
    "c": "cell state",
    "h": "hidden state",
    "z": "update gate",
    "r": "reset gate",
    "n": "candidate state",
}


def cell_components(cell: str) -> tuple[str, ...]:
    """The components of ``cell`` ("lstm", "gru" or "simple_rnn")."""
    try:
        return CELL_COMPONENTS[cell]
    except KeyError:
        raise InvalidArgument(
            f"cell={cell!r}; use one of {', '.join(map(repr, CELL_COMPONENTS))}"
        ) from None


def select_components(cell: str, wanted: Any) -> tuple[str, ...]:
    """``wanted`` components of ``cell`` in trace order (None: all of them)."""
    names = cell_components(cell)
    if wanted is None:
        return names
    wanted = set(wanted)
    for component in wanted:
        check_component(cell, component)
    if not wanted:
        raise InvalidArgument(f"components is empty; name some of {', '.join(names)} or None")
    return tuple(n for n in names if n in wanted)


def check_component(cell: str, component: str) -> None:
    """Raise InvalidArgument unless ``cell`` records ``component``, listing what it has."""
    components = cell_components(cell)
    if component not in components:
        has = ", ".join(f"{c} ({COMPONENT_MEANING[c]})" for c in components)
        raise InvalidArgument(
            f"component {component!r} is not recorded by a {cell} cell; it has {has}"
        )


class Trace:
    """Gates and states of one recurrent layer for a batch: (B, T, U) float32 arrays (U is
    the same for every component but an LSTM's h under PyTorch's ``proj_size``).

    ``components`` maps the cell's component names (``cell_components(cell)``), or some of
    them (a trace computed for metrics that read only those), to arrays; they are also
    attributes (``trace.h``, ``trace.f`` for an LSTM). Step 0 is the first
    step the layer processes (for ``go_backwards`` layers, the last input step). At a step
    masked by the model every array repeats the previous step, as the framework carries the
    state over; ``mask`` is then the (B, T) boolean array of real steps, in the same order.
    A trace may stop before the layer's last step (the steps a window needs); ``length`` is
    the layer's number of steps all the same.

    ``sums`` maps components given only by their per-step sums over units (what the signals
    of SPEC section 2 derive from, when the metrics read nothing else) to (B, T, 2) float64
    arrays: the sum at each step, then the sum of the positive parts; or (B, T, 1), the sum
    alone, where no metric reads the positive parts (pos, neg, delta); ``sum_units`` is the
    number of units they summed.
    """

    __slots__ = ("components", "cell", "mask", "length", "sums", "sum_units")
    components: dict[str, np.ndarray]
    cell: str
    mask: np.ndarray | None
    length: int
    sums: dict[str, np.ndarray]
    sum_units: int

    def __init__(
        self,
        components: Mapping[str, Any],
        *,
        cell: str = "lstm",
        mask: np.ndarray | None = None,
        length: int | None = None,
        sums: Mapping[str, Any] | None = None,
        sum_units: int = 0,
    ) -> None:
        names = cell_components(cell)
        if sums is not None and not isinstance(sums, Mapping):
            raise InvalidArgument(
                f"sums={sums!r}; give a mapping of component names to (batch, steps, 2) sums "
                "(or (batch, steps, 1): the sums over units alone)"
            )
        sums = dict(sums or {})
        given = [*components, *sums]
        if not given or not set(given) <= set(names) or len(set(given)) < len(given):
            raise InvalidArgument(
                f"a {cell} trace holds components {', '.join(names)} (or some of them, each "
                f"once, as states or per-step sums); got {', '.join(map(repr, given)) or 'none'}"
            )
        summed = {n: _sums(n, sums[n], sum_units) for n in names if n in sums}
        arrays = {n: _array(components[n]) for n in names if n in components}
        first = next(iter(arrays.values()), None)
        shape = tuple((first if first is not None else next(iter(summed.values()))).shape[:2])
        for name, array in summed.items():
            if tuple(array.shape[:2]) != shape:
                raise InvalidArgument(
                    f"the sums of trace component {name!r} have shape {array.shape}; they must "
                    f"be (batch, steps, 2 or 1) with the trace's batch and steps {shape}"
                )
        for name, array in arrays.items():  # units may differ (an LSTM's projected h)
            if array.ndim != 3 or tuple(array.shape[:2]) != shape[:2]:
                raise InvalidArgument(
                    f"trace component {name!r} has shape {tuple(array.shape)}; every component "
                    f"must be (batch, steps, units) with the same batch and steps {shape[:2]}"
                )
            if not array_namespace(array).isdtype(array.dtype, "real floating"):
                raise InvalidArgument(
                    f"trace component {name!r} has dtype {array.dtype}; use floats"
                )
            if 0 in tuple(array.shape[1:]):
                raise InvalidArgument(
                    f"trace component {name!r} has shape {tuple(array.shape)}: no steps or "
                    "no units; a trace needs at least one step of at least one unit"
                )
        if mask is not None:
            mask = _array(mask)
            if tuple(mask.shape) != shape:
                raise InvalidArgument(
                    f"trace mask has shape {mask.shape}, not (batch, steps) {shape[:2]}"
                )
        if length is not None and length < shape[1]:
            raise InvalidArgument(f"trace length {length} is shorter than its {shape[1]} steps")
        object.__setattr__(self, "components", arrays)
        object.__setattr__(self, "cell", cell)
        object.__setattr__(self, "mask", mask)
        object.__setattr__(self, "length", int(shape[1] if length is None else length))
        object.__setattr__(self, "sums", summed)
        object.__setattr__(self, "sum_units", int(sum_units) if summed else 0)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("a Trace is read-only")

    def __getattr__(self, name: str) -> np.ndarray:
        components = object.__getattribute__(self, "components")
        if name in components:
            return components[name]
        if name in object.__getattribute__(self, "sums"):
            raise AttributeError(_only_sums(name))
        raise AttributeError(
            f"this {object.__getattribute__(self, 'cell')} trace has no component {name!r}; it "
            f"has {', '.join(components) or 'none as states'}"
        )

    @property
    def names(self) -> tuple[str, ...]:
        """The components this trace holds, as states or as per-step sums."""
        return (*self.components, *self.sums)

    @property
    def _first(self) -> Any:
        return next(iter((self.components or self.sums).values()))

    @property
    def batch_size(self) -> int:
        return int(self._first.shape[0])

    @property
    def n_steps(self) -> int:
        return int(self._first.shape[1])

    @property
    def units(self) -> int:
        if not self.components:
            return self.sum_units
        return int(self.components.get("h", self._first).shape[2])

    def component(self, name: str) -> np.ndarray:
        """The (B, T, U) array of component ``name``."""
        check_component(self.cell, name)
        if name in self.sums:
            raise InvalidArgument(_only_sums(name))
        if name not in self.components:
            raise InvalidArgument(
                f"this trace holds {', '.join(self.names)} (what the configured metrics "
                f"read), not {name!r}; trace with model.trace(x) for every component"
            )
        return self.components[name]

    def step_sums(self, name: str) -> np.ndarray | None:
        """The per-step sums of component ``name`` when the trace holds only those, else
        None: (B, T, 2), the sum over units, then the sum of the positive parts; or
        (B, T, 1), the sum over units alone, where the metrics read no positive parts."""
        return self.sums.get(name)

    def sums_alone(self, name: str) -> bool:
        """Whether the trace holds component ``name`` as its per-step sums over units
        alone, without the sums of its positive parts (which pos, neg and delta read)."""
        summed = self.sums.get(name)
        return summed is not None and summed.shape[2] == 1

    @property
    def on_host(self) -> bool:
        """Whether the arrays are numpy arrays (else a framework's, on its device)."""
        return is_host(self._first)

    def to_host(self, steps: int | None = None) -> "Trace":
        """This trace with numpy arrays (itself when it is on the host already); with
        ``steps``, its first ``steps`` steps only (a JAX trace may hold every step of the
        layer where its metrics read fewer: only those cross)."""
        if steps is not None:
            check_int("steps", steps, minimum=1)
        whole = steps is None or steps >= self.n_steps
        if whole and self.on_host:
            return self

        def first(array: Any) -> np.ndarray:
            return to_host(array if whole else array[:, :steps])

        return _rebuilt(
            self,
            {n: first(a) for n, a in self.components.items()},
            {n: first(a) for n, a in self.sums.items()},
            None if self.mask is None else first(self.mask),
        )

    def __getitem__(self, rows: slice | np.ndarray) -> "Trace":
        """The trace of a subset of the batch."""
        return _rebuilt(
            self,
            {n: a[rows] for n, a in self.components.items()},
            {n: a[rows] for n, a in self.sums.items()},
            None if self.mask is None else self.mask[rows],
        )

    def __len__(self) -> int:
        return self.batch_size

    def __repr__(self) -> str:
        return (
            f"Trace(cell={self.cell!r}, batch={self.batch_size}, steps={self.n_steps}"
            + (f" of {self.length}" if self.length != self.n_steps else "")
            + f", units={self.units}, masked={self.mask is not None}"
            + (f", summed={', '.join(self.sums)}" if self.sums else "")
            + (" (no positive parts)" if any(w == 1 for _, w in _widths(self)) else "")
            + ")"
        )


def concat_traces(parts: list[Trace]) -> Trace:
    """One trace from the traces of consecutive batches."""
    if len(parts) == 1:
        return parts[0]
    first = parts[0]
    for part in parts[1:]:
        if (tuple(part.components), _widths(part), part.sum_units, part.cell) != (
            tuple(first.components),
            _widths(first),
            first.sum_units,
            first.cell,
        ):
            raise InvalidArgument(
                f"cannot join {part!r} to {first!r}: traces joined must hold the same "
                "components, the same way (states, or per-step sums with or without the sums "
                "of positive parts), of the same cell"
            )
    xp = array_namespace(next(iter((first.components or first.sums).values())))
    arrays = {n: xp.concat([p.components[n] for p in parts]) for n in first.components}
    sums = {n: np.concatenate([p.sums[n] for p in parts]) for n in first.sums}
    mask = None
    if any(p.mask is not None for p in parts):
        mask = xp.concat(
            [
                xp.ones((p.batch_size, p.n_steps), dtype=xp.bool) if p.mask is None else p.mask
                for p in parts
            ]
        )
    return _rebuilt(first, arrays, sums, mask)


def _widths(trace: Trace) -> tuple[tuple[str, int], ...]:
    """Each summed component with how many sums per step it holds (2, or 1: no positive
    parts)."""
    return tuple((name, int(array.shape[2])) for name, array in trace.sums.items())


def _rebuilt(like: Trace, arrays: dict[str, Any], sums: dict[str, Any], mask: Any) -> Trace:
    """A trace of ``like``'s cell, length and units holding these arrays, sums and mask."""
    return Trace(
        arrays, cell=like.cell, mask=mask, length=like.length, sums=sums, sum_units=like.sum_units
    )


def _only_sums(name: str) -> str:
    return (
        f"this trace holds only the per-step sums of {name!r} over units (all the configured "
        "metrics read), not its states; trace with model.trace(x) for every component"
    )


def _sums(name: str, value: Any, units: int) -> np.ndarray:
    """Per-step sums of component ``name`` checked: a (B, T, 2) or (B, T, 1) float64 array,
    from a layer of ``units`` >= 1 units."""
    array = np.asarray(value)
    if array.ndim != 3 or array.shape[2] not in (1, 2) or array.dtype != np.float64:
        raise InvalidArgument(
            f"the sums of trace component {name!r} have shape {array.shape} and dtype "
            f"{array.dtype}; give (batch, steps, 2) float64 sums (over units, of the positive "
            "parts) or (batch, steps, 1) (over units)"
        )
    check_int("sum_units", units, minimum=1)
    return array


def _array(value: Any) -> Any:
    """Arrays of any framework as they are; anything else through numpy."""
    if hasattr(value, "shape") and hasattr(value, "dtype") and hasattr(value, "ndim"):
        return value
    return np.asarray(value)
