"""The files a session or a command writes, guarded and written one way.

Each output is an :class:`~pytest_rnncov.files.Output`: checked before anything runs (it
never replaces a file that is not an earlier output of the same kind), written atomically,
and never silently lost to a concurrent writer. :func:`write_reports` writes the JSON and
HTML reports for the plugin and the command line alike; one output that fails does not
stop the others.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Sequence

from ..errors import RNNCovError
from ..files import Output, as_output_path

if TYPE_CHECKING:  # numpy-free at import: the plugin checks outputs before any test runs
    from .data import CoverageData
    from .results import Verdict

#: the file kind (``files.KINDS``) of each output
KIND = {
    "json": "pytest-rnncov-report",
    "html": "html",
    "data": "pytest-rnncov-data",
    "baseline": "pytest-rnncov-baseline",
}


def report_output(kind: str, dest: str, what: str) -> Output:
    """The output of a ``json:PATH`` or ``html:DIR`` report (``DIR/index.html``)."""
    path = as_output_path(dest, what) if kind == "json" else Path(dest) / "index.html"
    return Output(path, KIND[kind], what)


def write_reports(
    outputs: Sequence[tuple[str, Output]], data: "CoverageData", verdict: "Verdict"
) -> tuple[list[str], list[str]]:
    """Render and write each ``(kind, output)`` report; returns (what was written, what
    went wrong), every output attempted."""
    written, problems = [], []
    for kind, output in outputs:
        try:
            if kind == "json":
                from .json_report import JsonReport

                text = JsonReport().render(data, verdict)
            else:
                from .html import HtmlReport

                text = HtmlReport().render(data, verdict)
            written.append(f"RNN coverage {kind.upper()} written to {output.write(text)}")
        except RNNCovError as exc:
            problems.append(str(exc))
    return written, problems
