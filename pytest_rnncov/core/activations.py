"""Activation functions of recurrent cells, applied in place on float32 arrays: numpy
twins of the frameworks' own (with array-API twins for the device path), or the
framework's function itself for anything else."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from ..errors import RNNCovWarning

InPlace = Callable[[np.ndarray], None]

_F = np.float32


def _sigmoid(x: np.ndarray) -> None:
    # 0.5 * tanh(0.5 x) + 0.5 is the logistic function, and np.tanh is much faster than exp
    np.multiply(x, _F(0.5), out=x)
    np.tanh(x, out=x)
    np.multiply(x, _F(0.5), out=x)
    np.add(x, _F(0.5), out=x)


def _tanh(x: np.ndarray) -> None:
    np.tanh(x, out=x)


def _relu(x: np.ndarray) -> None:
    np.maximum(x, _F(0), out=x)


def _linear(x: np.ndarray) -> None:
    return None


def _hard_sigmoid_keras3(x: np.ndarray) -> None:
    """Keras 3: ``relu6(x + 3) / 6``, in that order of float operations."""
    np.add(x, _F(3), out=x)
    np.clip(x, _F(0), _F(6), out=x)
    np.divide(x, _F(6), out=x)


def _hard_sigmoid_keras2(x: np.ndarray) -> None:
    """Keras 2 / tf_keras: ``clip(0.2 x + 0.5, 0, 1)``."""
    np.multiply(x, _F(0.2), out=x)
    np.add(x, _F(0.5), out=x)
    np.clip(x, _F(0), _F(1), out=x)


KNOWN_ACTIVATIONS: dict[str, InPlace] = {
    "sigmoid": _sigmoid,
    "tanh": _tanh,
    "relu": _relu,
    "linear": _linear,
    "hard_sigmoid_keras3": _hard_sigmoid_keras3,
    "hard_sigmoid_keras2": _hard_sigmoid_keras2,
}


def _xp_activation(name: str) -> Callable[[Any, Any], Any] | None:
    """The activation ``name`` in array-API form (for device arrays), or None."""
    table: dict[str, Callable[[Any, Any], Any]] = {
        "sigmoid": lambda xp, x: 0.5 * xp.tanh(0.5 * x) + 0.5,
        "tanh": lambda xp, x: xp.tanh(x),
        "relu": lambda xp, x: xp.clip(x, min=0.0),
        "linear": lambda xp, x: x,
        "hard_sigmoid_keras3": lambda xp, x: xp.clip(x + 3.0, min=0.0, max=6.0) / 6.0,
        "hard_sigmoid_keras2": lambda xp, x: xp.clip(0.2 * x + 0.5, min=0.0, max=1.0),
    }
    return table.get(name)


@dataclass(frozen=True)
class Activation:
    """An activation function applied in place on float32 arrays.

    Known functions (``KNOWN_ACTIVATIONS``) are numpy twins of the framework's (and have
    array-API twins for the device path); any other callable runs through the framework
    itself (exact, slower, announced by a warning).
    """

    name: str
    apply: InPlace

    @property
    def on_device(self) -> bool:
        """Whether the device path can compute this activation."""
        return _xp_activation(self.name) is not None

    def xp(self, xp: Any, x: Any) -> Any:
        """Out of place, in ``x``'s array namespace (for device arrays)."""
        fn = _xp_activation(self.name)
        assert fn is not None, self.name
        return fn(xp, x)

    @classmethod
    def named(cls, name: str) -> "Activation":
        return cls(name, KNOWN_ACTIVATIONS[name])

    @classmethod
    def through(cls, name: str, fn: Callable[[np.ndarray], Any]) -> "Activation":
        warnings.warn(
            f"activation {name!r} has no numpy twin in pytest-rnncov; the trace calls the "
            "framework's own function at every step (exact, but slower)",
            RNNCovWarning,
            stacklevel=3,
        )

        def apply(x: np.ndarray) -> None:
            x[...] = np.asarray(fn(x), dtype=np.float32)

        return cls(name, apply)

    def __call__(self, x: np.ndarray) -> np.ndarray:
        """Out of place (for tests and small inputs)."""
        out = np.array(x, dtype=np.float32)
        self.apply(out)
        return out
