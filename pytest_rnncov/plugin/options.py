"""Command-line and ini options: declared, validated and resolved into one ``Settings``.

Numpy-free (the hook module imports this on every pytest run). Every bad value is a usage
error (exit 4) that names the value and says what to write instead; paths the session
will write are checked here, before any test runs.
"""

from __future__ import annotations

import argparse
import os
import shlex
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Collection

import pytest

from ..config.bars import Bars, latest_bars, parse_bars, parse_fraction
from ..config.values import parse_metrics, parse_report, parse_seed
from ..core.exclusions import Exclusion, parse_exclusion, unique_exclusions
from ..core.names import DEFAULT_METRICS, METRIC_NAMES, TESTS_PER_CONDITION
from ..errors import InvalidArgument, RNNCovError

if TYPE_CHECKING:
    from ..files import Output


def _argparse_type(parse: Callable[[str], Any]) -> Callable[[str], Any]:
    """An argparse type from a parser raising InvalidArgument (shown as "--option: ...")."""

    def convert(value: str) -> Any:
        try:
            return parse(value)
        except InvalidArgument as exc:
            raise argparse.ArgumentTypeError(str(exc).strip()) from None

    convert.__name__ = parse.__name__
    return convert


bar_entries = _argparse_type(parse_bars)
fraction = _argparse_type(lambda value: parse_fraction(value, ""))
metric_list = _argparse_type(parse_metrics)
report_spec = _argparse_type(parse_report)
seed = _argparse_type(parse_seed)
exclusion_spec = _argparse_type(parse_exclusion)


#: ini keys that take a list (a string of several values in an ini file)
LIST_KEYS = ("rnn_coverage", "rnn_metrics", "rnn_report", "rnn_exclude")


def addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("rnncov", "RNN coverage of recurrent models (pytest-rnncov)")
    group.addoption(
        "--rnn-coverage",
        metavar="BARS",
        type=bar_entries,
        action="append",
        default=None,
        help="fail the session when a tracked model's coverage is below the bar: "
        "0.9 (every gate metric), BC:0.9,TC:0.4 (per metric) or "
        "mnist:TC:0.4 (per model); repeatable: the bars add up, and a bar for the same "
        "model and metric takes the later value (ini: rnn_coverage)",
    )
    group.addoption(
        "--rnn-metrics",
        metavar="LIST",
        type=metric_list,
        default=None,
        help="metrics a plain bar applies to, comma-separated (default BC,SC,TC; "
        f"known: {','.join(METRIC_NAMES)}; ini: rnn_metrics)",
    )
    group.addoption(
        "--rnn-report",
        metavar="TYPE[:DEST]",
        type=report_spec,
        action="append",
        default=None,
        help="term (default), term-detail, json:PATH, html:DIR or markdown:PATH (a CI job "
        "summary: $GITHUB_STEP_SUMMARY); repeatable (ini: rnn_report)",
    )
    group.addoption(
        "--rnn-seed",
        metavar="N",
        type=seed,
        default=None,
        help="seed of everything random in pytest-rnncov (default 0; ini: rnn_seed)",
    )
    group.addoption(
        "--rnn-data",
        metavar="PATH",
        default=None,
        help="write this run's exact coverage data to PATH, for "
        "`python -m pytest_rnncov combine` (ini: rnn_data)",
    )
    group.addoption(
        "--rnn-save",
        metavar="NAME",
        default=None,
        help="save this run's coverage as baseline NAME (.rnncov/NAME.json, or a "
        "path ending in .json)",
    )
    group.addoption(
        "--rnn-compare",
        metavar="NAME",
        default=None,
        help="fail when coverage falls below baseline NAME by more than --rnn-compare-tolerance",
    )
    group.addoption(
        "--rnn-compare-tolerance",
        metavar="FRACTION",
        type=fraction,
        default=None,
        help="allowed drop below the baseline, a fraction (default 0; ini: rnn_compare_tolerance)",
    )
    group.addoption(
        "--rnn-samples",
        metavar="DIR",
        default=None,
        help="campaigns without output_dir save their adversarial samples in "
        "DIR/<model>/<test> (for CI artifacts; ini: rnn_samples)",
    )
    group.addoption(
        "--rnn-context",
        choices=["test"],
        default=None,
        help="record which tests covered each condition (the first "
        f"{TESTS_PER_CONDITION} per condition) and how many each test covered, for the "
        "reports and `python -m pytest_rnncov report --tests` (ini: rnn_context)",
    )
    group.addoption(
        "--rnn-exclude",
        metavar="MODEL:METRIC:LABEL = REASON",
        type=exclusion_spec,
        action="append",
        default=None,
        help="count a condition apart, as unreachable, with the reason; the label as the "
        "reports print it (t=7 for every condition at step 7); repeatable (ini: rnn_exclude, "
        "one per line)",
    )
    group.addoption(
        "--no-rnn",
        action="store_true",
        default=False,
        help="switch pytest-rnncov off: no gate, no report, marker not enforced",
    )
    parser.addini(
        "rnn_coverage",
        "default of --rnn-coverage (a string or a TOML list of bars)",
        type="args",
        default=[],
    )
    parser.addini(
        "rnn_metrics", "default of --rnn-metrics (a string or a TOML list)", type="args", default=[]
    )
    parser.addini(
        "rnn_report",
        "default of --rnn-report (one per line, or a TOML list)",
        type="linelist",
        default=[],
    )
    parser.addini("rnn_context", "default of --rnn-context", default=None)
    parser.addini("rnn_samples", "default of --rnn-samples", default=None)
    parser.addini(
        "rnn_exclude",
        "conditions counted apart, one MODEL:METRIC:LABEL = REASON per line",
        type="linelist",
        default=[],
    )
    parser.addini("rnn_seed", "default of --rnn-seed", type=_scalar(int), default=None)
    parser.addini("rnn_data", "default of --rnn-data", default=None)
    parser.addini(
        "rnn_compare_tolerance",
        "default of --rnn-compare-tolerance",
        type=_scalar(float),
        default=None,
    )


