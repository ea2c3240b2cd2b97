"""The test oracle (SPEC section 7): a case fails when it is near its seed and the
model's decision changed."""

from __future__ import annotations

from typing import Any, Callable

import numpy as np

from ..core.arrays import input_array
from ..errors import AdversarialFailure, InvalidArgument, InvalidInput
from ..validation import check_choice, check_float, check_int

#: Most seeds Oracle.calibrate compares pairwise (a seeded sample of them above this).
CALIBRATION_SEEDS = 2000
#: ``Oracle.calibrate(distance=...)`` measures this many seed pairs per call, so that
#: memory stays bounded (2,000 seeds make up to 2 million pairs)
CALIBRATION_PAIRS = 4096


def _numeric(outputs: Any, what: str) -> np.ndarray:
    """``outputs`` as a float64 array (a tensor read detached), or InvalidInput naming them
    (masked values, complex numbers: float() would drop a part)."""
    array = input_array(outputs, what)
    try:
        if array.dtype.kind == "c" or (  # None would read as NaN
            array.dtype == object and any(v is None for v in array.flat)
        ):
            raise TypeError
        return np.asarray(array, np.float64)
    except (TypeError, ValueError):
        raise InvalidInput(
            f"{what} must be numeric model outputs, got {type(outputs).__name__} {_short(outputs)}"
        ) from None


