"""The test oracle (SPEC section 7): a case fails when it is near its seed and the
model's decision changed."""

from __future__ import annotations

import numpy as np

from ..errors import InvalidArgument, InvalidInput
from ..validation import check_choice, check_float


class Oracle:
    """Decides which test cases are adversarial.

    ``task="classification"``: the decision is the arg-max class (for a single output, the
    output above ``threshold``). ``task="regression"``: the decision changed when any output
    moved by more than ``tolerance``. ``radius``: a case counts only when its distance to its
    seed is at most ``radius``; ``None`` means no radius (e.g. SMILES re-enumeration).
    """

    def __init__(self, radius: float | None = None, *, task: str = "classification",
                 tolerance: float | None = None, threshold: float = 0.5) -> None:
        self.task = check_choice("task", task, ("classification", "regression"))
        self.radius = None if radius is None else check_float(
            "radius", radius, minimum=0.0, example="3.0 (or None for no radius)")
        if task == "regression":
            if tolerance is None:
                raise InvalidArgument(
                    "a regression oracle needs tolerance > 0: how far a prediction may move, "
                    "e.g. Oracle(task='regression', tolerance=0.5)")
            self.tolerance: float | None = check_float(
                "tolerance", tolerance, minimum=0.0, exclusive_minimum=True, example="0.5")
        else:
            self.tolerance = None if tolerance is None else check_float(
                "tolerance", tolerance, minimum=0.0, exclusive_minimum=True)
        self.threshold = check_float("threshold", threshold, example="0.5")

    @staticmethod
    def _rows(outputs: np.ndarray, what: str) -> np.ndarray:
        array = np.asarray(outputs, np.float64)
        if array.ndim == 0 or len(array) == 0:
            raise InvalidInput(f"{what} must be a non-empty batch of model outputs, got shape "
                               f"{array.shape}")
        array = array.reshape(len(array), -1)
        if not np.isfinite(array).all():
            raise InvalidInput(f"{what} hold NaN or inf; the oracle cannot judge them")
        return array

    def decisions(self, outputs: np.ndarray) -> np.ndarray:
        """The classification decision for each row of model outputs."""
        outputs = self._rows(outputs, "outputs")
        if outputs.shape[1] == 1:
            return (outputs[:, 0] > self.threshold).astype(np.int64)
        return outputs.argmax(axis=1)

    def changed(self, seed_outputs: np.ndarray, case_outputs: np.ndarray) -> np.ndarray:
        """Whether each case's decision differs from its seed's."""
        a, b = self._rows(seed_outputs, "seed outputs"), self._rows(case_outputs, "case outputs")
        if a.shape != b.shape:
            raise InvalidInput(f"seed outputs {a.shape} and case outputs {b.shape} differ in shape")
        if self.task == "regression":
            assert self.tolerance is not None
            return np.abs(a - b).max(axis=1) > self.tolerance
        return self.decisions(seed_outputs) != self.decisions(case_outputs)

    def fails(self, seed_outputs: np.ndarray, case_outputs: np.ndarray,
              distances: np.ndarray) -> np.ndarray:
        """Adversarial cases: within the radius of their seed and decided differently."""
        distances = np.asarray(distances, np.float64).reshape(-1)
        near = np.ones(len(distances), bool) if self.radius is None else distances <= self.radius
        return near & self.changed(seed_outputs, case_outputs)

    def decision_text(self, outputs: np.ndarray) -> str:
        """The decision for the first row of ``outputs`` as text (class, or value)."""
        if self.task == "regression":
            return f"{float(self._rows(outputs, 'outputs')[0, 0]):.3g}"
        return str(int(self.decisions(outputs)[0]))

    def describe(self) -> str:
        radius = "none" if self.radius is None else f"{self.radius:g}"
        if self.task == "regression":
            return f"regression, tolerance {self.tolerance:g}, radius {radius}"
        return f"classification, radius {radius}"
