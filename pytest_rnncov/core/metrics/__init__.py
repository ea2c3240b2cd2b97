"""The coverage metrics, by family, and the registry that names and configures them."""

from __future__ import annotations

import inspect
import math
from typing import Any, Callable

from ...errors import InvalidArgument
from ...validation import is_finite_number, shown
from ..abstractions import ABSTRACTIONS
from ..names import DEFAULT_METRICS, METRIC_NAMES, PRESET_NAMES
from ..trace import CELL_COMPONENTS
from .base import MAX_CONDITIONS, BatchResult, Metric, Signals
from .neuron import KMNC, NBC, NC, SNAC
from .stellar import BS, BT, SBC, WT
from .step import BC, SC
from .temporal import MAX_ALPHABET, TC

__all__ = [
    "BC",
    "SC",
    "TC",
    "NC",
    "KMNC",
    "NBC",
    "SNAC",
    "BS",
    "SBC",
    "BT",
    "WT",
    "Metric",
    "Signals",
    "BatchResult",
    "METRICS",
    "DEFAULT_METRICS",
    "MAX_CONDITIONS",
    "PRESETS",
    "make_metric",
    "condition_label",
    "config_problem",
]

METRICS: dict[str, type[Metric]] = {
    m.name: m for m in (BC, SC, TC, NC, KMNC, NBC, SNAC, BS, SBC, BT, WT)
}
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
    if not isinstance(preset, str) or preset not in PRESETS:
        raise InvalidArgument(f"preset={preset!r}; use one of {', '.join(map(repr, PRESETS))}")
    if isinstance(spec, Metric):
        return spec
    if not isinstance(spec, str) or spec.upper() not in METRICS:
        raise InvalidArgument(
            f"unknown metric {spec!r}; use one of {', '.join(METRICS)} or a Metric instance"
        )
    name = spec.upper()
    return METRICS[name](**PRESETS[preset].get(name, {}))


def condition_label(metric: str, config: dict[str, Any], condition: int) -> str:
    """The name of a condition from a state's metric name and configuration."""
    return METRICS[metric].label_from_config(config, condition)


def _integer(low: int, high: int) -> Callable[[Any], bool]:
    return lambda v: type(v) is int and low <= v <= high


def _window(v: Any) -> bool:
    return (
        isinstance(v, list)
        and len(v) == 2
        and all(_integer(0, 1 << 31)(t) for t in v)
        and v[0] <= v[1]
    )


_COMPONENTS = {c for components in CELL_COMPONENTS.values() for c in components}
#: what each configuration field may hold
_FIELDS: dict[str, Callable[[Any], bool]] = {
    "window": _window,
    "component": lambda v: isinstance(v, str) and v in _COMPONENTS,
    "abstraction": lambda v: isinstance(v, str) and v in ABSTRACTIONS,
    "alpha_max": is_finite_number,
    "alpha_sc": is_finite_number,
    "threshold": is_finite_number,
    "upper": is_finite_number,
    "alpha_min": lambda v: v is None or is_finite_number(v),
    "lower": lambda v: v is None or is_finite_number(v),
    "w": _integer(1, 64),
    "a": _integer(2, MAX_ALPHABET),
    "k": _integer(1, MAX_CONDITIONS),  # the constructor bounds each metric's own k
    "units": _integer(1, MAX_CONDITIONS),
    "components": _integer(1, 4096),
    "intervals": _integer(1, 1 << 20),  # as a Profile's state_intervals
    "active": lambda v: isinstance(v, list) and all(_integer(0, MAX_CONDITIONS)(i) for i in v),
    "sides": lambda v: v in (["lower"], ["upper"], ["lower", "upper"]),
    "bounds": lambda v: isinstance(v, str) and v in ("fixed", "profile"),
}


