"""``python -m pytest_rnncov``: what teams need outside a test session.

    profile fit MODEL --x-train FILE.npy --out PROFILE.json [--layer L] [--window T1,T2]
                                   [--batch-size N]
                                   MODEL: a .keras/.h5/.onnx file, or a PyTorch factory
                                   module:function with --weights STATE_DICT.pt
    show FILE                      a profile, data file, baseline or JSON report, readably
    combine DATA... [--out FILE]   the exact union of several runs' --rnn-data files
    report DATA...                 terminal / JSON / HTML / Markdown reports from data files
    compare DATA... --baseline B   fail when coverage fell below a baseline

``combine`` and ``report`` apply ``--rnn-coverage`` bars like the plugin (none to partial
data: a session that stopped early or ran only some tests, a worker's data missing). Exit
codes as in pytest: 0 passed, 1 a gate or baseline failed or a gate asked for was never
decided, 2 interrupted (Ctrl-C or SIGTERM; a file is written whole or not at all), 4 a
usage error (bad arguments, unreadable or malformed files); every error says what was
wrong and how to fix it.

A PyTorch factory is imported from the current directory or sys.path, which runs that
module's code (as pytest runs a conftest.py); the weights file is read with
``torch.load(weights_only=True)`` and never runs code.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import warnings
from pathlib import Path
from typing import Any, Callable, Iterator, NoReturn, Sequence

from .errors import RNNCovError, RNNCovWarning
from .files import Terminated, terminate_as_interrupt
from .validation import printable, shown

INTERRUPTED = 2
USAGE_ERROR = 4


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # usage errors exit 4, as in pytest
        self.print_usage(sys.stderr)
        self.exit(USAGE_ERROR, f"{self.prog}: error: {message}\n")

    def _print_message(self, message: str, file: Any = None) -> None:
        try:
            super()._print_message(message, file)
        except OSError:  # `--help | head`: Python 3.10 lets the closed pipe's error out
            _to_nowhere(file or sys.stderr)


def _metrics(value: str) -> tuple[str, ...]:
    """``--rnn-metrics``, parsed with the arguments (a bad list is a usage error)."""
    from .config.values import parse_metrics

    try:
        return parse_metrics(value)
    except RNNCovError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _whole(value: str) -> int:
    """A whole-number option in ASCII digits (``int()`` also reads ``'٣'`` and ``'1_0'``)."""
    text = value.strip()
    if text.startswith("-") and text[1:].isascii() and text[1:].isdigit():
        raise argparse.ArgumentTypeError(f"{shown(value)} is negative; give a whole number >= 0")
    if not (text.isascii() and text.isdigit()):
        raise argparse.ArgumentTypeError(
            f"{shown(value)} is not a whole number; write it in ASCII digits, e.g. 10"
        )
    return int(value)


def _parser() -> _Parser:
    parser = _Parser(
        prog="python -m pytest_rnncov",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    profile = commands.add_parser("profile", help="fit a profile from a model and inputs")
    profile_commands = profile.add_subparsers(dest="action", required=True, parser_class=_Parser)
    fit = profile_commands.add_parser("fit", help="fit and save a profile")
    fit.add_argument(
        "model",
        help="a .keras or .h5 model file (loaded in safe mode), a .onnx file, or a PyTorch factory "
        "module:function (imported from the current directory: runs that module's code) "
        "returning the nn.Module, with --weights",
    )
    fit.add_argument(
        "--weights",
        default=None,
        metavar="FILE",
        help="the PyTorch model's state_dict file (torch.save(model.state_dict(), path)), "
        "read with weights_only=True: never runs code",
    )
    fit.add_argument(
        "--x-train", required=True, help="training inputs: a .npy file, or .npz with --x-train-key"
    )
    fit.add_argument("--x-train-key", default=None, help="the array's name inside a .npz file")
    fit.add_argument("--out", required=True, help="where to write the profile (.json)")
    fit.add_argument(
        "--layer",
        default=None,
        help="the recurrent layer's name or index (PyTorch: its qualified name, rnn or rnn.l1; "
        "a number is a name where a recurrent layer has it, as nn.Sequential's '1')",
    )
    fit.add_argument("--direction", default="forward", choices=["forward", "backward"])
    fit.add_argument("--output", default=None, help="the output a multi-output model predicts")
    fit.add_argument(
        "--batch-size",
        type=_whole,
        default=None,
        help="inputs per model call (1 for an ONNX model exported for batches of one)",
    )
    fit.add_argument("--window", default=None, help="T1,T2: steps of interest, inclusive")
    fit.add_argument("--state-components", type=_whole, default=5)
    fit.add_argument("--state-intervals", type=_whole, default=10)
    fit.add_argument(
        "--unsafe-load",
        action="store_true",
        help="load Keras models with Lambda or custom layers (runs code from the file)",
    )

    show = commands.add_parser("show", help="print a profile, data, baseline or report file")
    show.add_argument("file")

    for name, text in (
        ("combine", "union several runs' data files, apply the gate"),
        ("report", "reports from data files"),
    ):
        command = commands.add_parser(name, help=text)
        command.add_argument("data", nargs="+", help="--rnn-data files")
        command.add_argument(
            "--rnn-coverage",
            action="append",
            default=None,
            metavar="BARS",
            help="0.9, BC:0.9,TC:0.4 or MODEL:METRIC:BAR; repeatable: the bars add up, and "
            "a bar given again takes the later value",
        )
        command.add_argument(
            "--rnn-metrics",
            default=None,
            type=_metrics,  # refused with the arguments, before any file is read or written
            metavar="LIST",
            help="metrics a plain bar applies to (default BC,SC,TC)",
        )
        command.add_argument(
            "--report",
            action="append",
            default=None,
            metavar="TYPE[:DEST]",
            help="term (default), term-detail, json:PATH, html:DIR, markdown:PATH; repeatable",
        )
        command.add_argument(
            "--rnn-exclude",
            action="append",
            default=None,
            metavar="MODEL:METRIC:LABEL = REASON",
            help="count a condition apart (the label as the reports print it); repeatable",
        )
        command.add_argument(
            "--tests",
            action="store_true",
            help="the tests recorded with --rnn-context=test: per test what it covered, a "
            "minimal set covering what they all cover, and the tests that add nothing",
        )
        command.add_argument(
            "--format",
            choices=("text", "markdown"),
            default="text",
            help="what is printed: the terminal report (text) or the Markdown report "
            "(for >> $GITHUB_STEP_SUMMARY; notes then go to stderr)",
        )
        command.add_argument(
            "--baseline",
            default=None,
            help="a --rnn-save baseline file: fail where coverage fell below it, as "
            "--rnn-compare does (and its verdict in the reports)",
        )
        command.add_argument("--tolerance", default=None, help="with --baseline: allowed drop")
        if name == "combine":
            command.add_argument("--out", default=None, help="write the combined data here")

    compare = commands.add_parser("compare", help="compare data files with a baseline")
    compare.add_argument("data", nargs="+")
    compare.add_argument("--baseline", required=True, help="a --rnn-save baseline file")
    compare.add_argument("--tolerance", default="0", help="allowed drop, a fraction")
    compare.add_argument(
        "--rnn-exclude",
        action="append",
        default=None,
        metavar="MODEL:METRIC:LABEL = REASON",
        help="count a condition apart on both sides, as report --baseline does; repeatable",
    )
    return parser


#: options whose value may start with "-" (a negative step or index)
_SIGNED = ("--window", "--layer", "--output")


def _joined_signed(argv: Sequence[str]) -> list[str]:
    """``--window -3,-1`` as ``--window=-3,-1``: argparse takes a value starting with "-"
    for an option and would refuse the command before our checks see it."""
    out: list[str] = []
    for arg in argv:
        if out and out[-1] in _SIGNED and re.match(r"-\d", arg):
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out


def _err(text: str) -> None:
    """Print a message to stderr, control characters escaped (``printable``); a reader
    that went away (``2>&1 | head``) is not an error: the exit code still says what
    happened."""
    try:
        print(printable(text, newlines=True), file=sys.stderr, flush=True)
    except OSError:  # a closed pipe, a full disk: stderr has nowhere else to say it
        _to_nowhere(sys.stderr)


def _print(text: str | Sequence[str]) -> None:
    """Print to stdout, control characters escaped (``printable``): a list prints one
    line per item, any line break inside an item escaped too (a name read from a file
    cannot forge a line); a reader that went away (``| head``) is not an error."""
    shown = (
        printable(text, newlines=True)
        if isinstance(text, str)
        else "\n".join(printable(line) for line in text)
    )
    try:
        print(shown, flush=True)
    except BrokenPipeError:
        _to_nowhere(sys.stdout)
    except OSError as exc:  # a full disk under ``> summary.md``: an error, not a gate's 1
        from .errors import DataFileError

        _to_nowhere(sys.stdout)  # the exit's flush of what is left would fail again
        raise DataFileError(
            f"could not write to stdout ({exc.strerror or exc}); free space where it goes, "
            "or send it elsewhere (report and combine write reports to files with --report)"
        ) from None


def _to_nowhere(stream: Any) -> None:
    """Send a closed pipe's later writes (and the exit's flush) to the null device."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, stream.fileno())


