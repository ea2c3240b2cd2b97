"""``@pytest.mark.rnn_coverage``: the coverage of the inputs one test fed, against a bar."""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any, Sequence

import pytest

from ..config.bars import Bars
from ..config.values import comma_names, parse_metrics
from ..core.state import ModelState
from ..errors import InvalidArgument
from ..reporting.results import MarkerOutcome, check_models
from ..validation import shown
from .options import Settings

KEYWORDS = ("min", "metrics", "model")


def _names(value: Any, what: str) -> list[str]:
    """A list of names from a list or a comma-separated string."""
    if isinstance(value, str):
        return comma_names(value, f"{what}=")
    if isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
        return list(value)
    raise InvalidArgument(
        f"{what}={value!r}; pass a name, a comma-separated string or a list of names"
    )


@dataclass(frozen=True)
class MarkerBars:
    """One ``rnn_coverage`` marker read: its bars, the models it names (None: every model
    the test fed) and whether the bars are the session's (no ``min=``: they apply to the
    marker's models only)."""

    bars: Bars
    models: list[str] | None
    inherited: bool


def marker_bars(marker: pytest.Mark, settings: Settings) -> MarkerBars:
    """The marker's bars and the models it names, read before the test runs;
    InvalidArgument (its message the test's failure) if they are wrong."""
    options = dict(marker.kwargs)
    unknown = sorted(set(options) - set(KEYWORDS))
    if marker.args or unknown:
        given = ", ".join(map(repr, marker.args)) if marker.args else ", ".join(unknown)
        raise InvalidArgument(
            f"rnn_coverage marker takes the keywords min=, metrics=, model=; got {given}"
        )
    required, default = options.get("min"), settings.bars
    if required is None and default is None:
        raise InvalidArgument("rnn_coverage marker needs min=..., or run with --rnn-coverage=...")
    try:
        metrics = settings.gate_metrics
        if options.get("metrics") is not None:
            metrics = parse_metrics(",".join(_names(options["metrics"], "metrics")))
        if required is None:
            assert default is not None  # refused above
            bars = default.for_metrics(metrics)
        else:
            if isinstance(required, bool) or not isinstance(required, (numbers.Real, str)):
                raise InvalidArgument(
                    f"min={required!r}; pass a fraction such as 0.8 or bars such as 'BC:0.9,TC:0.4'"
                )
            try:
                text = (
                    required
                    if isinstance(required, str)
                    else str(int(required))
                    if isinstance(required, numbers.Integral) and abs(int(required)) < 2**53
                    else repr(float(required))
                )
            except OverflowError:
                raise InvalidArgument(
                    f"min={shown(required)} is not a fraction in [0, 1]"
                ) from None
            bars = Bars.parse(text, metrics)
        models = _names(options["model"], "model") if options.get("model") is not None else None
        if models == []:
            raise InvalidArgument(
                f"model={options['model']!r} names no model; name a tracked model, or leave "
                "model= out for every model the test feeds"
            )
        outside = [name for name in bars.named_models if models is not None and name not in models]
        if required is not None and outside:
            raise InvalidArgument(
                f"min={required!r} names model {outside[0]!r}, which model={models!r} leaves "
                "out; add it to model=, or drop its bar"
            )
    except InvalidArgument as exc:
        raise InvalidArgument(f"rnn_coverage marker: {exc}") from None
    return MarkerBars(bars, models, required is None)


def check_markers(markers: Sequence[MarkerBars], fed: dict[str, ModelState]) -> str | None:
    """The failure message for a test whose inputs miss its markers' bars (None: passed).
    ``markers`` come closest first, in pytest's order (``get_closest_marker``'s): each
    applies to the models it covers that no closer marker covers; one without ``model=``
    covers every model the test fed and those its bars name, and farther ones stop there."""
    claimed: set[str] = set()
    messages = []
    for marker in markers:
        if marker.models is None:  # every model it feeds, and those its own bars name
            named = [] if marker.inherited else marker.bars.named_models
            covers = sorted(set(fed) | set(named))
            if not covers:
                messages.append("rnn_coverage marker: this test fed no inputs to a tracked model")
        else:
            covers = marker.models
        mine = [name for name in covers if name not in claimed]
        if mine and (message := check_marker(marker, mine, fed)):
            messages.append(message)
        if marker.models is None:
            break
        claimed.update(marker.models)
    return "\n".join(messages) or None


def check_marker(marker: MarkerBars, wanted: list[str], fed: dict[str, ModelState]) -> str | None:
    """The failure message of one marker on the models ``wanted`` (None: passed): its bars
    that name no model or one of them apply (a bar naming a model a closer marker covers
    does not; the session's bars naming other models are not the marker's)."""
    for name in marker.models or ():  # a model only a bar names: check_models says so
        if name in wanted and name not in fed:
            return (
                f"rnn_coverage marker: this test fed no inputs to model {name!r} "
                f"(it fed: {', '.join(sorted(fed)) or 'none'})"
            )
    kept = [b for b in marker.bars.entries if b.model is None or b.model in wanted]
    if not kept and marker.inherited:
        return (
            f"rnn_coverage marker: --rnn-coverage sets no bar for "
            f"{', '.join(map(repr, wanted))} (its bars: {marker.bars.describe()}); give "
            "the marker min=..."
        )
    if not kept:
        return None  # each of its bars names a model a closer marker covers
    bars = Bars(kept, marker.bars.gate_metrics)
    outcome = MarkerOutcome(
        bars, check_models({n: fed[n] for n in wanted if n in fed}, bars), tuple(sorted(fed))
    )
    return None if outcome.passed else outcome.message()
