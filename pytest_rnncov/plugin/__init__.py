"""pytest hooks of pytest-rnncov: a thin layer that forwards to the session engine and to
the process's role (:mod:`.roles`). Importing this module loads no numpy, TensorFlow,
PyTorch, RDKit or NLTK: models are wrapped only when a test uses the ``rnncov`` fixture."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING, Any, Generator

import pytest

from .options import addoption, check_outputs, read_settings, seed_setting

if TYPE_CHECKING:
    from .options import Settings
    from .roles import Central, DistWorker
    from .session import RNNCovSession

MARKER = ("rnn_coverage(min=None, metrics=None, model=None): the inputs this test feeds to "
          "tracked models must reach coverage `min` (a fraction, or bars such as "
          "'BC:0.9,TC:0.4'; default --rnn-coverage) on `metrics` (default the gate metrics) "
          "for `model` (default every model the test fed).")


def pytest_addoption(parser: pytest.Parser) -> None:
    addoption(parser)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", MARKER)
    # TensorFlow's C++ start-up notices (oneDNN, CUDA) are noise in test output; keep a
    # level the user chose
    if "tensorflow" not in sys.modules:
        os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if config.getoption("no_rnn"):
        return
    settings = read_settings(config)
    check_outputs(settings)
    if any(kind == "html" for kind, _ in settings.reports):
        from ..errors import MissingResource
        from ..reporting.html import require_html

        try:
            require_html()
        except MissingResource as exc:
            raise pytest.UsageError(f"--rnn-report=html: {exc}") from None
    config.pluginmanager.register(RNNCovPlugin(config, settings), "_rnncov")


class RNNCovPlugin:
    """Forwards pytest's hooks to the session engine and the process's role."""

    def __init__(self, config: pytest.Config, settings: "Settings") -> None:
        from ..errors import RNNCovError
        from .roles import Central, DistController, DistWorker
        from .session import RNNCovSession

        self.config = config
        self.settings = settings
        self.engine = RNNCovSession(seed=settings.seed, metrics=settings.tracked_metrics)
        self.role: Central | DistWorker
        if hasattr(config, "workerinput"):
            self.role = DistWorker(settings, self.engine)
        else:
            distributed = getattr(config.option, "dist", "no") not in (None, "no")
            try:
                self.role = (DistController if distributed else Central)(settings, self.engine)
            except RNNCovError as exc:  # an unreadable baseline
                raise pytest.UsageError(f"--rnn-compare: {exc}") from None
        self.problems: list[str] = []

    def pytest_report_header(self, config: pytest.Config) -> str | None:
        if not self.settings.explicit:
            return None  # installed but not asked for: print nothing
        bars = self.settings.bars
        return f"rnncov: gate {'off' if bars is None else bars.describe()}, seed {self.settings.seed}"

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item: pytest.Item) -> Generator[None, Any, Any]:
        self.engine.current_test = item.nodeid
        try:
            return (yield)
        finally:
            self.engine.current_test = None

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_call(self, item: pytest.Item) -> Generator[None, Any, Any]:
        marker = item.get_closest_marker("rnn_coverage")
        if marker is None:
            return (yield)
        self.engine.start_test()
        try:
            result = yield
        finally:
            fed = self.engine.stop_test()
        from .marker import check_marker

        message = check_marker(marker, fed, self.settings)
        if message is not None:
            pytest.fail(message, pytrace=False)
        return result

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, Any, Any]:
        result = yield
        if self.role.controller:
            applied, reason = True, None
            if session.config.option.collectonly:
                applied, reason = False, "only collecting (--collect-only)"
            elif session.testscollected == 0:
                applied, reason = False, "no test was selected"
            verdict = self.role.decide(applied, reason)  # type: ignore[union-attr]
            if verdict.passed is False:
                session.testsfailed += 1
        return result

    @pytest.hookimpl(optionalhook=True)  # an xdist hook: unknown where xdist is not installed
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        from ..errors import RNNCovError
        from .roles import DistController

        if isinstance(self.role, DistController):
            try:
                self.role.testnodedown(node, error)
            except RNNCovError as exc:
                self.problems.append(str(exc))

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        from ..errors import RNNCovError

        try:
            self.role.sessionfinish(self.config)
        except RNNCovError as exc:
            self.problems.append(str(exc))
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        from .roles import Central

        role = self.role
        if not isinstance(role, Central):
            return
        from ..reporting.terminal import TermReport

        kinds = {kind for kind, _ in self.settings.reports}
        data = role.data()
        applied = role.verdict is None or role.verdict.applied
        show = bool(kinds & {"term", "term-detail"}) and (
            bool(data.models) or bool(data.track_errors) or (self.settings.explicit and applied))
        report = TermReport(terminalreporter, detail="term-detail" in kinds, coverage=show)
        report.sections(data)
        for line in role.written:
            terminalreporter.write_line(line)
        for problem in self.problems:
            terminalreporter.write_line(f"ERROR pytest-rnncov: {problem}", red=True, bold=True)
        if role.verdict is not None:
            report.verdict(role.verdict)

@pytest.fixture(scope="session")
def rnncov(request: pytest.FixtureRequest) -> "RNNCovSession":
    """The session's RNN coverage engine: ``rnncov.track(model, profile=..., name=...)``."""
    plugin = request.config.pluginmanager.get_plugin("_rnncov")
    if plugin is not None:
        return plugin.engine
    from .session import RNNCovSession  # --no-rnn: models still work, nothing is reported

    return RNNCovSession(seed=seed_setting(request.config))
