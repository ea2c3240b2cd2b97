"""Shrinking adversarial samples toward their seeds, as Hypothesis shrinks toward simpler
examples: a failing case is replaced by the closest one found that still fails.

Every step is one batched model call over all samples being shrunk (never one call per
case; more than SHRINK_ROWS samples are shrunk in parts of that many, so that the work
arrays held at once stay bounded). Continuous cases: bisection on the line from the seed
to the case, then reverting time steps (the first axis of a case) to the seed's values
while the oracle still fails. Text: each word edit (as ``difflib`` aligns seed and case)
is undone, last first, while the case still fails. SMILES re-enumerations have no edit
to undo and are left as found.

Like Hypothesis' shrink limits, the work can be bounded (``max_inputs``, the model inputs
all calls may take together): samples are then shrunk in the ``order`` given as far as the
bound allows. Continuous cases: bisection first for every sample it can reach, then the
time-step phase for as many of them as it still can (each reserving one input per step).
Text: the samples in order while the sum of their edits fits. A sample the bound leaves
out stays as found.
"""

from __future__ import annotations

import difflib
import math
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import numpy as np

from ..validation import check_int
from .mutators import Mutator, checked_distance
from .oracle import Oracle
from .text import EDAMutator

#: Bisection steps on the seed-case line (the found distance shrinks to within 2**-8 of it).
BISECTION_STEPS = 8
#: The samples shrunk together, in one model call per step (more are shrunk in parts of
#: this many: the work arrays of a part, not of every sample, are held at once)
SHRINK_ROWS = 4096


@dataclass
class Shrunk:
    """Shrunk cases (row-aligned with the input), their distances and model outputs."""

    cases: Any
    distances: np.ndarray
    outputs: np.ndarray
    model_calls: int


def can_shrink(mutator: Mutator) -> bool:
    """Whether ``shrink`` has an edit to undo for this mutator's cases."""
    return mutator.array_cases or isinstance(mutator, EDAMutator)


def shrink(
    mutator: Mutator,
    oracle: Oracle,
    predict: Callable[[Any], np.ndarray],
    seeds: Any,
    seed_outputs: np.ndarray,
    cases: Any,
    outputs: np.ndarray,
    order: np.ndarray | None = None,
    max_inputs: int | None = None,
) -> Shrunk:
    """Shrink failing ``cases`` toward their row-aligned ``seeds``; every result still fails.

    ``order`` (row numbers; default: every row as given) is the order in which samples get
    the work ``max_inputs`` (model inputs, an int >= 0; default: unbounded) allows; rows it
    does not list are left as found."""
    rows = np.arange(len(outputs)) if order is None else np.asarray(order, np.int64)
    budget = math.inf if max_inputs is None else check_int("max_inputs", max_inputs, minimum=0)
    if mutator.array_cases:
        cases, seeds = np.asarray(cases), np.asarray(seeds)
        current, current_out = cases.copy(), np.array(outputs, copy=True)
        calls = 0
        for _, part, done in shrink_arrays(
            mutator,
            oracle,
            predict,
            lambda part: (seeds[part], seed_outputs[part], cases[part], current_out[part]),
            rows,
            budget,
            cases.shape[1:],
        ):
            current[part], current_out[part] = done.cases, done.outputs
            calls += done.model_calls
        distances = checked_distance(mutator, seeds, current)
        return Shrunk(current, distances, current_out, calls)
    if isinstance(mutator, EDAMutator):
        return _shrink_words(
            mutator, oracle, predict, list(seeds), seed_outputs, list(cases), outputs, rows, budget
        )
    return Shrunk(cases, checked_distance(mutator, seeds, cases), outputs, 0)


