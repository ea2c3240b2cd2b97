"""DeepStellar-style state and transition coverage on the tested layer's hidden states.

Following Du et al., "DeepStellar: Model-Based Quantitative Analysis of Stateful Deep
Learning Systems" (FSE 2019): hidden states h_t (window steps) are projected by PCA onto
``components`` directions learned from training data, and each direction's training range
is cut into ``intervals`` equal intervals; an abstract state is a grid cell, a transition a
pair of cells at consecutive window steps. Choices made here: states outside the training
range belong to no cell; transitions are counted between consecutive window steps only;
the k-step boundary regions are the ``k`` intervals of the same width just below and just
above each direction's training range; WT weighs each training transition by how often it
occurred in training. Fitness for these metrics is 1 (not covered) or 0 (covered): the
targeted search steers by BC / SC / TC.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .errors import InvalidArgument, ProfileError
from .metrics import Metric, Signals, _positive_int


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
    def fit(cls, h: np.ndarray, components: int, intervals: int) -> "StateModel":
        """Learn from hidden states ``h`` of shape (N, T_window, U)."""
        flat = h.reshape(-1, h.shape[-1]).astype(np.float64)
        mean = flat.mean(axis=0)
        centred = flat - mean
        values, vectors = np.linalg.eigh(centred.T @ centred / max(len(flat) - 1, 1))
        k = min(components, h.shape[-1])
        top = vectors[:, np.argsort(values)[::-1][:k]].T
        signs = np.sign(top[np.arange(k), np.abs(top).argmax(axis=1)])
        top = top * np.where(signs == 0, 1, signs)[:, None]
        z = centred @ top.T
        low, high = z.min(axis=0), z.max(axis=0)
        if not (high > low).all():
            raise ProfileError(
                "the hidden states do not vary along every PCA direction over the training "
                "data; use fewer state components or more varied training inputs"
            )
        model = cls(mean, top, low, high, intervals, np.zeros(0, np.int64),
                    np.zeros(0, np.int64), np.zeros(0, np.int64))
        cells = model.cells_of(h)
        model.cells = np.unique(cells[cells >= 0])
        pairs = model.transitions_of(cells)
        model.transitions, model.transition_counts = np.unique(pairs[pairs >= 0], return_counts=True)
        return model

    def project(self, h: np.ndarray) -> np.ndarray:
        """(..., U) states -> (..., K) coordinates."""
        return (np.asarray(h, np.float64) - self.mean) @ self.components.T

    def grid(self, z: np.ndarray) -> np.ndarray:
        """Interval index per coordinate (< 0 or >= intervals outside the training range;
        the top of the range belongs to the last interval)."""
        index = np.floor((z - self.low) / (self.high - self.low) * self.intervals).astype(np.int64)
        return np.where(z == self.high, self.intervals - 1, index)

    def cells_of(self, h: np.ndarray) -> np.ndarray:
        """Cell id of every state (-1 outside the training range): shape h.shape[:-1]."""
        index = self.grid(self.project(h))
        inside = ((index >= 0) & (index < self.intervals)).all(axis=-1)
        place = self.intervals ** np.arange(index.shape[-1] - 1, -1, -1, dtype=np.int64)
        return np.where(inside, index @ place, -1)

    def transitions_of(self, cells: np.ndarray) -> np.ndarray:
        """Transition ids between consecutive steps (-1 when either end is outside)."""
        n_cells = self.intervals ** self.components.shape[0]
        a, b = cells[..., :-1], cells[..., 1:]
        return np.where((a >= 0) & (b >= 0), a * n_cells + b, -1)

    def to_dict(self) -> dict[str, Any]:
        return {
            "mean": self.mean.tolist(), "components": self.components.tolist(),
            "low": self.low.tolist(), "high": self.high.tolist(), "intervals": self.intervals,
            "cells": self.cells.tolist(), "transitions": self.transitions.tolist(),
            "transition_counts": self.transition_counts.tolist(),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "StateModel":
        floats = {k: np.asarray(data[k], np.float64) for k in ("mean", "components", "low", "high")}
        ints = {k: np.asarray(data[k], np.int64) for k in ("cells", "transitions", "transition_counts")}
        return cls(**floats, intervals=int(data["intervals"]), **ints)


def _hits(ids: np.ndarray, conditions: np.ndarray) -> np.ndarray:
    """(B, n) bool: which of the sorted ``conditions`` each row of ``ids`` (B, m) contains."""
    hit = np.zeros((ids.shape[0], len(conditions)), bool)
    if len(conditions) == 0:
        return hit
    rows = np.repeat(np.arange(ids.shape[0]), ids.shape[1])
    flat = ids.ravel()
    cols = np.minimum(np.searchsorted(conditions, flat), len(conditions) - 1)
    found = conditions[cols] == flat
    hit[rows[found], cols[found]] = True
    return hit


class _StateMetric(Metric):
    def _prepare(self, profile: Any) -> None:
        states = getattr(profile, "states_", None)
        if states is None:
            raise ProfileError(
                f"{self.name} needs the profile's state abstraction, which this profile lacks "
                "(fitted by an older version, or the hidden states did not vary along every "
                "PCA direction); refit with Profile(window=..., state_components=K, "
                "state_intervals=M) on varied training inputs"
            )
        self.states_ = states
        self.window_ = profile.window_

    def describe(self) -> str:
        return (f"{self.name}(h, PCA {self.states_.components.shape[0]} x "
                f"{self.states_.intervals} intervals)")

    def _cells(self, signals: Signals, rows: slice) -> np.ndarray:
        t1, t2 = self.window_
        return self.states_.cells_of(signals.trace.h[rows, t1 : t2 + 1])


class BS(_StateMetric):
    """Basic state coverage: the training cells that test inputs visit."""

    name = "BS"

    @property
    def n_conditions(self) -> int:  # type: ignore[override]
        return len(self.states_.cells)

    def fitness(self, signals: Signals, rows: slice = slice(None)) -> np.ndarray:
        return 1.0 - _hits(self._cells(signals, rows), self.states_.cells)

    def label(self, condition: int) -> str:
        return f"cell {int(self.states_.cells[condition])}"



class BT(BS):
    """Basic transition coverage: the training transitions that test inputs take."""

    name = "BT"

    @property
    def n_conditions(self) -> int:  # type: ignore[override]
        return len(self.states_.transitions)

    def fitness(self, signals: Signals, rows: slice = slice(None)) -> np.ndarray:
        pairs = self.states_.transitions_of(self._cells(signals, rows))
        return 1.0 - _hits(pairs, self.states_.transitions)

    def label(self, condition: int) -> str:
        n_cells = self.states_.intervals ** self.states_.components.shape[0]
        a, b = divmod(int(self.states_.transitions[condition]), n_cells)
        return f"cell {a} -> cell {b}"



class WT(BT):
    """Weighted transition coverage: BT with each transition weighted by its training count."""

    name = "WT"

    @property
    def rate(self) -> float:
        weights = self.states_.transition_counts
        return float(weights[self.covered_].sum() / weights.sum()) if weights.sum() else 1.0

    def detail(self) -> dict[str, Any]:
        return {"weights": self.states_.transition_counts.tolist()}



class SBC(_StateMetric):
    """k-step state boundary coverage: for each PCA direction, the k intervals just below
    and the k just above its training range."""

    name = "SBC"

    def __init__(self, k: int = 1) -> None:
        self.k = _positive_int("k", k)

    @property
    def n_conditions(self) -> int:  # type: ignore[override]
        return 2 * self.k * self.states_.components.shape[0]

    def fitness(self, signals: Signals, rows: slice = slice(None)) -> np.ndarray:
        t1, t2 = self.window_
        index = self.states_.grid(self.states_.project(signals.trace.h[rows, t1 : t2 + 1]))
        m = self.states_.intervals
        below = -index  # 1..k below the range
        above = index - m + 1  # 1..k above
        j = np.arange(1, self.k + 1)
        hit_below = (below[..., None] == j).any(axis=1)  # (B, K, k)
        hit_above = (above[..., None] == j).any(axis=1)
        hit = np.concatenate([hit_below.reshape(len(index), -1), hit_above.reshape(len(index), -1)], axis=1)
        return 1.0 - hit

    def label(self, condition: int) -> str:
        side, rest = divmod(condition, self.k * self.states_.components.shape[0])
        direction, step = divmod(rest, self.k)
        return f"PC{direction + 1} {'below' if side == 0 else 'above'} by {step + 1}"

    def describe(self) -> str:
        return f"SBC(h, k={self.k}, PCA {self.states_.components.shape[0]} x {self.states_.intervals})"


def check_state_parameters(components: int, intervals: int) -> None:
    if isinstance(components, bool) or not isinstance(components, int) or components < 1:
        raise InvalidArgument(f"state_components={components!r} must be an integer >= 1")
    if isinstance(intervals, bool) or not isinstance(intervals, int) or intervals < 1:
        raise InvalidArgument(f"state_intervals={intervals!r} must be an integer >= 1")
