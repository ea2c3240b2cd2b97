"""pytest-rnncov: coverage-guided testing of LSTM models as a pytest gate.

The public names load lazily, so ``import pytest_rnncov`` (and the pytest plugin) stays
free of TensorFlow until a model is actually wrapped.
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

_EXPORTS = {
    "load_model": "keras_adapter",
    "RNNModel": "keras_adapter",
    "Trace": "trace",
    "Profile": "profile",
    "Coverage": "coverage",
    "BC": "metrics",
    "SC": "metrics",
    "TC": "metrics",
    "NC": "metrics",
    "KMNC": "metrics",
    "NBC": "metrics",
    "SNAC": "metrics",
    "Metric": "metrics",
    "BS": "deepstellar",
    "SBC": "deepstellar",
    "BT": "deepstellar",
    "WT": "deepstellar",
    "Campaign": "campaign",
    "CampaignResult": "campaign",
    "GAConfig": "campaign",
    "Mutator": "mutators",
    "GaussianMutator": "mutators",
    "EDAMutator": "mutators",
    "SmilesMutator": "mutators",
    "Oracle": "oracle",
    "CharEncoder": "encoders",
    "WordEncoder": "encoders",
    "Mutant": "strategies",
    "random_mutants": "strategies",
    "targeted_mutants": "strategies",
    "model_settings": "strategies",
    "coverage_delta": "delta",
    "DeltaReport": "delta",
    "RNNCovError": "errors",
    "InvalidArgument": "errors",
    "InvalidInput": "errors",
    "ModelError": "errors",
    "ProfileError": "errors",
    "StaleProfile": "errors",
    "DegenerateProfile": "errors",
    "MissingResource": "errors",
}

__all__ = sorted(_EXPORTS) + ["__version__"]


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    raise AttributeError(f"module 'pytest_rnncov' has no attribute {name!r}")


def __dir__() -> list[str]:
    return __all__
