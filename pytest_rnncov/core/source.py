"""What the core needs from a model: the adapter boundary, seen from below."""

from __future__ import annotations

from typing import Any, Iterator, Protocol

import numpy as np

from ..errors import InvalidArgument
from .trace import Trace


class TraceSource(Protocol):
    """A model whose recurrent layer can be traced (every adapter's ``RNNModel``).

    A source may also have ``gives_sums(components) -> bool``: where it returns True,
    ``Coverage`` calls ``iter_traces(..., summed=True)`` for metrics that read only signals,
    and the traces may hold only the per-step sums of those components
    (``Trace.step_sums``)."""

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
