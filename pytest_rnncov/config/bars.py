"""Coverage bars: what ``--rnn-coverage``, the ini and the marker ask for.

Numpy-free: the pytest hook module parses option values with it on every run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ..core.names import DEFAULT_METRICS, METRIC_NAMES
from ..errors import InvalidArgument
from ..validation import check_ascii_number, fraction_problem, shown


def percent(rate: float, below: float | None = None) -> str:
    """``rate`` as a percentage, with enough digits that it never reads as 100% unless it
    is 1 or as 0% unless it is 0 (as coverage.py shows it), and, with ``below``, that it
    reads as below that."""
    for digits in range(0, 4):
        text = f"{rate * 100:.{digits}f}%"
        shown = float(text[:-1])
        if (
            (below is None or shown < below * 100)
            and (shown < 100 or rate >= 1)
            and (shown > 0 or rate <= 0)
        ):
            return text
    near = 1e-4  # the last digit shown
    if below is not None and 0 < rate < below and below * 100 <= near:  # a bar under 0.0001%
        for digits in range(1, 18):
            text = f"{rate * 100:.{digits}g}%"
            if float(text[:-1]) < below * 100:
                return text
    top = 100.0 if rate >= 1 else 100 - near
    if below is not None and rate < below:
        top = min(top, below * 100 - near)
    return f"{min(max(rate * 100, near if rate > 0 else 0.0), top):.4f}%"


def percent_bar(bar: float) -> str:
    """A bar as a percentage, as precisely as it was written (0.0535 -> ``5.35%``): a rate
    shown below it with :func:`percent` never reads as equal to it."""
    return f"{bar * 100:.6g}%"


def parse_fraction(text: str, what: str) -> float:
    """A bar in [0, 1] from ASCII text; ``90`` is refused with "for 90% use 0.9"."""
    if isinstance(text, str):
        check_ascii_number(text, what, "0.9")
    try:
        number = float(text)
    except (TypeError, ValueError):
        raise InvalidArgument(
            f"{what} {text!r} is not a number; give a fraction such as 0.9"
        ) from None
    if number == 0 and any(c in "123456789" for c in str(text).lower().split("e")[0]):
        raise InvalidArgument(f"{what} {text!r} is too small to tell from 0; write 0 for no bar")
    problem = fraction_problem(number)
    if problem is not None:
        raise InvalidArgument(f"{what} {text} is not a fraction in [0, 1]{problem}")
    return number + 0.0  # -0 is 0 (it read "-0%")


@dataclass(frozen=True)
class Bar:
    """A required coverage rate, for one metric and/or one model (None: any)."""

    value: float
    metric: str | None = None
    model: str | None = None

    def text(self) -> str:
        """The bar as written on the command line (``mnist:*:0.6``, ``TC:0.4``, ``0.9``)."""
        if self.model is not None:
            return f"{self.model}:{self.metric or '*'}:{self.value:g}"
        return f"{self.metric}:{self.value:g}" if self.metric else f"{self.value:g}"


def parse_bars(text: Any) -> tuple[Bar, ...]:
    """Bars as written: ``0.9``, ``BC:0.9,TC:0.4``, ``mnist:TC:0.4`` or ``mnist:*:0.8``
    (a number is taken as a plain bar); each wrong entry is refused by name."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        if isinstance(text, int) and abs(text) >= 2**53:
            raise InvalidArgument(f"coverage bar {shown(text)} is not a fraction in [0, 1]")
        text = str(text) if isinstance(text, int) else repr(float(text))
    if not isinstance(text, str) or not text.strip():
        raise InvalidArgument(f"coverage bar {text!r}: give e.g. 0.9 or BC:0.9,TC:0.4")
    entries: list[Bar] = []
    raws = text.split(",")
    for index, raw in enumerate(raws):
        entry = raw.strip()
        before = raws[index - 1].strip() if index else ""
        number = before.split(":")[-1].strip()
        if (  # "0,9", "BC:0,9", "BC:0,1": bars no one means (9, a plain bar twice, BC at 0)
            entry.isascii()  # "²".isdigit(), but int("²") fails: parse_fraction refuses it
            and entry.isdigit()
            and number.isdigit()
            and (int(entry) > 1 or ":" not in before or int(number) == 0)
        ):
            written = f"{before},{entry}"
            raise InvalidArgument(
                f"coverage bar {written!r}: a comma separates bars, so this reads as two; "
                f"for a decimal write a point ({written.replace(',', '.')})"
            )
        parts = [p.strip() for p in entry.split(":")]
        if not entry or len(parts) > 3 or not all(parts):
            raise InvalidArgument(
                f"coverage bar {entry!r}: write BAR, METRIC:BAR or MODEL:METRIC:BAR, e.g. "
                "0.9 or BC:0.9,TC:0.4 or mnist:TC:0.4"
            )
        model = parts[0] if len(parts) == 3 else None
        if model == "*":  # no model is named '*' (track() refuses it): it could never match
            every = ":".join(parts[1:]) if parts[1] != "*" else parts[2]
            raise InvalidArgument(
                f"coverage bar {entry!r}: '*' is not a model; for every model write {every}"
            )
        metric = parts[-2].upper() if len(parts) >= 2 else None
        if metric is not None and _is_number(parts[-2]):
            raise InvalidArgument(
                f"coverage bar {entry!r}: {parts[-2]!r} stands where a metric goes; write "
                "BAR, METRIC:BAR or MODEL:METRIC:BAR, e.g. 0.9 or BC:0.9,TC:0.4 or mnist:TC:0.4"
            )
        if metric == "*":
            metric = None
        if metric is not None and metric not in METRIC_NAMES:
            raise InvalidArgument(
                f"coverage bar {entry!r}: unknown metric {parts[-2]!r}; choose from "
                f"{','.join(METRIC_NAMES)} (or * for every gate metric)"
            )
        entries.append(Bar(parse_fraction(parts[-1], f"coverage bar {entry!r}:"), metric, model))
    return tuple(entries)


