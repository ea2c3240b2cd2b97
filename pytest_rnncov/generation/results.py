"""What a campaign reports: each model call's :class:`Step`, the adversarial samples it
found and the :class:`CampaignResult` (listeners receive them: ``campaign.CampaignListener``)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field, fields
from typing import Any, Callable, Iterator, Sequence, overload

import numpy as np

from ..core.arrays import FLOAT32_MAX
from ..files import Fields


@dataclass
class Step:
    """What one model call of a campaign did."""

    phase: str  # "seeds", "random" or "targeted"
    cases: int
    new_conditions: dict[str, int]
    adversarial: int
    target: str | None = None  # "TC:abcab" (a GA generation), "TC:sweep", "failure:variants"


@dataclass
class AdversarialSample:
    """A test case that failed the oracle, beside its seed."""

    case_id: int
    seed_index: int
    case: Any
    seed: Any
    seed_output: np.ndarray
    case_output: np.ndarray
    seed_decision: str
    case_decision: str
    distance: float
    found_distance: float = 0.0  # before shrinking (``distance`` is after)


#: the adversarial samples an AdversarialSamples makes at a time when iterated
SAMPLE_PART = 1024


class AdversarialSamples(Sequence[AdversarialSample]):
    """A finished campaign's adversarial samples, in the order found, made from the
    campaign's arrays as they are read, SAMPLE_PART at a time when iterated: a campaign that
    found millions never holds them all as objects (``list(samples)`` does).

    Supports ``len()``, iteration, indexing and slicing (a slice is a list); an index makes
    its one sample each time (iterate, or slice, to read many); pickled, it is a list."""

    def __init__(self, size: int, make: Callable[[np.ndarray], list[AdversarialSample]]) -> None:
        self._size = size
        self._make = make

    def __len__(self) -> int:
        return self._size

    @overload
    def __getitem__(self, index: int) -> AdversarialSample: ...

    @overload
    def __getitem__(self, index: slice) -> list[AdversarialSample]: ...

    def __getitem__(self, index: int | slice) -> AdversarialSample | list[AdversarialSample]:
        if isinstance(index, slice):
            return self._make(np.arange(self._size)[index])
        position = range(self._size)[index]  # IndexError, TypeError as a list's
        return self._make(np.array([position]))[0]

    def __iter__(self) -> Iterator[AdversarialSample]:
        for start in range(0, self._size, SAMPLE_PART):
            yield from self._make(np.arange(start, min(start + SAMPLE_PART, self._size)))

    def __repr__(self) -> str:
        return f"<{self._size} adversarial samples>"

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as the list of every sample (made now): another process has no access
        to the campaign's arrays."""
        return (list, (list(self),))


@dataclass
class CampaignResult:
    """Everything a campaign found; complete even when the campaign was interrupted."""

    test_cases: int
    adversarial: int
    unique: int
    average_perturbation: float | None
    distance: str
    rates: dict[str, float]
    covered: dict[str, int]
    totals: dict[str, int]
    coverage_times: dict[str, list[int]]
    minimal_suite: list[int]
    diversity: float | None
    growth: list[dict[str, Any]]
    discarded: int = 0
    interrupted: bool = False
    adversarial_ids: list[int] = field(default_factory=list)
    samples: list[AdversarialSample] = field(default_factory=list)
    oracle: str = ""
    mutator: str = ""
    average_found_perturbation: float | None = None
    failures_per_seed: dict[int, int] = field(default_factory=dict)
    failures_per_class_pair: dict[str, int] = field(default_factory=dict)
    shrink_calls: int = 0
    schedule: str = "adaptive"
    objective: str = "both"
    #: True when every sample was shrunk; False when shrinking was cut short or skipped
    #: after a Ctrl-C (the samples are as found); None when there was nothing to shrink or
    #: shrinking was off
    shrunk: bool | None = None

    @property
    def adversary_rate(self) -> float:
        return self.adversarial / self.test_cases if self.test_cases else 0.0

    def summary(
        self,
        model: str = "",
        saved_to: str | None = None,
        gallery: Sequence[dict[str, Any]] = (),
        samples_error: str | None = None,
    ) -> "CampaignSummary":
        """What the reports show of this campaign (``gallery``: a few samples as
        ``reporting.samples.gallery_entries`` gives them; ``samples_error``: why its samples
        could not be saved)."""
        return CampaignSummary(
            model=model,
            test_cases=self.test_cases,
            adversarial=self.adversarial,
            adversary_rate=self.adversary_rate,
            unique=self.unique,
            average_perturbation=self.average_perturbation,
            average_found_perturbation=self.average_found_perturbation,
            distance=self.distance,
            diversity=self.diversity,
            rates=dict(self.rates),
            minimal_suite_size=len(self.minimal_suite),
            discarded=self.discarded,
            failures_per_class_pair=dict(self.failures_per_class_pair),
            failing_seeds=len(self.failures_per_seed),
            shrink_calls=self.shrink_calls,
            schedule=self.schedule,
            objective=self.objective,
            interrupted=self.interrupted,
            shrunk=self.shrunk,
            oracle=self.oracle,
            mutator=self.mutator,
            growth=thinned(self.growth, GROWTH_POINTS),
            saved_to=saved_to,
            gallery=list(gallery),
            samples_error=samples_error,
        )