_NEURON = ("window", "units")
_STATES = ("window", "components", "intervals")
#: the keys of each metric's ``config()``
CONFIG_KEYS: dict[str, tuple[str, ...]] = {
    "BC": ("component", "abstraction", "window", "alpha_max", "alpha_min"),
    "SC": ("component", "abstraction", "window", "alpha_sc"),
    "TC": ("component", "abstraction", "w", "a", "window"),
    "NC": (*_NEURON, "threshold"),
    "KMNC": (*_NEURON, "k", "active"),
    "NBC": (*_NEURON, "sides", "bounds", "lower", "upper"),
    "SNAC": (*_NEURON, "sides", "bounds", "lower", "upper"),
    "BS": _STATES,
    "BT": _STATES,
    "WT": _STATES,
    "SBC": (*_STATES, "k"),
}


def _steps(c: dict[str, Any]) -> int:
    return int(c["window"][1] - c["window"][0] + 1)


#: the number of conditions a configuration implies (None: it depends on the profile)
_TOTALS: dict[str, Callable[[dict[str, Any]], int | None]] = {
    "BC": lambda c: _steps(c) * (1 if c["alpha_min"] is None else 2),
    "SC": _steps,
    "TC": lambda c: int(c["a"]) ** int(c["w"]),
    "NC": lambda c: _steps(c) * c["units"],
    "KMNC": lambda c: len(c["active"]) * c["k"],
    "NBC": lambda c: _steps(c) * c["units"] * len(c["sides"]),
    "SNAC": lambda c: _steps(c) * c["units"] * len(c["sides"]),
    "BS": lambda c: None,
    "BT": lambda c: None,
    "WT": lambda c: None,
    "SBC": lambda c: 2 * c["k"] * c["components"],
}


def config_problem(metric: str, config: Any, total: int, describe: str) -> str | None:
    """What is wrong with a metric configuration read from a file (None: nothing): every
    field the metric writes, of the right type, accepted by the metric's constructor,
    agreeing with ``describe``, and implying ``total`` conditions."""
    if metric not in METRICS or not isinstance(config, dict):
        return f"no configuration of {metric!r} is {type(config).__name__}"
    expected = set(CONFIG_KEYS[metric])
    if set(config) != expected:
        return f"it must hold exactly the keys {sorted(expected)}"
    for key in sorted(expected):
        if not _FIELDS[key](config[key]):
            return f"{key!r} cannot be {shown(config[key])}"
    if metric == "KMNC" and (
        any(i >= _steps(config) * config["units"] for i in config["active"])
        or any(a >= b for a, b in zip(config["active"], config["active"][1:]))
    ):
        return "'active' must name distinct neurons of the window's units, in order"
    kind = METRICS[metric]
    if "sides" in config and config["sides"] != list(getattr(kind, "sides")):
        return f"'sides' of {metric} are {list(getattr(kind, 'sides'))}"
    if metric == "SNAC" and config["lower"] is not None:
        return "'lower' of SNAC must be null (SNAC has no lower bound)"
    implied = _TOTALS[metric](config)
    if implied is not None and implied != total:
        return f"it implies {implied} conditions, not {total}"
    parameters = inspect.signature(kind.__init__).parameters
    arguments = {k: config[k] for k in parameters if k in config}
    legacy = metric == "NBC" and arguments.get("lower", 0) is None
    if "lower" in arguments and arguments["lower"] is None:
        arguments["lower"] = -math.inf  # written as null: JSON has no -inf
    try:
        if legacy:  # NBC(lower=-inf), written before NBC refused it: read as it was
            rebuilt = kind(**arguments | {"lower": math.nextafter(arguments["upper"], -math.inf)})
            vars(rebuilt)["lower"] = -math.inf  # as the constructor once kept it
        else:
            rebuilt = kind(**arguments)
    except InvalidArgument as exc:
        return str(exc)
    try:
        described: str | None = rebuilt.describe()
    except AttributeError:  # described by what the profile gave it (DeepStellar metrics)
        described = None
    if described is not None and described != describe:
        return f"its description {describe!r} does not match its fields ({described!r})"
    return None
