"""What the core needs from a model: the adapter boundary, seen from below."""

from __future__ import annotations

from typing import Any, Iterator, Protocol

import numpy as np

from .trace import Trace


class TraceSource(Protocol):
    """A model whose recurrent layer can be traced (every adapter's ``RNNModel``)."""

    name: str
    layer_name: str
    units: int

    @property
    def cell_kind(self) -> str: ...

    @property
    def n_steps(self) -> int | None: ...

    def fingerprint(self) -> str: ...

    def check_input(self, x: Any) -> np.ndarray: ...

    def iter_traces(self, x: np.ndarray, *, outputs: bool = True, until: int | None = None
                    ) -> Iterator[tuple[np.ndarray | None, Trace]]: ...
