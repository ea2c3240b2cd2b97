"""Arrays of any framework through the array API: numpy on the host, or a framework's own
arrays where the model runs (torch on its device, JAX). The core's signal and metric code
is written once against this namespace; only reduced results (counts, best fitness, word
ids) are brought to the host."""

from __future__ import annotations

from typing import Any

import numpy as np
from array_api_compat import array_namespace, device, is_jax_array, is_numpy_array

__all__ = ["array_namespace", "device", "is_host", "is_jax_array", "to_host", "wide_float", "like"]


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
