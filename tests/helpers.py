"""Small hand-made traces and profiles for metric tests."""

from __future__ import annotations

import numpy as np

from pytest_rnncov import Profile, Trace


def make_trace(shape=None, **components) -> Trace:
    """A Trace with the given components (lists or arrays, (B, T, U)); zeros elsewhere."""
    arrays = {k: np.asarray(v, np.float32) for k, v in components.items()}
    if shape is None:
        shape = next(iter(arrays.values())).shape
    return Trace(*(arrays.get(n, np.zeros(shape, np.float32)) for n in "fioch"))


def fit_profile(*traces: Trace, window=None) -> Profile:
    return Profile(window=window).fit_traces(traces, layer="hand", fingerprint="hand")
