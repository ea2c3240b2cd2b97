"""pytest hooks of pytest-rnncov: options, validators, and a plugin object that forwards to
the engine. Importing this module loads no TensorFlow, RDKit or NLTK (nor numpy): models are
wrapped only when a test uses the ``rnncov`` fixture."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any, Generator

import pytest

if TYPE_CHECKING:
    from .engine import RNNCovSession

METRIC_NAMES = ("BC", "SC", "TC", "NC", "KMNC", "NBC", "SNAC", "BS", "SBC", "BT", "WT")
REPORT_TYPES = ("term", "term-detail", "json", "html")
DEFAULT_HTML = "rnncov-html"
DEFAULT_JSON = "rnncov.json"


# -- validators ------------------------------------------------------------------------------
def fraction(value: str) -> float:
    """A coverage bar in [0, 1]; ``90`` is refused with a hint to write ``0.9``."""
    try:
        number = float(value)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{value!r} is not a number; give a fraction such as 0.9"
        ) from None
    if not 0 <= number <= 1:
        hint = f"; for {number:g}% use {number / 100:g}" if 1 < number <= 100 else ""
        raise argparse.ArgumentTypeError(f"{value} is not a fraction in [0, 1]{hint}")
    return number


def metric_list(value: str) -> tuple[str, ...]:
    """Comma-separated metric names, e.g. ``BC,SC,TC``."""
    names = tuple(v.strip().upper() for v in value.split(",") if v.strip())
    unknown = [n for n in names if n not in METRIC_NAMES]
    if unknown or not names:
        raise argparse.ArgumentTypeError(
            f"unknown metric {', '.join(unknown) or repr(value)}; choose from "
            f"{','.join(METRIC_NAMES)}"
        )
    return names


def report_spec(value: str) -> tuple[str, str | None]:
    """``term``, ``term-detail``, ``json[:PATH]`` or ``html[:DIR]``."""
    kind, _, dest = value.partition(":")
    if kind not in REPORT_TYPES:
        raise argparse.ArgumentTypeError(
            f"unknown report type {kind!r}; use term, term-detail, json:PATH or html:DIR"
        )
    if kind.startswith("term") and dest:
        raise argparse.ArgumentTypeError(f"{kind} takes no destination; use --rnn-report={kind}")
    if kind == "json":
        return kind, dest or DEFAULT_JSON
    if kind == "html":
        return kind, dest or DEFAULT_HTML
    return kind, None


def seed(value: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not an integer seed") from None


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rnncov", "RNN coverage of LSTM models (pytest-rnncov)")
    group.addoption("--rnn-coverage", metavar="MIN", type=fraction, default=None,
                    help="fail the session when a tracked model's coverage of any gate metric "
                         "is below MIN, a fraction in [0, 1] (ini: rnn_coverage)")
    group.addoption("--rnn-metrics", metavar="LIST", type=metric_list, default=None,
                    help="metrics the gate applies to, comma-separated (default BC,SC,TC; "
                         f"known: {','.join(METRIC_NAMES)}; ini: rnn_metrics)")
    group.addoption("--rnn-report", metavar="TYPE[:DEST]", type=report_spec, action="append",
                    default=None,
                    help="term (default), term-detail, json:PATH or html:DIR; repeatable "
                         "(ini: rnn_report)")
    group.addoption("--rnn-seed", metavar="N", type=seed, default=None,
                    help="seed of everything random in pytest-rnncov (default 0; ini: rnn_seed)")
    group.addoption("--rnn-save", metavar="NAME", default=None,
                    help="save this run's coverage as baseline NAME (.rnncov/NAME.json, or a "
                         "path ending in .json)")
    group.addoption("--rnn-compare", metavar="NAME", default=None,
                    help="fail when coverage falls below baseline NAME by more than "
                         "--rnn-compare-tolerance")
    group.addoption("--rnn-compare-tolerance", metavar="FRACTION", type=fraction, default=None,
                    help="allowed drop below the baseline, a fraction (default 0; "
                         "ini: rnn_compare_tolerance)")
    group.addoption("--no-rnn", action="store_true", default=False,
                    help="switch pytest-rnncov off: no gate, no report, marker not enforced")
    parser.addini("rnn_coverage", "default of --rnn-coverage", default=None)
    parser.addini("rnn_metrics", "default of --rnn-metrics", default=None)
    parser.addini("rnn_report", "default of --rnn-report (one per line)", type="linelist",
                  default=[])
    parser.addini("rnn_seed", "default of --rnn-seed", default=None)
    parser.addini("rnn_compare_tolerance", "default of --rnn-compare-tolerance", default=None)


def _option(config: pytest.Config, name: str, ini: str, convert: Any) -> Any:
    value = config.getoption(name)
    if value is not None:
        return value
    raw = config.getini(ini)
    if raw in (None, "", []):
        return None
    try:
        return [convert(v) for v in raw] if isinstance(raw, list) else convert(raw)
    except argparse.ArgumentTypeError as exc:
        raise pytest.UsageError(f"ini option {ini} = {raw!r}: {exc}") from None


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "rnn_coverage(min=None, metrics=None, model=None): the inputs this test feeds to "
        "tracked models must reach coverage `min` (default --rnn-coverage) on `metrics` "
        "(default the gate metrics) for `model` (default every model the test fed).",
    )
    if config.getoption("no_rnn"):
        return
    required = _option(config, "rnn_coverage", "rnn_coverage", fraction)
    metrics = _option(config, "rnn_metrics", "rnn_metrics", metric_list)
    reports = _option(config, "rnn_report", "rnn_report", report_spec) or [("term", None)]
    session_seed = _option(config, "rnn_seed", "rnn_seed", seed)
    if any(kind == "html" for kind, _ in reports):
        from .errors import MissingResource
        from .html import require_matplotlib

        try:
            require_matplotlib()
        except MissingResource as exc:
            raise pytest.UsageError(f"--rnn-report=html: {exc}") from None
    plugin = RNNCovPlugin(config, required, metrics, reports,
                          0 if session_seed is None else session_seed)
    plugin.configure_baselines(
        config.getoption("rnn_save"), config.getoption("rnn_compare"),
        _option(config, "rnn_compare_tolerance", "rnn_compare_tolerance", fraction) or 0.0,
    )
    config.pluginmanager.register(plugin, "_rnncov")


class RNNCovPlugin:
    """Forwards pytest's hooks to the session engine (one per process)."""

    def __init__(self, config: pytest.Config, required: float | None,
                 metrics: tuple[str, ...] | None, reports: list[tuple[str, str | None]],
                 session_seed: int) -> None:
        from .engine import GATE_METRICS, RNNCovSession

        self.config = config
        self.required = required
        self.gate_metrics = metrics or GATE_METRICS
        tracked = tuple(dict.fromkeys(GATE_METRICS + self.gate_metrics))
        self.engine = RNNCovSession(seed=session_seed, metrics=tracked)
        self.reports = reports
        self.is_worker = hasattr(config, "workerinput")
        self.explicit = required is not None or reports != [("term", None)]
        self.gate_message: str | None = None
        self.gate_passed = True
        self.written: list[str] = []

    def configure_baselines(self, save: str | None, compare: str | None, tolerance: float) -> None:
        from pathlib import Path

        from .baseline import baseline_path, load_baseline
        from .errors import InvalidArgument

        directory = Path(self.config.rootpath) / ".rnncov"
        try:
            self.save_to = None if save is None else baseline_path(save, directory)
            self.compare_to = None if compare is None else baseline_path(compare, directory)
            self.baseline = None if self.compare_to is None else load_baseline(self.compare_to)
        except InvalidArgument as exc:
            raise pytest.UsageError(str(exc)) from None
        self.tolerance = tolerance
        self.baseline_failures: list[str] = []
        if save is not None or compare is not None:
            self.explicit = True

    def pytest_report_header(self, config: pytest.Config) -> str | None:
        if not self.explicit:
            return None  # installed but not asked for: print nothing
        gate = "off" if self.required is None else (
            f"{self.required:g} on {','.join(self.gate_metrics)}")
        return f"rnncov: gate {gate}, seed {self.engine.seed}"

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
        self._check_marker(marker, fed)
        return result

    def _check_marker(self, marker: pytest.Mark, fed: dict[str, Any]) -> None:
        from .engine import ModelRecord, shortfalls
        from .report import percent

        options = dict(marker.kwargs)
        unknown = set(options) - {"min", "metrics", "model"}
        if marker.args or unknown:
            pytest.fail(f"rnn_coverage marker takes min=, metrics=, model= keywords; got "
                        f"{', '.join(map(repr, marker.args)) or ', '.join(sorted(unknown))}",
                        pytrace=False)
        required = options.get("min", self.required)
        if required is None:
            pytest.fail("rnn_coverage marker needs min=..., or run with --rnn-coverage=MIN",
                        pytrace=False)
        try:
            required = fraction(str(required))
            metrics = metric_list(",".join(options.get("metrics") or self.gate_metrics))
        except argparse.ArgumentTypeError as exc:
            pytest.fail(f"rnn_coverage marker: {exc}", pytrace=False)
        names = [options["model"]] if options.get("model") else sorted(fed)
        if not names:
            pytest.fail("rnn_coverage marker: this test fed no inputs to a tracked model",
                        pytrace=False)
        records = {}
        for name in names:
            if name not in fed:
                pytest.fail(f"rnn_coverage marker: this test fed no inputs to model {name!r} "
                            f"(it fed: {', '.join(sorted(fed)) or 'none'})", pytrace=False)
            records[name] = ModelRecord.from_coverage(name, fed[name])
        missing = shortfalls(records, required, metrics)
        if missing:
            lines = [f"RNN coverage of the inputs this test fed is below {percent(required)}:"]
            for s in missing:
                if s.total == 0:
                    lines.append(f"  {s.model}: {s.metric} is not tracked for this model")
                else:
                    lines.append(
                        f"  {s.model}: {s.metric} {percent(s.rate, below=required)} "
                        f"({s.covered}/{s.total}, {s.total - s.covered} uncovered)"
                    )
            pytest.fail("\n".join(lines), pytrace=False)

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, Any, Any]:
        result = yield
        if not self.is_worker and self.required is not None:
            from .engine import shortfalls
            from .report import gate_message, percent

            records = self.engine.records()
            missing = shortfalls(records, self.required, self.gate_metrics)
            self.gate_passed = bool(records) and not missing
            self.gate_message = (
                gate_message(self.required, missing, len(records)) if records else
                f"Required RNN coverage of {percent(self.required)} not reached: no model was "
                "tracked (register one with rnncov.track(model, ...))"
            )
            if not self.gate_passed:
                session.testsfailed += 1
        if not self.is_worker and self.baseline is not None:
            from .baseline import regressions

            self.baseline_failures = regressions(self.baseline, self.engine.records(),
                                                 self.tolerance)
            if self.baseline_failures:
                session.testsfailed += 1
        return result

    @pytest.hookimpl(optionalhook=True)  # an xdist hook: unknown where xdist is not installed
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """xdist controller: union a worker's coverage into the session."""
        data = getattr(node, "workeroutput", {}).get("rnncov")
        if data is not None:
            self.engine.merge_worker(json.loads(data))

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        if self.is_worker:
            self.config.workeroutput["rnncov"] = json.dumps(  # type: ignore[attr-defined]
                self.engine.worker_data())
            return
        from .report import JsonReport

        records = self.engine.records()
        if self.save_to is not None:
            from .baseline import save_baseline

            save_baseline(self.save_to, records)
        for kind, dest in self.reports:
            if kind == "json" and dest is not None:
                path = JsonReport(dest).report(records, self.required, self.gate_metrics,
                                               self.engine.campaigns)
                self.written.append(str(path))
            if kind == "html" and dest is not None:
                from .html import HtmlReport

                path = HtmlReport(dest).report(records, self.engine.campaigns, self.required,
                                               self.gate_metrics)
                self.written.append(str(path))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if self.is_worker:
            return
        from .report import AdversarialTermReport, TermReport

        records = self.engine.records()
        kinds = {kind for kind, _ in self.reports}
        if kinds & {"term", "term-detail"} and (records or self.explicit):
            TermReport(records, detail="term-detail" in kinds).report(terminalreporter)
        for path in self.written:
            kind = "HTML" if path.endswith(".html") else "JSON"
            terminalreporter.write_line(f"RNN coverage {kind} written to {path}")
        if self.engine.campaigns:
            AdversarialTermReport(self.engine.campaigns).report(terminalreporter)
        if self.save_to is not None:
            terminalreporter.write_line(f"RNN coverage baseline saved to {self.save_to}")
        if self.compare_to is not None:
            if self.baseline_failures:
                terminalreporter.write_line(
                    f"FAIL RNN coverage fell below baseline {self.compare_to} (tolerance "
                    f"{self.tolerance:g}): " + "; ".join(self.baseline_failures),
                    red=True, bold=True)
            else:
                terminalreporter.write_line(
                    f"RNN coverage is not below baseline {self.compare_to}.", green=True)
        if self.gate_message is not None:
            if self.gate_passed:
                terminalreporter.write_line(self.gate_message, green=True)
            else:
                terminalreporter.write_line("FAIL " + self.gate_message, red=True, bold=True)


@pytest.fixture(scope="session")
def rnncov(request: pytest.FixtureRequest) -> "RNNCovSession":
    """The session's RNN coverage engine: ``rnncov.track(model, profile=..., name=...)``."""
    plugin = request.config.pluginmanager.get_plugin("_rnncov")
    if plugin is not None:
        return plugin.engine
    from .engine import RNNCovSession  # --no-rnn: models still work, nothing is reported

    return RNNCovSession(seed=request.config.getoption("rnn_seed") or 0)
