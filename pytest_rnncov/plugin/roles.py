"""The roles a pytest process plays, as in pytest-cov: ``Central`` (no xdist),
``DistController`` (the xdist controller, which unions the workers' data and records the
workers whose data is missing) and ``DistWorker`` (which sends its data in
``workeroutput``).

Only controllers decide the verdict and write files; they do it once, from one
``CoverageData``, so the exit code, the JSON ``passed`` and the terminal line agree. Every
file goes through its ``Output`` (checked before the tests ran, written atomically, never
lost to a concurrent writer); one that fails does not stop the others.
"""

from __future__ import annotations

import pytest

from ..errors import DataFileError, RNNCovError
from ..reporting.baseline import (
    Baseline,
    baseline_text,
    excluded_baseline,
    load_baseline,
    why_not_saved,
)
from ..reporting.data import CoverageData
from ..reporting.outputs import Pending, render_reports, write_all
from ..reporting.results import Verdict, evaluate
from .checkpoints import CheckpointFolder
from .options import SessionOutputs, Settings, running_no_test
from .session import RNNCovSession

#: what the data file says while its session runs (``Central.mark_unfinished``)
UNFINISHED = "the session did not finish (it was killed before it wrote its data, or still runs)"


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
            payload = CoverageData(missing_workers=[reason], runs=[self.engine.run_id]).dumps()
        config.workeroutput["rnncov"] = payload  # type: ignore[attr-defined]
        config.workeroutput["rnncov_profiles"] = self.engine.profiles_written  # type: ignore[attr-defined]


class Central:
    """The process that decides the verdict and writes the files (no xdist)."""

    controller = True

    def __init__(self, settings: Settings, engine: RNNCovSession, outputs: SessionOutputs) -> None:
        self.settings = settings
        self.engine = engine
        self.outputs = outputs
        self.received = CoverageData()
        self.verdict: Verdict | None = None
        #: why the session stopped before all its tests ran (None: it did not)
        self.stopped: str | None = None
        #: whether it ran only some tests by design (--lf, --sw): partial as any other stop
        self.retry = False
        #: whether a Ctrl-C stopped the reports from rendering (pytest's exit code says so)
        self.interrupted = False
        #: how many tests failed (a baseline is saved only from a run without failures)
        self.failed_tests = 0
        self.written: list[str] = []
        self.problems: list[str] = []
        #: profile files the workers' track() fitted and wrote (said with this process's)
        self.worker_profiles: list[str] = []
        self.baseline = (
            None
            if settings.compare is None
            else load_baseline(settings.compare, ratchet=settings.ratchet)
        )

    def data(self) -> CoverageData:
        """The session's data: this process's plus what workers sent."""
        data = CoverageData()
        data.merge(self.received)
        data.merge(self.engine.data())
        if self.stopped is not None:
            data.stopped.append(self.stopped)
            if self.retry:
                data.retries.append(self.stopped)
        return data

    def report_data(self) -> CoverageData:
        """The data the verdict and the reports render: the exclusions applied."""
        return self._excluded()[0]

    def _excluded(self) -> tuple[CoverageData, list[str]]:
        """``report_data`` and the errors of exclusions that cannot apply (a stale label:
        left out, and the verdict fails on it); notes on exclusions of untracked models
        join the written lines."""
        view, notes, errors = self.data().with_exclusions(self.settings.exclusions)
        self.written.extend(n for n in notes if n not in self.written)
        return view, errors

    def decide(
        self,
        applied: bool,
        reason: str | None,
        stopped: str | None = None,
        partial: str | None = None,
        failed_tests: int = 0,
    ) -> Verdict:
        """Compute the verdict once (the reports render this object); ``stopped``: why the
        session stopped before all its tests ran; ``partial``: why it ran only some tests
        by design (--lf, --sw). Either marks the data partial, so the gate is not applied
        (``evaluate``), as it is not where a worker's data is missing; ``failed_tests``:
        the tests (and collectors) that failed, which keep a baseline from being saved."""
        self.failed_tests = failed_tests
        if stopped is not None:
            self.stopped = stopped
        elif partial is not None:
            self.stopped, self.retry = partial, True
        data, errors = self._excluded()
        self.verdict = evaluate(
            data,
            self.settings.bars,
            applied=applied,
            skipped_reason=reason,
            baseline=excluded_baseline(self.baseline, self.settings.exclusions),
            tolerance=self.settings.tolerance,
            errors=errors,
            failed_tests=failed_tests,
        )
        return self.verdict

    def mark_unfinished(self) -> None:
        """As the tests begin, replace an earlier data file with one that says this session
        did not finish (no model, marked stopped), so that the earlier file does not pass
        for this run if the session is killed (SIGKILL, out of memory) before it writes its
        own. Where the file cannot be written now, the data's own write says why."""
        output = self.outputs.data
        if output is None:
            return
        data = CoverageData(stopped=[UNFINISHED], runs=[self.engine.run_id])
        try:
            output.claim(data.dumps() + "\n")
        except (RNNCovError, OSError):
            pass

    def _existing_baseline(self) -> Baseline | None:
        """The baseline the save would replace (None: none, or one too broken to keep)."""
        if self.settings.ratchet:
            return self.baseline
        assert self.settings.save is not None
        if not self.settings.save.exists():
            return None
        try:
            return load_baseline(self.settings.save)
        except DataFileError:
            return None

    def sessionfinish(self, config: pytest.Config) -> None:
        for profile in dict.fromkeys([*self.engine.profiles_written, *self.worker_profiles]):
            self.written.append(
                f"RNN coverage profile fitted from x_train and written to {profile}: commit "
                "it (later runs load it)"
            )
        if self.verdict is None:  # the test loop never ran: stopped while collecting
            self.stopped = "the session stopped before the tests ran"
        data = self.data()
        verdict = self.verdict or self.decide(True, None)
        # a session that measured nothing leaves an earlier baseline as it was (but one whose
        # track() failed writes that, so the earlier file does not stand in for it); the
        # data file is written by every session that ran its test loop, even with no model
        # (marked partial if it stopped early): an earlier run's file must not pass for it
        unwritten = (
            verdict.skipped_reason
            if not verdict.applied and not verdict.undecided  # collect-only, none selected
            else None
            if data.models or data.track_errors
            else "no model was tracked"
        )
        pending: list[Pending] = []
        outputs = self.outputs
        if outputs.baseline is not None:
            path = outputs.baseline.path
            undecided = verdict.undecided and (self.stopped is not None or verdict.gated)
            unsaved = unwritten or (verdict.skipped_reason if undecided else None)
            reason = unsaved or why_not_saved(
                verdict.passed,
                data,
                self._existing_baseline(),
                self.settings.ratchet,
                self.failed_tests,
            )
            if reason is None:
                done = "saved to" if data.complete else "(partial: marked so) saved to"
                pending.append(
                    (outputs.baseline, baseline_text(data), f"RNN coverage baseline {done}")
                )
            elif path.exists():
                self.written.append(f"RNN coverage baseline {path} kept: {reason}")
            else:
                self.written.append(f"RNN coverage baseline not saved to {path}: {reason}")
        listing = running_no_test(config)  # --collect-only, ...: no test ran by design
        if outputs.data is not None and listing is None:
            done = "written to" if data.complete else "(partial: marked so) written to"
            if unwritten is not None and data.complete:  # no model, no track() that failed
                done = f"({unwritten}) {done}"
            pending.append((outputs.data, data.dumps() + "\n", f"RNN coverage data {done}"))
        elif outputs.data is not None:
            self.written.append(f"RNN coverage data not written to {outputs.data.path}: {listing}")
        self.problems.extend(  # a full disk cost these samples, not the campaigns
            f"adversarial samples of a campaign on {c.get('model', '?')} not saved: "
            f"{c['samples_error']}"
            for c in data.campaigns
            if c.get("samples_error")
        )
        try:
            reports, problems = render_reports(outputs.reports, self.report_data(), verdict)
        except KeyboardInterrupt:  # while they render: keep what was measured, say what is not
            self.interrupted = True
            reports, problems = [], []
            self.written.extend(
                f"RNN coverage report not written to {output.path}: interrupted while the "
                "reports rendered"
                for _, output in outputs.reports
            )
        self.problems.extend(problems)
        written, problems, interrupted = write_all(pending + reports)
        self.written.extend(written)
        self.problems.extend(problems)
        self.interrupted = self.interrupted or interrupted


