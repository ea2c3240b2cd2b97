"""The coverage metrics, by family, and the registry that names and configures them."""

from __future__ import annotations

from typing import Any

from ...errors import InvalidArgument
from ..names import DEFAULT_METRICS, METRIC_NAMES, PRESET_NAMES
from .base import MAX_CONDITIONS, BatchResult, Metric, Signals
from .neuron import KMNC, NBC, NC, SNAC
from .stellar import BS, BT, SBC, WT
from .step import BC, SC
from .temporal import TC

__all__ = ["BC", "SC", "TC", "NC", "KMNC", "NBC", "SNAC", "BS", "SBC", "BT", "WT", "Metric",
           "Signals", "BatchResult", "METRICS", "DEFAULT_METRICS", "MAX_CONDITIONS",
           "PRESETS", "make_metric", "condition_label"]

METRICS: dict[str, type[Metric]] = {
    m.name: m for m in (BC, SC, TC, NC, KMNC, NBC, SNAC, BS, SBC, BT, WT)}
assert tuple(METRICS) == METRIC_NAMES

PRESETS: dict[str, dict[str, dict[str, Any]]] = {
    "paper": {},
    "testrnn": {
        "BC": {"component": "h", "abstraction": "net"},
        "SC": {"component": "h", "abstraction": "delta_net"},
    },
}
assert tuple(PRESETS) == PRESET_NAMES


def make_metric(spec: Any, preset: str = "paper") -> Metric:
    """A metric from a name ("BC", "TC", ...) under ``preset``, or a configured instance."""
    if isinstance(spec, Metric):
        return spec
    if not isinstance(preset, str) or preset not in PRESETS:
        raise InvalidArgument(f"preset={preset!r}; use one of {', '.join(map(repr, PRESETS))}")
    if not isinstance(spec, str) or spec.upper() not in METRICS:
        raise InvalidArgument(
            f"unknown metric {spec!r}; use one of {', '.join(METRICS)} or a Metric instance")
    name = spec.upper()
    return METRICS[name](**PRESETS[preset].get(name, {}))


def condition_label(metric: str, config: dict[str, Any], condition: int) -> str:
    """The name of a condition from a state's metric name and configuration."""
    return METRICS[metric].label_from_config(config, condition)