def output_rows(outputs: Any, what: str) -> np.ndarray:
    """Model outputs as finite float64 rows (one per input), or InvalidInput naming them."""
    array = _numeric(outputs, what)
    if array.ndim == 0 or array.size == 0:
        raise InvalidInput(
            f"{what} must be a non-empty batch of model outputs, got shape {array.shape}"
        )
    array = array.reshape(len(array), -1)
    if not np.isfinite(array).all():
        raise InvalidInput(f"NaN or inf in the {what}; the oracle cannot judge them")
    return array


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def as_distances(values: Any, n: int, what: str) -> np.ndarray:
    """``values`` as ``n`` finite distances >= 0, or InvalidInput naming ``what``."""
    try:
        d = np.asarray(values, np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise InvalidInput(f"{what} must be numbers, got {_short(values)}") from None
    if len(d) != n:
        raise InvalidInput(
            f"{what} gave {len(d)} values for {n} cases; return one distance per row-aligned pair"
        )
    if not (np.isfinite(d).all() and (d >= 0).all()):
        raise InvalidInput(
            f"{what} holds NaN, inf or negative values; distances must be finite and >= 0"
        )
    return d


# Raises ``error`` when ``failed``. Compiled under a "<...>" file name, which Hypothesis's
# explain phase does not trace (as for generated code): the raise is then not reported as
# "always and only run by failing test cases", and the user's own lines are.
_GENERATED: dict[str, Any] = {}
exec(  # a fixed string, compiled once at import
    compile(
        "def raise_if(failed, error):\n"
        "    __tracebackhide__ = True\n"  # pytest shows the user's call, not this
        "    if failed:\n"
        "        raise error\n",
        "<pytest_rnncov oracle>",
        "exec",
    ),
    _GENERATED,
)
_raise_if: Callable[[bool, BaseException], None] = _GENERATED["raise_if"]


def _one_case(outputs: Any, what: str) -> np.ndarray:
    """The outputs for one input as a (1, n) row: a scalar, a 1-D output vector or a batch
    of one row."""
    array = _numeric(outputs, what)
    if array.ndim >= 2 and len(array) != 1:
        raise InvalidInput(
            f"{what} has {len(array)} rows; check() judges one case: pass the "
            "outputs of one input (use fails() for batches)"
        )
    return output_rows(array.reshape(1, -1), what)


class Oracle:
    """Decides which test cases are adversarial.

    ``task="classification"``: the decision is the arg-max class (for a single output, the
    output above ``threshold``). ``task="regression"``: the decision changed when any output
    moved by more than ``tolerance``. ``radius``: a case counts only when its distance to its
    seed is at most ``radius``; ``None`` means no radius (e.g. SMILES re-enumeration).
    """

    def __init__(
        self,
        radius: float | None = None,
        *,
        task: str = "classification",
        tolerance: float | None = None,
        threshold: float = 0.5,
    ) -> None:
        self.task = check_choice("task", task, ("classification", "regression"))
        self.radius = (
            None
            if radius is None
            else check_float(
                "radius",
                radius,
                minimum=0.0,
                exclusive_minimum=True,  # 0 would admit only unchanged inputs: nothing found
                example="3.0 (or None for no radius)",
            )
        )
        if task == "regression":
            if tolerance is None:
                raise InvalidArgument(
                    "a regression oracle needs tolerance > 0: how far a prediction may move, "
                    "e.g. Oracle(task='regression', tolerance=0.5)"
                )
            self.tolerance: float | None = check_float(
                "tolerance", tolerance, minimum=0.0, exclusive_minimum=True, example="0.5"
            )
        else:
            if tolerance is not None:
                raise InvalidArgument(
                    f"tolerance={tolerance!r} applies to task='regression'; a classification "
                    "oracle compares decisions (leave tolerance out)"
                )
            self.tolerance = None
        self.threshold = check_float("threshold", threshold, example="0.5")
        #: how the radius was chosen, when Oracle.calibrate chose it (shown in reports)
        self.calibration: str | None = None

    @classmethod
    def calibrate(
        cls,
        seeds: Any,
        outputs: Any,
        *,
        task: str = "classification",
        tolerance: float | None = None,
        threshold: float = 0.5,
        quantile: float = 0.05,
        fraction: float = 0.5,
        distance: Callable[[np.ndarray, np.ndarray], np.ndarray] | None = None,
        seed: int = 0,
    ) -> "Oracle":
        """An oracle whose radius comes from the data: ``fraction`` of the ``quantile`` of
        the distances between seeds the model decides differently (a perturbation within
        that radius stays well inside the gap between differently-decided inputs).

        ``outputs`` are the model's outputs for ``seeds``; ``distance`` (default L2 of the
        flattened difference) measures a pair of row-aligned batches. Regression needs
        ``tolerance``: seeds whose outputs differ by more count as decided differently.
        Above 2,000 seeds a seeded sample is compared. The choice is kept in
        ``oracle.calibration`` and shown in the adversarial section.
        """
        oracle = cls(None, task=task, tolerance=tolerance, threshold=threshold)
        quantile_ = check_float("quantile", quantile, minimum=0.0, maximum=1.0, example="0.05")
        fraction_ = check_float(
            "fraction", fraction, minimum=0.0, exclusive_minimum=True, example="0.5"
        )
        check_int("seed", seed, minimum=0)
        x = input_array(seeds, "seeds")  # detached; masked values refused
        if x.dtype.kind == "c" and distance is None:
            raise InvalidInput(
                f"seeds have dtype {x.dtype}; the default L2 distance measures real numbers: "
                "pass real seeds, or distance="
            )
        out = output_rows(outputs, "outputs")
        if distance is None and x.ndim == 1 and x.dtype.kind in "OSU" and len(x) == len(out):
            raise InvalidInput(
                f"seeds are {len(x)} texts (dtype {x.dtype}), which the default L2 distance "
                "cannot measure; pass the mutator's distance: "
                "Oracle.calibrate(seeds, outputs, distance=mutator.distance)"
            )
        if x.ndim < (1 if distance is not None else 2) or len(x) != len(out) or len(x) < 2:
            raise InvalidInput(  # with distance=, seeds may be texts (one row each)
                f"calibrate needs at least two seeds with one output row each; "
                f"got seeds {x.shape} and outputs {out.shape}"
            )
        if len(x) > CALIBRATION_SEEDS:
            pick = np.sort(
                np.random.default_rng(seed).choice(len(x), CALIBRATION_SEEDS, replace=False)
            )
            x, out = x[pick], out[pick]
        n = len(x)
        a, b = np.triu_indices(n, k=1)
        differ = oracle.changed(out[a], out[b])
        if not differ.any():
            raise InvalidInput(
                "every seed is decided alike, so there is no gap between "
                "decisions to calibrate the radius from; add seeds of other "
                "classes (or outputs farther apart than the tolerance)"
            )
        a, b = a[differ], b[differ]
        if distance is None:
            if not (np.issubdtype(x.dtype, np.number) or x.dtype == bool):
                raise InvalidInput(
                    f"seeds of dtype {x.dtype} have no L2 distance; pass distance=f where "
                    "f(a, b) gives the distance of each row-aligned pair (e.g. an edit distance)"
                )
            flat = x.reshape(n, -1).astype(np.float64)
            if not np.isfinite(flat).all():
                raise InvalidInput("seeds hold NaN or inf; calibrate needs finite seeds")
            # centred (distances do not move; a Gram matrix of large offsets would cancel
            # small differences to 0), then scaled by a power of two (exact) so that the
            # Gram matrix cannot overflow
            flat = flat - flat.mean(axis=0)
            scale = float(np.ldexp(1.0, int(np.frexp(np.abs(flat).max())[1])))
            flat = flat / scale
            squares = np.einsum("ij,ij->i", flat, flat)
            gram = flat @ flat.T
            d = scale * np.sqrt(np.maximum(squares[a] + squares[b] - 2 * gram[a, b], 0.0))
            what = "L2 distances"
        else:
            if not callable(distance):
                raise InvalidArgument(
                    f"distance={distance!r} must be a function f(a, b) "
                    "returning the distance of each row-aligned pair"
                )
            parts = []
            for start in range(0, len(a), CALIBRATION_PAIRS):  # one part's pair rows at a time
                i, j = a[start : start + CALIBRATION_PAIRS], b[start : start + CALIBRATION_PAIRS]
                parts.append(as_distances(distance(x[i], x[j]), len(i), "distance(a, b)"))
            d = np.concatenate(parts)
            what = "distances"
        gap = float(np.quantile(d, quantile_))
        oracle.radius = fraction_ * gap
        if not np.isfinite(oracle.radius):
            problem = (
                f"fraction={fraction_!r} x the {quantile_:.0%} quantile ({gap:.4g}) of the "
                f"{what} gives radius {oracle.radius!r}, not a finite number"
            )
            if np.isfinite(gap):
                raise InvalidArgument(f"{problem}; pass a smaller fraction, e.g. fraction=0.5")
            raise InvalidInput(
                f"{problem}: the seeds lie too far apart to measure; scale them down"
            )
        if not oracle.radius > 0:
            raise InvalidInput(
                f"the {quantile_:.0%} quantile of the {what} between seeds decided differently "
                "is 0 (seeds at distance 0 decided differently: a distance that ignores "
                "some change?), so no radius can be calibrated; check the distance or pass "
                "a higher quantile"
            )
        oracle.calibration = (
            f"radius {oracle.radius:.4g} = {fraction_:g} x the {quantile_:.0%} quantile "
            f"({gap:.4g}) of the {what} between {len(d)} pairs of seeds decided differently"
        )
        return oracle

    def decisions(self, outputs: np.ndarray) -> np.ndarray:
        """The classification decision for each row of model outputs."""
        outputs = output_rows(outputs, "outputs")
        if outputs.shape[1] == 1:
            return (outputs[:, 0] > self.threshold).astype(np.int64)
        return outputs.argmax(axis=1)

    def changed(self, seed_outputs: np.ndarray, case_outputs: np.ndarray) -> np.ndarray:
        """Whether each case's decision differs from its seed's."""
        a, b = _paired_rows(seed_outputs, case_outputs)
        if self.task == "regression":
            assert self.tolerance is not None
            return np.abs(a - b).max(axis=1) > self.tolerance
        return self.decisions(seed_outputs) != self.decisions(case_outputs)

    def fails(
        self, seed_outputs: np.ndarray, case_outputs: np.ndarray, distances: np.ndarray
    ) -> np.ndarray:
        """Adversarial cases: within the radius of their seed and decided differently."""
        changed = self.changed(seed_outputs, case_outputs)
        distances = as_distances(distances, len(changed), "distances")
        near = np.ones(len(distances), bool) if self.radius is None else distances <= self.radius
        return near & changed

    def decision_text(self, outputs: np.ndarray) -> str:
        """The decision for the first row of ``outputs`` as text (class, or value)."""
        return self.decision_texts(outputs)[0]

    def decision_texts(self, outputs: np.ndarray) -> list[str]:
        """The decision for each row of ``outputs`` as text (class, or value)."""
        if self.task == "regression":
            return [f"{v:.3g}" for v in output_rows(outputs, "outputs")[:, 0].tolist()]
        return [str(d) for d in self.decisions(outputs).tolist()]

    def check(
        self,
        seed_output: Any,
        case_output: Any,
        distance: float,
        *,
        seed: Any = None,
        case: Any = None,
    ) -> None:
        """Raise AdversarialFailure (an AssertionError) when the case fails the oracle, with
        a message that explains it: both decisions, the distance and the radius."""
        __tracebackhide__ = True  # pytest's traceback ends at the test's call
        seed_rows = _one_case(seed_output, "seed output")
        case_rows = _one_case(case_output, "case output")
        distance = check_float("distance", distance, minimum=0.0)
        failed = bool(self.fails(seed_rows, case_rows, np.array([distance]))[0])
        # the message is built whether or not the case fails: Hypothesis's "Explanation"
        # names the lines only failing examples run, which must be the user's, not ours
        if self.task == "regression":
            what = (
                f"the prediction moved from {seed_rows[0, 0]:.4g} to {case_rows[0, 0]:.4g} "
                f"(by {np.abs(case_rows - seed_rows).max():.4g} > tolerance {self.tolerance:g})"
            )
        else:
            probability = (
                ""
                if seed_rows.shape[1] == 1
                else (
                    f" (seed {seed_rows[0].max():.3g} vs case {case_rows[0].max():.3g} for the "
                    "top output)"
                )
            )
            what = (
                f"the decision changed from {self.decision_text(seed_rows)} to "
                f"{self.decision_text(case_rows)}{probability}"
            )
        where = (
            "no radius"
            if self.radius is None
            else f"distance {distance:.4g} <= radius {self.radius:g}"
        )
        lines = [f"adversarial case: {what}, {where}"]
        if seed is not None and case is not None and isinstance(seed, str):
            lines += [f"  seed: {seed!r}", f"  case: {case!r}"]
        _raise_if(failed, AdversarialFailure("\n".join(lines)))

    def margin(self, seed_outputs: Any, case_outputs: Any) -> np.ndarray:
        """How far each case is from failing (<= 0: its decision changed): for
        classification the seed class's output minus the best other output (a single output:
        its distance to the threshold on the seed's side); for regression the tolerance
        minus how far the output moved."""
        a, b = _paired_rows(seed_outputs, case_outputs)
        if self.task == "regression":
            assert self.tolerance is not None
            margin = self.tolerance - np.abs(a - b).max(axis=1)
        elif b.shape[1] == 1:
            above = a[:, 0] > self.threshold
            return np.where(
                above, b[:, 0] - self.threshold, np.nextafter(self.threshold, np.inf) - b[:, 0]
            )
        else:
            seed_class = self.decisions(a)
            rows = np.arange(len(b))
            own = b[rows, seed_class]
            others = b.copy()
            others[rows, seed_class] = -np.inf
            margin = own - others.max(axis=1)
        # on the edge without a change (a tie that arg-max gives the seed's class, a move of
        # exactly the tolerance): the least positive number, so that <= 0 means it failed
        edge = np.nextafter(margin.dtype.type(0), margin.dtype.type(1))
        return np.where((margin <= 0) & ~self.changed(a, b), edge, margin)

    def failure_fitness(self, seed_outputs: Any, case_outputs: Any, distances: Any) -> np.ndarray:
        """How far each case is from failing (<= 0 exactly when it fails): the margin within
        the radius; beyond it, the margin (when positive) plus the excess distance."""
        margin = self.margin(seed_outputs, case_outputs)
        if self.radius is None:
            return margin
        excess = as_distances(distances, len(margin), "distances") - self.radius
        return np.where(excess <= 0, margin, np.maximum(margin, 0.0) + excess)

    def describe(self) -> str:
        radius = "none" if self.radius is None else f"{self.radius:.4g}"
        how = "" if self.calibration is None else f" ({self.calibration})"
        if self.task == "regression":
            return f"regression, tolerance {self.tolerance:g}, radius {radius}{how}"
        return f"classification, radius {radius}{how}"


def _paired_rows(seed_outputs: Any, case_outputs: Any) -> tuple[np.ndarray, np.ndarray]:
    """Seed and case outputs as (rows, outputs) arrays of one shape (InvalidInput else)."""
    a, b = output_rows(seed_outputs, "seed outputs"), output_rows(case_outputs, "case outputs")
    if a.shape != b.shape:
        raise InvalidInput(f"seed outputs {a.shape} and case outputs {b.shape} differ in shape")
    return a, b