def _warning_shower(command: str, shown: Callable[..., None]) -> Callable[..., None]:
    """``warnings.showwarning`` for a command: pytest-rnncov's warnings as one line of the
    command's own (Python's form names the frame outside the package, here runpy's), any
    other package's as ``shown`` shows them."""

    def show(message: Any, category: type[Warning], *args: Any, **kwargs: Any) -> None:
        if issubclass(category, RNNCovWarning):
            _err(f"python -m pytest_rnncov {command}: warning: {message}")
        else:
            shown(message, category, *args, **kwargs)

    return show


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    args = _parser().parse_args(_joined_signed(sys.argv[1:] if argv is None else argv))
    restore = terminate_as_interrupt()  # a CI timeout's SIGTERM: files whole, then exit 2
    try:
        handler = {
            "profile": _profile_fit,
            "show": _show,
            "combine": _combine,
            "report": _report,
            "compare": _compare,
        }[args.command]
        with warnings.catch_warnings():
            warnings.showwarning = _warning_shower(args.command, warnings.showwarning)
            return handler(args)
    except (RNNCovError, RNNCovWarning) as exc:  # a warning: -W error made it one
        _err(f"python -m pytest_rnncov {args.command}: error: {exc}")
        return USAGE_ERROR
    except KeyboardInterrupt as exc:  # files are written whole or not at all (interrupt_after)
        how = f" ({exc})" if isinstance(exc, Terminated) else ""
        _err(f"python -m pytest_rnncov {args.command}: interrupted{how}")
        return INTERRUPTED
    finally:
        if restore is not None:
            restore()