def _scalar(number: type) -> Any:
    """The ini type of a number key: ``str | number`` where pytest takes unions (9.2: in its
    native ``[tool.pytest]`` table ``rnn_seed = 1`` then works, not only ``"1"``), else
    pytest's string. The string comes first: pytest tries the union's members in order,
    and ``int("1_000")`` would take the text before it is validated here by its own rules
    (ASCII digits, no ``_``)."""
    return str | number if pytest.version_tuple[:2] >= (9, 2) else None


#: pytest's options that run no test, and what the gate says of them
RUNNING_NO_TEST = (
    ("collectonly", "only collecting (--collect-only)"),
    ("setupplan", "only planning the fixtures' setup (--setup-plan)"),
    ("setuponly", "only setting up fixtures (--setup-only)"),
    ("showfixtures", "only listing fixtures (--fixtures)"),
    ("show_fixtures_per_test", "only listing each test's fixtures (--fixtures-per-test)"),
    ("cacheshow", "only showing the cache (--cache-show)"),
)


def running_no_test(config: pytest.Config) -> str | None:
    """Why this session runs no test by design (None: it runs them)."""
    for option, reason in RUNNING_NO_TEST:
        if config.getoption(option, False):
            return reason
    return None


def option_label(option: str, from_ini: Collection[str]) -> str:
    """How messages name ``option`` (``"data"``): ``--rnn-data``, or ``ini option
    rnn_data`` when the ini file gave it."""
    return f"ini option rnn_{option}" if option in from_ini else f"--rnn-{option}"


