"""The roles a pytest process plays, as in pytest-cov: ``Central`` (no xdist),
``DistController`` (the xdist controller, which unions the workers' data and records the
workers that sent none) and ``DistWorker`` (which sends its data in ``workeroutput``).

Only controllers decide the verdict and write reports; they do it once, from one
``CoverageData``, so the exit code, the JSON ``passed`` and the terminal line agree.
"""

from __future__ import annotations

import pytest

from ..reporting.baseline import load_baseline, regressions, save_baseline
from ..reporting.data import CoverageData
from ..reporting.results import Verdict, evaluate
from .options import Settings
from .session import RNNCovSession


class DistWorker:
    """An xdist worker: its data travels to the controller; it reports nothing itself."""

    controller = False

    def __init__(self, settings: Settings, engine: RNNCovSession) -> None:
        self.settings = settings
        self.engine = engine

    def sessionfinish(self, config: pytest.Config) -> None:
        try:
            payload = self.engine.data().dumps()
        except Exception as exc:  # the controller names this worker and the reason
            worker = config.workerinput["workerid"]  # type: ignore[attr-defined]
            reason = f"{worker} ({type(exc).__name__}: {exc})"
            payload = CoverageData(missing_workers=[reason]).dumps()
        config.workeroutput["rnncov"] = payload  # type: ignore[attr-defined]


class Central:
    """The process that decides the verdict and writes the reports (no xdist)."""

    controller = True

    def __init__(self, settings: Settings, engine: RNNCovSession) -> None:
        self.settings = settings
        self.engine = engine
        self.received = CoverageData()
        self.verdict: Verdict | None = None
        self.written: list[str] = []
        self.baseline = None if settings.compare is None else load_baseline(settings.compare)

    def data(self) -> CoverageData:
        """The session's data: this process's plus what workers sent."""
        data = CoverageData()
        data.merge(self.received)
        data.merge(self.engine.data())
        return data

    def decide(self, applied: bool, reason: str | None) -> Verdict:
        """Compute the verdict once (the reports render this object)."""
        data = self.data()
        found = ([] if self.baseline is None or not applied else
                 regressions(self.baseline, data.models, self.settings.tolerance))
        self.verdict = evaluate(
            data, self.settings.bars, applied=applied, skipped_reason=reason,
            baseline=None if self.settings.compare is None else str(self.settings.compare),
            tolerance=self.settings.tolerance, regressions=found)
        return self.verdict

    def sessionfinish(self, config: pytest.Config) -> None:
        from ..reporting.html import HtmlReport
        from ..reporting.json_report import JsonReport

        data = self.data()
        verdict = self.verdict or self.decide(False, "the session stopped before the tests ran")
        # a session that measured nothing leaves an earlier baseline or data file as it was
        unwritten = (verdict.skipped_reason if not verdict.applied
                     else None if data.models else "no model was tracked")
        if self.settings.save is not None and unwritten is None:
            self.written.append(f"RNN coverage baseline saved to {save_baseline(self.settings.save, data)}")
        elif self.settings.save is not None:
            self.written.append(f"RNN coverage baseline not saved to {self.settings.save}: "
                                f"{unwritten}")
        if self.settings.data is not None and unwritten is None:
            self.written.append(f"RNN coverage data written to {data.save(self.settings.data)}")
        elif self.settings.data is not None:
            self.written.append(f"RNN coverage data not written to {self.settings.data}: "
                                f"{unwritten}")
        for kind, dest in self.settings.reports:
            if kind == "json" and dest is not None:
                path = JsonReport(dest).report(data, verdict)
                self.written.append(f"RNN coverage JSON written to {path}")
            if kind == "html" and dest is not None:
                path = HtmlReport(dest).report(data, verdict)
                self.written.append(f"RNN coverage HTML written to {path}")


class DistController(Central):
    """The xdist controller: unions what every worker sent; a worker that finished without
    sending data (it crashed) is named in the verdict, which marks the coverage partial."""

    def receive(self, worker: str, payload: str | None) -> None:
        """Merge what a worker sent (None: it finished without sending: it crashed)."""
        if payload is None:
            self.received.missing_workers.append(worker)
            return
        self.received.merge(CoverageData.loads(payload, f"data from worker {worker}"))
