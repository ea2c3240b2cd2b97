"""Shrinking adversarial samples toward their seeds, as Hypothesis shrinks toward simpler
examples: a failing case is replaced by the closest one found that still fails.

Every step is one batched model call over all samples being shrunk (never one call per
case). Continuous cases: bisection on the line from the seed to the case, then reverting
time steps (the first axis of a case) to the seed's values while the oracle still fails.
Text: each word edit (as ``difflib`` aligns seed and case) is undone, last first, while the
case still fails. SMILES re-enumerations have no edit to undo and are left as found.

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
from typing import Any, Callable

import numpy as np

from ..validation import check_int
from .mutators import Mutator, checked_distance
from .oracle import Oracle
from .text import EDAMutator

#: Bisection steps on the seed-case line (the found distance shrinks to within 2**-8 of it).
BISECTION_STEPS = 8


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
        return _shrink_arrays(
            mutator,
            oracle,
            predict,
            np.asarray(seeds),
            seed_outputs,
            np.asarray(cases),
            outputs,
            rows,
            budget,
        )
    if isinstance(mutator, EDAMutator):
        return _shrink_words(
            mutator, oracle, predict, list(seeds), seed_outputs, list(cases), outputs, rows, budget
        )
    return Shrunk(cases, checked_distance(mutator, seeds, cases), outputs, 0)


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


def _shrink_arrays(
    mutator: Mutator,
    oracle: Oracle,
    predict: Callable[[Any], np.ndarray],
    seeds: np.ndarray,
    seed_outputs: np.ndarray,
    cases: np.ndarray,
    outputs: np.ndarray,
    order: np.ndarray,
    budget: float,
) -> Shrunk:
    current, current_out = cases.copy(), np.array(outputs, copy=True)
    calls = 0
    steps = cases.shape[1] if cases.ndim > 1 else 0
    # the rows the bound allows bisection for, then the time-step phase too (cost per row:
    # one input per bisection step, at most one per time step)
    bisected = order[: int(min(len(order), budget // BISECTION_STEPS))]
    left = budget - BISECTION_STEPS * len(bisected)
    reverted = np.sort(bisected[: int(min(len(bisected), left // max(steps, 1)))])
    bisected = np.sort(bisected)
    if len(bisected):
        low = np.zeros(len(bisected))  # the seed (alpha 0) passes, the case (alpha 1) fails
        high = np.ones(len(bisected))
        base = seeds[bisected]
        # in float64: an integer dtype's own subtraction wraps (uint8: 5 - 10 is 251)
        delta = cases[bisected].astype(np.float64) - base.astype(np.float64)
        shape = (-1,) + (1,) * (cases.ndim - 1)
        for _ in range(BISECTION_STEPS):
            middle = (low + high) / 2
            candidates = (base + middle.reshape(shape) * delta).astype(cases.dtype)
            fails, out = _still_fails(
                mutator, oracle, predict, base, seed_outputs[bisected], candidates
            )
            calls += 1
            high = np.where(fails, middle, high)
            low = np.where(fails, low, middle)
            hit = bisected[fails]
            current[hit], current_out[hit] = candidates[fails], out[fails]
    for step in range(steps if len(reverted) else 0):
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
        fails, out = _still_fails(
            mutator, oracle, predict, seeds[rows], seed_outputs[rows], candidates
        )
        calls += 1
        current[rows[fails]], current_out[rows[fails]] = candidates[fails], out[fails]
    distances = checked_distance(mutator, seeds, current)
    return Shrunk(current, distances, current_out, calls)


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