#: the largest array unpacked from an .npz file (bytes)
MAX_ARRAY_BYTES = 4 * 1024**3


# -- profile fit -------------------------------------------------------------------------
def _array_file(path: str) -> Path:
    """``path`` of the training inputs, which must be a file."""
    from .errors import DataFileError

    source = Path(path)
    if not path.strip():
        raise DataFileError("--x-train '': give the .npy or .npz file of training inputs")
    if source.is_dir():
        raise DataFileError(f"{path!r} is a folder; name the .npy or .npz file inside it")
    if source.exists() and not source.is_file():
        raise DataFileError(f"{path!r} is not a regular file; give the .npy or .npz file")
    if not source.is_file():
        raise DataFileError(f"no file at {path!r}; save the training inputs with numpy.save")
    return source


def _load_array(path: str, key: str | None) -> Any:
    """The training inputs from a .npy (memory-mapped) or .npz file, never unpickled."""
    import zipfile

    import numpy as np

    from .errors import DataFileError

    source = _array_file(path)
    try:
        # .npy is memory-mapped: a header that claims more data than the file holds fails
        data = np.load(source, mmap_mode="r", allow_pickle=False)  # never runs file code
        if isinstance(data, np.ndarray):
            if key is not None:  # what the file holds decides, whatever its name ends in
                raise DataFileError(  # not a ValueError: the handler below rewords those
                    f"--x-train-key {key!r} names an array inside a .npz file; {path!r} is "
                    "one array (.npy): drop --x-train-key"
                )
            return data
        names = list(data.files)
        if not names:
            raise DataFileError(f"{path!r} holds no array; save the inputs with numpy.savez")
        if key is None:
            if len(names) != 1:
                raise DataFileError(
                    f"{path!r} holds {', '.join(names)}; pick one with --x-train-key"
                )
            key = names[0]
        if key not in names:
            raise DataFileError(f"{path!r} has no array {key!r}; it has {', '.join(names)}")
        size = data.zip.getinfo(f"{key}.npy").file_size
        if size > MAX_ARRAY_BYTES:
            raise DataFileError(
                f"{path!r} array {key!r} unpacks to {size:,} bytes, more than the "
                f"{MAX_ARRAY_BYTES:,} read; save it uncompressed with numpy.save"
            )
        array = data[key]
        if not isinstance(array, np.ndarray):  # a member without numpy's header: its bytes
            raise DataFileError(
                f"{path!r} member {key!r} is not a numpy array (no .npy header); save the "
                "inputs with numpy.savez"
            )
        return array
    except (ValueError, OSError, EOFError, zipfile.BadZipFile, KeyError, MemoryError) as exc:
        if "pickle" in str(exc) or "Python objects" in str(exc):  # not numpy's advice:
            raise DataFileError(
                f"{path!r} is not a numpy .npy/.npz file of numbers: it is no numpy file, or "
                "holds pickled Python objects, which are never loaded (unpickling runs code "
                "from the file); save a numeric array with numpy.save"
            ) from None
        raise DataFileError(f"{path!r} is not a numpy .npy/.npz file of numbers ({exc})") from None