@dataclass(frozen=True)
class Settings:
    """Every option resolved: the command line wins over the ini."""

    bars: Bars | None
    gate_metrics: tuple[str, ...]
    tracked_metrics: tuple[str, ...]
    reports: tuple[tuple[str, str | None], ...]
    seed: int
    data: Path | None
    save: Path | None
    compare: Path | None
    tolerance: float
    explicit: bool
    exclusions: tuple[Exclusion, ...] = ()
    #: whether tests are recorded per condition (--rnn-context=test)
    record_tests: bool = False
    #: where campaigns save their samples when given no output_dir (--rnn-samples)
    samples: Path | None = None
    #: the options whose value came from the ini file (named so in messages)
    from_ini: frozenset[str] = frozenset()

    def label(self, option: str) -> str:
        """How messages name ``option`` (``option_label``)."""
        return option_label(option, self.from_ini)

    @property
    def ratchet(self) -> bool:
        """``--rnn-compare=X --rnn-save=X``: compare with the baseline, then move it up."""
        return (
            self.save is not None
            and self.compare is not None
            and os.path.realpath(self.save) == os.path.realpath(self.compare)
        )

    def output_paths(self) -> list[tuple[str, Path]]:
        """The files and folders the session writes, each with the option that names it
        (a ratchet's baseline is an input: it is only replaced)."""
        outputs = [
            (self.report_label(kind), Path(dest)) for kind, dest in self.reports if dest is not None
        ]
        if self.data is not None:
            outputs.append((self.label("data"), self.data))
        if self.save is not None and not self.ratchet:
            outputs.append(("--rnn-save", self.save))
        if self.samples is not None:  # a folder: no other output may lie inside it
            outputs.append((self.label("samples"), self.samples))
        return outputs

    def report_label(self, kind: str) -> str:
        """How messages name the report ``kind``'s path: ``--rnn-report=json:``."""
        if "report" in self.from_ini:
            return f"ini option rnn_report {kind}:"
        return f"--rnn-report={kind}:"


def _ini(config: pytest.Config, name: str) -> Any:
    with warnings.catch_warnings():
        # pytest 9 warns (addressed to plugins) when a TOML list reaches a string key; the
        # value is refused below with a message that names it, so the warning is noise
        warnings.filterwarnings("ignore", "Passing a value that is not a string")
        try:
            raw = config.getini(name)
        except pytest.UsageError as exc:  # e.g. shlex's "No closing quotation", unnamed
            if name in str(exc):
                raise
            raise pytest.UsageError(
                f"ini option {name}: {exc}; close each quote, or write the value unquoted"
            ) from None
        except (TypeError, ValueError) as exc:  # pytest < 9.2: a TOML value of another type
            fix = (
                f'give a list of strings ({name} = ["..."])'
                if name in LIST_KEYS
                else f'this pytest reads it as a string: quote it ({name} = "...")'
            )
            raise pytest.UsageError(f"ini option {name}: {exc}; {fix}") from None
    if raw in (None, "", []):
        return None
    return raw


def _from_root(config: pytest.Config, path: Any) -> Any:
    """A relative path given in the ini file, under the rootdir (as ``--rnn-save``'s
    baselines and pytest's cache are): the same files wherever pytest runs from. Paths on
    the command line are relative to the current directory, as a shell's are. A trailing
    separator stays (``sub/`` names a folder, which a file option refuses)."""
    if not isinstance(path, str) or not path.strip() or Path(path).is_absolute():
        return path
    return os.path.join(config.rootpath, path)


def _usage(where: str, exc: Exception) -> pytest.UsageError:
    return pytest.UsageError(f"{where}: {exc}")


def _joined(config: pytest.Config, ini: str) -> str | None:
    """An ini value given as a string or a TOML list, joined with commas. pytest splits a
    string at spaces, so a word ending in ``:`` or starting with one is joined to its
    neighbour again (``BC: 0.9`` is ``BC:0.9``, as on the command line)."""
    raw = _ini(config, ini)
    if raw is None:
        return None
    items = raw if isinstance(raw, list) else [raw]
    if not all(isinstance(i, str) for i in items):
        raise pytest.UsageError(f"ini option {ini} = {raw!r}: give a string or a list of strings")
    words: list[str] = []
    for item in (i.strip().strip(",") for i in items):
        if item and words and (words[-1].endswith(":") or item.startswith(":")):
            words[-1] += item
        elif item:
            words.append(item)
    return ",".join(words)


