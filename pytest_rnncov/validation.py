"""Central argument validation: every public constructor and function checks its arguments
here, so that a bad call fails at once with :class:`InvalidArgument`, naming the value
(its ``repr``, so ``"128"`` and ``128`` read differently) and saying what to pass instead.

Numbers accept Python and numpy scalars alike; booleans are never numbers.
"""

from __future__ import annotations

import math
import numbers
import os
import re
import sys
from typing import Any, Iterable, Literal, Sequence, overload

from .errors import InvalidArgument


def path_text(path: Any) -> str:
    """A file system path as text a file can hold: bytes the name has in no encoding (kept
    by Python as lone surrogates, which no UTF-8 file can hold) escaped, ``\\udce9``."""
    return str(path).encode("utf-8", "backslashreplace").decode("utf-8")


def cut(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, the last a "…" where it was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "…"


def shown(value: Any) -> str:
    """``repr(value)``, cut to 80 characters for messages."""
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


#: characters a terminal acts on instead of showing: C0 and C1 controls, DEL, and the
#: bidirectional overrides that reorder what is shown; and those that show nothing (zero
#: widths, direction marks, line and paragraph separators, the byte-order mark, the soft
#: hyphen, word joiners and invisible operators, tag characters), which make two names
#: look the same
_CONTROLS = re.compile(
    "[\x00-\x1f\x7f-\x9f\xad\u061c\u180e\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff"
    "\ud800-\udfff\U000e0000-\U000e007f]"
)


def printable(text: str, *, newlines: bool = False) -> str:
    """``text`` with every control character escaped as Python writes it (``\\x1b``), so
    a name read from a file cannot move the cursor, recolour or forge terminal lines (and
    a lone surrogate, which no file can encode, the same way: ``\\udc80``);
    ``newlines``: keep line breaks (text of several lines)."""

    def escape(match: re.Match[str]) -> str:
        char = match.group()
        if newlines and char == "\n":
            return char
        code = ord(char)
        if code < 0x100:
            return f"\\x{code:02x}"
        return f"\\u{code:04x}" if code < 0x10000 else f"\\U{code:08x}"

    return _CONTROLS.sub(escape, text)


def _is_integer(value: Any) -> bool:
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def _is_real(value: Any) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def _as_float(value: Any) -> float:
    """A real number as a float; integers beyond float's range become +-inf (not an
    OverflowError), so range checks refuse them by name."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def is_finite_number(value: Any) -> bool:
    """Whether ``value`` is a real number (not a bool) that is finite as a float."""
    return _is_real(value) and math.isfinite(_as_float(value))


def check_int(
    name: str,
    value: Any,
    *,
    minimum: int | None = None,
    maximum: int | None = None,
    example: str | None = None,
) -> int:
    """``value`` as an ``int`` (Python or numpy integer; not a float, bool or string)."""
    if not _is_integer(value):
        hint = f", e.g. {name}={example}" if example else ""
        kind = type(value).__name__
        raise InvalidArgument(f"{name}={shown(value)} ({kind}) must be an integer{hint}")
    number = int(value)
    if minimum is not None and number < minimum:
        raise InvalidArgument(f"{name}={number} must be an integer >= {minimum}")
    if maximum is not None and number > maximum:
        raise InvalidArgument(f"{name}={number} must be an integer <= {maximum}")
    return number


def check_float(
    name: str,
    value: Any,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    exclusive_minimum: bool = False,
    allow_infinite: bool = False,
    example: str | None = None,
) -> float:
    """``value`` as a finite ``float`` within bounds (Python or numpy number)."""
    hint = f", e.g. {name}={example}" if example else ""
    if not _is_real(value):
        raise InvalidArgument(
            f"{name}={shown(value)} ({type(value).__name__}) must be a number{hint}"
        )
    number = _as_float(value)
    if math.isnan(number) or (math.isinf(number) and not allow_infinite):
        raise InvalidArgument(f"{name}={number!r} must be a finite number{hint}")
    if minimum is not None:
        if exclusive_minimum and not number > minimum:
            raise InvalidArgument(f"{name}={number!r} must be > {minimum:g}{hint}")
        if not exclusive_minimum and not number >= minimum:
            raise InvalidArgument(f"{name}={number!r} must be >= {minimum:g}{hint}")
    if maximum is not None and not number <= maximum:
        raise InvalidArgument(f"{name}={number!r} must be <= {maximum:g}{hint}")
    return number


@overload
def check_fraction(name: str, value: Any, *, allow_none: Literal[False] = False) -> float: ...


@overload
def check_fraction(name: str, value: Any, *, allow_none: bool) -> float | None: ...


def check_fraction(name: str, value: Any, *, allow_none: bool = False) -> float | None:
    """A rate in [0, 1]; ``90`` is refused with a hint to write ``0.9``."""
    if value is None and allow_none:
        return None
    if not _is_real(value):
        raise InvalidArgument(
            f"{name}={shown(value)} ({type(value).__name__}) must be a number in [0, 1], "
            f"e.g. {name}=0.8"
        )
    number = _as_float(value)
    problem = fraction_problem(number)
    if problem is not None:
        raise InvalidArgument(f"{name}={number!r} must be a number in [0, 1]{problem}")
    return number


def fraction_problem(number: float) -> str | None:
    """None when ``number`` is a fraction in [0, 1]; else the hint to add to the message
    ("" or "; for 90% use 0.9"). The one range rule of every fraction the project reads."""
    if not math.isnan(number) and 0 <= number <= 1:
        return None
    return f"; for {number:g}% use {number / 100:g}" if 1 < number <= 100 else ""


def check_ascii_number(text: str, what: str, example: str) -> str:
    """``text`` unchanged when it is ASCII without ``_``: Python's ``float`` and ``int``
    also read other scripts' digits (``'٠.٩'`` is 0.9) and digit groups (``'0_5'`` is 5),
    which option values refuse by name."""
    if not text.isascii():
        odd = "".join(dict.fromkeys(c for c in text if not c.isascii()))
        raise InvalidArgument(
            f"{what} {shown(text)} holds non-ASCII characters ({odd!r}); "
            f"write it with ASCII digits, e.g. {example}".lstrip()
        )
    if "_" in text:  # float("0_5") is 5.0: Python's digit grouping, which no option uses
        raise InvalidArgument(
            f"{what} {shown(text)} holds '_'; write the number without it, e.g. {example}"
        )
    return text


def check_choice(name: str, value: Any, choices: Sequence[Any]) -> Any:
    """One of ``choices`` (compared with ``==``, strings only match strings)."""
    if not any(type(value) is type(c) and value == c for c in choices):
        raise InvalidArgument(f"{name}={shown(value)}; use one of {', '.join(map(repr, choices))}")
    return value


def check_bool(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise InvalidArgument(f"{name}={shown(value)} must be True or False")
    return value


def check_str(name: str, value: Any, *, allow_empty: bool = False) -> str:
    if not isinstance(value, str) or (not allow_empty and not value):
        raise InvalidArgument(f"{name}={shown(value)} must be a non-empty string")
    return value


def check_range(
    name: str,
    value: Any,
    *,
    minimum: float | None = None,
    example: str = "(0.0, 1.0)",
    allow_infinite: bool = False,
    strict: bool = True,
) -> tuple[float, float]:
    """A ``(low, high)`` pair of numbers with ``low < high`` (``<=`` when not ``strict``)."""
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise InvalidArgument(
            f"{name}={shown(value)} must be a pair (low, high), e.g. {name}={example}"
        )
    items = list(value)
    if len(items) != 2:
        raise InvalidArgument(
            f"{name}={shown(value)} must be a pair (low, high), e.g. {name}={example}"
        )
    low = check_float(f"{name}[0]", items[0], minimum=minimum, allow_infinite=allow_infinite)
    high = check_float(f"{name}[1]", items[1], minimum=minimum, allow_infinite=allow_infinite)
    if (strict and not low < high) or (not strict and not low <= high):
        relation = "<" if strict else "<="
        raise InvalidArgument(
            f"{name}={shown(value)} needs low {relation} high, e.g. {name}={example}"
        )
    return low, high


def check_window(value: Any) -> tuple[int, int] | None:
    """A window ``(t1, t2)`` of integer steps, or ``None`` (all steps)."""
    if value is None:
        return None
    if isinstance(value, (str, bytes)) or not isinstance(value, Iterable):
        raise InvalidArgument(
            f"window={shown(value)} is not a pair of step indices; pass e.g. window=(4, 24)"
        )
    items = list(value)
    if len(items) != 2 or not all(_is_integer(v) for v in items):
        raise InvalidArgument(
            f"window={shown(value)} is not a pair of integer step indices; pass e.g. "
            "window=(4, 24) (both ends inclusive, 0-based; negatives count from the end)"
        )
    return int(items[0]), int(items[1])


#: where a container's memory limit is read: cgroup v2, then v1 ("max" or a huge number:
#: no limit)
CGROUP_LIMITS = (
    "/sys/fs/cgroup/memory.max",
    "/sys/fs/cgroup/memory/memory.limit_in_bytes",
)


def physical_memory() -> int:
    """The memory this process may use in bytes: the machine's physical memory, or the
    container's limit (cgroup) where that is lower; unbounded where the system says
    neither."""
    try:
        memory = int(os.sysconf("SC_PHYS_PAGES")) * int(os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, OSError, ValueError):
        memory = sys.maxsize
    for path in CGROUP_LIMITS:
        try:
            with open(path, encoding="ascii") as file:
                text = file.read(64).strip()
        except (OSError, ValueError):
            continue
        if text.isdigit() and int(text) > 0:
            memory = min(memory, int(text))
    return memory