#: the most gallery samples and growth points a summary may hold
MAX_GALLERY, MAX_GROWTH = 256, 100_000
#: the growth points a summary keeps of a campaign's (one per model call: a long campaign
#: of small batches makes more than a file may hold)
GROWTH_POINTS = 2_000


def thinned(points: Sequence[Any], limit: int) -> list[Any]:
    """At most ``limit`` (>= 2) of ``points``, evenly spaced, the first and last kept."""
    if len(points) <= limit:
        return list(points)
    return [points[i] for i in np.linspace(0, len(points) - 1, limit).round().astype(int)]


_COUNTS = (
    "test_cases",
    "adversarial",
    "unique",
    "minimal_suite_size",
    "discarded",
    "failing_seeds",
    "shrink_calls",
)
_TEXTS = ("model", "distance", "schedule", "objective", "oracle", "mutator")
#: a summary's optional measures and the interval each lies in (diversity, -(1/n^2) times a
#: sum of n^2 cosines that is a squared norm, lies in [-1, 0])
_MEASURES = {
    "average_perturbation": (0.0, math.inf),
    "average_found_perturbation": (0.0, math.inf),
    "diversity": (-1.0, 0.0),
}


@dataclass
class CampaignSummary:
    """One campaign as the reports show it, and as data files, the JSON report and a
    campaign folder's ``summary.json`` hold it (:meth:`to_json` / :meth:`from_json`)."""

    model: str
    test_cases: int
    adversarial: int
    adversary_rate: float
    unique: int
    average_perturbation: float | None
    average_found_perturbation: float | None
    distance: str
    diversity: float | None
    rates: dict[str, float]
    minimal_suite_size: int
    discarded: int
    failures_per_class_pair: dict[str, int]
    failing_seeds: int
    shrink_calls: int
    schedule: str
    objective: str
    interrupted: bool
    shrunk: bool | None
    oracle: str
    mutator: str
    growth: list[dict[str, Any]]
    saved_to: str | None
    gallery: list[dict[str, Any]]
    #: why the samples could not all be saved (a full disk): the campaign went on without
    #: them; None (and left out of the JSON) when nothing failed
    samples_error: str | None = None

    def to_json(self) -> dict[str, Any]:
        data = {f.name: getattr(self, f.name) for f in fields(self)}
        if data["samples_error"] is None:
            del data["samples_error"]
        return data

    @classmethod
    def from_json(cls, data: Any, where: str, *, legacy: bool = False) -> "CampaignSummary":
        """Read ``to_json`` output, every field checked (DataFileError naming it); with
        ``legacy`` (data files of version 1), ``shrunk`` may be missing."""
        f = Fields(data, where)
        names = [x.name for x in fields(cls)]
        f.exact_keys(
            [n for n in names if not (legacy and n == "shrunk") and n != "samples_error"],
            optional=("shrunk", "samples_error") if legacy else ("samples_error",),
        )
        for key in _COUNTS:
            if not 0 <= f.get(key, int) < 2**62:
                raise f.fail(f"{key!r} is {data[key]}, not a count")
        if data["adversarial"] > data["test_cases"] or data["unique"] > data["adversarial"]:
            raise f.fail(
                "more adversarial samples than test cases, or more unique seeds than "
                "adversarial samples"
            )
        if not 0 <= f.get("adversary_rate", float) <= 1:
            raise f.fail(f"'adversary_rate' is {data['adversary_rate']!r}, not a fraction")
        for key in _TEXTS:
            f.get(key, str)
        for key, (low, high) in _MEASURES.items():
            value = f.get(key, (float, type(None)))
            if value is not None and not (math.isfinite(value) and low <= value <= high):
                within = f">= {low:g}" if high == math.inf else f"in [{low:g}, {high:g}]"
                raise f.fail(f"{key!r} must be a number {within} or null")
        f.get("interrupted", bool)
        if "shrunk" in data:
            f.get("shrunk", (bool, type(None)))
        f.get("saved_to", (str, type(None)))
        if "samples_error" in data:
            f.get("samples_error", str)
        if data["failing_seeds"] > data["adversarial"]:
            raise f.fail("'failing_seeds' is larger than 'adversarial'")
        rates = f.get("rates", dict)
        for name in rates:
            _check_rate(Fields(rates, f"{where}, rates"), name)
        pairs = f.get("failures_per_class_pair", dict)
        for name in pairs:
            _check_name(Fields(pairs, f"{where}, failures_per_class_pair"), name)
            if not 0 <= Fields(pairs, where).get(name, int) <= data["adversarial"]:
                raise f.fail(f"failures_per_class_pair {name!r} is not a count of its samples")
        growth = f.get("growth", list)
        if len(growth) > MAX_GROWTH:
            raise f.fail(f"'growth' holds more than {MAX_GROWTH} points")
        for index, point in enumerate(growth):
            _check_point(point, f"{where}, growth point {index}", growth[0])
        gallery = f.get("gallery", list)
        if len(gallery) > MAX_GALLERY:
            raise f.fail(f"'gallery' holds more than {MAX_GALLERY} samples")
        for index, item in enumerate(gallery):
            _check_sample(item, f"{where}, gallery sample {index}")
        values = {name: data.get(name) for name in names}
        return cls(**values)