class DistController(Central):
    """The xdist controller: unions what every worker sent; a worker whose data is missing
    (it crashed) or cannot be merged is named in the verdict, which marks the coverage
    partial everywhere (terminal, JSON, data file, baseline)."""

    def receive(
        self,
        worker: str,
        payload: str | None,
        checkpoints: CheckpointFolder,
        note: str = "",
    ) -> str:
        """Merge what a worker sent, and return its retry reason ("" for none) where it
        came from a checkpoint (whose profile files join ``worker_profiles``). One that
        sent nothing (``payload`` None: it crashed, or, as ``note`` says, it was still
        running when the session stopped) is named as missing, with the data of its
        checkpoint merged where it left one; not where that checkpoint is its final one
        (written at its session's end): it holds all its data."""
        if payload is not None:
            try:
                self._merge(CoverageData.loads(payload, f"data from worker {worker}"))
            except RNNCovError as exc:
                self.received.missing_workers.append(f"{worker} ({exc})")
            return ""
        recovered = checkpoints.recover(worker)
        said = recovered.note
        self.worker_profiles.extend(recovered.profiles)  # written, whatever their data
        if recovered.data is not None:
            try:
                self._merge(recovered.data)
            except RNNCovError as exc:
                said = f"its checkpoint not merged: {exc}"
            else:
                if not note and recovered.final:
                    return recovered.retry
        notes = "; ".join(text for text in (note, said) if text)
        self.received.missing_workers.append(f"{worker} ({notes})" if notes else worker)
        return recovered.retry  # "" where there was no checkpoint to read

    def _merge(self, data: CoverageData) -> None:
        merged = CoverageData()  # all or nothing: a failed merge leaves no half
        merged.merge(self.received)
        merged.merge(data)
        self.received = merged
