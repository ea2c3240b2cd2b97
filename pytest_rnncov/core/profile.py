"""The profile: normalisation statistics of one recurrent layer learned from training inputs.

Fitting streams over the inputs batch by batch, so memory does not grow with the number
of training inputs (the DeepStellar grid needs a second pass, kept in memory when small).
Profile files are JSON; loading checks every field, so an edited or truncated file is
refused by name instead of normalising with garbage.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shlex
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterable, Iterator, Mapping

import numpy as np

from ..errors import (
    DegenerateProfile,
    InvalidArgument,
    ProfileError,
    RNNCovWarning,
    StaleProfile,
    user_stacklevel,
)
from ..files import (
    Fields,
    as_path,
    check_replaceable,
    parse_json,
    read_bounded,
    read_envelope,
    write_atomic,
)
from ..validation import check_int, check_str, check_window, shown
from .abstract_states import MAX_CELLS, STATE_KEYS, RunningCovariance, StateModel
from .abstractions import ABSTRACTIONS, Window, resolve_window, signal
from .arrays import FLOAT32_MAX
from .source import CheckedInputs, check_source
from .trace import CELL_COMPONENTS, Trace, check_component

if TYPE_CHECKING:
    from .source import TraceSource

FORMAT = "pytest-rnncov-profile"
VERSION = 2

#: Most hidden-state values kept from the first pass for the state grid (else traced again).
KEEP_STATES = 1 << 26
#: the most principal directions of the DeepStellar state abstraction
MAX_STATE_COMPONENTS = 64
#: A fitted signal's statistics: a signal sums at most 2**20 float32 values (|v| < 1e45), and
#: its spread is 0 or at least float32's smallest step over 2**20 units (1.3e-51 for max -
#: min; the std that over sqrt(n), above 1e-60 for fewer than 2**60 training inputs); a file
#: past these bounds was edited, and normalising against it would overflow to inf and NaN
SIGNAL_LIMIT, MIN_SPREAD = 1e60, 1e-60


@dataclass(frozen=True)
class SignalStats:
    """min, max, mean and (population) std of one signal over window x training inputs."""

    min: float
    max: float
    mean: float
    std: float


def _check_float32_range(trace: Trace, window: Window) -> None:
    """Refuse a training trace holding values beyond float32's range (hand-made float64
    traces) at the steps the statistics read (``window`` and the step before it): a
    recurrent layer's states cannot, a profile file holds none (its statistics would
    overflow float64 from about 1e154 on: non-finite, or numpy's warnings)."""
    steps = slice(max(window[0] - 1, 0), window[1] + 1)
    for name, values in trace.components.items():
        if values.dtype.itemsize > 4 and not (np.abs(values[:, steps]) <= FLOAT32_MAX).all():
            raise InvalidArgument(
                f"the training traces' {name} holds values beyond float32's range (or NaN), "
                "which a recurrent layer's states cannot hold and a profile file cannot "
                "record; check the traces passed to fit_traces, or fit on the model's own "
                "traces with fit()"
            )


class _Running:
    """Streaming min / max / mean / M2 (Chan et al.) of a float array, in float64."""

    def __init__(self, shape: tuple[int, ...] = ()) -> None:
        self.n = 0
        self.min = np.full(shape, np.inf)
        self.max = np.full(shape, -np.inf)
        self.mean = np.zeros(shape)
        self.m2 = np.zeros(shape)

    def add(self, values: np.ndarray, axis: int | None) -> None:
        values = np.asarray(values, np.float64)
        count = values.size if axis is None else values.shape[axis]
        if not count:
            return
        mean = values.mean(axis=axis)
        m2 = ((values - (mean if axis is None else np.expand_dims(mean, axis))) ** 2).sum(axis=axis)
        total = self.n + count
        delta = mean - self.mean
        self.mean = self.mean + delta * count / total
        self.m2 = self.m2 + m2 + delta**2 * self.n * count / total
        self.n = total
        self.min = np.minimum(self.min, values.min(axis=axis))
        self.max = np.maximum(self.max, values.max(axis=axis))