def _window(text: str | None) -> tuple[int, int] | None:
    from .errors import InvalidArgument

    if text is None:
        return None
    parts = [p.strip() for p in text.split(",")]
    if len(parts) != 2 or not all(re.fullmatch(r"-?[0-9]{1,9}", p) for p in parts):
        raise InvalidArgument(
            f"--window {text!r}: give two step indices, e.g. --window 4,24 "
            "(negative ones count from the end: --window=-3,-1)"
        )
    return int(parts[0]), int(parts[1])


def _layer(text: str | None) -> str | int | None:
    """An index when the text is an ASCII integer, else a name."""
    digits = None if text is None else text.removeprefix("-")
    return int(text) if text and digits and digits.isascii() and digits.isdigit() else text


def _model_file(args: argparse.Namespace) -> Path | None:
    """The model file MODEL names (None: a PyTorch factory), its arguments checked; loads
    nothing."""
    from .adapters.loading import MODEL_SUFFIXES, model_path
    from .errors import InvalidArgument

    if not args.model.strip():  # Path("") is the current folder, which exists
        raise InvalidArgument(
            "MODEL '': give a model file (.keras, .h5, .onnx) or a PyTorch factory module:function"
        )
    path = Path(args.model)
    if path.suffix.lower() in MODEL_SUFFIXES or path.exists():
        if args.weights is not None:
            raise InvalidArgument(
                f"--weights {args.weights!r} is for a PyTorch factory (module:function); "
                f"the model file {args.model!r} holds its own weights: drop --weights"
            )
        if args.unsafe_load and path.suffix.lower() == ".onnx":
            raise InvalidArgument(
                "--unsafe-load is for Keras files; an ONNX file holds no code to run and is "
                "always read checked: drop --unsafe-load"
            )
        return model_path(path)
    if args.weights is None:
        if ":" in args.model:
            raise InvalidArgument(
                f"the PyTorch factory {args.model!r} needs its weights: add --weights FILE "
                "(saved with torch.save(model.state_dict(), path))"
            )
        raise InvalidArgument(
            f"no model file at {args.model!r}; give a .keras, .h5 or .onnx file, or a PyTorch "
            "factory as module:function with --weights FILE"
        )
    if args.unsafe_load:
        raise InvalidArgument(
            "--unsafe-load is for Keras files; PyTorch weights are always read with "
            "weights_only=True: drop --unsafe-load"
        )
    return None


def _load(args: argparse.Namespace) -> Any:
    """The model MODEL names: a Keras or ONNX file, or a PyTorch factory with ``--weights``."""
    from .adapters.loading import load_model, load_torch_model
    from .errors import UnsafeModel

    path = _model_file(args)
    if path is not None and path.suffix.lower() == ".onnx":
        return path  # RNNModel reads it, naming the model after its file as in Python
    if path is not None:
        try:
            return load_model(path, safe_mode=not args.unsafe_load)
        except UnsafeModel as exc:  # the command's own switch, not the Python arguments
            message = str(exc).replace(
                "Pass your own classes in custom_objects={...}, or, only for a file you trust, "
                "load_model(path, safe_mode=False)",
                "Only for a file you trust, pass --unsafe-load (or fit the profile in Python: "
                "load_model(path, custom_objects={...}) with your classes, then Profile.fit)",
            )
            message = message.replace("with safe_mode=False", "with --unsafe-load")
            raise UnsafeModel(message) from None
    here = os.getcwd()
    if here not in sys.path:  # the factory's module is found as pytest finds a conftest.py
        sys.path.insert(0, here)
    return load_torch_model(args.model, args.weights)


