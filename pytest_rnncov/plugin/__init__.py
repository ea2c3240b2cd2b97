"""pytest hooks of pytest-rnncov: a thin layer that forwards to the session engine and to
the process's role (:mod:`.roles`). Importing this module loads no numpy, TensorFlow,
PyTorch, RDKit or NLTK: models are wrapped only when a test uses the ``rnncov`` fixture."""

from __future__ import annotations

import re
from collections import Counter
from typing import TYPE_CHECKING, Any, Callable, Generator, Sequence

import pytest

from .checkpoints import CHECKPOINT_KEY, RUNNING, CheckpointFolder, CheckpointWriter
from .draws import draws_at_random
from .options import addoption, check_outputs, read_settings, running_no_test, seed_setting

if TYPE_CHECKING:
    from .options import SessionOutputs, Settings
    from .roles import Central, DistWorker
    from .session import RNNCovSession

#: the thread settings this run made (``NAME=VALUE``, said in the report header)
THREADS_SET = pytest.StashKey[tuple[str, ...]]()

MARKER = (
    "rnn_coverage(min=None, metrics=None, model=None): the inputs this test feeds to "
    "tracked models must reach coverage `min` (a fraction, or bars such as "
    "'BC:0.9,TC:0.4'; default --rnn-coverage) on `metrics` (default the gate metrics) "
    "for `model` (default every model the test fed)."
)


def pytest_addoption(parser: pytest.Parser) -> None:
    addoption(parser)


def pytest_load_initial_conftests(early_config: pytest.Config) -> None:
    """Before conftest files import the frameworks: TensorFlow's native start-up notices
    stay out of captured test output (``config.tf_notices``), and PyTorch's OpenMP and
    numpy's OpenBLAS threads will sleep when idle instead of spinning
    (``config.idle_threads``); not with ``--no-rnn``. ``--hypothesis-profile=rnncov``
    registers the profile before Hypothesis loads it (it is ``model_settings``)."""
    known = early_config.known_args_namespace  # @files and addopts included
    if not getattr(known, "no_rnn", False):
        from ..config.idle_threads import sleeping_idle_threads
        from ..config.tf_notices import quiet_tensorflow_import

        quiet_tensorflow_import()
        early_config.stash[THREADS_SET] = sleeping_idle_threads()
    if getattr(known, "hypothesis_profile", None) == "rnncov":
        from ..generation import strategies  # noqa: F401  (registers the profile)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)
    if config.getoption("no_rnn"):
        seed_setting(config)  # rnncov.seed still reads it: a wrong one is refused here, once
        asked = _asked_for(config)
        if asked:
            config.pluginmanager.register(SwitchedOff(asked), "_rnncov_off")
        return
    settings = read_settings(config)
    outputs = check_outputs(settings)
    if any(kind == "html" for kind, _ in settings.reports):
        from ..errors import MissingResource
        from ..reporting.html import require_html

        try:
            require_html()
        except MissingResource as exc:
            raise pytest.UsageError(f"{settings.report_label('html')} {exc}") from None
    config.pluginmanager.register(RNNCovPlugin(config, settings, outputs), "_rnncov")


#: (option dest, ini key, as the warning names it) of what ``--no-rnn`` leaves undone
GATE_AND_FILES = (
    ("rnn_coverage", "rnn_coverage", "the gate (--rnn-coverage)"),
    ("rnn_compare", None, "the baseline comparison (--rnn-compare)"),
    ("rnn_save", None, "the baseline (--rnn-save)"),
    ("rnn_data", "rnn_data", "the data file (--rnn-data)"),
    ("rnn_report", "rnn_report", "the reports (--rnn-report)"),
)


def _asked_for(config: pytest.Config) -> list[str]:
    """What the options and ini keys ask of the plugin that ``--no-rnn`` switches off."""
    asked = []
    for dest, ini, said in GATE_AND_FILES:
        value = config.getoption(dest, None)
        if not value and ini is not None:
            try:
                value = config.getini(ini)
            except (ValueError, TypeError):  # a wrong value: asked for all the same
                value = True
        if value:
            asked.append(said)
    return asked


