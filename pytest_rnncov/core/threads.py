"""How many BLAS threads numpy uses while pytest-rnncov computes (traces, metrics).

On a small machine the numpy work alternates with the framework's model calls. OpenBLAS
threads keep spinning after a matmul returns and then compete with the framework for the
cores, and under load the multi-threaded per-step matmuls of the recurrence collapse. So
the numpy work runs with ``RNNCOV_BLAS_THREADS`` BLAS threads (default 1, measured in
``bench/bench_core.py``; ``0`` leaves numpy's own setting), restored afterwards. Traces
read from the forward pass compute their gates in a few large batched matmuls, which do
not collapse that way: they run with numpy's own setting (``numpy_work(batched=True)``).

The limit is shared: when numpy_work is entered again while it holds (the metric update
inside a stream of traces computed beside the model calls, or another thread), nothing
changes; the first to enter sets it and the last to leave restores numpy's own. Enter it
first in the thread that will leave last: OpenBLAS takes a raised thread count only from
some threads (measured: a worker's restore left the caller's limit in place).
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from typing import Any, Iterator

from ..errors import InvalidArgument

_controller: Any = None
_lock = threading.Lock()
_holders = 0  # threads inside a limited numpy_work
_limiter: Any = None


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
    ``batched``, large batched matmuls only: numpy's own setting). Safe to enter from
    several threads at once (one shared limit, restored when the last leaves)."""
    limit = blas_threads()
    if limit == 0 or batched:
        yield
        return
    _hold(limit)
    try:
        yield
    finally:
        _release()


def _hold(limit: int) -> None:
    global _controller, _holders, _limiter
    with _lock:
        if _holders == 0:
            if _controller is None:
                from threadpoolctl import ThreadpoolController

                _controller = ThreadpoolController()
            _limiter = _controller.limit(limits=limit, user_api="blas")
        _holders += 1


def _release() -> None:
    global _holders, _limiter
    with _lock:
        _holders -= 1
        if _holders == 0:
            _limiter.restore_original_limits()
            _limiter = None