def seed_setting(config: pytest.Config) -> int:
    """``--rnn-seed``, else the ini ``rnn_seed``, else 0 (also under --no-rnn)."""
    value = config.getoption("rnn_seed")
    if value is not None:
        return int(value)
    raw = _ini(config, "rnn_seed")
    if raw is None:
        return 0
    try:
        return seed(str(raw).strip())
    except argparse.ArgumentTypeError as exc:
        raise _usage(f"ini option rnn_seed = {raw!r}", exc) from None


def read_settings(config: pytest.Config) -> Settings:
    """Resolve every option; a bad value raises pytest.UsageError (exit 4)."""
    metrics = config.getoption("rnn_metrics")
    if metrics is None:
        text = _joined(config, "rnn_metrics")
        if text is not None:
            try:
                metrics = metric_list(text)
            except argparse.ArgumentTypeError as exc:
                raise _usage(f"ini option rnn_metrics = {text!r}", exc) from None
    gate_metrics = tuple(metrics or DEFAULT_METRICS)
    given = config.getoption("rnn_coverage")  # each occurrence parsed by bar_entries
    bars: Bars | None
    try:
        if given is not None:
            where = "--rnn-coverage"
            bars = Bars(latest_bars(given), gate_metrics)
        else:
            text = _joined(config, "rnn_coverage")
            where = f"ini option rnn_coverage = {text!r}"
            bars = None if text is None else Bars.parse(text, gate_metrics)
    except InvalidArgument as exc:
        raise _usage(where, exc) from None
    tracked = tuple(
        dict.fromkeys(DEFAULT_METRICS + gate_metrics + (bars.named_metrics if bars else ()))
    )

    from_ini: set[str] = set()
    reports = config.getoption("rnn_report")
    if reports is None:
        lines = _ini(config, "rnn_report") or []
        if isinstance(lines, str):
            lines = [lines]
        try:  # shell-style words per line, so a quoted path may hold spaces
            specs = [item for line in lines for item in shlex.split(str(line))]
            reports = [report_spec(s) for s in specs]
        except (argparse.ArgumentTypeError, ValueError) as exc:
            raise _usage(f"ini option rnn_report = {lines!r}", exc) from None
        reports = [(kind, _from_root(config, path)) for kind, path in reports]
        from_ini.update(["report"] if reports else [])
    reports = tuple(dict.fromkeys(reports or [("term", None)]))

    context = config.getoption("rnn_context") or _ini(config, "rnn_context")
    if context not in (None, "test"):
        raise pytest.UsageError(
            f"ini option rnn_context = {context!r}: the one context is test (rnn_context = test)"
        )

    samples, given, example = config.getoption("rnn_samples"), "--rnn-samples=", "--rnn-samples="
    if samples is None:
        samples, given, example = (
            _ini(config, "rnn_samples"),
            "ini option rnn_samples = ",
            "rnn_samples = ",
        )
    if samples is not None:
        if not isinstance(samples, str) or not samples.strip():
            raise pytest.UsageError(
                f"{given}{samples!r}: give a folder, e.g. {example}rnncov-samples"
            )
        if given.startswith("ini"):
            samples = _from_root(config, samples)
            from_ini.add("samples")
        from ..config.paths import check_output_dir

        try:
            samples = check_output_dir(Path(samples).absolute(), option_label("samples", from_ini))
        except RNNCovError as exc:
            raise pytest.UsageError(str(exc)) from None

    exclusions = config.getoption("rnn_exclude")
    if exclusions is None:
        lines = _ini(config, "rnn_exclude") or []
        lines = [lines] if isinstance(lines, str) else lines
        try:
            exclusions = [parse_exclusion(str(line)) for line in lines if str(line).strip()]
        except InvalidArgument as exc:
            raise _usage("ini option rnn_exclude", exc) from None
    try:
        exclusions = unique_exclusions(exclusions)
    except InvalidArgument as exc:
        raise _usage("--rnn-exclude/rnn_exclude", exc) from None

    from ..core.threads import blas_threads

    try:  # read by every numpy step: refused once, before the tests, not in each test
        blas_threads()
    except InvalidArgument as exc:
        raise pytest.UsageError(str(exc)) from None

    tolerance = config.getoption("rnn_compare_tolerance")
    if tolerance is None:
        raw = _ini(config, "rnn_compare_tolerance")
        try:
            tolerance = 0.0 if raw is None else fraction(str(raw).strip())
        except argparse.ArgumentTypeError as exc:
            raise _usage(f"ini option rnn_compare_tolerance = {raw!r}", exc) from None

    root = Path(config.rootpath)
    data = config.getoption("rnn_data")
    if data is not None and not data.strip():
        raise pytest.UsageError("--rnn-data='': give a file path, e.g. --rnn-data=rnncov-data.json")
    if data is None:
        data = _ini(config, "rnn_data")
        if data is not None and (not isinstance(data, str) or not data.strip()):
            raise pytest.UsageError(
                f"ini option rnn_data = {data!r}: give one file path, e.g. "
                "rnn_data = .rnncov/data.json"
            )
        data = _from_root(config, data)
        from_ini.update(["data"] if data is not None else [])
    if data is not None:
        from ..files import as_output_path

        try:
            as_output_path(data, option_label("data", from_ini))
        except InvalidArgument as exc:
            raise pytest.UsageError(str(exc)) from None
    save, compare = config.getoption("rnn_save"), config.getoption("rnn_compare")
    if compare is None and config.getoption("rnn_compare_tolerance") is not None:
        raise pytest.UsageError(
            "--rnn-compare-tolerance compares nothing without --rnn-compare=NAME; add "
            "--rnn-compare (the baseline to compare with) or leave the tolerance out"
        )
    try:
        from ..config.paths import baseline_path

        save_path = None if save is None else baseline_path(save, root / ".rnncov")
        compare_path = None if compare is None else baseline_path(compare, root / ".rnncov")
    except InvalidArgument as exc:
        raise _usage("--rnn-save/--rnn-compare", exc) from None
    explicit = (
        bars is not None
        or reports != (("term", None),)
        or save is not None
        or compare is not None
        or data is not None
        or metrics is not None
    )
    return Settings(
        bars,
        gate_metrics,
        tracked,
        reports,
        seed_setting(config),
        None if data is None else Path(str(data)),
        save_path,
        compare_path,
        float(tolerance),
        explicit,
        tuple(exclusions),
        context == "test",
        samples,
        frozenset(from_ini),
    )