def _profile_fit(args: argparse.Namespace) -> int:
    from .config.idle_threads import sleeping_idle_threads

    sleeping_idle_threads()  # before numpy (OpenBLAS) and the model's framework load
    from .adapters.model import RNNModel
    from .config.paths import check_distinct, check_output_file
    from .config.tf_notices import quiet_tensorflow_import
    from .core.profile import Profile
    from .errors import InvalidArgument, ProfileError, RNNCovError
    from .files import Output, as_output_path, as_path

    target = check_output_file(as_output_path(args.out, "--out"), "--out")
    model = (
        ("the model", Path(args.model))
        if args.weights is None
        else ("--weights", as_path(args.weights, "--weights"))
    )
    if args.weights is not None and model[1].is_dir():
        raise InvalidArgument(
            f"--weights {str(model[1])!r} is a directory; give the state_dict file (torch.save)"
        )
    _model_file(args)  # MODEL names no model (an .npy, a folder, no file): refused here
    check_distinct([("--out", target)], [model, ("--x-train", _array_file(args.x_train))])
    out = Output(target, "pytest-rnncov-profile", "--out", ProfileError)
    x = _load_array(args.x_train, args.x_train_key)  # before the model: quick to refuse
    quiet_tensorflow_import(list_devices=True)
    loaded = _load(args)  # its errors name the file (or the factory's own words) as they are
    try:
        rnn = _traced(RNNModel, loaded, args)
        profile = Profile(
            window=_window(args.window),
            state_components=args.state_components,
            state_intervals=args.state_intervals,
        ).fit(rnn, x)
    except RNNCovError as exc:  # the messages name Python's arguments: say the options
        raise _in_option_words(exc) from None
    try:
        out.write(profile.text())
    except RNNCovError as exc:  # a full disk is no usage error: exit 1, as combine --out
        _err(f"python -m pytest_rnncov {args.command}: error: {exc}")
        return 1
    _print(
        f"profile of {rnn.cell_kind} layer {rnn.layer_name!r} (window {list(profile.window_)}, "
        f"{profile.n_samples_} training inputs) written to {out.path}"
    )
    return 0


def _traced(adapter: Any, model: Any, args: argparse.Namespace) -> Any:
    """``adapter(model, ...)`` for ``profile fit``'s options. ``--layer 1`` names the
    recurrent layer called "1" where the model has one (nn.Sequential's children are named
    by digits, and a profile names its layer so), else the recurrent layer of index 1."""
    from .errors import UnknownLayer

    def traced(layer: str | int | None) -> Any:
        return adapter(
            model,
            layer,
            direction=args.direction,
            output=_layer(args.output),
            batch_size=args.batch_size,
        )

    layer = _layer(args.layer)
    if not isinstance(layer, int):
        return traced(layer)
    try:
        return traced(args.layer)
    except UnknownLayer:
        return traced(layer)


#: Python's arguments in the messages of RNNModel and Profile, and the options of
#: ``profile fit`` they are
_OPTION_WORDS = (
    (re.compile(r"\bwindow=\((-?[0-9]+), (-?[0-9]+)\)"), r"--window \1,\2"),
    (re.compile(r"\bstate_(components|intervals)="), r"--state-\1 "),
    (re.compile(r"RNNModel\(\.\.\., batch_size=([0-9]+)\)"), r"--batch-size \1"),
    (re.compile(r"\b(batch)_size="), r"--\1-size "),
    (re.compile(r"\b(layer|output)= ?"), r"--\1 "),  # "leave output= out": one space
    (re.compile(r"^, direction="), " --direction "),  # after a quoted layer=: one command
    (re.compile(r"(?<!has )\bdirection="), "--direction "),  # not an ONNX node's attribute
)
#: a name or path as Python's repr quotes it (not an apostrophe inside a word)
_QUOTED = re.compile(r"""(?<!\w)('(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")(?!\w)""")


def _in_option_words(exc: Exception) -> Exception:
    """``exc`` again, its message naming ``profile fit``'s options where it named Python's
    arguments (``--window 3,40`` for ``window=(3, 40)``); quoted names and paths are left
    as they are."""
    parts = _QUOTED.split(str(exc))
    for i in range(0, len(parts), 2):  # the text between the quoted parts
        for pattern, words in _OPTION_WORDS:
            parts[i] = pattern.sub(words, parts[i])
    return type(exc)("".join(parts))


# -- show --------------------------------------------------------------------------------
def _show(args: argparse.Namespace) -> int:
    from .core.profile import FORMAT as PROFILE
    from .errors import DataFileError
    from .files import as_path, parse_json, read_bounded
    from .reporting.baseline import FORMAT as BASELINE
    from .reporting.data import FORMAT as DATA
    from .reporting.json_report import JSON_FORMAT, read_report

    path = as_path(args.file, "file")
    where = f"file {args.file!r}"
    content = parse_json(read_bounded(path, where), where)
    kind = content.get("format") if isinstance(content, dict) else None
    if kind in (PROFILE, DATA, BASELINE):
        del content  # read again by the file's own reader: one parse in memory at a time
    if kind == PROFILE:
        _print(_profile_text(path))
    elif kind in (DATA, BASELINE):
        from .reporting.baseline import load_baseline
        from .reporting.data import CoverageData
        from .reporting.results import evaluate
        from .reporting.terminal import coverage_lines

        baseline = None if kind == DATA else load_baseline(path)
        data = CoverageData.load(path) if baseline is None else CoverageData(models=baseline.models)
        verdict = evaluate(data, None, baseline=baseline)  # its warnings, as report says them
        cautions = [text for text, style in verdict.lines() if style == "yellow"]
        _print([*coverage_lines(data, detail=kind == DATA), *cautions])
    elif kind == JSON_FORMAT:
        passed, rates = read_report(content, where)
        _print(
            [f"JSON report, passed: {passed!r}"]
            + [
                f"  {name}: "
                + ", ".join(f"{m} {'n/a' if r is None else f'{r:.1%}'}" for m, r in metrics.items())
                for name, metrics in rates.items()
            ]
            + _report_warnings(content["verdict"])
        )
    else:
        raise DataFileError(
            f"{args.file!r} is not a pytest-rnncov profile, data, baseline or report file"
        )
    return 0


