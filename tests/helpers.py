"""Small hand-made traces and profiles for metric tests, and what numpy's BLAS is set to."""

from __future__ import annotations

import warnings

import numpy as np

from pytest_rnncov import Profile, RNNCovWarning, Trace


def make_trace(shape=None, cell="lstm", **components) -> Trace:
    """A Trace of ``cell`` with the given components (lists or arrays, (B, T, U)); zeros
    elsewhere."""
    from pytest_rnncov.core.trace import CELL_COMPONENTS

    arrays = {k: np.asarray(v, np.float32) for k, v in components.items()}
    if shape is None:
        shape = next(iter(arrays.values())).shape
    return Trace(
        {n: arrays.get(n, np.zeros(shape, np.float32)) for n in CELL_COMPONENTS[cell]}, cell=cell
    )


def fit_profile(*traces: Trace, window=None) -> Profile:
    """A profile of hand-made traces (most have no varied hidden states: no state model)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RNNCovWarning)
        return Profile(window=window).fit_traces(traces, layer="hand", fingerprint="hand")


def blas_threads() -> set[int]:
    """numpy's BLAS threads now (one number per BLAS library loaded)."""
    from threadpoolctl import threadpool_info

    return {p["num_threads"] for p in threadpool_info() if p["user_api"] == "blas"}
