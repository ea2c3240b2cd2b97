"""Piecewise Aggregate Approximation and SAX symbols (SPEC section 4, TC)."""

from __future__ import annotations

from statistics import NormalDist
from typing import Any

import numpy as np

from .arrays import array_namespace, is_host, like, wide_int


def paa_overlaps(length: int, segments: int) -> np.ndarray:
    """The (segments, length) integer matrix W with ``curve @ W.T / length`` = fractional PAA.

    Conceptually every value is repeated ``segments`` times and consecutive blocks of
    ``length`` are averaged: entry (j, t) is the overlap of step t's interval
    [t*segments, (t+1)*segments) with segment j's interval [j*length, (j+1)*length).
    Integer weights and one division keep a segment whose mean is exactly a value at
    exactly that value (weights of 1/length, rounded, do not).
    """
    t = np.arange(length)
    j = np.arange(segments)[:, None]
    lo = np.maximum(t * segments, j * length)
    hi = np.minimum((t + 1) * segments, (j + 1) * length)
    return np.clip(hi - lo, 0, None)


def breakpoints(alphabet: int) -> np.ndarray:
    """The ``alphabet - 1`` standard-normal quantiles splitting it into equiprobable ranges."""
    normal = NormalDist()
    return np.array([normal.inv_cdf(k / alphabet) for k in range(1, alphabet)])


def symbols(values: np.ndarray, cuts: np.ndarray) -> np.ndarray:
    """Symbol index of each value; a value exactly on a breakpoint takes the upper symbol."""
    return np.searchsorted(cuts, values, side="right")


def word_ids(symbol_rows: np.ndarray, alphabet: int) -> np.ndarray:
    """Read each row of symbols as a base-``alphabet`` number (first symbol most significant)."""
    w = symbol_rows.shape[-1]
    place = alphabet ** np.arange(w - 1, -1, -1, dtype=np.int64)
    return symbol_rows.astype(np.int64) @ place


def word_digits(ids: np.ndarray, alphabet: int, length: int) -> np.ndarray:
    """The symbol indices of word ``ids`` (rows), first symbol most significant."""
    place = alphabet ** np.arange(length - 1, -1, -1, dtype=np.int64)
    return (np.asarray(ids, np.int64)[:, None] // place) % alphabet


def word_label(digits: np.ndarray) -> str:
    """Letters for a word: symbol 0 is 'a'."""
    return "".join(chr(ord("a") + int(d)) for d in digits)


def interval_distance(values: Any, cuts: np.ndarray) -> Any:
    """Distance of each value to each symbol's interval [lo, hi): shape values.shape + (a,),
    in the values' own array namespace.

    Zero exactly when the value takes that symbol. A value sitting on the (excluded) upper
    end of an interval gets the smallest positive distance, so "distance <= 0" and
    "has this symbol" agree to the last bit.
    """
    xp = array_namespace(values)
    lo = like(np.concatenate([[-np.inf], cuts]), values, dtype=values.dtype)
    hi = like(np.concatenate([cuts, [np.inf]]), values, dtype=values.dtype)
    tiny = like(
        np.finfo(np.float32 if values.dtype == xp.float32 else np.float64).tiny,
        values,
        dtype=values.dtype,
    )
    v = values[..., None]
    zero = xp.zeros_like(v - hi)
    above = xp.where(v >= hi, xp.maximum(v - hi, tiny), zero)
    return xp.where(v < lo, lo - v, above)


def symbols_of(values: Any, cuts: np.ndarray) -> Any:
    """``symbols`` in the values' own namespace: how many breakpoints each value reaches."""
    if is_host(values):  # one comparison per breakpoint over all values: no (..., a - 1)
        reached = np.zeros(values.shape, np.int64)  # array (10x faster than searchsorted)
        for cut in cuts.astype(values.dtype):
            reached += values >= cut
        return reached
    xp = array_namespace(values)
    reached = values[..., None] >= like(cuts, values, dtype=values.dtype)
    return xp.sum(xp.astype(reached, wide_int(xp)), axis=-1)
