"""The trace of an LSTM layer (SPEC section 1)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

COMPONENTS = ("f", "i", "o", "c", "h")


@dataclass(frozen=True)
class Trace:
    """Gates and states of one LSTM layer for a batch: five arrays of shape (B, T, U).

    Step 0 is the first step the layer processes (for ``go_backwards`` layers, the last
    input step). At a step masked by the model (``Embedding(mask_zero=True)``) every array
    repeats the previous step, as the framework carries h and c over; ``mask`` is then the
    (B, T) boolean array of real steps, in the same order.
    """

    f: np.ndarray
    i: np.ndarray
    o: np.ndarray
    c: np.ndarray
    h: np.ndarray
    mask: np.ndarray | None = None

    @property
    def batch_size(self) -> int:
        return int(self.h.shape[0])

    @property
    def n_steps(self) -> int:
        return int(self.h.shape[1])

    @property
    def units(self) -> int:
        return int(self.h.shape[2])

    def component(self, name: str) -> np.ndarray:
        """The (B, T, U) array of component ``name`` in {f, i, o, c, h}."""
        if name not in COMPONENTS:
            from .errors import InvalidArgument

            raise InvalidArgument(
                f"unknown LSTM component {name!r}; use one of {', '.join(COMPONENTS)}"
            )
        return getattr(self, name)

    def __getitem__(self, rows: slice | np.ndarray) -> "Trace":
        """The trace of a subset of the batch."""
        arrays = {n: getattr(self, n)[rows] for n in COMPONENTS}
        return Trace(**arrays, mask=None if self.mask is None else self.mask[rows])
