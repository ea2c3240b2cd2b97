"""What a campaign reports: each model call's :class:`Step`, the adversarial samples it
found and the :class:`CampaignResult` (listeners receive them: ``campaign.CampaignListener``)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

@dataclass
class Step:
    """What one model call of a campaign did."""

    phase: str  # "seeds", "random" or "targeted"
    cases: int
    new_conditions: dict[str, int]
    adversarial: int
    target: str | None = None  # "TC:abcab" for a targeted generation


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
    schedule: str = "stall"
    objective: str = "coverage"
    #: True when every sample was shrunk; False when shrinking was cut short (the samples
    #: are as found); None when there was nothing to shrink or shrinking was off
    shrunk: bool | None = None

    @property
    def adversary_rate(self) -> float:
        return self.adversarial / self.test_cases if self.test_cases else 0.0

    def summary(self, model: str = "") -> dict[str, Any]:
        """The JSON-ready figures the reports show (samples are in ``samples``)."""
        return {
            "model": model,
            "test_cases": self.test_cases,
            "adversarial": self.adversarial,
            "adversary_rate": self.adversary_rate,
            "unique": self.unique,
            "average_perturbation": self.average_perturbation,
            "average_found_perturbation": self.average_found_perturbation,
            "distance": self.distance,
            "diversity": self.diversity,
            "rates": self.rates,
            "minimal_suite_size": len(self.minimal_suite),
            "discarded": self.discarded,
            "failures_per_class_pair": self.failures_per_class_pair,
            "failing_seeds": len(self.failures_per_seed),
            "shrink_calls": self.shrink_calls,
            "schedule": self.schedule,
            "objective": self.objective,
            "interrupted": self.interrupted,
            "shrunk": self.shrunk,
            "oracle": self.oracle,
            "mutator": self.mutator,
            "growth": self.growth,
        }