class Profile:
    """Statistics of a recurrent layer over training inputs, for normalising its signals.

    Configure with ``window`` (inclusive, 0-based ``(t1, t2)``; negatives count from the
    end; ``None`` = all steps) and the DeepStellar state abstraction (``state_components``
    PCA directions, ``state_intervals`` intervals each), then ``fit(rnn_model, x_train)``.
    Fitted attributes end in an underscore. ``save`` / ``load`` use a human-readable JSON
    file that records the layer, its cell and a fingerprint of every weight from the model
    input to the layer, so a profile of another model is refused.
    """

    def __init__(
        self, window: Any = None, *, state_components: int = 5, state_intervals: int = 10
    ) -> None:
        self.window = check_window(window)
        self.state_components = check_int(
            "state_components",
            state_components,
            minimum=1,
            maximum=MAX_STATE_COMPONENTS,
            example="5",
        )
        self.state_intervals = check_int(
            "state_intervals", state_intervals, minimum=1, maximum=1 << 20, example="10"
        )
        if self.state_intervals**self.state_components > MAX_CELLS:
            raise InvalidArgument(
                f"state_intervals={self.state_intervals} ** state_components="
                f"{self.state_components} abstract states are too many to index their "
                "transitions (at most 2**31); lower either"
            )
        self.path_: Path | None = None

    # -- fitting ---------------------------------------------------------------------
    def fit(self, model: "TraceSource", x: Any) -> "Profile":
        """Learn every signal's statistics from training inputs ``x``, batch by batch."""
        model = check_source(model)
        inputs = CheckedInputs(model, x)
        return self._fit(
            lambda: (
                trace for part in inputs for _, trace in model.iter_traces(part, outputs=False)
            ),
            layer=model.layer_name,
            fingerprint=model.fingerprint(),
        )

    def fit_traces(self, traces: Iterable[Trace], *, layer: str, fingerprint: str) -> "Profile":
        """Learn the statistics from already computed traces of the layer ``layer``."""
        check_str("layer", layer)
        check_str("fingerprint", fingerprint)
        if isinstance(traces, (Trace, str, bytes)) or not isinstance(traces, Iterable):
            raise InvalidArgument(
                f"traces={traces!r}: pass an iterable of Trace objects "
                "(e.g. a list of model.trace(batch) results)"
            )
        kept = list(traces)
        wrong = [type(t).__name__ for t in kept if not isinstance(t, Trace)]
        if wrong:
            raise InvalidArgument(
                f"traces holds {wrong[0]}, not Trace; pass the results of model.trace(batch)"
            )
        if any(t.sums for t in kept):
            raise InvalidArgument(
                "traces holds a trace of per-step sums only (a coverage stream's, for metrics "
                "that read nothing else); a profile is fitted on states: pass the results of "
                "model.trace(batch)"
            )
        return self._fit(lambda: iter(kept), layer=layer, fingerprint=fingerprint)

    def _fit(
        self, traces: Callable[[], Iterator[Trace]], *, layer: str, fingerprint: str
    ) -> "Profile":
        running: dict[str, _Running] = {}
        neurons: _Running | None = None
        covariance: RunningCovariance | None = None
        window: Window | None = None
        cell = ""
        n_samples = 0
        kept: list[np.ndarray] | None = []
        kept_size = 0
        padded = 0  # training inputs with masked steps inside the window
        always_real: np.ndarray | None = None  # the window's steps real in every input
        for trace in traces():
            trace = trace.to_host()  # statistics are kept on the host, in float64
            if not trace.batch_size:
                continue  # an empty batch adds nothing (none at all: refused below)
            if window is None:
                cell, n_steps, units = trace.cell, trace.n_steps, trace.units
                window = resolve_window(self.window, n_steps)
                running = {
                    f"{c}/{a}": _Running() for c in CELL_COMPONENTS[cell] for a in ABSTRACTIONS
                }
                covariance = RunningCovariance(units)
            elif trace.cell != cell or trace.units != units:
                raise InvalidArgument(
                    f"training traces of a {cell} layer of {units} units and of a {trace.cell} "
                    f"layer of {trace.units}; fit a profile on the traces of one layer"
                )
            elif trace.n_steps != n_steps:
                raise InvalidArgument(
                    f"training traces have {trace.n_steps} and {n_steps} steps; pad the "
                    "training inputs to one length"
                )
            _check_float32_range(trace, window)
            for name, stats in running.items():
                component, abstraction = name.split("/")
                values = signal(trace, component, abstraction, window)
                if not np.isfinite(values).all():
                    raise InvalidArgument(
                        f"the {name} signal of the training inputs holds NaN or inf; check "
                        "the model's weights (a NaN or inf weight in the traced layer or "
                        "below it?) and the training inputs (values beyond float32's range?)"
                    )
                stats.add(values, axis=None)
            h = trace.h[:, window[0] : window[1] + 1]
            if neurons is None:
                neurons = _Running(h.shape[1:])
            neurons.add(h, axis=0)
            assert covariance is not None
            covariance.add(h)
            if kept is not None:
                kept_size += h.size
                kept = kept + [np.array(h)] if kept_size <= KEEP_STATES else None
            if trace.mask is not None:
                real = np.asarray(trace.mask, bool)[:, window[0] : window[1] + 1]
                padded += int((~real).any(axis=1).sum())
                steps = np.asarray(real.all(axis=0))
                always_real = steps if always_real is None else np.logical_and(always_real, steps)
            n_samples += trace.batch_size
        if window is None or neurons is None or covariance is None:
            raise InvalidArgument("no training inputs: pass at least one input to fit")
        self.cell_ = cell
        self.window_ = window
        self.n_steps_, self.units_ = n_steps, int(neurons.min.shape[-1])
        self.layer_ = layer
        self.fingerprint_ = fingerprint
        self.n_samples_ = n_samples
        self.signals_ = {
            name: SignalStats(float(r.min), float(r.max), float(r.mean), float(np.sqrt(r.m2 / r.n)))
            for name, r in running.items()
        }
        self.neuron_min_ = neurons.min
        self.neuron_max_ = neurons.max
        t1, t2 = window
        if padded:
            _warn_masked_steps(padded, n_samples, self.window, window, always_real)

        def states() -> Iterable[np.ndarray]:
            if kept is not None:
                return kept
            return (t.to_host().h[:, t1 : t2 + 1] for t in traces() if t.batch_size)

        try:
            self.states_: StateModel | None = StateModel.fit(
                covariance, states, self.state_components, self.state_intervals
            )
        except ProfileError as exc:
            import warnings

            warnings.warn(
                f"the profile has no DeepStellar state model, so BS, SBC, BT and WT "
                f"cannot be used with it: {exc}",
                RNNCovWarning,
                stacklevel=3,
            )
            self.states_ = None
        return self

    # -- use ---------------------------------------------------------------------------
    def _fitted(self) -> None:
        if not hasattr(self, "signals_"):
            raise ProfileError(
                "this Profile is not fitted; call profile.fit(rnn_model, x_train) or "
                "Profile.load(path) first"
            )

    def stats(self, component: str, abstraction: str) -> SignalStats:
        """The statistics of one signal."""
        self._fitted()
        check_component(self.cell_, component)
        if abstraction not in ABSTRACTIONS:
            raise InvalidArgument(
                f"abstraction={abstraction!r}; use one of {', '.join(ABSTRACTIONS)}"
            )
        return self.signals_[f"{component}/{abstraction}"]

    def minmax(self, component: str, abstraction: str) -> tuple[float, float]:
        """(min, max) for min-max normalisation; refuses a constant signal."""
        s = self.stats(component, abstraction)
        if not s.max > s.min:
            raise DegenerateProfile(
                f"signal {component}/{abstraction} is constant ({s.min!r}) over the "
                f"{self.n_samples_} training inputs in window {list(self.window_)}, so it "
                "cannot be min-max normalised; choose another component or abstraction, "
                "another window, or fit on more varied inputs"
            )
        return s.min, s.max

    def zscore(self, component: str, abstraction: str) -> tuple[float, float]:
        """(mu, sigma) for z-normalisation; refuses sigma == 0."""
        s = self.stats(component, abstraction)
        if not s.std > 0:
            raise DegenerateProfile(
                f"signal {component}/{abstraction} does not vary (sigma = {s.std!r}) over the "
                f"{self.n_samples_} training inputs in window {list(self.window_)}, so it "
                "cannot be z-normalised; choose another component or abstraction, another "
                "window, or fit on more varied inputs"
            )
        return s.mean, s.std

    def refit_hint(self) -> str:
        """How to refit this profile, naming its file when it came from one."""
        if self.path_ is not None:
            return (
                f"delete {str(self.path_)!r} so that rnncov.track(..., x_train=...) refits "
                f"it, or run: {self._fit_command(self.layer_, str(self.path_))}"
            )
        return "refit it with Profile(window=...).fit(rnn_model, x_train)"

    def _fit_command(self, traced: str, out: str) -> str:
        """The ``profile fit`` command fitting this profile's settings on the layer named
        ``traced`` (as ``layer_name`` names it: ``bi/backward`` for a backward half)."""
        layer, _, direction = traced.rpartition("/")
        if direction not in ("forward", "backward"):  # no bidirectional half
            layer, direction = traced, "forward"
        options = [f"--layer {shlex.quote(layer)}"]
        if direction == "backward":
            options.append("--direction backward")
        if self.window is not None:
            options.append("--window={},{}".format(*self.window))
        # a layer of U < 5 units fits U directions by default, and a loaded profile holds
        # the number it fitted: U then means the default too (a widened layer gets 5 again)
        units = getattr(self, "units_", None)
        defaults = {5} if units is None else {5, min(5, int(units))}
        for name, value, default in (
            ("components", self.state_components, defaults),
            ("intervals", self.state_intervals, {10}),
        ):
            if value not in default:
                options.append(f"--state-{name} {value}")
        return (
            "python -m pytest_rnncov profile fit MODEL --x-train X_TRAIN.npy "
            f"{' '.join(options)} --out {shlex.quote(out)} (MODEL: the model's file, or "
            "module:function --weights STATE_DICT.pt for PyTorch)"
        )

    def check(self, model: "TraceSource") -> None:
        """Raise StaleProfile unless this profile belongs to ``model``'s traced layer."""
        self._fitted()
        model = check_source(model)
        problems = []
        if self.layer_ != model.layer_name:
            problems.append(f"layer {self.layer_!r} != {model.layer_name!r}")
        if self.cell_ != model.cell_kind:
            problems.append(f"cell {self.cell_} != {model.cell_kind}")
        if self.units_ != model.units:
            problems.append(f"units {self.units_!r} != {model.units!r}")
        if model.n_steps is not None and self.n_steps_ != model.n_steps:
            problems.append(f"steps {self.n_steps_!r} != {model.n_steps!r}")
        other_layer = self.layer_ != model.layer_name  # another layer's (or half's) profile
        reshaped = bool(problems) and not other_layer  # the same name, another shape
        if self.fingerprint_ != model.fingerprint():
            earlier: tuple[str, ...] = getattr(model, "earlier_fingerprints", tuple)()
            why = (
                "another layer's"
                if other_layer
                else "another model's, or the model changed"
                if reshaped
                else "fitted by an earlier pytest-rnncov, whose fingerprint left out weights "
                "it now covers (integer, quantized or sparse ones)"
                if self.fingerprint_ in earlier
                else "the model changed where the fingerprint looks: "
                + getattr(model, "fingerprint_covers", "the weights up to the traced layer")
            )
            problems.append(
                f"weights fingerprint {self.fingerprint_} != {model.fingerprint()} ({why})"
            )
        if problems:
            where = f"profile {str(self.path_)!r}" if self.path_ is not None else "the profile"
            hint = self.refit_hint()
            if other_layer and self.path_ is not None:  # another layer's profile: keep it
                hint = (
                    "it is the profile of another layer or model, so keep it and give this "
                    "one its own profile path (rnncov.track(..., profile='OTHER.json', "
                    "x_train=...) fits it there), or run: "
                    + self._fit_command(model.layer_name, "OTHER.json")
                    + "; if this is the model it was fitted on, and the model changed, "
                    + hint
                )
            elif reshaped and self.path_ is not None:  # another model's, or this one changed
                hint = (
                    "if it belongs to another model, give this model its own profile path "
                    "(rnncov.track(..., profile='OTHER.json')); if this model changed, " + hint
                )
            raise StaleProfile(
                f"{where} does not belong to this model (" + "; ".join(problems) + "); " + hint
            )

    # -- files -------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        self._fitted()
        return {
            "format": FORMAT,
            "version": VERSION,
            "layer": {
                "name": self.layer_,
                "cell": self.cell_,
                "units": self.units_,
                "steps": self.n_steps_,
                "fingerprint": self.fingerprint_,
            },
            "window": list(self.window_),
            "window_requested": None if self.window is None else list(self.window),
            "n_samples": self.n_samples_,
            "signals": {name: asdict(s) for name, s in self.signals_.items()},
            "neurons": {
                "component": "h",
                "min": self.neuron_min_.tolist(),
                "max": self.neuron_max_.tolist(),
            },
            "states": None if self.states_ is None else self.states_.to_dict(),
        }

    def digest(self) -> str:
        """A short hash of everything fitted: equal digests, equal conditions."""
        content = {k: v for k, v in self.to_dict().items() if k != "window_requested"}
        text = json.dumps(content, sort_keys=True, allow_nan=False)
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def text(self) -> str:
        """The profile file's content (JSON; see docs/definitions.md, "Profile files")."""
        return json.dumps(self.to_dict(), indent=1, allow_nan=False) + "\n"

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the profile file (atomically); an existing file that is not a profile is
        never replaced."""
        target = as_path(path, "profile path")
        check_replaceable(target, "pytest-rnncov-profile", "profile path", ProfileError)
        write_atomic(target, self.text(), "the profile", ProfileError)
        self.path_ = target

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "Profile":
        """Read a profile written by ``save``, checking every field."""
        source = as_path(path, "profile path")
        where = f"profile {str(source)!r}"
        if not source.exists():
            raise InvalidArgument(
                f"no profile file at {str(source)!r}; fit one with "
                "Profile().fit(model, x_train) and save it"
            )
        data = parse_json(
            read_bounded(source, where, ProfileError),
            where,
            ProfileError,
            fix="refit and save the profile",
        )
        profile = _from_dict(cls, data, where)
        profile.path_ = source
        return profile

    def __repr__(self) -> str:
        if not hasattr(self, "signals_"):
            return f"Profile(window={self.window!r})"
        return (
            f"Profile(layer={self.layer_!r}, cell={self.cell_!r}, window={list(self.window_)}, "
            f"n_samples={self.n_samples_})"
        )


def _from_dict(cls: type[Profile], data: Any, where: str) -> Profile:
    def fail(problem: str) -> ProfileError:
        return ProfileError(f"{where}: {problem}; refit and save the profile")

    def part(mapping: Any, context: str = "") -> Fields:
        return Fields(
            mapping,
            where + (f", {context}" if context else ""),
            ProfileError,
            "refit and save the profile",
        )

    def numbers(value: Any, context: str) -> None:
        """Refuse leaves of a (nested) list that are not floats, as written (reading an
        integer or true/false as float64 would change it: 1 -> 1.0, 2**53 + 1 rounded)."""
        leaves = [value]
        while leaves:
            leaf = leaves.pop()
            if isinstance(leaf, list):
                leaves.extend(leaf)
            elif not isinstance(leaf, float):
                raise fail(f"{context} holds {shown(leaf)} ({type(leaf).__name__}), not a float")

    top, _ = read_envelope(
        data,
        where,
        FORMAT,
        (VERSION,),
        ProfileError,
        "refit and save the profile",
        noun="profile format",
    )
    top.exact_keys(
        (
            "format",
            "version",
            "layer",
            "window",
            "window_requested",
            "n_samples",
            "signals",
            "neurons",
            "states",
        )
    )
    layer = part(top.get("layer", dict), "layer")
    layer.exact_keys(("name", "cell", "units", "steps", "fingerprint"))
    name = layer.get("name", str)
    cell = layer.get("cell", str)
    if cell not in CELL_COMPONENTS:
        raise fail(f"layer.cell {cell!r} is not one of {', '.join(CELL_COMPONENTS)}")
    units = layer.get("units", int)
    steps = layer.get("steps", int)
    if units < 1 or steps < 1:
        raise fail(f"layer has units={units}, steps={steps}; both must be >= 1")
    fingerprint = layer.get("fingerprint", str)
    requested = data.get("window_requested")
    try:
        requested = check_window(requested)
        window = resolve_window(top.get("window", list), steps)
        resolved = resolve_window(requested, steps)
    except InvalidArgument as exc:
        raise fail(f"bad window ({exc})") from None
    if tuple(data["window"]) != window or resolved != window:
        raise fail(
            f"window {data['window']} does not match window_requested {requested} over "
            f"{steps} steps"
        )
    n_samples = top.get("n_samples", int)
    if n_samples < 1:
        raise fail(f"n_samples={n_samples}")
    signals_raw = top.get("signals", dict)
    expected = {f"{c}/{a}" for c in CELL_COMPONENTS[cell] for a in ABSTRACTIONS}
    if set(signals_raw) != expected:
        missing = sorted(expected - set(signals_raw))
        extra = sorted(set(signals_raw) - expected)
        raise fail(
            "signals "
            + ("lack " + ", ".join(missing) if missing else "")
            + ("; " if missing and extra else "")
            + ("have unknown " + ", ".join(extra) if extra else "")
        )
    signals = {}
    fields = ("min", "max", "mean", "std")
    for key, raw in signals_raw.items():
        unknown = sorted(set(raw) - set(fields)) if isinstance(raw, Mapping) else []
        if unknown:
            raise fail(
                f"signals.{key} has unknown key {shown(unknown[0])}; its statistics are "
                f"{', '.join(fields)}"
            )
        values = {}
        for field in fields:
            value = part(raw, f"signals.{key}").get(field, float)  # floats, as written
            if not math.isfinite(value):
                raise fail(f"signals.{key}.{field} is {value!r}")
            values[field] = float(value)
        if values["min"] > values["max"] or values["std"] < 0:
            raise fail(f"signals.{key} has min > max or a negative std")
        if max(abs(values[f]) for f in ("min", "max", "mean")) > SIGNAL_LIMIT or any(
            0 < spread < MIN_SPREAD for spread in (values["std"], values["max"] - values["min"])
        ):
            raise fail(
                f"signals.{key} has statistics no fit gives (|values| up to {SIGNAL_LIMIT:g}, "
                f"a spread of 0 or at least {MIN_SPREAD:g}): normalising would overflow"
            )
        slack = 1e-9 * (abs(values["min"]) + abs(values["max"]) + 1.0)  # float64 rounding
        if not values["min"] - slack <= values["mean"] <= values["max"] + slack:
            raise fail(f"signals.{key}.mean {values['mean']!r} lies outside [min, max]")
        signals[key] = SignalStats(**values)
    neuron_fields = part(top.get("neurons", dict), "neurons")
    neuron_fields.exact_keys(("component", "min", "max"))
    neurons = neuron_fields.data
    if neurons["component"] != "h":
        raise fail(f"neurons.component is {neurons.get('component')!r}; profiles record 'h'")
    length = window[1] - window[0] + 1
    arrays = []
    for key in ("min", "max"):
        numbers(neuron_fields.get(key, list), f"neurons.{key}")
        try:
            array = np.asarray(neurons[key], np.float64)
        except (TypeError, ValueError, OverflowError):
            raise fail(f"neurons.{key} is not a numeric array") from None
        if (
            array.shape != (length, units)
            or not np.isfinite(array).all()
            or np.abs(array).max(initial=0) > FLOAT32_MAX
        ):
            raise fail(
                f"neurons.{key} must be numbers within float32's range, of shape "
                f"({length}, {units}) for "
                f"window {list(window)}, got {array.shape}"
            )
        arrays.append(array)
    if (arrays[0] > arrays[1]).any():
        raise fail("neurons.min exceeds neurons.max")
    states = None
    if data["states"] is not None:
        if isinstance(data["states"], Mapping):
            part(data["states"], "states").exact_keys(STATE_KEYS)
            for key in ("mean", "components", "low", "high"):
                numbers(data["states"][key], f"states.{key}")
        states = StateModel.from_dict(data["states"], units, where)
    profile = cls(window=requested)
    if states is not None:
        if len(states.components) > MAX_STATE_COMPONENTS:
            raise fail(
                f"'states' has {len(states.components)} components, at most "
                f"{MAX_STATE_COMPONENTS}; refit the profile"
            )
        profile.state_components = len(states.components)
        profile.state_intervals = states.intervals
    profile.states_ = states
    profile.cell_ = cell
    profile.window_ = window
    profile.layer_, profile.units_ = name, units
    profile.n_steps_, profile.fingerprint_ = steps, fingerprint
    profile.n_samples_ = n_samples
    profile.signals_ = signals
    profile.neuron_min_, profile.neuron_max_ = arrays
    return profile


def _warn_masked_steps(
    padded: int,
    n_samples: int,
    requested: tuple[int, int] | None,
    window: Window,
    always_real: np.ndarray | None,
) -> None:
    """Say that ``padded`` of the training inputs hold masked steps inside ``window``
    (``requested`` as given), and which steps are real in every one of them."""
    import warnings

    run = _longest_run(always_real) if always_real is not None else None
    where = (
        f"steps {window[0] + run[0]} to {window[0] + run[1]} are real in every training "
        "input, so a window within them measures computed steps only"
        if run is not None
        else "no step of it is real in every training input: a shorter window, or inputs "
        "that fill it, measure computed steps only"
    )
    share = padded / n_samples
    given = "" if requested is None or tuple(requested) == tuple(window) else f" {requested}"
    warnings.warn(
        f"{padded} of {n_samples} training inputs ({'<1' if share < 0.01 else f'{share:.0%}'}"
        f"{'%' if share < 0.01 else ''}) have masked steps (padding) inside the window"
        f"{given} (steps {window[0]} to {window[1]}): the layer carries its state over them "
        "(zeros before the first real step), and those values enter the profile's ranges "
        "and the coverage as the layer's own (a forget gate's zeros there can put every "
        f"real step above a boundary); {where} (window= of rnncov.track or Profile, "
        "--window of profile fit)",
        RNNCovWarning,
        stacklevel=user_stacklevel(),
    )


def _longest_run(flags: np.ndarray) -> tuple[int, int] | None:
    """The first and last index of the longest run of True in ``flags`` (None: none; the
    first of equally long runs)."""
    edges = np.flatnonzero(np.diff(np.concatenate([[0], flags.astype(np.int8), [0]])))
    starts, stops = edges[::2], edges[1::2]  # each run's first index, and its last + 1
    if not len(starts):
        return None
    longest = int(np.argmax(stops - starts))
    return int(starts[longest]), int(stops[longest]) - 1