@dataclass(frozen=True)
class SessionOutputs:
    """The files the session will write, each checked and noted before any test runs."""

    data: "Output | None" = None
    baseline: "Output | None" = None
    reports: tuple[tuple[str, "Output"], ...] = ()


def check_outputs(settings: Settings) -> SessionOutputs:
    """Refuse, before any test runs, outputs that cannot be written or that would replace
    a file pytest-rnncov did not write (pytest.UsageError); returns them, noted."""
    if (
        settings.data is None
        and settings.save is None
        and settings.compare is None
        and all(dest is None for _, dest in settings.reports)
        and settings.samples is None
    ):
        return SessionOutputs()  # nothing to write: an unused plugin imports nothing more
    from ..config.paths import check_distinct
    from ..reporting.outputs import file_output, report_output

    try:
        inputs = [] if settings.compare is None else [("--rnn-compare", settings.compare)]
        check_distinct(settings.output_paths(), inputs)
        reports = tuple(
            (kind, report_output(kind, dest, settings.report_label(kind)))
            for kind, dest in settings.reports
            if dest is not None
        )
        data = (
            None
            if settings.data is None
            else file_output(settings.data, "data", settings.label("data"))
        )
        baseline = (
            None if settings.save is None else file_output(settings.save, "baseline", "--rnn-save")
        )
        return SessionOutputs(data, baseline, reports)
    except RNNCovError as exc:
        raise pytest.UsageError(str(exc)) from None
