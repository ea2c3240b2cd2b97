"""DeepStellar's abstract state model: a PCA grid over the tested layer's hidden states.

Following Du et al., "DeepStellar" (FSE 2019): hidden states h_t (window steps) are
projected onto ``components`` PCA directions learned from training data, and each
direction's training range is cut into ``intervals`` equal intervals; an abstract state is
a grid cell, a transition a pair of cells at consecutive window steps. States outside the
training range belong to no cell. The model is learned in two passes with bounded memory
(docs/definitions.md, "DeepStellar").
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Mapping

import numpy as np

from ..errors import ProfileError
from .arrays import FLOAT32_MAX

#: Most projected values the second pass keeps in memory (else the states are traced again).
KEEP_PROJECTIONS = 1 << 25


class RunningCovariance:
    """Streaming mean and covariance of row vectors (Chan et al.), in float64."""

    def __init__(self, dimensions: int) -> None:
        self.n = 0
        self.mean = np.zeros(dimensions)
        self.m2 = np.zeros((dimensions, dimensions))

    def add(self, rows: np.ndarray) -> None:
        rows = np.asarray(rows, np.float64).reshape(-1, self.mean.shape[0])
        count = len(rows)
        if not count:
            return
        mean = rows.mean(axis=0)
        centred = rows - mean
        m2 = centred.T @ centred
        total = self.n + count
        delta = mean - self.mean
        self.m2 += m2 + np.outer(delta, delta) * (self.n * count / total)
        self.mean += delta * (count / total)
        self.n = total

    def covariance(self) -> np.ndarray:
        return self.m2 / max(self.n - 1, 1)


#: how many intervals outside the training range a coordinate can lie (far beyond SBC's k)
FAR = 1 << 40
#: the most abstract states: a transition's id (from * cells + to) stays below 2**62
MAX_CELLS = 1 << 31


#: the fields of a state model in a profile file
STATE_KEYS = (
    "mean",
    "components",
    "low",
    "high",
    "intervals",
    "cells",
    "transitions",
    "transition_counts",
)


@dataclass
class StateModel:
    """PCA directions, grid, and the cells and transitions seen in training."""

    mean: np.ndarray  # (U,)
    components: np.ndarray  # (K, U)
    low: np.ndarray  # (K,) training minimum of each projection
    high: np.ndarray  # (K,)
    intervals: int
    cells: np.ndarray  # sorted training cell ids
    transitions: np.ndarray  # sorted training transition ids
    transition_counts: np.ndarray  # how often each occurred in training

    @classmethod
    def fit(
        cls,
        covariance: RunningCovariance,
        states: Callable[[], Iterable[np.ndarray]],
        components: int,
        intervals: int,
        keep: int = KEEP_PROJECTIONS,
    ) -> "StateModel":
        """Learn the directions from ``covariance``, then the grid from the hidden states
        that ``states()`` yields ((N, T_window, U) arrays; called once more when the
        projections exceed ``keep`` values)."""
        values, vectors = np.linalg.eigh(covariance.covariance())
        k = min(components, len(values))
        order = np.argsort(values)[::-1][:k]
        # a variance within rounding of the largest is no direction: its range is noise
        noise = len(values) * np.finfo(np.float64).eps * max(float(values.max()), 0.0)
        if not (values[order] > noise).all():
            raise ProfileError(
                "the hidden states do not vary along every PCA direction over the training "
                "data (a direction's variance is rounding noise); use fewer state "
                "components or more varied training inputs"
            )
        top = vectors[:, order].T
        signs = np.sign(top[np.arange(k), np.abs(top).argmax(axis=1)])
        top = top * np.where(signs == 0, 1, signs)[:, None]
        model = cls(
            covariance.mean.copy(),
            top,
            np.full(k, np.inf),
            np.full(k, -np.inf),
            intervals,
            np.zeros(0, np.int64),
            np.zeros(0, np.int64),
            np.zeros(0, np.int64),
        )
        kept: list[np.ndarray] | None = []
        size = 0
        for h in states():
            z = model.project(h)
            model.low = np.minimum(model.low, z.reshape(-1, k).min(axis=0))
            model.high = np.maximum(model.high, z.reshape(-1, k).max(axis=0))
            if kept is not None:
                size += z.size
                kept = kept + [z] if size <= keep else None
        if not (model.high > model.low).all():
            raise ProfileError(
                "the hidden states do not vary along every PCA direction over the training "
                "data; use fewer state components or more varied training inputs"
            )
        projections = kept if kept is not None else (model.project(h) for h in states())
        # the cells and transitions seen so far, merged batch by batch: what a fit holds
        # follows the abstract states reached, not the number of training inputs
        cells = transitions = counts = np.zeros(0, np.int64)
        for z in projections:
            c = model.cells_of_projection(z)
            cells = np.union1d(cells, c[c >= 0])
            p = model.transitions_of(c)
            ids, n = np.unique(p[p >= 0], return_counts=True)
            transitions, at = np.unique(np.concatenate([transitions, ids]), return_inverse=True)
            counts = np.bincount(at, np.concatenate([counts, n]), len(transitions)).astype(np.int64)
        model.cells = cells
        model.transitions, model.transition_counts = transitions, counts
        return model

    @property
    def n_cells(self) -> int:
        return int(self.intervals ** self.components.shape[0])

    def project(self, h: np.ndarray) -> np.ndarray:
        """(..., U) states -> (..., K) coordinates."""
        return (np.asarray(h, np.float64) - self.mean) @ self.components.T

    def grid(self, z: np.ndarray) -> np.ndarray:
        """Interval index per coordinate (< 0 or >= intervals outside the training range;
        the top of the range belongs to the last interval)."""
        with np.errstate(over="ignore", invalid="ignore"):
            scaled = np.floor((z - self.low) / (self.high - self.low) * self.intervals)
        # far outside stays far outside (SBC counts intervals beyond the range, k <= 1000)
        # but within int64; not a number counts as below
        index = np.nan_to_num(np.clip(scaled, -FAR, self.intervals + FAR), nan=-FAR)
        index = index.astype(np.int64)
        return np.where(z == self.high, self.intervals - 1, index)

    def cells_of(self, h: np.ndarray) -> np.ndarray:
        """Cell id of every state (-1 outside the training range): shape h.shape[:-1]."""
        return self.cells_of_projection(self.project(h))

    def cells_of_projection(self, z: np.ndarray) -> np.ndarray:
        """Cell id of every projected state (-1 outside the training range)."""
        index = self.grid(z)
        inside = ((index >= 0) & (index < self.intervals)).all(axis=-1)
        place = self.intervals ** np.arange(index.shape[-1] - 1, -1, -1, dtype=np.int64)
        return np.where(inside, index @ place, -1)

    def transitions_of(self, cells: np.ndarray) -> np.ndarray:
        """Transition ids between consecutive steps (-1 when either end is outside)."""
        a, b = cells[..., :-1], cells[..., 1:]
        return np.where((a >= 0) & (b >= 0), a * self.n_cells + b, -1)

    def to_dict(self) -> dict[str, Any]:
        return {
            "mean": self.mean.tolist(),
            "components": self.components.tolist(),
            "low": self.low.tolist(),
            "high": self.high.tolist(),
            "intervals": self.intervals,
            "cells": self.cells.tolist(),
            "transitions": self.transitions.tolist(),
            "transition_counts": self.transition_counts.tolist(),
        }

    @classmethod
    def from_dict(cls, data: Any, units: int, where: str) -> "StateModel":
        """Read ``to_dict`` output, checking every field (ProfileError naming the problem)."""

        def fail(problem: str) -> ProfileError:
            return ProfileError(f"{where}: 'states' {problem}; refit and save the profile")

        if not isinstance(data, Mapping):
            raise fail(f"is {type(data).__name__}, not an object")
        missing = [k for k in STATE_KEYS if k not in data]
        if missing:
            raise fail(f"lacks {', '.join(missing)}")
        intervals = data["intervals"]
        if (
            isinstance(intervals, bool)
            or not isinstance(intervals, int)
            or not 1 <= intervals <= 1 << 20
        ):
            raise fail(f"has intervals={intervals!r}, not an integer in [1, {1 << 20}]")

        def floats(key: str, shape: tuple[int, ...]) -> np.ndarray:
            try:
                array = np.asarray(data[key], np.float64)
            except (TypeError, ValueError, OverflowError):
                raise fail(f"{key!r} is not a numeric array") from None
            if (
                array.shape != shape
                or not np.isfinite(array).all()
                or np.abs(array).max(initial=0) > FLOAT32_MAX
            ):
                raise fail(
                    f"{key!r} must be finite numbers within float32's range, of shape "
                    f"{shape}, got {array.shape}"
                )
            return array

        raw_components = data["components"]
        k = len(raw_components) if isinstance(raw_components, list) else -1
        if k < 1:
            raise fail("'components' must be a non-empty list of directions")
        mean = floats("mean", (units,))
        components = floats("components", (k, units))
        if not (np.linalg.norm(components, axis=1) > 0).all():
            raise fail("'components' holds a zero direction")
        low, high = floats("low", (k,)), floats("high", (k,))
        if not (high > low).all():
            raise fail("'high' must exceed 'low' along every direction")
        n_cells = intervals**k
        if n_cells > MAX_CELLS:
            raise fail(f"has {intervals}**{k} cells, too many to index their transitions")

        def ids(key: str, limit: int, what: str = "ids") -> np.ndarray:
            values = data[key]
            if not isinstance(values, list) or not all(
                isinstance(v, int) and not isinstance(v, bool) for v in values
            ):
                raise fail(f"{key!r} must be a list of integers")
            if not all(0 <= v < limit for v in values):  # before numpy: ids may be huge
                raise fail(f"{key!r} holds {what} outside [0, {limit})")
            return np.asarray(values, np.int64)

        cells = ids("cells", n_cells)
        transitions = ids("transitions", n_cells * n_cells)
        counts = ids("transition_counts", 2**62, "counts")
        if len(counts) != len(transitions) or (len(counts) and counts.min() < 1):
            raise fail("'transition_counts' must give a count >= 1 per transition")
        for key, array in (("cells", cells), ("transitions", transitions)):
            if len(array) > 1 and not (np.diff(array) > 0).all():
                raise fail(f"{key!r} must be sorted without repeats")
        if not math.isfinite(float(n_cells)):
            raise fail("grid too large")
        return cls(mean, components, low, high, intervals, cells, transitions, counts)
