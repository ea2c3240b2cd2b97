"""What the core needs from a model: the adapter boundary, seen from below."""

from __future__ import annotations

import contextlib
from contextvars import ContextVar
from typing import Any, Iterator, Protocol

import numpy as np

from ..errors import InvalidArgument, InvalidInput
from .trace import Trace

#: Inputs whose check copies them (a cast: float64 inputs of a float32 model, int64 token
#: ids of an int32 one) are checked and cast about this many bytes of the given array at a
#: time (``CheckedInputs``): a memory-mapped array of any size is never copied whole.
INPUT_PART_BYTES = 1 << 28

#: The input a part being checked starts at (``CheckedInputs``): an adapter's refusal adds
#: it to the rows it names, so that they count from the first input, not the part's.
FIRST_ROW: ContextVar[int] = ContextVar("pytest_rnncov_first_row", default=0)


@contextlib.contextmanager
def rows_from(first: int) -> Iterator[None]:
    """Within the block, rows a refusal names count from input ``first`` (``FIRST_ROW``):
    the block handles a batch or part that starts there."""
    token = FIRST_ROW.set(first)
    try:
        yield
    finally:
        FIRST_ROW.reset(token)


def flagged_rows(bad: np.ndarray) -> np.ndarray:
    """The rows (inputs counted from ``FIRST_ROW``) of the batch ``bad`` flags values of
    that hold a flagged value."""
    return np.flatnonzero(bad.reshape(len(bad), -1).any(axis=1)) + FIRST_ROW.get()


#: Part sizes are a multiple of this many rows when they hold as many (the adapters' batch
#: sizes, 256, 2,048 and 16,384, divide it), else a power of two ...
PART_ALIGNMENT = 1 << 14
#: ... of at least this many rows (the adapters' host batch, ``HOST_BATCH``), however
#: large an input: a part never ends inside one of their default batches, and holds no
#: more than twice the memory of the float32 batch the framework is then given.
PART_MIN_ROWS = 2048


class TraceSource(Protocol):
    """A model whose recurrent layer can be traced (every adapter's ``RNNModel``).

    A source may also have ``gives_sums(components) -> bool``: where it returns True,
    ``Coverage`` calls ``iter_traces(..., summed=True, positive=...)`` for metrics that read
    only signals, and the traces may hold only the per-step sums of those components
    (``Trace.step_sums``; with ``positive=False`` the metrics read no sums of positive
    parts, so the sums over units may come alone). And ``earlier_fingerprints() ->
    tuple[str, ...]``: what earlier releases took as its fingerprint, so that a stale
    profile says why; and ``fingerprint_covers``, the text saying what the fingerprint
    covers."""

    name: str
    layer_name: str
    units: int

    @property
    def cell_kind(self) -> str: ...

    @property
    def n_steps(self) -> int | None: ...

    def fingerprint(self) -> str: ...

    def check_input(self, x: Any) -> np.ndarray: ...

    def iter_traces(
        self,
        x: np.ndarray,
        *,
        outputs: bool = True,
        until: int | None = None,
        components: tuple[str, ...] | None = None,
    ) -> Iterator[tuple[np.ndarray | None, Trace]]: ...


_REQUIRED = (
    "name",
    "layer_name",
    "units",
    "cell_kind",
    "n_steps",
    "fingerprint",
    "check_input",
    "iter_traces",
)


def check_source(model: Any, what: str = "model") -> "TraceSource":
    """``model`` if it is a traceable model (an ``RNNModel``), else InvalidArgument."""
    missing = [name for name in _REQUIRED if not hasattr(model, name)]
    if missing:
        raise InvalidArgument(
            f"{what}={model!r} ({type(model).__name__}) is not a traceable model (it lacks "
            f"{', '.join(missing)}); wrap your network first: "
            "pytest_rnncov.RNNModel(keras_or_torch_model)"
        )
    return model  # type: ignore[no-any-return]


class CheckedInputs:
    """Inputs ``x`` checked by ``model.check_input``, given in order as parts: one part,
    ``x`` checked whole, unless ``x`` is a numpy array of more than INPUT_PART_BYTES whose
    check casts it (a copy); then parts of about INPUT_PART_BYTES of ``x`` (a multiple of
    the batch sizes that are powers of two up to 16,384, at least 2,048 inputs), each
    checked (cast) again as it is reached. The layout of the whole is
    checked first (``check_layout``, where the model has it), then every part, so a
    refused part refuses the whole call before any part is used; the rows a refusal names
    are counted from the first input (``FIRST_ROW``), and it says that the parts after
    the refused one were not read."""

    def __init__(self, model: "TraceSource", x: Any) -> None:
        self._model = model
        self._rows = _part_rows(model, x)
        #: ``x`` checked, where it is checked whole (else None)
        self.whole: np.ndarray | None = None
        self._x: Any
        if self._rows is None:
            self.whole = self._x = model.check_input(x)
            return
        self._x = x
        for first in self._starts():  # checked now, cast again when reached
            _checked_part(model, x, first, self._rows, say_unread=True)

    def __len__(self) -> int:
        return len(self._x)

    def __iter__(self) -> Iterator[np.ndarray]:
        if self.whole is not None:
            yield self.whole
            return
        for first in self._starts():
            yield self._part(first)

    def _starts(self) -> range:
        assert self._rows is not None
        return range(0, len(self._x), self._rows)

    def _part(self, first: int) -> np.ndarray:
        assert self._rows is not None
        return _checked_part(self._model, self._x, first, self._rows)


def _checked_part(
    model: "TraceSource", x: np.ndarray, first: int, rows: int, say_unread: bool = False
) -> np.ndarray:
    """``model.check_input`` of ``x[first:first + rows]``, the rows a refusal names counted
    from ``x``'s first input; with ``say_unread`` (the first pass) a refusal of a part
    before the last says that the rest went unread."""
    last = min(first + rows, len(x))
    try:
        with rows_from(first):
            return model.check_input(x[first:last])
    except InvalidInput as exc:
        if say_unread and last < len(x):
            raise InvalidInput(
                f"{exc} (inputs that a cast copies are checked {last - first} at a time: "
                f"those after input {last - 1} were not read)"
            ) from None
        raise


def _part_rows(model: "TraceSource", x: Any) -> int | None:
    """Rows per part of ``x`` for ``CheckedInputs``, or None to check it whole: anything
    but a large numpy array of numbers, one whose check copies nothing (the check of an
    input of zeros of its dtype gives back that dtype), or inputs of a model without
    ``check_layout``."""
    if (
        not isinstance(x, np.ndarray)
        or isinstance(x, np.ma.MaskedArray)
        or x.ndim < 2
        or x.dtype.kind not in "biuf"
        or x.nbytes <= INPUT_PART_BYTES
    ):
        return None
    check_layout = getattr(model, "check_layout", None)
    if check_layout is None:
        return None
    check_layout(x)  # the shape and dtype of the whole, its values unread
    try:  # what the check gives for an input of x's dtype (zeros: none of x's values read)
        probe = model.check_input(np.zeros_like(x[:1]))
    except InvalidInput:  # a model that refuses zeros: checked whole, as it always was
        return None
    if probe.dtype == x.dtype:
        return None
    rows = max(PART_MIN_ROWS, INPUT_PART_BYTES // max(1, x[0].nbytes))
    return rows - rows % PART_ALIGNMENT if rows >= PART_ALIGNMENT else 1 << (rows.bit_length() - 1)
