"""pytest-rnncov: coverage-guided testing of recurrent models as a pytest gate.

The public names load lazily, so ``import pytest_rnncov`` (and the pytest plugin) stays
free of numpy and of every deep-learning framework until a model is actually wrapped.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.2.0"

_EXPORTS = {
    "load_model": "adapters.loading",
    "load_torch_model": "adapters.loading",
    "RNNModel": "adapters.model",
    "Trace": "core.trace",
    "Profile": "core.profile",
    "Coverage": "core.coverage",
    "BC": "core.metrics",
    "SC": "core.metrics",
    "TC": "core.metrics",
    "NC": "core.metrics",
    "KMNC": "core.metrics",
    "NBC": "core.metrics",
    "SNAC": "core.metrics",
    "BS": "core.metrics",
    "SBC": "core.metrics",
    "BT": "core.metrics",
    "WT": "core.metrics",
    "Metric": "core.metrics",
    "MetricState": "core.state",
    "ModelState": "core.state",
    "coverage_delta": "core.delta",
    "DeltaReport": "core.delta",
    "Campaign": "generation.campaign",
    "CampaignResult": "generation.results",
    "GAConfig": "generation.ga",
    "AdversarialSample": "generation.results",
    "Mutator": "generation.mutators",
    "GaussianMutator": "generation.mutators",
    "EDAMutator": "generation.text",
    "SmilesMutator": "generation.text",
    "TimeSeriesMutator": "generation.series",
    "Oracle": "generation.oracle",
    "CharEncoder": "generation.encoders",
    "WordEncoder": "generation.encoders",
    "Mutant": "generation.strategies",
    "random_mutants": "generation.strategies",
    "targeted_mutants": "generation.strategies",
    "model_settings": "generation.strategies",
    "SampleWriter": "reporting.samples",
    "CoverageData": "reporting.data",
    "RNNCovError": "errors",
    "InvalidArgument": "errors",
    "InvalidInput": "errors",
    "ModelError": "errors",
    "UnsafeModel": "errors",
    "UnknownLayer": "errors",
    "ProfileError": "errors",
    "StaleProfile": "errors",
    "DegenerateProfile": "errors",
    "DataFileError": "errors",
    "OutputConflict": "errors",
    "MissingResource": "errors",
    "AdversarialFailure": "errors",
    "RNNCovWarning": "errors",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module 'pytest_rnncov' has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