def latest_bars(occurrences: Sequence[Sequence[Bar]]) -> list[Bar]:
    """The bars of a repeated option, each occurrence's in turn: a bar for a model and
    metric given again takes the later value (as pytest's own options do, so the command
    line overrides ``addopts``); one occurrence naming a bar twice is refused."""
    latest: dict[tuple[str | None, str | None], Bar] = {}
    for entries in occurrences:
        Bars(entries)  # one value naming a model's metric twice is a mistake
        latest.update(((bar.model, bar.metric), bar) for bar in entries)
    return list(latest.values())


class Bars:
    """The coverage bars of a gate.

    ``Bars.parse("0.9")`` gates every gate metric at 0.9; ``"BC:0.9,TC:0.4"`` gates BC and
    TC with their own bars; ``"mnist:TC:0.4"`` gates one model's metric (``mnist:*:0.8``
    every gate metric of that model). The most specific bar applies.
    """

    def __init__(
        self, entries: Sequence[Bar], gate_metrics: Sequence[str] = DEFAULT_METRICS
    ) -> None:
        if not entries:
            raise InvalidArgument("no coverage bar given; e.g. --rnn-coverage=0.9")
        seen: set[tuple[str | None, str | None]] = set()
        for bar in entries:  # repeated options add up, so the same bar twice is a mistake
            if (bar.model, bar.metric) in seen:
                raise InvalidArgument(f"coverage bar {bar.text()!r} is given twice")
            seen.add((bar.model, bar.metric))
        self.entries = tuple(entries)
        self.gate_metrics = tuple(gate_metrics)

    @classmethod
    def parse(cls, text: Any, gate_metrics: Sequence[str] = DEFAULT_METRICS) -> "Bars":
        """``Bars`` from their written form (see :func:`parse_bars`)."""
        return cls(parse_bars(text), gate_metrics)

    def for_metrics(self, gate_metrics: Sequence[str]) -> "Bars":
        """The same bars with a plain bar applying to ``gate_metrics`` (the marker's)."""
        return Bars(self.entries, gate_metrics)

    @property
    def named_metrics(self) -> tuple[str, ...]:
        """Metrics a bar names (they are tracked and gated even outside the gate metrics)."""
        return tuple(dict.fromkeys(b.metric for b in self.entries if b.metric is not None))

    @property
    def named_models(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(b.model for b in self.entries if b.model is not None))

    def lookup(self, model: str, metric: str) -> float | None:
        """The bar for ``metric`` of ``model``, the most specific first (None: not gated)."""
        ranked: list[tuple[int, float]] = []
        for bar in self.entries:
            if bar.model not in (None, model) or bar.metric not in (None, metric):
                continue
            if bar.metric is None and metric not in self.gate_metrics:
                continue
            ranked.append(((bar.model is not None) + 2 * (bar.metric is not None), bar.value))
        return max(ranked)[1] if ranked else None

    def gated(self, model: str) -> list[tuple[str, float]]:
        """(metric, bar) pairs that apply to ``model``, in metric order."""
        candidates = dict.fromkeys(self.gate_metrics + self.named_metrics)
        out = []
        for metric in sorted(candidates, key=_metric_order):
            value = self.lookup(model, metric)
            if value is not None:
                out.append((metric, value))
        return out

    @property
    def single(self) -> float | None:
        """The one bar when a single global bar is given (the classic ``--rnn-coverage=0.9``)."""
        if (
            len(self.entries) == 1
            and self.entries[0].metric is None
            and self.entries[0].model is None
        ):
            return self.entries[0].value
        return None

    def describe(self) -> str:
        if self.single is not None:
            return f"{self.single:g} on {','.join(self.gate_metrics)}"
        return ",".join(b.text() for b in self.entries)

    def to_json(self) -> list[dict[str, Any]]:
        return [{"model": b.model, "metric": b.metric, "bar": b.value} for b in self.entries]


def _metric_order(name: str) -> int:
    return METRIC_NAMES.index(name) if name in METRIC_NAMES else len(METRIC_NAMES)


def _is_number(text: str) -> bool:
    """Whether ``text`` reads as a number (a bar written where a metric goes)."""
    try:
        float(text)
    except ValueError:
        return False
    return True
