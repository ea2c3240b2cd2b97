"""How many BLAS threads numpy uses while pytest-rnncov computes (traces, metrics).

On a small machine the numpy work alternates with the framework's model calls. OpenBLAS
threads keep spinning after a matmul returns and then compete with the framework for the
cores, and under load the multi-threaded per-step matmuls of the recurrence collapse. So
the numpy work runs with ``RNNCOV_BLAS_THREADS`` BLAS threads (default 1, measured in
``bench/bench_core.py``; ``0`` leaves numpy's own setting), restored afterwards. Traces
read from the forward pass compute their gates in a few large batched matmuls, which do
not collapse that way: they run with numpy's own setting (``numpy_work(batched=True)``).
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Any, Iterator

from ..errors import InvalidArgument

_controller: Any = None


def blas_threads() -> int:
    """The configured number of BLAS threads (0: leave numpy's own setting)."""
    raw = os.environ.get("RNNCOV_BLAS_THREADS", "1").strip()
    try:
        value = int(raw)
    except ValueError:
        value = -1
    if value < 0:
        raise InvalidArgument(
            f"RNNCOV_BLAS_THREADS={raw!r}; use a number of threads such as 1 or 2, or 0 for "
            "numpy's own setting"
        )
    return value


@contextmanager
def numpy_work(batched: bool = False) -> Iterator[None]:
    """Run the enclosed numpy work with the configured number of BLAS threads (with
    ``batched``, large batched matmuls only: numpy's own setting)."""
    global _controller
    limit = blas_threads()
    if limit == 0 or batched:
        yield
        return
    if _controller is None:
        from threadpoolctl import ThreadpoolController

        _controller = ThreadpoolController()
    with _controller.limit(limits=limit, user_api="blas"):
        yield