def _report_warnings(verdict: dict[str, Any]) -> list[str]:
    """The warnings a JSON report's verdict held when the report was made, as its terminal
    report said them (``Verdict.lines``): partial data, random draws, a partial baseline,
    a gate not applied."""
    from .reporting.data import unsent_text

    def names(value: Any) -> str:
        return ", ".join(str(v) for v in value) if isinstance(value, list) else ""

    baseline = verdict.get("baseline") if isinstance(verdict.get("baseline"), dict) else None
    gated = verdict.get("gate") is not None or baseline is not None  # as Verdict.gated
    applied = verdict.get("applied") is not False
    said = applied or not gated  # else the not-applied line says why
    out = []
    if names(verdict.get("missing_workers")) and said:
        missing = [str(v) for v in verdict["missing_workers"]]
        out.append(
            f"WARNING RNN coverage is partial: {unsent_text(missing)}; the numbers miss some inputs"
        )
    if names(verdict.get("stopped")) and said:
        out.append(f"WARNING RNN coverage is partial: {names(verdict['stopped'])}")
    if names(verdict.get("random_tests")):
        out.append(
            "WARNING RNN coverage counts inputs Hypothesis drew at random in "
            + names(verdict["random_tests"])
        )
    if baseline is not None and names(baseline.get("missing_workers")) and applied:
        missing = [str(v) for v in baseline["missing_workers"]]
        out.append(
            f"WARNING baseline {baseline.get('path')} is partial: "
            f"{unsent_text(missing, ' when it was saved')}, so it is lower than a full run"
        )
    reason = verdict.get("skipped_reason")
    if gated and not applied and isinstance(reason, str):
        undecided = verdict.get("passed") is False  # a gate on partial data: never decided
        out.append(f"{'FAIL ' if undecided else ''}RNN coverage gate not applied: {reason}.")
    return out


def _profile_text(path: Path) -> list[str]:
    from .core.profile import Profile

    profile = Profile.load(path)
    lines = [
        f"profile {str(path)!r}: {profile.cell_} layer {profile.layer_!r}, "
        f"{profile.units_} units, {profile.n_steps_} steps, window {list(profile.window_)}, "
        f"{profile.n_samples_} training inputs, weights {profile.fingerprint_}"
    ]
    lines.append(f"  {'signal':<14}{'min':>12}{'max':>12}{'mean':>12}{'std':>12}")
    for name, s in profile.signals_.items():
        lines.append(f"  {name:<14}{s.min:12.5g}{s.max:12.5g}{s.mean:12.5g}{s.std:12.5g}")
    states = profile.states_
    lines.append(
        "  states: none"
        if states is None
        else f"  states: PCA {states.components.shape[0]} x {states.intervals} intervals, "
        f"{len(states.cells)} training cells, {len(states.transitions)} transitions"
    )
    return lines


# -- combine, report, compare ------------------------------------------------------------
def _combined(paths: Sequence[str]) -> Any:
    """The union of the data files ``paths``; a refusal names the file it is about (and,
    for a run given twice, the file that held it first)."""
    from .errors import DataFileError, RNNCovError
    from .reporting.data import CoverageData, combine

    first_in: dict[str, str] = {}  # run id -> the file it came from first
    current = ""  # the file being merged (its loading errors name it themselves)

    def parts() -> Iterator[Any]:
        nonlocal current
        for path in paths:
            current = ""
            data = CoverageData.load(path)
            for run in data.run_ids():
                if run in first_in:
                    raise DataFileError(
                        f"{path!r} holds run {run} again, which {first_in[run]!r} holds "
                        "already (a copy, or a file combined from it?); each run's inputs "
                        "count once: drop one of them"
                    )
                first_in[run] = path
            current = path
            yield data

    try:
        return combine(parts())
    except RNNCovError as exc:
        if not current:
            raise
        raise type(exc)(f"data file {current!r}: {exc}") from None


