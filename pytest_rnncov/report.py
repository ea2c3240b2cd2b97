"""Reporters: each a small class with one ``report()`` method."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .engine import ModelRecord, Shortfall

JSON_FORMAT = "pytest-rnncov-report"
JSON_VERSION = 1


def percent(rate: float, below: float | None = None) -> str:
    """``rate`` as a percentage; with ``below``, enough digits to show it is below that."""
    for digits in range(0, 4):
        text = f"{rate * 100:.{digits}f}%"
        if below is None or float(text[:-1]) < below * 100:
            return text
    return f"{rate * 100:.4f}%"


def gate_message(required: float, missing: Sequence[Shortfall], n_models: int) -> str:
    if not missing:
        return f"Required RNN coverage of {percent(required)} reached."
    parts = []
    for s in missing:
        name = f"{s.model} {s.metric}" if n_models > 1 else s.metric
        if s.total:
            parts.append(f"{name} {percent(s.rate, below=required)} ({s.covered}/{s.total})")
        else:
            parts.append(f"{name} not tracked")
    return f"Required RNN coverage of {percent(required)} not reached: " + ", ".join(parts)


def _ranges(steps: Sequence[int]) -> str:
    """Compact step list: 4-7, 9, 12-13."""
    runs: list[list[int]] = []
    for step in steps:
        if runs and step == runs[-1][-1] + 1:
            runs[-1].append(step)
        else:
            runs.append([step])
    return ", ".join(f"{r[0]}" if len(r) == 1 else f"{r[0]}-{r[-1]}" for r in runs)


class TermReport:
    """The "RNN coverage" terminal section (with ``detail``: what is left uncovered)."""

    def __init__(self, records: dict[str, ModelRecord], detail: bool = False) -> None:
        self.records = records
        self.detail = detail

    def lines(self) -> list[str]:
        if not self.records:
            return ["no model was tracked: register one with rnncov.track(model, ...)"]
        from .plugin import METRIC_NAMES

        order = {name: i for i, name in enumerate(METRIC_NAMES)}
        names = sorted({k for r in self.records.values() for k in r.metrics},
                       key=lambda k: (order.get(k, len(order)), k))
        header = ["model", "layer", "window", "inputs"] + names
        rows = [header]
        for record in self.records.values():
            row = [record.name, record.layer, f"[{record.window[0]}, {record.window[1]}]",
                   str(record.n_inputs)]
            for key in names:
                m = record.metrics.get(key)
                row.append("-" if m is None else f"{percent(m.rate)} ({m.n_covered}/{m.total})")
            rows.append(row)
        widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
        lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]
        if self.detail:
            for record in self.records.values():
                lines.extend(self._detail(record))
        return lines

    @staticmethod
    def _detail(record: ModelRecord) -> list[str]:
        lines = [f"{record.name}:"]
        for key, m in record.metrics.items():
            if "labels" in m.detail:
                missing = [m.detail["labels"][i] for i in np.flatnonzero(~m.covered)]
                steps = sorted({int(label.split()[0][2:]) for label in missing})
                lines.append(
                    f"  {m.describe}: uncovered steps {_ranges(steps) or 'none'}"
                    + (f" ({len(missing)} conditions)" if missing else "")
                )
            elif "w" in m.detail:
                w, a = m.detail["w"], m.detail["a"]
                ids = np.flatnonzero(m.covered)
                place = a ** np.arange(w - 1, -1, -1)
                digits = (ids[:, None] // place) % a
                spread = " | ".join(
                    f"{j + 1}: " + " ".join(
                        f"{chr(97 + s)} {int((digits[:, j] == s).sum())}" for s in range(a)
                    )
                    for j in range(w)
                )
                lines.append(
                    f"  {m.describe}: {m.n_covered} of {m.total} words; covered words by "
                    f"symbol at each position: {spread}"
                )
            else:
                lines.append(f"  {m.describe}: {m.total - m.n_covered} conditions uncovered")
        return lines

    def report(self, terminal: Any) -> None:
        terminal.write_sep("-", "RNN coverage")
        for line in self.lines():
            terminal.write_line(line)


class AdversarialTermReport:
    """The "RNN adversarial samples" terminal section, one row per campaign."""

    COLUMNS = ("model", "test cases", "adversarial", "adversary rate", "unique seeds",
               "avg perturbation", "saved to")

    def __init__(self, campaigns: Sequence[dict[str, Any]]) -> None:
        self.campaigns = campaigns

    def lines(self) -> list[str]:
        rows = [list(self.COLUMNS)]
        for c in self.campaigns:
            avg = c.get("average_perturbation")
            rows.append([
                str(c.get("model", "?")), str(c["test_cases"]), str(c["adversarial"]),
                percent(c["adversary_rate"]) if c["test_cases"] else "-", str(c["unique"]),
                "-" if avg is None else f"{avg:.4g}", str(c.get("saved_to") or "-"),
            ])
        widths = [max(len(r[i]) for r in rows) for i in range(len(self.COLUMNS))]
        return ["  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows]

    def report(self, terminal: Any) -> None:
        terminal.write_sep("-", "RNN adversarial samples")
        for line in self.lines():
            terminal.write_line(line)


class JsonReport:
    """The machine-readable report for CI pipelines (format documented in README)."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def data(
        self,
        records: dict[str, ModelRecord],
        required: float | None,
        gate_metrics: Sequence[str],
        campaigns: Sequence[dict[str, Any]],
    ) -> dict[str, Any]:
        from . import __version__

        models = {}
        passed = True
        for record in records.values():
            metrics = {}
            for key, m in record.metrics.items():
                gated = required is not None and key in gate_metrics
                ok = (m.rate >= required) if required is not None and gated else None
                passed = passed and ok is not False
                metrics[key] = {
                    "describe": m.describe,
                    "covered": m.n_covered,
                    "total": m.total,
                    "rate": m.rate,
                    "covered_ids": np.flatnonzero(m.covered).tolist(),
                    "threshold": required if gated else None,
                    "pass": ok,
                }
            for key in gate_metrics:
                if required is not None and key not in record.metrics:
                    passed = False
            models[record.name] = {
                "layer": record.layer,
                "window": list(record.window),
                "inputs": record.n_inputs,
                "metrics": metrics,
            }
        return {
            "format": JSON_FORMAT,
            "version": JSON_VERSION,
            "pytest_rnncov": __version__,
            "required": required,
            "gate_metrics": list(gate_metrics),
            "passed": passed if required is not None else None,
            "models": models,
            "adversarial": list(campaigns),
        }

    def report(self, records: dict[str, ModelRecord], required: float | None,
               gate_metrics: Sequence[str], campaigns: Sequence[dict[str, Any]]) -> Path:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        data = self.data(records, required, gate_metrics, campaigns)
        self.path.write_text(json.dumps(data, indent=1) + "\n")
        return self.path
