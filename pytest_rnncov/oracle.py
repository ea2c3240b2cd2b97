"""The test oracle (SPEC section 7): a case fails when it is near its seed and the
model's decision changed."""

from __future__ import annotations

import numpy as np

from .errors import InvalidArgument


class Oracle:
    """Decides which test cases are adversarial.

    ``task="classification"``: the decision is the arg-max class (for a single output, the
    output above ``threshold``). ``task="regression"``: the decision changed when any output
    moved by more than ``tolerance``. ``radius``: a case counts only when its distance to its
    seed is at most ``radius``; ``None`` means no radius (e.g. SMILES re-enumeration).
    """

    def __init__(self, radius: float | None = None, *, task: str = "classification",
                 tolerance: float | None = None, threshold: float = 0.5) -> None:
        if task not in ("classification", "regression"):
            raise InvalidArgument(f"task={task!r}; use 'classification' or 'regression'")
        if radius is not None and not radius >= 0:
            raise InvalidArgument(f"radius={radius!r} must be >= 0 (or None for no radius)")
        if task == "regression" and (tolerance is None or not tolerance > 0):
            raise InvalidArgument(
                "a regression oracle needs tolerance > 0: how far a prediction may move, "
                "e.g. Oracle(task='regression', tolerance=0.5)"
            )
        self.radius = radius
        self.task = task
        self.tolerance = tolerance
        self.threshold = threshold

    def decisions(self, outputs: np.ndarray) -> np.ndarray:
        """The classification decision for each row of model outputs."""
        outputs = np.asarray(outputs).reshape(len(outputs), -1)
        if outputs.shape[1] == 1:
            return (outputs[:, 0] > self.threshold).astype(np.int64)
        return outputs.argmax(axis=1)

    def changed(self, seed_outputs: np.ndarray, case_outputs: np.ndarray) -> np.ndarray:
        """Whether each case's decision differs from its seed's."""
        if self.task == "regression":
            a = np.asarray(seed_outputs, np.float64).reshape(len(seed_outputs), -1)
            b = np.asarray(case_outputs, np.float64).reshape(len(case_outputs), -1)
            return np.abs(a - b).max(axis=1) > self.tolerance
        return self.decisions(seed_outputs) != self.decisions(case_outputs)

    def fails(self, seed_outputs: np.ndarray, case_outputs: np.ndarray,
              distances: np.ndarray) -> np.ndarray:
        """Adversarial cases: within the radius of their seed and decided differently."""
        near = np.ones(len(distances), bool) if self.radius is None else distances <= self.radius
        return near & self.changed(seed_outputs, case_outputs)

    def describe(self) -> str:
        radius = "none" if self.radius is None else f"{self.radius:g}"
        if self.task == "regression":
            return f"regression, tolerance {self.tolerance:g}, radius {radius}"
        return f"classification, radius {radius}"