def _outputs(
    args: argparse.Namespace, inputs: list[tuple[str, Path]]
) -> tuple[list[str], list[Any], Any]:
    """The requested reports and ``--out`` as Outputs, after checking that no output
    replaces an input, another output, or a file that is not an earlier output of its kind.
    Returns (the report kinds, [(kind, Output)] of the files, the --out Output or None)."""
    from .config.paths import check_distinct, check_output_file
    from .config.values import parse_report
    from .files import as_output_path
    from .reporting.outputs import file_output, report_output

    reports = [parse_report(r) for r in (args.report or ["term"])]
    paths = [(f"--report {kind}:", Path(dest)) for kind, dest in reports if dest is not None]
    target = None
    if getattr(args, "out", None) is not None:
        target = check_output_file(as_output_path(args.out, "--out"), "--out")
        paths.append(("--out", target))
    check_distinct(paths, inputs)
    files = [
        (kind, report_output(kind, dest, f"--report {kind}:"))
        for kind, dest in reports
        if dest is not None
    ]
    out = None if target is None else file_output(target, "data", "--out")
    return [kind for kind, _ in reports], files, out


def _render(
    kinds: list[str],
    files: list[Any],
    data: Any,
    verdict: Any,
    markdown: bool = False,
    tests: bool = False,
) -> tuple[list[str], bool]:
    """Write the report files and print the terminal report (or, with ``markdown``, the
    Markdown report on stdout and the notes on stderr); returns the problems and whether
    a Ctrl-C came while the files were written (the caller raises it once its own lines
    are printed)."""
    from .reporting.outputs import write_reports

    try:
        written, problems, interrupted = write_reports(files, data, verdict)
    except KeyboardInterrupt:  # while they were drawn: none was written
        if files:
            _err(
                "reports not written: interrupted while they were drawn (the files there are "
                "as they were): " + ", ".join(str(output.path) for _, output in files)
            )
        raise
    _print_report(kinds, written, problems, data, verdict, markdown, tests)
    return problems, interrupted


def _print_report(
    kinds: list[str],
    written: list[str],
    problems: list[str],
    data: Any,
    verdict: Any,
    markdown: bool,
    tests: bool,
) -> None:
    """The printing half of ``_render``."""
    from .reporting.terminal import LinesWriter, TermReport

    if markdown:
        from .reporting.markdown_report import MarkdownReport

        _print(MarkdownReport(tests=tests).render(data, verdict).rstrip("\n"))
        for line in written:
            _err(line)
        for problem in problems:
            _err(f"error: {problem}")
        return
    writer = LinesWriter()
    tables = bool(set(kinds) & {"term", "term-detail"})  # both terminal tables, or neither
    TermReport(writer, detail="term-detail" in kinds, coverage=tables, samples=tables).sections(
        data, verdict
    )
    if tests:
        from .reporting.attribution import summary_lines

        writer.write_sep("-", "RNN coverage by test")
        for state in data.models.values():
            writer.lines.extend(summary_lines(state))
    writer.lines.extend(written)
    TermReport(writer).verdict(verdict)
    _print(writer.lines)
    for problem in problems:
        _err(f"error: {problem}")


def _verdict(args: argparse.Namespace, data: Any, errors: list[str]) -> Any:
    """The verdict, as a pytest session decides it: the bars, the baseline (with the same
    exclusions) and ``errors`` (exclusions that cannot apply), each failing it; never
    decided on partial data (a session that stopped early or ran only some tests, a
    worker's data missing), as that session decided none."""
    from .config.bars import Bars, latest_bars, parse_bars, parse_fraction
    from .core.names import DEFAULT_METRICS
    from .errors import InvalidArgument
    from .reporting.baseline import excluded_baseline, load_baseline
    from .reporting.results import evaluate

    if args.tolerance is not None and args.baseline is None:
        raise InvalidArgument(
            "--tolerance compares nothing without --baseline FILE; add it, or drop --tolerance"
        )
    tolerance = parse_fraction("0" if args.tolerance is None else args.tolerance, "--tolerance")
    baseline = None
    if args.baseline is not None:
        baseline = excluded_baseline(
            load_baseline(_baseline_file(args.baseline)), _exclusions(args)
        )

    gate = DEFAULT_METRICS if args.rnn_metrics is None else args.rnn_metrics
    bars = None
    if args.rnn_coverage is not None:  # a bar given again takes the later value, as in pytest
        bars = Bars(latest_bars([parse_bars(text) for text in args.rnn_coverage]), gate)
    return evaluate(
        data,
        bars,
        errors=errors,
        baseline=baseline,
        tolerance=tolerance,
    )


