"""The machine-readable report for CI pipelines (format documented in README)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from .data import CoverageData
from .paths import write_text
from .results import Verdict

JSON_FORMAT = "pytest-rnncov-report"
JSON_VERSION = 2


class JsonReport:
    """Writes the data and the verdict as one JSON document; ``passed`` is the verdict's."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    @staticmethod
    def data(data: CoverageData, verdict: Verdict) -> dict[str, Any]:
        from .. import __version__

        checks = {(c.model, c.metric): c for c in verdict.checks}
        models = {}
        for name, state in data.models.items():
            content = state.to_json()
            for key, metric in content["metrics"].items():
                check = checks.get((name, key))
                metric["threshold"] = None if check is None else check.bar
                metric["pass"] = None if check is None else check.passed
            models[name] = content
        bars = verdict.bars
        return {
            "format": JSON_FORMAT,
            "version": JSON_VERSION,
            "pytest_rnncov": __version__,
            "passed": verdict.passed,
            "required": None if bars is None else (bars.single if bars.single is not None
                                                   else bars.describe()),
            "gate_metrics": None if bars is None else list(bars.gate_metrics),
            "complete": data.complete,
            "missing_workers": list(data.missing_workers),
            "verdict": verdict.to_json(),
            "models": models,
            "adversarial": list(data.campaigns),
        }

    def report(self, data: CoverageData, verdict: Verdict) -> Path:
        text = json.dumps(self.data(data, verdict), indent=1, allow_nan=False) + "\n"
        return write_text(self.path, text, "the JSON report")
