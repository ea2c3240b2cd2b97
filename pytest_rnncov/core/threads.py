"""How many BLAS threads numpy uses while pytest-rnncov computes (traces, metrics).

On a small machine the numpy work alternates with the framework's model calls. OpenBLAS
threads keep spinning after a matmul returns and then compete with the framework for the
cores, and under load the multi-threaded per-step matmuls of the recurrence collapse. So
the numpy work runs with ``RNNCOV_BLAS_THREADS`` BLAS threads (default 1, measured in
``bench/bench_core.py``; ``0`` leaves numpy's own setting), restored afterwards. Traces
read from the forward pass compute their gates in a few large batched matmuls, which do
not collapse that way: they run with numpy's own setting (``numpy_work(batched=True)``).

The limit is one per process. The ``numpy_work`` that sets it restores numpy's own setting
when it ends, in its own thread: OpenBLAS takes a raised thread count back only from the
thread that lowered it (measured: a limit set in one thread and restored from another
stayed in force). Work entered meanwhile, in that thread or another, runs under the limit
and changes nothing: while a stream's worker computes traces beside the model calls it
holds the limit, so the metric update between batches changes nothing under its matmuls.
"""

from __future__ import annotations

import os
import threading
from contextlib import contextmanager
from typing import Any, Iterator

from ..errors import InvalidArgument
from ..validation import shown

#: the most BLAS threads RNNCOV_BLAS_THREADS may ask for
MAX_BLAS_THREADS = 1024

_controller: Any = None
_lock = threading.Lock()
_limiter: Any = None  # the limit in force, restored by the numpy_work that set it


def blas_threads() -> int:
    """The configured number of BLAS threads (0: leave numpy's own setting)."""
    raw = os.environ.get("RNNCOV_BLAS_THREADS", "1").strip()
    # ASCII digits only (int() reads '٢' and '1_0'), and few enough for OpenBLAS's C int
    if not (raw.isascii() and raw.isdigit() and int(raw) <= MAX_BLAS_THREADS):
        raise InvalidArgument(
            f"RNNCOV_BLAS_THREADS={shown(raw)}; use a number of threads from 0 to "
            f"{MAX_BLAS_THREADS} such as 1 or 2, or 0 for numpy's own setting"
        )
    return int(raw)


@contextmanager
def numpy_work(batched: bool = False) -> Iterator[None]:
    """Run the enclosed numpy work with the configured number of BLAS threads (with
    ``batched``, large batched matmuls only: numpy's own setting). Where a limit is in
    force already (set by this thread or another), the work runs under it."""
    limit = blas_threads()
    if limit == 0 or batched:
        yield
        return
    sets = _set(limit)
    try:
        yield
    finally:
        if sets:
            _restore()


def _set(limit: int) -> bool:
    """Set the limit unless one is in force; whether this call set it."""
    global _controller, _limiter
    with _lock:
        if _limiter is not None:
            return False
        if _controller is None:
            from threadpoolctl import ThreadpoolController

            _controller = ThreadpoolController()
        _limiter = _controller.limit(limits=limit, user_api="blas")
        return True


def _restore() -> None:
    global _limiter
    with _lock:
        _limiter.restore_original_limits()
        _limiter = None
