"""The profile: normalisation statistics of one LSTM layer learned from training inputs."""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import numpy as np

from .abstractions import ABSTRACTIONS, Window, check_signal, resolve_window, signal
from .errors import DegenerateProfile, InvalidArgument, ProfileError, StaleProfile
from .trace import COMPONENTS, Trace

if TYPE_CHECKING:
    from .keras_adapter import RNNModel

FORMAT = "pytest-rnncov-profile"
VERSION = 1


@dataclass(frozen=True)
class SignalStats:
    """min, max, mean and (population) std of one signal over window x training inputs."""

    min: float
    max: float
    mean: float
    std: float


class _Running:
    """Streaming min / max / mean / M2 (Chan et al.) of a float array."""

    def __init__(self, shape: tuple[int, ...] = ()) -> None:
        self.n = 0
        self.min = np.full(shape, np.inf)
        self.max = np.full(shape, -np.inf)
        self.mean = np.zeros(shape)
        self.m2 = np.zeros(shape)

    def add(self, values: np.ndarray, axis: int | tuple[int, ...] | None) -> None:
        values = np.asarray(values, np.float64)
        count = values.size if axis is None else int(np.prod([values.shape[a] for a in np.atleast_1d(axis)]))
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
    """Statistics of an LSTM layer over training inputs, for normalising its signals.

    Configure with ``window`` (inclusive, 0-based ``(t1, t2)``; negatives count from the
    end; ``None`` = all steps) and the DeepStellar state abstraction (``state_components``
    PCA directions, ``state_intervals`` intervals each), then ``fit(rnn_model, x_train)``. Fitted attributes end in
    an underscore. ``save`` / ``load`` use a human-readable JSON file that records the layer
    and a fingerprint of its weights, so a profile of other weights is refused.
    """

    def __init__(self, window: Sequence[int] | None = None, *, state_components: int = 5,
                 state_intervals: int = 10) -> None:
        from .deepstellar import check_state_parameters

        check_state_parameters(state_components, state_intervals)
        self.window = None if window is None else tuple(window)
        self.state_components = state_components
        self.state_intervals = state_intervals

    # -- fitting ---------------------------------------------------------------------
    def fit(self, model: "RNNModel", x: Any) -> "Profile":
        """Learn every signal's statistics from training inputs ``x`` (batched)."""
        x = model.check_input(x)
        batches = (
            model._compute(x[start : start + model.batch_size], with_outputs=False)[1]
            for start in range(0, len(x), model.batch_size)
        )
        return self.fit_traces(batches, layer=model.layer_name, fingerprint=model.fingerprint())

    def fit_traces(self, traces: Iterable[Trace], *, layer: str, fingerprint: str) -> "Profile":
        """Learn the statistics from already computed traces of the layer ``layer``."""
        signals = {f"{c}/{a}": _Running() for c in COMPONENTS for a in ABSTRACTIONS}
        neurons: _Running | None = None
        window: Window | None = None
        n_samples = 0
        hidden: list[np.ndarray] = []
        for trace in traces:
            if window is None:
                self.n_steps_, self.units_ = trace.n_steps, trace.units
                window = resolve_window(self.window, trace.n_steps)
            elif trace.n_steps != self.n_steps_:
                raise InvalidArgument(
                    f"training traces have {trace.n_steps} and {self.n_steps_} steps; "
                    "pad the training inputs to one length"
                )
            for name, running in signals.items():
                component, abstraction = name.split("/")
                running.add(signal(trace, component, abstraction, window), axis=None)
            h = trace.h[:, window[0] : window[1] + 1]
            if neurons is None:
                neurons = _Running(h.shape[1:])
            neurons.add(h, axis=0)
            hidden.append(np.array(h, np.float32))
            n_samples += trace.batch_size
        if window is None or neurons is None:
            raise InvalidArgument("no training inputs: pass at least one input to fit")
        self.window_ = window
        self.layer_ = layer
        self.fingerprint_ = fingerprint
        self.n_samples_ = n_samples
        self.signals_ = {
            name: SignalStats(float(r.min), float(r.max), float(r.mean), float(np.sqrt(r.m2 / r.n)))
            for name, r in signals.items()
        }
        self.neuron_min_ = neurons.min
        self.neuron_max_ = neurons.max
        from .deepstellar import StateModel

        try:
            self.states_: StateModel | None = StateModel.fit(
                np.concatenate(hidden), self.state_components, self.state_intervals)
        except ProfileError:  # refused by name when a DeepStellar metric asks for it
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
        check_signal(component, abstraction)
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
                f"signal {component}/{abstraction} has sigma == 0 over the "
                f"{self.n_samples_} training inputs in window {list(self.window_)}, so it "
                "cannot be z-normalised; choose another component or abstraction, another "
                "window, or fit on more varied inputs"
            )
        return s.mean, s.std

    def check(self, model: "RNNModel") -> None:
        """Raise StaleProfile unless this profile belongs to ``model``'s traced layer."""
        self._fitted()
        problems = []
        if self.layer_ != model.layer_name:
            problems.append(f"layer {self.layer_!r} != {model.layer_name!r}")
        if self.units_ != model.units:
            problems.append(f"units {self.units_} != {model.units}")
        if model.n_steps is not None and self.n_steps_ != model.n_steps:
            problems.append(f"steps {self.n_steps_} != {model.n_steps}")
        if self.fingerprint_ != model.fingerprint():
            problems.append(
                f"weights fingerprint {self.fingerprint_} != {model.fingerprint()}"
            )
        if problems:
            raise StaleProfile(
                "the profile does not belong to this model (" + "; ".join(problems) + "); "
                "refit it with Profile(window=...).fit(rnn_model, x_train) and save it again"
            )

    # -- files -------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        self._fitted()
        return {
            "format": FORMAT,
            "version": VERSION,
            "layer": {
                "name": self.layer_,
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

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the profile as JSON (see README, "Profile files")."""
        Path(path).write_text(json.dumps(self.to_dict(), indent=1) + "\n")

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "Profile":
        """Read a profile written by ``save``."""
        try:
            data = json.loads(Path(path).read_text())
        except FileNotFoundError:
            raise InvalidArgument(f"no profile file at {str(path)!r}") from None
        except json.JSONDecodeError as exc:
            raise ProfileError(f"{str(path)!r} is not a profile file (invalid JSON: {exc})") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ProfileError(f"{str(path)!r} is not a pytest-rnncov profile file")
        if data.get("version") != VERSION:
            raise ProfileError(
                f"{str(path)!r} has profile format version {data.get('version')!r}; this "
                f"pytest-rnncov reads version {VERSION}: refit and save the profile"
            )
        from .deepstellar import StateModel

        states = None if data.get("states") is None else StateModel.from_dict(data["states"])
        profile = cls(window=data["window_requested"])
        if states is not None:
            profile.state_components = len(states.components)
            profile.state_intervals = states.intervals
        profile.states_ = states
        profile.window_ = tuple(data["window"])
        layer = data["layer"]
        profile.layer_, profile.units_ = layer["name"], layer["units"]
        profile.n_steps_, profile.fingerprint_ = layer["steps"], layer["fingerprint"]
        profile.n_samples_ = data["n_samples"]
        profile.signals_ = {name: SignalStats(**s) for name, s in data["signals"].items()}
        profile.neuron_min_ = np.asarray(data["neurons"]["min"], np.float64)
        profile.neuron_max_ = np.asarray(data["neurons"]["max"], np.float64)
        return profile

    def __repr__(self) -> str:
        if not hasattr(self, "signals_"):
            return f"Profile(window={self.window!r})"
        return (
            f"Profile(layer={self.layer_!r}, window={list(self.window_)}, "
            f"n_samples={self.n_samples_})"
        )
