"""Parsers of the option values the plugin and the command line share (numpy-free)."""

from __future__ import annotations

from ..core.names import METRIC_NAMES
from ..errors import InvalidArgument
from ..validation import check_ascii_number

REPORT_TYPES = ("term", "term-detail", "json", "html", "markdown")
DEFAULT_JSON = "rnncov.json"
DEFAULT_HTML = "rnncov-html"
DEFAULT_MARKDOWN = "rnncov.md"
MAX_SEED = 2**63 - 1


def comma_names(value: str, what: str, example: str = "") -> list[str]:
    """The names of a comma-separated list, stripped (none for a blank value);
    InvalidArgument naming ``what`` (``"metrics "``, ``"model="``) for an empty entry
    (``BC,,SC``, ``BC,``: a typo that may have lost a name)."""
    names = [v.strip() for v in value.split(",")]
    if "" in names and any(names):
        raise InvalidArgument(
            f"{what}{value!r} has an empty entry; separate names by single commas{example}"
        )
    return [name for name in names if name]


def parse_metrics(value: str) -> tuple[str, ...]:
    """Comma-separated metric names, e.g. ``BC,SC,TC`` (case-insensitive, each once)."""
    names = [n.upper() for n in comma_names(value, "metrics ", ", e.g. BC,SC,TC")]
    if not names:
        raise InvalidArgument(f"metrics {value!r} names no metric; give e.g. BC,SC,TC")
    unknown = [n for n in names if n not in METRIC_NAMES]
    if unknown:
        raise InvalidArgument(
            f"unknown metric {', '.join(unknown)}; choose from {','.join(METRIC_NAMES)}"
        )
    return tuple(dict.fromkeys(names))


def parse_report(value: str) -> tuple[str, str | None]:
    """``term``, ``term-detail``, ``json[:PATH]``, ``html[:DIR]`` or ``markdown[:PATH]``."""
    kind, _, dest = value.partition(":")
    if kind not in REPORT_TYPES:
        raise InvalidArgument(
            f"unknown report type {kind!r}; use term, term-detail, json:PATH, html:DIR or "
            "markdown:PATH"
        )
    if kind.startswith("term") and dest:
        raise InvalidArgument(f"{kind} takes no destination; use {kind}")
    if kind == "json":
        return kind, dest or DEFAULT_JSON
    if kind == "html":
        return kind, dest or DEFAULT_HTML
    if kind == "markdown":
        return kind, dest or DEFAULT_MARKDOWN
    return kind, None


def parse_seed(value: str) -> int:
    """A seed in [0, 2**63 - 1], written in ASCII digits."""
    check_ascii_number(value, "seed", "0")
    try:
        number = int(value)
    except ValueError:
        raise InvalidArgument(
            f"{value!r} is not an integer seed; write a whole number, e.g. 0"
        ) from None
    if not 0 <= number <= MAX_SEED:
        raise InvalidArgument(f"{value} is not a seed in [0, 2**63 - 1]; e.g. 0")
    return number