class SwitchedOff:
    """Says at the end of a ``--no-rnn`` session what it left undone, as pytest-cov says
    "Coverage disabled via --no-cov switch!": a stray ``--no-rnn`` in PYTEST_ADDOPTS or a
    CI template must not turn a gate off without a trace in the log."""

    def __init__(self, asked: list[str]) -> None:
        self.asked = asked

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        terminalreporter.write_line(
            f"WARNING pytest-rnncov is off (--no-rnn): {', '.join(self.asked)} asked for "
            "but not applied",
            yellow=True,
        )


class RNNCovPlugin:
    """Forwards pytest's hooks to the session engine and the process's role.

    Dormant until used: the engine (numpy and the rest) is created when a test asks for the
    ``rnncov`` fixture or a marker, and the role when an option asked for something or a
    model was tracked, so a run that does not use the plugin imports nothing heavy.
    """

    def __init__(
        self, config: pytest.Config, settings: "Settings", outputs: "SessionOutputs"
    ) -> None:
        self.config = config
        self.settings = settings
        self.outputs = outputs
        self.worker = hasattr(config, "workerinput")
        self.distributed = getattr(config.option, "dist", "no") not in (None, "no")
        self._engine: RNNCovSession | None = None
        self._role: Central | DistWorker | None = None
        self._current_test: str | None = None
        self._current_random = False
        #: (worker id, payload) of every xdist worker that finished; payload "" = unused
        self._nodes: list[tuple[str, str | None]] = []
        #: every xdist worker that started: one that never finished is named as missing
        self._started: list[str] = []
        #: how many times each test id's teardown ran (reported by workers too; a rerun
        #: plugin runs one several times): an early stop names how many tests ran
        self._finished: Counter[str] = Counter()
        #: how many tests were collected under each id (here, or by each xdist worker):
        #: two items may share one (--keep-duplicates, parametrize ids that collide)
        self._collected: Counter[str] = Counter()
        #: profile files the xdist workers' track() fitted and wrote
        self._worker_profiles: list[str] = []
        #: files or other collectors that failed to collect (--continue-on-collection-errors)
        self._uncollected: list[str] = []
        #: why the xdist workers ran only the tests a retry option picked (--lf, --sw)
        self._worker_retry: str | None = None
        #: the controller's folder of worker checkpoints (made when a worker starts)
        self._checkpoints: CheckpointFolder | None = None
        #: a worker's writer of its checkpoint (None: not a worker, or given no file)
        self._checkpoint: CheckpointWriter | None = None
        self._used = False
        if self.worker and CHECKPOINT_KEY in config.workerinput:  # type: ignore[attr-defined]
            self._checkpoint = CheckpointWriter(
                config.workerinput[CHECKPOINT_KEY],  # type: ignore[attr-defined]
                lambda: self._retry_reason() or "",
            )
        self.problems: list[str] = []
        #: puts SIGTERM's default action back (None: the plugin did not change it)
        self._restore_sigterm: Callable[[], None] | None = None
        if settings.explicit:  # asked for: set up now (an unreadable baseline stops the run)
            self.role  # noqa: B018

    @property
    def engine(self) -> "RNNCovSession":
        """The session engine, created on first use."""
        if self._engine is None:
            from .session import RNNCovSession

            load_session_modules()
            wanted = (
                self.settings.data is not None  # a data file feeds `report --report html`
                or any(kind == "html" for kind, _ in self.settings.reports)
            )
            self._engine = RNNCovSession(
                seed=self.settings.seed,
                metrics=self.settings.tracked_metrics,
                signal_figures=wanted,
                record_tests=self.settings.record_tests,
                samples=self.settings.samples,
                samples_label=self.settings.label("samples"),
                outputs=self.settings.output_paths(),
            )
            self._engine.current_test = self._current_test
            self._engine.current_random = self._current_random
            if not self.worker:  # a CI timeout's SIGTERM ends the session as a Ctrl-C does
                from ..files import terminate_as_interrupt

                self._restore_sigterm = terminate_as_interrupt()
            from ..generation.strategies import use_session_models

            engine = self._engine
            use_session_models(lambda: engine.models)  # @given(targeted_mutants("name", ...))
        return self._engine

    @property
    def in_use(self) -> bool:
        """Whether anything asked for the plugin: an option, a tracked model, a worker's
        data or checkpoint (once in use, in use to the end: pytest may remove the
        checkpoints' folder before the files are written)."""
        self._used = self._used or (
            self.settings.explicit
            or self._engine is not None
            or any(payload for _, payload in self._nodes)
            or (self._checkpoints is not None and self._checkpoints.written())
        )
        return self._used

    @property
    def role(self) -> "Central | DistWorker":
        """This process's role (created on first use; an unreadable baseline is a usage
        error)."""
        if self._role is None:
            from ..errors import RNNCovError
            from .roles import Central, DistController, DistWorker

            if self.worker:
                self._role = DistWorker(self.settings, self.engine)
            else:
                try:
                    self._role = (DistController if self.distributed else Central)(
                        self.settings, self.engine, self.outputs
                    )
                except RNNCovError as exc:  # an unreadable baseline
                    raise pytest.UsageError(f"--rnn-compare: {exc}") from None
        return self._role

    def pytest_report_header(self, config: pytest.Config) -> str | None:
        """The gate and seed when asked for; the variables the plugin set in every session
        that set any (installed but not asked for, it changes nothing else)."""
        made = config.stash.get(THREADS_SET, ())
        threads = f"{', '.join(made)} (set by pytest-rnncov; your own values win)" if made else ""
        if not self.settings.explicit:
            return f"rnncov: {threads}" if threads else None
        bars = self.settings.bars
        return (
            f"rnncov: gate {'off' if bars is None else bars.describe()}, seed "
            f"{self.settings.seed}{', ' if threads else ''}{threads}"
        )

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, Any, Any]:
        self._current_test = item.nodeid
        self._current_random = _draws_at_random(item)
        if self._engine is not None:
            self._engine.current_test = item.nodeid
            self._engine.current_random = self._current_random
        try:
            return (yield)
        finally:
            self._current_test, self._current_random = None, False
            if self._engine is not None:
                self._engine.current_test, self._engine.current_random = None, False

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, Any, Any]:
        marks = list(item.iter_markers("rnn_coverage"))  # closest first
        if not marks:
            return (yield)
        from ..errors import InvalidArgument
        from .marker import check_markers, marker_bars

        try:  # before the test runs: a wrong marker costs no model call
            markers = [marker_bars(mark, self.settings) for mark in marks]
            wrong = None
        except InvalidArgument as exc:
            wrong = str(exc)
        if wrong is not None:  # failed outside the handler: the message shows once
            pytest.fail(wrong, pytrace=False)
        self.engine.start_test()
        try:
            result = yield
        finally:
            fed = self.engine.stop_test()
        message = check_markers(markers, fed)
        if message is not None:
            pytest.fail(message, pytrace=False)
        return result

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        self._collected = Counter(item.nodeid for item in session.items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: Sequence[str]) -> None:
        self._collected = Counter(ids)  # every worker collects the same tests

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if report.when in ("teardown", "???"):  # "???": xdist's of a test a worker crashed in
            self._finished[report.nodeid] += 1
        if report.when == "teardown" and self._checkpoint is not None and self._engine is not None:
            self._checkpoint.after_test(self._engine, report.nodeid)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:  # its tests never run: the coverage is from the others
            self._uncollected.append(report.nodeid or ".")

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, Any, Any]:
        role = self._role
        if role is not None and role.controller and running_no_test(session.config) is None:
            role.mark_unfinished()  # type: ignore[union-attr]
        try:
            result = yield
        except BaseException as exc:  # Ctrl-C, -x / --maxfail: decide on what ran, say so
            self._decide(session, exc)
            raise
        self._decide(session, None)
        return result

    def _decide(self, session: pytest.Session, stopped: BaseException | None) -> None:
        """The verdict, once the test loop ended (``stopped``: by that exception)."""
        if not self.in_use or self.worker:
            return
        role = self.role
        from .roles import DistController

        if isinstance(role, DistController):
            checkpoints = self._checkpoints or CheckpointFolder()
            role.worker_profiles = self._worker_profiles
            for worker, payload in self._nodes:
                if payload != "":  # "": a worker that did not use the plugin
                    retry = role.receive(worker, payload, checkpoints)
                    self._worker_retry = self._worker_retry or retry or None
            finished = {worker for worker, _ in self._nodes}
            for worker in self._started:
                if worker not in finished:  # the session stopped while it ran
                    retry = role.receive(worker, None, checkpoints, RUNNING)
                    self._worker_retry = self._worker_retry or retry or None
        if role.controller:
            applied, reason, why, partial = True, None, None, None
            ran, collected = self._ran(session)
            if stopped is not None and 0 < collected == ran:
                stopped = None  # -x failing the last test: every test ran
            if (running_none := running_no_test(session.config)) is not None:
                applied, reason = False, running_none  # stopped or not, no test ran
            elif stopped is not None:
                why = self._stopped_reason(session, stopped)
            elif self._uncollected:
                why = _uncollected_reason(self._uncollected)
            elif session.testscollected == 0:
                applied, reason = False, "no test was selected"
            elif ran < collected:  # xdist gave up on them
                why = self._unrun_reason(session)
            else:
                partial = self._retry_reason() or self._worker_retry
            verdict = self.role.decide(  # type: ignore[union-attr]
                applied, reason, why, partial, failed_tests=session.testsfailed
            )
            if verdict.passed is False:
                session.testsfailed += 1

    def _retry_reason(self) -> str | None:
        """Why this process ran only the tests a retry option picked (None: it did not):
        ``--lf`` the tests that failed last time (pytest counts none when no selected test
        did), ``--sw`` those from the one that failed last time on. Each reason begins with
        its option (``data.RETRY_PREFIXES``: how data files of versions 3-4 are read)."""
        config = self.config
        if config.getoption("lf", False):
            plugin = config.pluginmanager.get_plugin("lfplugin")
            n = int(getattr(plugin, "_previously_failed_count", 0) or 0)
            if n:
                return f"--lf ran only the {n} test{'s' if n != 1 else ''} that failed last time"
        if config.getoption("stepwise", False):
            plugin = config.pluginmanager.get_plugin("stepwiseplugin")
            n = _stepwise_skipped(getattr(plugin, "report_status", ()))
            if n:
                return (
                    f"--sw skipped the {n} test{'s' if n != 1 else ''} that passed before the "
                    "one that failed last time"
                )
        return None

    def _ran(self, session: pytest.Session) -> tuple[int, int]:
        """(tests that ran, tests collected): under each id, as many as were collected at
        most (a test a rerun plugin ran three times ran once)."""
        if not self._collected:  # collected by a plugin that reports no ids
            return min(len(self._finished), session.testscollected), session.testscollected
        ran = sum(min(self._finished[i], n) for i, n in self._collected.items())
        return ran, sum(self._collected.values())

    def _unrun_reason(self, session: pytest.Session) -> str:
        """Why the gate is not applied to a session whose loop ended with tests that never
        ran: xdist stops scheduling once too many workers crashed
        (``--max-worker-restart``) and says so in its summary."""
        said = getattr(self.config.pluginmanager.get_plugin("dsession"), "_summary_report", None)
        return self._stopped_after(
            session, said if isinstance(said, str) and said else "the others never ran"
        )

    def _stopped_reason(self, session: pytest.Session, stopped: BaseException) -> str:
        """Why the gate is not applied to a session ``stopped`` early, and after what."""
        if isinstance(stopped, (session.Interrupted, session.Failed)):  # -x, --maxfail
            why = str(stopped)
        elif isinstance(stopped, KeyboardInterrupt):  # xdist's -x: "stopping after ..."
            why = str(stopped) or "interrupted"
        else:
            why = f"{type(stopped).__name__}: {stopped}"
        return self._stopped_after(session, why)

    def _stopped_after(self, session: pytest.Session, why: str) -> str:
        """How every stop is named: "the session stopped after N of M tests (why)", or
        "before any test was collected (why)"."""
        ran, collected = self._ran(session)
        if not collected:
            return f"the session stopped before any test was collected ({why})"
        return f"the session stopped after {ran} of {collected} tests ({why})"

    @pytest.hookimpl(optionalhook=True)  # xdist hooks: unknown where xdist is not installed
    def pytest_configure_node(self, node: Any) -> None:
        """Name each worker's checkpoint file, where it keeps the coverage of the tests it
        finished for the controller to read if it never sends its data."""
        if self._checkpoints is None:
            self._checkpoints = CheckpointFolder(self.config)
        node.workerinput[CHECKPOINT_KEY] = self._checkpoints.assign(_worker_id(node))

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodeready(self, node: Any) -> None:
        self._started.append(_worker_id(node))

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        worker = _worker_id(node)
        if any(seen == worker for seen, _ in self._nodes):
            return  # xdist reports some workers down twice, with the same output
        output = getattr(node, "workeroutput", None) or {}
        self._nodes.append((worker, output.get("rnncov")))
        profiles = output.get("rnncov_profiles")
        if isinstance(profiles, list):
            self._worker_profiles.extend(str(p) for p in profiles)
        retry = output.get("rnncov_retry")
        if isinstance(retry, str) and retry and self._worker_retry is None:
            self._worker_retry = retry

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        from ..errors import RNNCovError

        if self.worker:  # the controller collects nothing: it learns of --lf/--sw here
            self.config.workeroutput["rnncov_retry"] = self._retry_reason() or ""  # type: ignore[attr-defined]
            if self._checkpoint is not None and self._engine is not None:
                # all it fed, after the other sessionfinish hooks (this one is trylast): a
                # worker that dies before its data reaches the controller is whole
                self._checkpoint.final(self._engine)
        if self.worker and not self.in_use:
            self.config.workeroutput["rnncov"] = ""  # type: ignore[attr-defined]
            return
        if not self.in_use:
            return
        role = self.role
        interrupted = False
        listing = running_no_test(self.config)
        if listing is not None and role.controller and getattr(role, "verdict", None) is None:
            # --fixtures has no test loop, and pytest.exit() while collecting ends the others
            # before it: either way no test was to run, so no gate was to be applied
            role.decide(False, listing)  # type: ignore[union-attr]
        # the test loop never ended (pytest.exit() while collecting, say): stopped early
        stopped = getattr(role, "stopped", None) is not None or (
            role.controller and getattr(role, "verdict", None) is None
        )
        try:
            role.sessionfinish(self.config)
        except RNNCovError as exc:
            self.problems.append(str(exc))
        except KeyboardInterrupt as exc:  # before any file was written (they are held whole)
            from ..files import interrupt_name

            interrupted = True
            self.problems.append(
                f"interrupted ({interrupt_name(exc)}) before the files were written"
            )
        self.problems.extend(getattr(role, "problems", ()))
        verdict = getattr(role, "verdict", None)
        if (
            session.exitstatus == pytest.ExitCode.OK
            and stopped
            and verdict is not None
            and not verdict.applied
            and verdict.gated
        ):  # pytest.exit(returncode=0) in a test: a gate asked for was never decided
            self.problems.append(
                "the gate was not applied (the session stopped early) and pytest would have "
                "exited 0: a session that stops before all its tests ran cannot pass a gate"
            )
        if interrupted or getattr(role, "interrupted", False):
            session.exitstatus = pytest.ExitCode.INTERRUPTED
        elif self.problems and session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        if role.controller and self.config.pluginmanager.get_plugin("terminalreporter") is None:
            self._say_on_stderr(verdict)  # -p no:terminal: a failed gate is not silent

    def _problem_lines(self) -> list[str]:
        """The plugin's errors, one line each, as the summary prints them."""
        return [f"ERROR pytest-rnncov: {problem}" for problem in self.problems]

    def _say_on_stderr(self, verdict: Any) -> None:
        """The problems and the verdict's lines on stderr, where no terminal reporter
        prints the summary (``-p no:terminal``)."""
        import sys

        from ..validation import printable

        lines = [] if verdict is None else [text for text, _ in verdict.lines()]
        lines += self._problem_lines()
        for line in lines:
            sys.stderr.write(printable(line) + "\n")

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self._restore_sigterm is not None:
            self._restore_sigterm()
        if self._checkpoints is not None:
            self._checkpoints.remove()
        if self._engine is not None:  # model names resolve from this session only
            from ..generation.strategies import use_session_models

            use_session_models(None)

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self._role is None:
            return  # the plugin was not used: print nothing
        from .roles import Central

        role = self._role
        if not isinstance(role, Central):
            return
        from ..reporting.terminal import TermReport

        kinds = {kind for kind, _ in self.settings.reports}
        data = role.report_data()
        applied = role.verdict is None or role.verdict.applied
        tables = bool(kinds & {"term", "term-detail"})  # both terminal tables, or neither
        show = tables and (
            bool(data.models) or bool(data.track_errors) or (self.settings.explicit and applied)
        )
        report = TermReport(
            terminalreporter, detail="term-detail" in kinds, coverage=show, samples=tables
        )
        report.sections(data, role.verdict)
        from ..validation import printable

        for line in role.written:
            terminalreporter.write_line(printable(line))
        if role.verdict is not None:
            report.verdict(role.verdict)
        for line in self._problem_lines():  # last: a file not written makes the exit 1
            terminalreporter.write_line(printable(line), red=True, bold=True)