def _check_point(point: Any, where: str, first: Any) -> None:
    """A growth point: a test-case count, a phase and a rate per metric (the first's keys)."""
    f = Fields(point, where)
    if not 0 <= f.get("test_cases", int) < 2**62:
        raise f.fail("'test_cases' is not a count")
    f.get("phase", str)
    for key in point:
        if key not in ("test_cases", "phase"):
            _check_rate(f, key)
    if isinstance(first, dict) and set(point) != set(first):
        raise f.fail("its keys differ from the first point's")


def _check_name(f: Fields, name: str) -> None:
    """A metric's or class pair's name: printable text of at most 64 characters."""
    if not (0 < len(name) <= 64 and name.isprintable()):
        raise f.fail(f"{name[:64]!r} is not a name (printable, 1 to 64 characters)")


def _check_rate(f: Fields, name: str) -> None:
    """A rate keyed by a metric's name: a fraction in [0, 1]."""
    _check_name(f, name)
    rate = f.get(name, float)
    if not 0 <= rate <= 1:
        raise f.fail(f"rate {name!r} is {rate!r}, not a fraction in [0, 1]")


def _check_sample(item: Any, where: str) -> None:
    """A gallery sample: seed and case (both text, or numeric arrays of one shape), seed
    index, decisions, distance and clip."""
    f = Fields(item, where)
    f.exact_keys(
        ("seed_index", "seed", "case", "seed_decision", "case_decision", "distance", "clip")
    )
    if not 0 <= f.get("seed_index", int) < 2**62:
        raise f.fail("'seed_index' is not a count")
    distance = f.get("distance", float)
    if not (math.isfinite(distance) and distance >= 0):
        raise f.fail(f"'distance' is {distance!r}, not a number >= 0")
    for key in ("seed_decision", "case_decision"):
        decision = f.get(key, (str, float))
        if isinstance(decision, float) and not math.isfinite(decision):
            raise f.fail(f"{key!r} is {decision!r}, not a finite number or text")
    seed, case = item["seed"], item["case"]
    if isinstance(seed, str) or isinstance(case, str):
        if not (isinstance(seed, str) and isinstance(case, str)):
            raise f.fail("'seed' and 'case' must both be text or both arrays")
    elif _shape(seed, f, "seed") != _shape(case, f, "case"):
        raise f.fail("'seed' and 'case' differ in shape")
    clip = f.get("clip", list)
    if clip and not (
        len(clip) == 2
        and all(isinstance(v, float) and abs(v) <= FLOAT32_MAX for v in clip)
        and clip[0] < clip[1]
    ):
        raise f.fail("'clip' must be [] or [low, high]")


def _shape(value: Any, f: Fields, key: str) -> tuple[int, ...]:
    """The shape of a nested list of finite floats (as written: no ints, no bools)."""
    shape: list[int] = []
    level = [value]
    while level and all(isinstance(v, list) for v in level):
        sizes = {len(v) for v in level}
        if len(sizes) != 1 or 0 in sizes:
            raise f.fail(f"{key!r} must be a non-empty rectangular array")
        shape.append(sizes.pop())
        level = [x for v in level for x in v]
    if not shape or not all(isinstance(v, float) and abs(v) <= FLOAT32_MAX for v in level):
        raise f.fail(f"{key!r} must be an array of floats within float32's range (model inputs)")
    return tuple(shape)
