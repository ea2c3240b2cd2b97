"""The metrics by name, and the presets that configure them."""

from __future__ import annotations

from typing import Any

from .deepstellar import BS, BT, SBC, WT
from .errors import InvalidArgument
from .metrics import BC, KMNC, NBC, NC, SC, SNAC, TC, Metric

METRICS: dict[str, type[Metric]] = {m.name: m for m in (BC, SC, TC, NC, KMNC, NBC, SNAC, BS, SBC, BT, WT)}

PRESETS: dict[str, dict[str, dict[str, Any]]] = {
    "paper": {},
    "testrnn": {
        "BC": {"component": "h", "abstraction": "net"},
        "SC": {"component": "h", "abstraction": "delta_net"},
    },
}


def make_metric(spec: str | Metric, preset: str = "paper") -> Metric:
    """A metric from a name ("BC", "TC", ...) under ``preset``, or a configured instance."""
    if isinstance(spec, Metric):
        return spec
    if preset not in PRESETS:
        raise InvalidArgument(f"preset={preset!r}; use one of {', '.join(PRESETS)}")
    if not isinstance(spec, str) or spec.upper() not in METRICS:
        raise InvalidArgument(
            f"unknown metric {spec!r}; use one of {', '.join(METRICS)} or a Metric instance"
        )
    name = spec.upper()
    return METRICS[name](**PRESETS[preset].get(name, {}))