def shrink_arrays(
    mutator: Mutator,
    oracle: Oracle,
    predict: Callable[[Any], np.ndarray],
    load: Callable[[np.ndarray], tuple[Any, np.ndarray, Any, np.ndarray]],
    order: np.ndarray,
    budget: float,
    case_shape: tuple[int, ...],
) -> Iterator[tuple[np.ndarray, np.ndarray, Shrunk]]:
    """Shrink array cases as far as ``budget`` allows (``array_plan``), SHRINK_ROWS rows at
    a time: ``load(rows)`` gives those rows' seeds, seed outputs, cases and outputs.
    Yields (every row reached, this part's rows, the part shrunk), part by part."""
    reached, revert = array_plan(order, budget, case_shape)
    start = 0
    for part in in_parts(reached):
        seeds, seed_outputs, cases, outputs = load(part)
        shrinking = ArrayShrinking(
            mutator, oracle, predict, np.asarray(seeds), seed_outputs, np.asarray(cases), outputs
        )
        yield reached, part, shrinking.run(revert[start : start + len(part)])
        start += len(part)


def array_plan(
    order: np.ndarray, budget: float, case_shape: tuple[int, ...]
) -> tuple[np.ndarray, np.ndarray]:
    """What ``budget`` (model inputs) lets shrinking do to array cases of ``case_shape``,
    the rows taken in ``order``: the rows bisection reaches (ascending; one input per
    step), and which of them also get the time-step phase (at most one input per step),
    for as many as the budget still allows."""
    order = np.asarray(order, np.int64)
    steps = case_shape[0] if case_shape else 0
    bisected = order[: int(min(len(order), budget // BISECTION_STEPS))]
    left = budget - BISECTION_STEPS * len(bisected)
    reverted = bisected[: int(min(len(bisected), left // max(steps, 1)))]
    reached = np.sort(bisected)
    return reached, np.isin(reached, reverted)


def _still_fails(
    mutator: Mutator,
    oracle: Oracle,
    predict: Callable[[Any], np.ndarray],
    seeds: Any,
    seed_outputs: np.ndarray,
    candidates: Any,
) -> tuple[np.ndarray, np.ndarray]:
    outputs = np.asarray(predict(mutator.encode(candidates)))
    distances = checked_distance(mutator, seeds, candidates)
    return oracle.fails(seed_outputs, outputs, distances), outputs


def in_parts(rows: np.ndarray) -> list[np.ndarray]:
    """``rows`` in parts of at most SHRINK_ROWS."""
    return [rows[start : start + SHRINK_ROWS] for start in range(0, len(rows), SHRINK_ROWS)]


class ArrayShrinking:
    """The shrinking of one part of array cases (at most SHRINK_ROWS rows, for bounded
    work arrays; ``shrink`` and a campaign cut their rows into such parts): the closest
    failing case of each row so far (``current``, its outputs ``current_out``) and the
    model calls made."""

    def __init__(
        self,
        mutator: Mutator,
        oracle: Oracle,
        predict: Callable[[Any], np.ndarray],
        seeds: np.ndarray,
        seed_outputs: np.ndarray,
        cases: np.ndarray,
        outputs: np.ndarray,
    ) -> None:
        self.mutator, self.oracle, self.predict = mutator, oracle, predict
        self.seeds, self.seed_outputs, self.cases = seeds, seed_outputs, cases
        self.current, self.current_out = cases.copy(), np.array(outputs, copy=True)
        self.calls = 0

    def run(self, revert: np.ndarray) -> Shrunk:
        """Bisect every row toward its seed, then revert the time steps of the rows
        ``revert`` marks."""
        self.bisect(np.arange(len(self.cases)))
        self.revert_steps(np.flatnonzero(revert))
        distances = checked_distance(self.mutator, self.seeds, self.current)
        return Shrunk(self.current, distances, self.current_out, self.calls)

    def _fails(self, rows: np.ndarray, seeds: np.ndarray, candidates: np.ndarray) -> Any:
        """Which ``candidates`` of ``rows`` still fail, and their outputs (one model call)."""
        self.calls += 1
        return _still_fails(
            self.mutator, self.oracle, self.predict, seeds, self.seed_outputs[rows], candidates
        )

    def bisect(self, rows: np.ndarray) -> None:
        """Bisect ``rows`` on the line from their seed to their case."""
        cases, current, current_out = self.cases, self.current, self.current_out
        low = np.zeros(len(rows))  # the seed (alpha 0) passes, the case (alpha 1) fails
        high = np.ones(len(rows))
        base = self.seeds[rows]
        # in float64: an integer dtype's own subtraction wraps (uint8: 5 - 10 is 251)
        delta = cases[rows].astype(np.float64) - base.astype(np.float64)
        shape = (-1,) + (1,) * (cases.ndim - 1)
        for _ in range(BISECTION_STEPS):
            middle = (low + high) / 2
            candidates = (base + middle.reshape(shape) * delta).astype(cases.dtype)
            fails, out = self._fails(rows, base, candidates)
            high = np.where(fails, middle, high)
            low = np.where(fails, low, middle)
            hit = rows[fails]
            current[hit], current_out[hit] = candidates[fails], out[fails]

    def revert_steps(self, reverted: np.ndarray) -> None:
        """Put back the seed's values of each time step (the first axis of a case) in the
        rows ``reverted`` where the case still fails."""
        seeds, current, current_out = self.seeds, self.current, self.current_out
        if not len(reverted):
            return
        for step in range(current.shape[1] if current.ndim > 1 else 0):
            differs = (
                (current[reverted, step] != seeds[reverted, step])
                .reshape(len(reverted), -1)
                .any(axis=1)
            )
            if not differs.any():
                continue
            rows = reverted[differs]
            candidates = current[rows].copy()
            candidates[:, step] = seeds[rows, step]
            fails, out = self._fails(rows, seeds[rows], candidates)
            current[rows[fails]], current_out[rows[fails]] = candidates[fails], out[fails]


def _shrink_words(
    mutator: EDAMutator,
    oracle: Oracle,
    predict: Callable[[Any], np.ndarray],
    seeds: list[str],
    seed_outputs: np.ndarray,
    cases: list[str],
    outputs: np.ndarray,
    order: np.ndarray,
    budget: float,
) -> Shrunk:
    words = [c.split() for c in cases]
    edits = [
        difflib.SequenceMatcher(a=s.split(), b=c.split(), autojunk=False).get_opcodes()
        for s, c in zip(seeds, cases)
    ]
    edits = [[op for op in ops if op[0] != "equal"] for ops in edits]
    # one input per edit undone: the rows in ``order`` whose edits fit the bound
    cost = np.cumsum([len(edits[row]) for row in order.tolist()])
    allowed = set(order[: int(np.searchsorted(cost, budget, side="right"))].tolist())
    edits = [ops if row in allowed else [] for row, ops in enumerate(edits)]
    current_out = np.array(outputs, copy=True)
    calls = 0
    for round_ in range(max((len(e) for e in edits), default=0)):
        rows, candidates = [], []
        for row, ops in enumerate(edits):
            if round_ >= len(ops):
                continue
            _, a1, a2, b1, b2 = ops[len(ops) - 1 - round_]  # last edit first: earlier indices hold
            seed_words = seeds[row].split()
            candidate = words[row][:b1] + seed_words[a1:a2] + words[row][b2:]
            if candidate:
                rows.append(row)
                candidates.append(" ".join(candidate))
        if not rows:
            continue
        picked = np.array(rows)
        fails, out = _still_fails(
            mutator, oracle, predict, [seeds[r] for r in rows], seed_outputs[picked], candidates
        )
        calls += 1
        for k in np.flatnonzero(fails).tolist():
            words[rows[k]] = candidates[k].split()
            current_out[rows[k]] = out[k]
    shrunk = [" ".join(w) for w in words]
    return Shrunk(shrunk, checked_distance(mutator, seeds, shrunk), current_out, calls)