def _stepwise_skipped(report_status: Any) -> int:
    """How many tests pytest's stepwise plugin skipped, read from its status: a list of
    lines, one string before pytest 8.4 (0: none, or a status this does not know)."""
    lines = [report_status] if isinstance(report_status, str) else report_status
    for line in lines:
        skipped = re.match(r"skipping (\d+) already passed", str(line))
        if skipped:
            return int(skipped.group(1))
    return 0


def _uncollected_reason(nodeids: list[str]) -> str:
    """Why the gate is not applied to a session in which ``nodeids`` failed to collect
    (``--continue-on-collection-errors``): their tests did not run."""
    n = len(nodeids)
    shown = ", ".join(nodeids[:3]) + (", ..." if n > 3 else "")
    noun = "test file" if all("::" not in nodeid for nodeid in nodeids) else "test collector"
    return (
        f"{n} {noun}{'s' if n != 1 else ''} could not be collected ({shown}), so "
        f"{'their' if n != 1 else 'its'} tests did not run"
    )


def _draws_at_random(item: pytest.Item) -> bool:
    """Whether ``item`` is a Hypothesis test that draws its examples at random (another
    run draws others) and no ``--hypothesis-seed`` pins them. Draws made inside the test
    (a ``@given`` function it calls) are seen where the inputs are fed
    (``RNNCovSession.note_random_draws``)."""
    return (
        draws_at_random(getattr(item, "obj", None))
        and item.config.getoption("hypothesis_seed", None) is None
    )


