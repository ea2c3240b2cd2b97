"""Arrays of any framework through the array API: numpy on the host, or a framework's own
arrays where the model runs (torch on its device, JAX). The core's signal and metric code
is written once against this namespace; only reduced results (counts, best fitness, word
ids) are brought to the host."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, TypeVar

import numpy as np
from array_api_compat import array_namespace, device, is_jax_array, is_numpy_array

from ..errors import InvalidInput

__all__ = [
    "FLOAT32_MAX",
    "all_finite",
    "array_namespace",
    "in_parts",
    "device",
    "is_host",
    "is_jax_array",
    "to_host",
    "wide_float",
    "like",
]

#: the largest magnitude float32 holds: readers refuse file values beyond it (a model's
#: activations and a report's figures are float32)
FLOAT32_MAX = float(np.finfo(np.float32).max)
#: Arrays of at least this many values are scanned for NaN/inf by several threads (numpy
#: releases the GIL in its loops); below it one thread is faster than handing work out.
PARALLEL_SCAN = 1 << 20
#: threads that scan a large array (numpy's loops need no more to reach memory speed)
SCAN_THREADS = min(8, os.cpu_count() or 1)
_scanners: ThreadPoolExecutor | None = None
T = TypeVar("T")


def _forget_scanners() -> None:
    """In a forked child: the pool's threads did not come along, so it would wait forever."""
    global _scanners
    _scanners = None


os.register_at_fork(after_in_child=_forget_scanners)


def all_finite(array: np.ndarray) -> bool:
    """Whether every value of a numpy float array is finite. Large arrays are scanned in
    parts on up to 8 threads (``in_parts``): the check of a batch of inputs is on the path
    of every tracked call (``python bench/bench_core.py`` shows what it costs)."""
    flat = array.reshape(-1)
    return all(in_parts(lambda part: bool(np.isfinite(flat[part]).all()), flat.size, flat.size))


def in_parts(work: Callable[[slice], T], rows: int, values: int) -> list[T]:
    """``work``'s results on slices of ``range(rows)`` that cover it: in parts on up to 8
    threads when the rows hold at least PARALLEL_SCAN ``values`` (numpy's loops release
    the GIL), else on the whole range at once."""
    global _scanners
    if values < PARALLEL_SCAN or SCAN_THREADS == 1 or rows < 2:
        return [work(slice(0, rows))]
    if _scanners is None:
        _scanners = ThreadPoolExecutor(SCAN_THREADS, thread_name_prefix="rnncov-scan")
    size = -(-rows // SCAN_THREADS)
    return list(_scanners.map(work, [slice(s, s + size) for s in range(0, rows, size)]))


def input_array(values: Any, what: str) -> np.ndarray:
    """``values`` (an array, a list, a framework's tensor) as a numpy array: a tensor that
    requires grad is read detached; a masked array with masked values is refused (every
    value would be read, the mask dropped); what numpy cannot read is InvalidInput."""
    if isinstance(values, np.ma.MaskedArray):
        masked = int(np.ma.count_masked(values))
        if masked:
            raise InvalidInput(
                f"{what} are a masked array with {masked} masked values; pytest-rnncov reads "
                "every value: fill them (x.filled(value)) or drop the masked rows first"
            )
        values = values.data
    if getattr(values, "requires_grad", False) and callable(getattr(values, "detach", None)):
        values = values.detach()
    try:
        return np.asarray(values)
    except (TypeError, ValueError, RuntimeError) as exc:
        raise InvalidInput(
            f"{what} cannot be read as an array: {ragged_hint(values) or exc}"
        ) from None


def ragged_hint(values: Any) -> str:
    """What is wrong with a list (or 1-D object array) of sequences of different lengths,
    and how to fix it; an object array of rows of one length: stack them ("" for anything
    else)."""
    listed = isinstance(values, np.ndarray) and values.dtype == object and values.ndim == 1
    if not (listed or isinstance(values, (list, tuple))):
        return ""
    try:
        lengths = {len(row) for row in values}
    except TypeError:  # a row without a length
        return ""
    if listed and len(lengths) == 1:
        return (
            f"an object array of {len(values)} rows of one length; pass one numeric array "
            "of shape (batch, steps, ...): np.stack(list(rows))"
        )
    if len(lengths) < 2:
        return ""
    return (
        f"its rows have different lengths ({min(lengths)} to {max(lengths)}); pad them to "
        "one length (keras.utils.pad_sequences(rows, padding='post', dtype='float32'), or "
        "numpy), let the model mask the padding (Masking, mask_zero=True), and pass one array "
        "of shape (batch, steps, ...)"
    )


def is_host(array: Any) -> bool:
    """Whether ``array`` is a numpy array (the reference path)."""
    return is_numpy_array(array)


def to_host(array: Any) -> np.ndarray:
    """A numpy copy (or view) of any array, from whatever device holds it."""
    if is_numpy_array(array):
        return array
    if hasattr(array, "detach"):  # torch
        return array.detach().cpu().numpy()
    return np.asarray(array)


def wide_float(xp: Any) -> Any:
    """The accumulation dtype: float64, except under JAX without 64-bit mode (float32)."""
    if xp.__name__.startswith("jax"):
        import jax

        return xp.float64 if jax.config.read("jax_enable_x64") else xp.float32
    return xp.float64


def wide_int(xp: Any) -> Any:
    """The integer dtype for counts and word ids: int64, except under JAX without 64-bit
    mode (int32; counts per batch and TC's at most 2**20 words fit)."""
    if xp.__name__.startswith("jax"):
        import jax

        return xp.int64 if jax.config.read("jax_enable_x64") else xp.int32
    return xp.int64


def like(value: Any, array: Any, dtype: Any = None) -> Any:
    """``value`` (numpy or a scalar) as an array of ``array``'s namespace and device."""
    if is_numpy_array(array):
        return np.asarray(value) if dtype is None else np.asarray(value, dtype)
    xp = array_namespace(array)
    if is_jax_array(array):
        return xp.asarray(value, dtype=dtype)
    return xp.asarray(value, dtype=dtype, device=device(array))
