"""DeepStellar's state and transition coverage (BS, SBC, BT, WT) on the profile's PCA grid.

Choices made where DeepStellar leaves room (docs/definitions.md, "DeepStellar"):
transitions are counted between consecutive window steps only; the k-step boundary regions
are the ``k`` intervals of the same width just below and just above each direction's
training range; WT weighs each training transition by how often it occurred in training.
Fitness is 1 (not covered) or 0 (covered): the targeted search steers by BC / SC / TC.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ...errors import ProfileError
from ...validation import check_int
from .base import BatchResult, Metric, Signals

if TYPE_CHECKING:
    from ..abstract_states import StateModel
    from ..profile import Profile


def _pairs(ids: np.ndarray, conditions: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(rows, condition index) of the sorted ``conditions`` found in each row of ``ids``
    (B, m); each pair once."""
    if len(conditions) == 0:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    rows = np.repeat(np.arange(ids.shape[0], dtype=np.int64), ids.shape[1])
    flat = ids.ravel()
    cols = np.minimum(np.searchsorted(conditions, flat), len(conditions) - 1)
    found = conditions[cols] == flat
    key = np.unique(rows[found] * len(conditions) + cols[found])
    return key // len(conditions), key % len(conditions)


class _StateMetric(Metric):
    graded = False
    states_: "StateModel"

    @property
    def reads(self) -> tuple[str, ...]:
        return ("h",)

    def prepare(self, profile: "Profile") -> None:
        states = getattr(profile, "states_", None)
        if states is None:
            raise ProfileError(
                f"{self.name} needs the profile's state abstraction, which this profile lacks "
                "(the hidden states did not vary along every PCA direction); refit with "
                "Profile(window=..., state_components=K, state_intervals=M) on varied "
                "training inputs"
            )
        self.states_ = states
        self.window_ = profile.window_

    def _cells(self, signals: Signals) -> np.ndarray:
        return self.states_.cells_of(signals.host().states("h"))

    def _conditions_of(self, signals: Signals) -> tuple[np.ndarray, np.ndarray]:
        raise NotImplementedError

    def evaluate(self, signals: Signals, *, fitness: bool = True) -> BatchResult:
        self._check_bound()
        rows, conditions = self._conditions_of(signals)
        result = BatchResult.from_pairs(rows, conditions, self.n_conditions)
        if fitness:
            # fitness 1 everywhere but 0 where covered; the first row wins ties (as argmin)
            first = np.full(self.n_conditions, len(signals), np.int64)
            np.minimum.at(first, conditions, rows)
            hit = first < len(signals)
            result.best = (
                np.where(hit, 0.0, 1.0) if len(signals) else np.full(self.n_conditions, np.inf)
            )
            result.best_row = np.where(hit, first, 0)
        return result

    def fitness(self, signals: Signals, rows: slice = slice(None)) -> np.ndarray:
        sub = Signals(signals.host().trace[rows], signals.window)
        hit_rows, conditions = self._conditions_of(sub)
        out = np.ones((len(sub), self.n_conditions))
        out[hit_rows, conditions] = 0.0
        return out

    def config(self) -> dict[str, Any]:
        return {
            "window": list(self.window_),
            "components": int(self.states_.components.shape[0]),
            "intervals": int(self.states_.intervals),
        }

    def describe(self) -> str:
        return (
            f"{self.name}(h, PCA {self.states_.components.shape[0]} x "
            f"{self.states_.intervals} intervals)"
        )


class BS(_StateMetric):
    """Basic state coverage: the training cells that test inputs visit."""

    name = "BS"

    @property
    def n_conditions(self) -> int:
        return len(self.states_.cells)

    def _conditions_of(self, signals: Signals) -> tuple[np.ndarray, np.ndarray]:
        return _pairs(self._cells(signals), self.states_.cells)

    @classmethod
    def label_from_config(cls, config: dict[str, Any], condition: int) -> str:
        return f"training cell #{condition}"


class BT(_StateMetric):
    """Basic transition coverage: the training transitions that test inputs take."""

    name = "BT"

    @property
    def n_conditions(self) -> int:
        return len(self.states_.transitions)

    def _conditions_of(self, signals: Signals) -> tuple[np.ndarray, np.ndarray]:
        pairs = self.states_.transitions_of(self._cells(signals))
        return _pairs(pairs, self.states_.transitions)

    @classmethod
    def label_from_config(cls, config: dict[str, Any], condition: int) -> str:
        return f"training transition #{condition}"


class WT(BT):
    """Weighted transition coverage: BT with each transition weighted by its training count;
    the rate is the covered share of the weights."""

    name = "WT"

    def weights(self) -> np.ndarray | None:
        return self.states_.transition_counts.astype(np.float64)


class SBC(_StateMetric):
    """k-step state boundary coverage: for each PCA direction, the k intervals just below
    and the k just above its training range."""

    name = "SBC"

    def __init__(self, k: int = 1) -> None:
        self.k = check_int("k", k, minimum=1, maximum=1000, example="1")

    @property
    def n_conditions(self) -> int:
        return 2 * self.k * self.states_.components.shape[0]

    def _hits(self, signals: Signals) -> np.ndarray:
        index = self.states_.grid(self.states_.project(signals.host().states("h")))  # (B, T, K)
        batch, _, n_directions = index.shape
        hits = np.zeros((batch, 2, n_directions, self.k), bool)
        for side, distance in enumerate((-index, index - self.states_.intervals + 1)):
            near = (distance >= 1) & (distance <= self.k)  # 1..k intervals outside the range
            rows, _, directions = np.nonzero(near)
            hits[rows, side, directions, distance[near] - 1] = True
        return hits.reshape(batch, -1)

    def _conditions_of(self, signals: Signals) -> tuple[np.ndarray, np.ndarray]:
        rows, conditions = np.nonzero(self._hits(signals))
        return rows.astype(np.int64), conditions.astype(np.int64)

    def config(self) -> dict[str, Any]:
        return {**super().config(), "k": self.k}

    @classmethod
    def label_from_config(cls, config: dict[str, Any], condition: int) -> str:
        k = int(config["k"])
        side, rest = divmod(int(condition), k * int(config["components"]))
        direction, step = divmod(rest, k)
        return f"PC{direction + 1} {'below' if side == 0 else 'above'} by {step + 1}"

    def describe(self) -> str:
        return (
            f"SBC(h, k={self.k}, PCA {self.states_.components.shape[0]} x {self.states_.intervals})"
        )