def _worker_id(node: Any) -> str:
    """An xdist node's worker id (gw0, ...)."""
    return str(getattr(getattr(node, "gateway", None), "id", "?"))


@pytest.fixture(scope="session")
def rnncov(request: pytest.FixtureRequest) -> Generator["RNNCovSession", None, None]:
    """The session's RNN coverage engine: ``rnncov.track(model, profile=..., name=...)``."""
    plugin = request.config.pluginmanager.get_plugin("_rnncov")
    if plugin is not None:
        yield plugin.engine
        return
    from ..generation.strategies import use_session_models
    from .session import RNNCovSession  # --no-rnn: models still work, nothing is reported

    load_session_modules()
    engine = RNNCovSession(seed=seed_setting(request.config))
    use_session_models(lambda: engine.models)  # @given(targeted_mutants("name", ...))
    try:
        yield engine
    finally:
        use_session_models(None)


def load_session_modules() -> None:
    """Import every module of ours that some option loads before the tests run (reports,
    baselines, xdist roles), once the engine is needed (about 16 ms beside it).

    Hypothesis draws some values from the constants of the local modules imported so far,
    and an editable install of pytest-rnncov is local code: without this, adding
    ``--rnn-coverage`` or ``--rnn-report=html`` changed the examples a derandomized test
    drew (a passing property test failed with an HTML report asked for)."""
    from ..config import idle_threads, tf_notices  # noqa: F401
    from ..generation import strategies  # noqa: F401
    from ..reporting import (  # noqa: F401
        attribution,
        baseline,
        html,
        json_report,
        markdown_report,
        outputs,
        results,
        terminal,
    )
    from . import roles  # noqa: F401
