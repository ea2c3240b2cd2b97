"""The machine-readable report for CI pipelines (format documented in docs/file-formats.md)."""

from __future__ import annotations

import json
from typing import Any

from ..files import Fields, read_envelope
from .attribution import coverage_by_test
from .data import CoverageData
from .results import Verdict

JSON_FORMAT = "pytest-rnncov-report"
#: 3: the verdict is stated once, in "verdict" (no top-level "passed", "required",
#: "gate_metrics", "complete", "missing_workers"); checks say whether a metric had anything
#: to cover ("measurable"); the baseline part says whether the baseline was complete;
#: "complete" is false also when a worker's data could not be merged, or when a session
#: stopped before all its tests ran ("stopped" says why)
JSON_VERSION = 3


class JsonReport:
    """Writes the data and the verdict as one JSON document; ``passed`` is the verdict's."""

    @staticmethod
    def data(data: CoverageData, verdict: Verdict) -> dict[str, Any]:
        from .. import __version__

        checks = {(c.model, c.metric): c for c in verdict.checks}
        models = {}
        for name, state in data.models.items():
            content = state.to_json()
            for key, metric in content["metrics"].items():
                m = state.metrics[key]
                if m.exclusions:  # the figures the verdict used; the ids stay as measured
                    metric.update(rate=m.rate, covered=m.n_covered, counted=m.n_counted)
                    metric["excluded"] = [
                        {"label": label, "reason": reason, "conditions": n, "covered": k}
                        for label, reason, n, k in m.exclusions
                    ]
                check = checks.get((name, key))
                metric["threshold"] = None if check is None else check.bar
                metric["pass"] = None if check is None or not verdict.applied else check.passed
            summary = coverage_by_test(state)
            if summary is not None:
                content["test_summary"] = {
                    "minimal": summary.minimal,
                    "adds_nothing": summary.adds_nothing,
                    "covered": summary.covered,
                    "unattributed": summary.unattributed,
                }
            models[name] = content
        return {
            "format": JSON_FORMAT,
            "version": JSON_VERSION,
            "pytest_rnncov": __version__,
            "verdict": verdict.to_json(),
            "models": models,
            "adversarial": list(data.campaigns),
        }

    def render(self, data: CoverageData, verdict: Verdict) -> str:
        """The report's text (``reporting.outputs.render_reports`` renders it)."""
        return json.dumps(self.data(data, verdict), indent=1, allow_nan=False) + "\n"


#: verdict keys added after reports of JSON_VERSION were first written (``read_report``
#: reads reports without them)
LATER_VERDICT_LISTS = ("stopped", "random_tests", "errors")


def read_report(content: Any, where: str) -> tuple[bool | None, dict[str, dict[str, float | None]]]:
    """A JSON report's verdict and the rate of every model's metrics, None for a metric
    whose conditions were all excluded (DataFileError naming what is malformed)."""
    fields, _ = read_envelope(content, where, JSON_FORMAT, (JSON_VERSION,), noun="report format")
    fields.get("pytest_rnncov", str)
    verdict = Fields(fields.get("verdict", dict), f"{where}, verdict")
    passed = verdict.get("passed", (bool, type(None)))
    checked: tuple[tuple[str, type | tuple[type, ...]], ...] = (
        ("applied", bool),
        ("complete", bool),
        ("skipped_reason", (str, type(None))),
        ("gate", (dict, type(None))),
    )
    for key, kinds in checked:
        verdict.get(key, kinds)
    for key in ("missing_workers", "track_errors"):
        verdict.strings(key)
    for key in LATER_VERDICT_LISTS:
        if key in verdict.data:  # older reports lack these
            verdict.strings(key)
    baseline = verdict.get("baseline", (dict, type(None)))
    if baseline is not None:
        compared = Fields(baseline, f"{where}, verdict, baseline")
        compared.get("path", str)
        compared.get("complete", bool)
        compared.strings("missing_workers")
    rates: dict[str, dict[str, float | None]] = {}
    for name, model in fields.get("models", dict).items():
        metrics = Fields(model, f"{where}, model {name!r}").get("metrics", dict)
        rates[name] = {}
        for key, figures in metrics.items():
            fields = Fields(figures, f"{where}, model {name!r} {key}")
            rate = fields.get("rate", float)
            if not 0.0 <= rate <= 1.0:
                raise fields.fail(f"rate {rate!r} is not a fraction in [0, 1]")
            all_excluded = figures.get("counted") == 0 and bool(figures.get("excluded"))
            rates[name][key] = None if all_excluded else rate
    return passed, rates