def _baseline_file(given: str) -> Path:
    """``--baseline``'s file: a path. A name that ``--rnn-save=NAME`` saved as
    ``.rnncov/NAME.json`` is refused with that path (it read "no coverage baseline at
    'NAME'; create it with --rnn-save", which the user had done)."""
    from .errors import InvalidArgument

    saved = Path(".rnncov") / f"{given}.json"
    if not Path(given).exists() and saved.is_file():
        raise InvalidArgument(
            f"--baseline {given!r}: no such file; the baseline --rnn-save={given} saved is "
            f"{str(saved)!r}: pass that path"
        )
    return Path(given)


def _exclusions(args: argparse.Namespace) -> list[Any]:
    """The ``--rnn-exclude`` options, parsed, each once."""
    from .core.exclusions import parse_exclusion, unique_exclusions

    return unique_exclusions(parse_exclusion(text) for text in args.rnn_exclude or ())


def _excluded(args: argparse.Namespace, data: Any) -> tuple[Any, list[str]]:
    """``data`` as the verdict and the reports see it, ``--rnn-exclude`` applied (a note on
    stderr per exclusion of a model the data does not hold), and the errors of exclusions
    that cannot apply (the others still apply; each fails the verdict, as in a session)."""
    view, notes, errors = data.with_exclusions(_exclusions(args))
    for note in notes:
        _err(f"warning: {note}")
    return view, errors


def _data_inputs(args: argparse.Namespace) -> list[tuple[str, Path]]:
    """The files a command reads, which no output of it may replace."""
    baseline = getattr(args, "baseline", None)
    return [("data file", Path(p)) for p in args.data] + (
        [("--baseline", Path(baseline))] if baseline is not None else []
    )


def _combine(args: argparse.Namespace) -> int:
    from .errors import InvalidArgument, RNNCovError
    from .files import interrupt_after

    if args.out is not None and not args.out.strip():
        raise InvalidArgument("--out '': give a file path, e.g. --out combined.json")
    kinds, files, out = _outputs(args, _data_inputs(args))  # before reading anything
    data = _combined(args.data)
    view, errors = _excluded(args, data)
    verdict = _verdict(args, view, errors)
    failed, written = None, False
    runs = f"{len(args.data)} run{'s' if len(args.data) != 1 else ''}"

    def say_out() -> None:
        """Where the combined data went (also when a Ctrl-C stops the command)."""
        if out is None:
            return
        if failed is not None:
            _err(f"error: {failed}")
            return
        note = (
            f"combined data of {runs} written to {out.path}"
            if written
            else f"combined data not written to {out.path}: interrupted (the file there is "
            "as it was)"
        )
        if args.format == "markdown":
            _err(note)
        else:
            _print(note)

    if out is not None:
        try:
            with interrupt_after():  # a Ctrl-C waits for the file to be whole
                out.write(data.dumps() + "\n")  # what was measured: exclusions apart
                written = True
        except RNNCovError as exc:
            failed = str(exc)
        except KeyboardInterrupt:
            say_out()
            raise
    try:
        problems, interrupted = _render(
            kinds, files, view, verdict, args.format == "markdown", args.tests
        )
    except KeyboardInterrupt:  # while the reports rendered: none was written
        say_out()
        raise
    say_out()
    if interrupted:
        raise KeyboardInterrupt
    return 1 if _failed(verdict) or problems or failed else 0


def _failed(verdict: Any) -> bool:
    """Whether ``verdict`` fails the command: a gate that failed, or one asked for and
    never decided (partial data), as in the plugin."""
    return verdict.passed is False


def _report(args: argparse.Namespace) -> int:
    kinds, files, _ = _outputs(args, _data_inputs(args))  # before reading anything
    data, errors = _excluded(args, _combined(args.data))
    verdict = _verdict(args, data, errors)
    problems, interrupted = _render(
        kinds, files, data, verdict, args.format == "markdown", args.tests
    )
    if interrupted:
        raise KeyboardInterrupt
    return 1 if _failed(verdict) or problems else 0


def _compare(args: argparse.Namespace) -> int:
    from .config.bars import parse_fraction
    from .config.paths import check_distinct
    from .reporting.baseline import excluded_baseline, load_baseline
    from .reporting.results import evaluate
    from .reporting.terminal import LinesWriter, TermReport

    tolerance = parse_fraction(args.tolerance, "--tolerance")
    exclusions = _exclusions(args)  # refused before any file is read
    check_distinct([], _data_inputs(args))
    baseline = excluded_baseline(load_baseline(_baseline_file(args.baseline)), exclusions)
    data, errors = _excluded(args, _combined(args.data))
    verdict = evaluate(
        data,
        None,
        baseline=baseline,
        tolerance=tolerance,
        errors=errors,
    )
    writer = LinesWriter()
    TermReport(writer).verdict(verdict)
    _print(writer.lines)
    return 1 if _failed(verdict) else 0
