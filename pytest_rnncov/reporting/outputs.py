"""The files a session or a command writes, guarded and written one way.

Each output is an :class:`~pytest_rnncov.files.Output`: checked before anything runs (it
never replaces a file that is not an earlier output of the same kind), written atomically,
and never silently lost to a concurrent writer. Reports are rendered first
(:func:`render_reports`), then written together (:func:`write_all`), for the plugin and
the command line alike; one output that fails does not stop the others.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from ..config.paths import check_output_dir, check_output_file
from ..errors import RNNCovError
from ..files import Output, as_output_path, interrupt_after, interrupt_name, is_step_summary

if TYPE_CHECKING:  # numpy-free at import: the plugin checks outputs before any test runs
    from .data import CoverageData
    from .results import Verdict

#: the file kind (``files.KINDS``) of each output
KIND = {
    "json": "pytest-rnncov-report",
    "html": "html",
    "markdown": "markdown",
    "data": "pytest-rnncov-data",
    "baseline": "pytest-rnncov-baseline",
}


def file_output(path: Path, kind: str, what: str, append: bool = False) -> Output:
    """The output ``what`` of ``kind`` (a key of KIND) at ``path``: a file that can be
    written there and that replaces nothing but an earlier output of that kind (with
    ``append``, added to whatever the file holds)."""
    check_output_file(path, what, append=append)
    return Output(path, KIND[kind], what, append=append)


def report_output(kind: str, dest: str, what: str) -> Output:
    """The output of a ``json:PATH``, ``markdown:PATH`` or ``html:DIR`` report
    (``DIR/index.html``)."""
    if kind == "markdown":  # the step summary keeps the step's other commands' summaries
        path = as_output_path(dest, what, "rnncov.md")
        return file_output(path, kind, what, append=is_step_summary(path))
    if kind == "json":
        return file_output(as_output_path(dest, what, "rnncov.json"), kind, what)
    check_output_dir(Path(dest), what)
    return Output(Path(dest) / "index.html", KIND[kind], what)


#: an output, its content, and the words said when it is written ("... written to PATH")
Pending = tuple[Output, "str | bytes", str]


def render_reports(
    outputs: Sequence[tuple[str, Output]], data: "CoverageData", verdict: "Verdict"
) -> tuple[list[Pending], list[str]]:
    """Render each ``(kind, output)`` report without writing it; returns what to write
    and what went wrong, every report attempted."""
    pending: list[Pending] = []
    problems = []
    for kind, output in outputs:
        try:
            if kind == "json":
                from .json_report import JsonReport

                text = JsonReport().render(data, verdict)
            elif kind == "markdown":
                from .markdown_report import MarkdownReport

                text = MarkdownReport().render(data, verdict)
            else:
                from .html import HtmlReport

                text = HtmlReport().render(data, verdict)
        except RNNCovError as exc:
            problems.append(str(exc))
            continue
        except Exception as exc:  # a bug here must not cost the run its other outputs
            problems.append(
                f"RNN coverage {kind} report not written to {output.path}: "
                f"{type(exc).__name__}: {exc} (an error in pytest-rnncov; please report it)"
            )
            continue
        label = {"json": "JSON", "markdown": "Markdown", "html": "HTML"}[kind]
        pending.append((output, text, f"RNN coverage {label} written to"))
    return pending, problems


def write_all(pending: Sequence[Pending]) -> tuple[list[str], list[str], bool]:
    """Write the rendered outputs in turn, a Ctrl-C held until the last is written (so
    this run's files never sit half-written beside an earlier run's; a second Ctrl-C
    stops at once); one that fails does not stop the others. Returns (what was written,
    what went wrong, whether a Ctrl-C came); the files a second Ctrl-C left unwritten are
    named among what was written."""
    written: list[str] = []
    problems: list[str] = []
    attempted = 0
    try:
        with interrupt_after():
            for output, content, done in pending:
                try:
                    written.append(f"{done} {output.write(content)}")
                except RNNCovError as exc:
                    problems.append(str(exc))
                except Exception as exc:  # a bug here must not cost the run its other files
                    problems.append(
                        f"RNN coverage file not written to {output.path}: "
                        f"{type(exc).__name__}: {exc} (an error in pytest-rnncov; please "
                        "report it)"
                    )
                attempted += 1
    except KeyboardInterrupt as exc:  # held until the end, or a second one: at once
        signal = interrupt_name(exc)
        written.extend(
            f"RNN coverage file not written to {output.path}: interrupted (a second {signal})"
            for output, _, _ in pending[attempted:]
        )
        if attempted == len(pending):
            written.append(f"RNN coverage files: {signal} held until each was written whole")
        return written, problems, True
    return written, problems, False


def write_reports(
    outputs: Sequence[tuple[str, Output]], data: "CoverageData", verdict: "Verdict"
) -> tuple[list[str], list[str], bool]:
    """Render every ``(kind, output)`` report, then :func:`write_all` of them."""
    pending, problems = render_reports(outputs, data, verdict)
    written, failed, interrupted = write_all(pending)
    return written, problems + failed, interrupted
