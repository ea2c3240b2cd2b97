"""Random mutation m_rnd (SPEC section 6): the protocol for your own mutator and Gaussian
noise (text and SMILES mutators: :mod:`.text`; time series: :mod:`.series`).

A mutator works on a batch of test cases and takes a ``numpy.random.Generator``, so every
result is reproducible from one seed. Cases are a numpy array (continuous inputs) or a
list of strings (text, SMILES); ``encode`` turns cases into model inputs and ``distance``
measures each case against its seed for the oracle.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from typing import Any, Sequence

import numpy as np

from ..core.arrays import all_finite, input_array, ragged_hint
from ..errors import InvalidArgument, InvalidInput
from ..validation import check_float, check_range, shown
from .encoders import string_list
from .oracle import as_distances

Cases = Any  # np.ndarray of inputs, or list[str]


class Mutator(ABC):
    """Base class and protocol of a random mutation.

    Implement ``mutate(cases, rng)`` returning as many cases as it gets, of the same kind.
    Override ``encode`` when cases are not model inputs already, and ``distance`` when L2 is
    not the right measure. ``distance_name`` says in reports which distance was used.
    """

    distance_name = "L2"
    #: False for mutators whose cases are lists of strings.
    array_cases = True

    @abstractmethod
    def mutate(self, cases: Cases, rng: np.random.Generator) -> Cases:
        """One random mutation of every case in ``cases``."""

    def encode(self, cases: Cases) -> np.ndarray:
        """Model inputs for ``cases``."""
        return np.asarray(cases)

    def distance(self, seeds: Cases, cases: Cases) -> np.ndarray:
        """Distance of each case to its seed (row-aligned): L2 of the flattened difference,
        in float64, DISTANCE_ROWS rows at a time (the work arrays of a part at once)."""
        seeds, cases = _numeric_pair(seeds, cases)
        return np.concatenate(
            [
                _row_norms(
                    cases[i : i + DISTANCE_ROWS].astype(np.float64)
                    - seeds[i : i + DISTANCE_ROWS].astype(np.float64)
                )
                for i in range(0, len(cases), DISTANCE_ROWS)
            ]
            or [np.zeros(0)]
        )

    def unchanged(self, before: Cases, after: Cases) -> np.ndarray:
        """Which mutants equal the case they came from (they are not new test cases)."""
        if not self.array_cases:
            return np.array([a == b for a, b in zip(before, after)], bool)
        return (_flat_rows(np.asarray(before)) == _flat_rows(np.asarray(after))).all(axis=1)

    def prepare(self) -> None:
        """Load what the first mutation needs (data files) now; the strategies call it when
        Hypothesis validates them, so the load is not timed as a draw. Nothing by default."""

    def reset_counts(self) -> None:
        """Start the counts ``describe()`` reports (SmilesMutator's redraws) from zero: a
        campaign calls it as its steps begin, so its report counts its own. Nothing by
        default."""

    def check_seeds(self, seeds: Any) -> Cases:
        """Validated seeds in this mutator's case form: a batch of numeric arrays, or for
        string cases (``array_cases = False``) a non-empty list of strings."""
        if not self.array_cases:
            return self._check_string_seeds(seeds)
        array = numeric_array(seeds, "seeds")
        if array.ndim < 2 or len(array) == 0:
            raise not_a_batch(
                array,
                f"seeds have shape {array.shape}; pass a non-empty batch (seeds[None] for one)",
            )
        refuse_bool(array, "seeds", "pass seeds.astype(np.float32)")
        return array

    def _check_string_seeds(self, seeds: Any) -> list[str]:
        if type(self).distance is Mutator.distance:  # L2 has no meaning for strings
            raise InvalidArgument(
                f"{type(self).__name__} has string cases (array_cases = False) but no "
                "distance; override distance(seeds, cases) to return one distance >= 0 per "
                "case (e.g. the share of characters changed), and set distance_name"
            )
        strings = string_list(seeds, "seeds")
        if not strings:
            raise InvalidInput("seeds are empty; pass at least one string")
        return strings

    # helpers for both case kinds
    def take(self, cases: Cases, index: Any) -> Cases:
        if self.array_cases:
            return np.asarray(cases)[index]
        return [cases[int(i)] for i in index]

    def describe(self) -> str:
        """The mutation in a few words (shown in reports)."""
        return type(self).__name__

    def within(self, seeds: Cases, cases: Cases, radius: float) -> Cases:
        """``cases`` moved back within ``radius`` of their seeds (the failure search keeps
        its offspring inside the oracle's radius): array cases measured by the default L2
        distance are scaled back onto the sphere around their seed; a mutator with its own
        distance keeps them as they are unless it overrides this."""
        if self.array_cases and type(self).distance is Mutator.distance:
            return within_l2(seeds, cases, radius)
        return cases

    def concat(self, parts: Sequence[Cases]) -> Cases:
        if self.array_cases:
            return np.concatenate(parts)
        return [c for part in parts for c in part]


def within_l2(seeds: Cases, cases: Cases, radius: float) -> np.ndarray:
    """``cases`` farther than ``radius`` (L2 of the flattened difference) from their seeds
    scaled back onto the sphere around them, in the cases' dtype and measured as
    :meth:`Mutator.distance` measures them: a row that rounding to the dtype leaves just
    outside is scaled down further (integers: rounded toward the seed); one still outside
    after that becomes its seed."""
    radius = check_float("radius", radius, minimum=0.0)
    dtype = np.asarray(cases).dtype
    seeds, cases = (array.astype(np.float64) for array in _numeric_pair(seeds, cases))
    diff = cases - seeds
    norms = _row_norms(diff)
    outside = norms > radius
    scale = np.ones_like(norms)  # divided only where outside: radius / norm <= 1 there
    scale[outside] = radius / norms[outside]
    shape = (-1,) + (1,) * (diff.ndim - 1)
    if dtype.kind in "iu":  # rounded toward the seed, so never past the radius
        return (seeds + np.trunc(diff * scale.reshape(shape))).astype(dtype)
    moved = (seeds + diff * scale.reshape(shape)).astype(dtype)
    if dtype.kind != "f":
        return moved
    step = 4 * float(np.finfo(dtype).eps)
    while True:
        over = _row_norms(moved.astype(np.float64) - seeds) > radius
        if not over.any():
            return moved
        if step >= 1.0:
            moved[over] = seeds[over].astype(dtype)
            return moved
        scale[over] *= 1.0 - step
        moved[over] = (seeds[over] + diff[over] * scale[over].reshape(shape)).astype(dtype)
        step *= 2


class GaussianMutator(Mutator):
    """Gaussian noise with a variance drawn per batch from ``variance``, then clipped.

    The paper's MNIST setting: ``variance=(0.005, 0.02)`` on inputs in [0, 1].
    """

    def __init__(
        self,
        variance: float | tuple[float, float] = (0.005, 0.02),
        clip: tuple[float, float] | None = (0.0, 1.0),
    ) -> None:
        self.variance = fixed_or_range("variance", variance, example="(0.005, 0.02)")
        self.clip = None if clip is None else check_range("clip", clip, example="(0.0, 1.0)")

    @classmethod
    def from_seeds(
        cls, seeds: Any, spread: tuple[float, float] = (0.25, 0.5), clip: Any = "auto"
    ) -> "GaussianMutator":
        """Noise scaled to the data: the standard deviation is drawn from ``spread`` times
        the seeds' mean per-feature standard deviation (the paper's MNIST setting is about
        0.25-0.5 of the pixels' spread). ``clip="auto"`` clips to the seeds' own range."""
        low, high = check_range("spread", spread, minimum=0.0, example="(0.25, 0.5)", strict=False)
        array = input_array(seeds, "seeds")  # detached; masked values refused
        try:
            if array.dtype.kind not in "biufO":  # complex: float() would drop a part
                raise TypeError
            array = np.asarray(array, np.float64)
        except (TypeError, ValueError):
            raise InvalidInput(
                f"from_seeds needs numeric seeds of one shape, got dtype {array.dtype} (for "
                "text use EDAMutator, for SMILES SmilesMutator)"
            ) from None
        if array.ndim < 2 or len(array) < 2 or not np.isfinite(array).all():
            raise InvalidInput("from_seeds needs at least two finite seeds")
        with np.errstate(over="ignore", invalid="ignore"):
            scale = float(array.reshape(len(array), -1).std(axis=0).mean())
        with np.errstate(over="ignore"):  # a float's ** raises OverflowError; numpy's is inf
            variance = float(np.float64(high * scale) ** 2)
        if not math.isfinite(variance):
            raise InvalidInput(
                f"spread up to {high:.3g} of the seeds' spread ({scale:.3g}) is too large for "
                "a noise variance; lower spread=, scale the inputs (models take values of "
                "order 1), or give GaussianMutator(variance=...) yourself"
            )
        if not scale > 0:
            raise InvalidInput("the seeds do not vary, so they give no scale for the noise")
        bounds = (float(array.min()), float(array.max())) if clip == "auto" else clip
        return cls(variance=((low * scale) ** 2, (high * scale) ** 2), clip=bounds)

    def describe(self) -> str:
        low, high = self.variance
        clip = "no clip" if self.clip is None else f"clip [{self.clip[0]:g}, {self.clip[1]:g}]"
        return f"Gaussian noise, variance {low:.3g}-{high:.3g}, {clip}"

    def mutate(self, cases: Cases, rng: np.random.Generator) -> np.ndarray:
        check_rng(rng)
        cases = np.asarray(cases)
        if cases.dtype.kind not in "biuf":
            raise InvalidInput(f"cases have dtype {cases.dtype}; Gaussian noise needs numbers")
        refuse_nonfinite_cases(cases, self)
        sigma = np.sqrt(rng.uniform(*self.variance))
        mutated = cases + rng.normal(0.0, sigma, cases.shape)
        if self.clip is not None:
            mutated = np.clip(mutated, *self.clip)
        noise = f"Gaussian noise of variance up to {self.variance[1]:g}"
        return in_cases_dtype(mutated, cases.dtype, noise, "lower the variance or set clip=")

    def encode(self, cases: Cases) -> np.ndarray:
        return np.asarray(cases, np.float32)

    def within(self, seeds: Cases, cases: Cases, radius: float) -> np.ndarray:
        """Cases farther than ``radius`` (L2) scaled back onto the sphere around their seed,
        then clipped (the clip box holds the seed, so clipping never moves them away)."""
        moved = np.asarray(super().within(seeds, cases, radius))
        if self.clip is not None:
            moved = np.clip(moved, *self.clip).astype(moved.dtype)
        return moved

    def check_seeds(self, seeds: Any) -> np.ndarray:
        refuse_text(seeds, self)
        array = super().check_seeds(seeds)
        cast = finite_float32(array, "Gaussian noise")
        if self.clip is not None and (array.min() < self.clip[0] or array.max() > self.clip[1]):
            raise InvalidInput(
                f"seeds span [{array.min():g}, {array.max():g}], outside clip={self.clip}; "
                "scale the seeds or pass the right clip range"
            )
        return cast


def fixed_or_range(name: str, value: Any, example: str) -> tuple[float, float]:
    """A noise level: one number >= 0 (fixed, as ``(v, v)``) or a ``(low, high)`` range
    from which each batch draws."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        fixed = check_float(name, value, minimum=0.0, example=example)
        return fixed, fixed
    return check_range(name, value, minimum=0.0, example=example, strict=False)


def refuse_text(seeds: Any, mutator: Mutator) -> None:
    """Refuse texts given as seeds to a mutator of numeric arrays, naming the text ones (a
    list of texts read as a batch of shape (2,) "to pass seeds[None] for one")."""
    if isinstance(seeds, np.ndarray):
        first = seeds.flat[0] if seeds.dtype.kind in "USO" and seeds.size else None
    else:
        first = seeds[0] if isinstance(seeds, (list, tuple)) and len(seeds) else None
    if isinstance(first, (str, bytes)):
        raise InvalidInput(
            f"seeds are texts ({str(first)[:40]!r}, ...); {type(mutator).__name__} mutates numeric "
            "arrays: for text use EDAMutator(encoder), for SMILES SmilesMutator(encoder)"
        )


def check_rng(rng: Any) -> None:
    """Mutators draw only from a ``numpy.random.Generator`` (results follow the seed)."""
    if not isinstance(rng, np.random.Generator):
        raise InvalidArgument(
            f"rng={rng!r} is not a numpy.random.Generator; pass numpy.random.default_rng(seed)"
        )


def refuse_bool(array: np.ndarray, what: str, fix: str) -> None:
    """Refuse boolean cases: a mutation of True/False is cut back to True/False when stored
    in the cases' dtype, so it would never move."""
    if array.dtype.kind == "b":
        raise InvalidInput(
            f"{what} have dtype {array.dtype}; a mutation needs numbers (a "
            f"boolean case cannot move); {fix}"
        )


def finite_float32(seeds: np.ndarray, needs: str) -> np.ndarray:
    """Numeric seeds as float32, refusing NaN, inf and values beyond float32's range."""
    if seeds.dtype.kind not in "biuf":
        raise InvalidInput(f"seeds have dtype {seeds.dtype}; {needs} needs numbers")
    rows = nonfinite_rows(seeds)
    if len(rows):
        raise InvalidInput(
            f"seeds hold NaN or inf (or values beyond float32's range) in rows "
            f"{rows[:5].tolist()}; clean or drop them"
        )
    return seeds.astype(np.float32)


def not_a_batch(seeds: np.ndarray, otherwise: str) -> InvalidInput:
    """The error for ``seeds`` that are no batch of numbers: rows of other lengths or an
    object array of rows named with their fix (``ragged_hint``), else ``otherwise``."""
    hint = ragged_hint(seeds)
    return InvalidInput(f"seeds: {hint}" if hint else otherwise)


def refuse_nonfinite_cases(cases: np.ndarray, mutator: Mutator) -> None:
    """InvalidInput naming the rows of ``cases`` that hold NaN or inf (noise added to them
    would hand NaN back as a mutant)."""
    if cases.dtype.kind != "f" or all_finite(cases):
        return
    rows = np.flatnonzero(~_flat_rows(np.isfinite(cases)).all(axis=1))
    raise InvalidInput(
        f"cases hold NaN or inf in rows {rows[:5].tolist()}{', ...' if rows.size > 5 else ''}"
        f"; {type(mutator).__name__}.mutate takes finite cases (a campaign checks its seeds: "
        "check_seeds)"
    )


def in_cases_dtype(mutated: np.ndarray, dtype: np.dtype, cause: str, fix: str) -> np.ndarray:
    """float64 ``mutated`` in the cases' float ``dtype`` (float32 for integers), refusing
    values the cast takes beyond its range (inf), naming ``cause`` and ``fix``."""
    dtype = dtype if dtype.kind == "f" else np.dtype(np.float32)
    with np.errstate(over="ignore"):
        out = mutated.astype(dtype)
    overflowed = np.isinf(out) & np.isfinite(mutated)
    if overflowed.any():
        raise InvalidArgument(
            f"{cause} took {int(overflowed.sum())} values beyond {dtype}'s range (largest "
            f"finite {float(np.finfo(dtype).max):g}); {fix}"
        )
    return out


def numeric_array(values: Any, what: str) -> np.ndarray:
    """``values`` as a numpy array (``input_array``), refusing ragged rows and what numpy
    cannot read."""
    try:
        return input_array(values, what)
    except InvalidInput as exc:
        if isinstance(values, np.ma.MaskedArray):
            raise
        raise InvalidInput(
            f"{what} are not one array (rows of different shapes, or values that are not "
            f"numbers); pass an array of shape (batch, steps, ...) ({exc})"
        ) from None


def nonfinite_rows(values: np.ndarray) -> np.ndarray:
    """The rows of ``values`` holding NaN, inf or values beyond float32's range."""
    with np.errstate(over="ignore", invalid="ignore"):
        finite = np.isfinite(values.astype(np.float32))
    return np.flatnonzero(~_flat_rows(finite).all(axis=1))


#: the rows Mutator.distance converts to float64 at once
DISTANCE_ROWS = 4096


def _numeric_pair(seeds: Cases, cases: Cases) -> tuple[np.ndarray, np.ndarray]:
    """Seeds and cases as numeric arrays of one shape, finite (for distances), in their own
    dtype (not copied when they are arrays already)."""
    try:
        pair = (
            _as_numbers(input_array(seeds, "seeds")),
            _as_numbers(input_array(cases, "cases")),
        )
    except InvalidInput:
        raise
    except (TypeError, ValueError):
        raise InvalidInput("seeds and cases must be numeric arrays of one shape") from None
    if pair[0].ndim == 0 or pair[0].shape != pair[1].shape:
        raise InvalidInput(
            f"seeds of shape {pair[0].shape} and cases of shape {pair[1].shape}: "
            "distance pairs each case with the seed in the same row"
        )
    if not (np.isfinite(pair[0]).all() and np.isfinite(pair[1]).all()):
        raise InvalidInput("seeds or cases hold NaN or inf; a distance needs finite values")
    return pair


def _as_numbers(array: np.ndarray) -> np.ndarray:
    """``array`` itself when float64 holds its values exactly as they are checked (bools,
    integers, floats of up to 64 bits), else converted to float64 (a longdouble beyond
    float64's range becomes inf, and is refused as such)."""
    kind, size = array.dtype.kind, array.dtype.itemsize
    if kind in "biu" or (kind == "f" and size <= 8):
        return array
    with np.errstate(over="ignore"):  # no RuntimeWarning first (the error under -W error)
        return array.astype(np.float64)


def _row_norms(diff: np.ndarray) -> np.ndarray:
    """The L2 norm of each row of ``diff`` (every axis after the first flattened)."""
    flat = _flat_rows(diff)
    return np.sqrt(np.einsum("ij,ij->i", flat, flat))


def _flat_rows(array: np.ndarray) -> np.ndarray:
    """``array`` as (rows, values per row); also for a batch of no rows, where
    ``reshape(0, -1)`` cannot tell the row length."""
    return array.reshape(len(array), math.prod(array.shape[1:]))


def checked_distance(mutator: Mutator, seeds: Cases, cases: Cases) -> np.ndarray:
    """``mutator.distance(seeds, cases)`` as float64, checked as the oracle checks
    distances: one finite number >= 0 per case (a custom mutator's inf or NaN would reach
    the oracle and the reports)."""
    what = f"{type(mutator).__name__}.distance"
    return as_distances(mutator.distance(seeds, cases), len(cases), what)


def mean_distance(distances: Sequence[float] | np.ndarray) -> float:
    """The mean of finite distances, finite however large they are (each is divided
    before the sum: a plain mean of two 1e308 overflows)."""
    values = np.asarray(distances, np.float64)
    return float(np.sum(values / len(values)))


def checked_mutate(mutator: Mutator, cases: Cases, rng: np.random.Generator) -> Cases:
    """Run ``mutator`` on a copy of ``cases`` (a mutator that changes them in place, then
    returns them, would change the parents the mutants are compared with) and check it kept
    the number and shape of the cases."""
    given = np.array(cases, copy=True) if mutator.array_cases else list(cases)
    out = mutator.mutate(given, rng)
    name = type(mutator).__name__
    if mutator.array_cases:
        out = np.asarray(out)
        expected = np.asarray(cases).shape
        if out.shape != expected:
            raise InvalidArgument(
                f"{name}.mutate returned shape {out.shape} for cases of shape {expected}; a "
                "mutator must return one mutant per case, of the same shape"
            )
        refuse_bool(
            out,
            f"{name}.mutate returned mutants that",
            "return numbers, e.g. mutants.astype(np.float32)",
        )
        if out.dtype.kind not in "biuf":  # the model's message named no mutator
            raise InvalidArgument(
                f"{name}.mutate returned mutants of dtype {out.dtype}; a mutator of arrays "
                f"returns real numbers, as its cases are ({np.asarray(cases).dtype})"
            )
        rows = nonfinite_rows(out) if out.dtype.kind == "f" else np.zeros(0, np.intp)
        if len(rows):
            raise InvalidArgument(
                f"{name}.mutate produced NaN, inf or values beyond float32's range in "
                f"mutants {rows[:5].tolist()} ({mutator.describe()}); make its changes "
                "smaller (GaussianMutator: a lower variance or clip=; TimeSeriesMutator: "
                "a lower noise)"
            )
    elif len(out) != len(cases):
        raise InvalidArgument(
            f"{name}.mutate returned {len(out)} items for {len(cases)} cases; a string mutator "
            "must return one string per case"
        )
    elif (wrong := next((c for c in out if not isinstance(c, str)), None)) is not None:
        raise InvalidArgument(
            f"{name}.mutate returned {shown(wrong)} ({type(wrong).__name__}) among its "
            "mutants; a string mutator returns strings, one per case"
        )
    return out
