"""The Markdown report, for CI job summaries (``$GITHUB_STEP_SUMMARY``) and pull requests:
the coverage table, the adversarial samples table and the verdict, as GitHub-flavoured
Markdown. It renders the same rows as the terminal report."""

from __future__ import annotations

import re

from ..validation import printable
from .attribution import summary_lines
from .data import CoverageData
from .results import Verdict
from .terminal import adversarial_rows, campaign_notes, coverage_rows, exclusion_lines

#: the first line of every Markdown report: how ``files.file_kind`` knows one it wrote
MARKDOWN_MARK = "<!-- pytest-rnncov report -->"
_ESCAPES = str.maketrans(
    {
        "|": "\\|",
        "\\": "\\\\",
        "<": "&lt;",
        ">": "&gt;",
        "&": "&amp;",
        "`": "\\`",
        "*": "\\*",
        "_": "\\_",
        "[": "\\[",
        "]": "\\]",
        "$": "\\$",  # GitHub renders $...$ as mathematics
        "~": "\\~",  # ~~text~~ is struck through
    }
)
#: what GitHub links on its own (www.x.org, http://x.org): escaped, it is text
_AUTOLINK = re.compile(r"(?i)(?<![a-z0-9.])(www)\.|(?<=[a-z]):(?=//)")
#: what makes a line's start a heading, quote, list item or rule: escaped, it is text
_BLOCK_START = re.compile(r"[#>+=-]|\d{1,9}(?=[.)])")


def escape(text: str) -> str:
    """``text`` shown literally in a Markdown table cell or line (model names are the
    user's: a ``|`` would split the cell, ``<`` could open HTML, ``$`` start mathematics;
    control characters and direction overrides are shown escaped, as in the terminal)."""
    shown = printable(text.replace("\r", " ").replace("\n", " ")).translate(_ESCAPES)
    return _AUTOLINK.sub(lambda m: f"{m.group(1)}\\." if m.group(1) else "\\:", shown)


def escape_line(text: str) -> str:
    """``escape`` for a line or a list item's text: a ``#``, ``>``, ``+``, ``=``, ``-`` or
    ``1.`` at its start is shown literally, not as a heading, quote or list."""
    shown = escape(text)
    start = _BLOCK_START.match(shown)
    if start is None:
        return shown
    return (
        f"{start.group()}\\{shown[start.end() :]}" if start.group()[0].isdigit() else "\\" + shown
    )


def _cells(row: list[str]) -> str:
    return "| " + " | ".join(escape(c) for c in row) + " |"


def _table(rows: list[list[str]], numeric: range) -> list[str]:
    """A Markdown table; the ``numeric`` columns are right-aligned."""
    head, *body = rows
    align = ["---:" if i in numeric else "---" for i in range(len(head))]
    return [_cells(head), "| " + " | ".join(align) + " |", *(_cells(row) for row in body)]


class MarkdownReport:
    """The Markdown report: a heading, the coverage table, the adversarial samples table
    (when campaigns ran) and the verdict's lines, failures in bold; with ``tests``, the
    tests that covered each condition first (attribution), in a fenced block."""

    def __init__(self, tests: bool = False) -> None:
        self.tests = tests

    def render(self, data: CoverageData, verdict: Verdict) -> str:
        lines = [MARKDOWN_MARK, "### RNN coverage", ""]
        rows = coverage_rows(data, verdict)
        if len(rows) > 1:
            lines += _table(rows, numeric=range(3, len(rows[0])))
            excluded = exclusion_lines(data)
            if excluded:
                lines += ["", *(f"- {escape_line(line)}" for line in excluded)]
        else:
            lines.append(escape_line(rows[0][0]))
        if data.track_errors and data.models:
            lines += ["", escape_line("rnncov.track() failed: " + "; ".join(data.track_errors))]
        if data.campaigns:
            lines += ["", "### RNN adversarial samples", ""]
            table = adversarial_rows(data.campaigns)  # the last column: where samples went
            lines += _table(table, numeric=range(1, len(table[0]) - 1))
            notes = campaign_notes(data.campaigns)
            if notes:
                lines += ["", *(f"- {escape_line(note)}" for note in notes)]
        verdict_lines = verdict.lines()
        if verdict_lines:
            lines.append("")
            for text, style in verdict_lines:
                shown = escape_line(text)
                lines.append(f"- **{shown}**" if style == "red" else f"- {shown}")
        if self.tests:
            body = "\n".join(
                line for state in data.models.values() for line in summary_lines(state)
            )
            # a fence longer than any run of backticks in the test ids keeps them literal
            fence = "`" * max(3, 1 + max((len(r) for r in re.findall("`+", body)), default=0))
            lines += ["", "### RNN coverage by test", "", f"{fence}text", body, fence]
        return "\n".join(lines) + "\n"
