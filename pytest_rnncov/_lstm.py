"""Pure-numpy LSTM recomputation that records the gates (SPEC section 1)."""

from __future__ import annotations

from typing import Callable, NamedTuple

import numpy as np
from scipy.special import expit

Activation = Callable[[np.ndarray], np.ndarray]


def sigmoid(x: np.ndarray) -> np.ndarray:
    return expit(x)


def hard_sigmoid_keras3(x: np.ndarray) -> np.ndarray:
    """Keras 3: ``relu6(x + 3) / 6``."""
    return np.clip((x + 3.0) / 6.0, 0.0, 1.0)


def hard_sigmoid_keras2(x: np.ndarray) -> np.ndarray:
    """Keras 2 / tf_keras: ``clip(0.2 * x + 0.5, 0, 1)``."""
    return np.clip(x * np.float32(0.2) + np.float32(0.5), 0.0, 1.0)


def relu(x: np.ndarray) -> np.ndarray:
    return np.maximum(x, 0.0)


def linear(x: np.ndarray) -> np.ndarray:
    return x


class LSTMWeights(NamedTuple):
    """Weights in Keras layout: gate blocks ordered i, f, c~, o."""

    kernel: np.ndarray  # (D, 4U)
    recurrent: np.ndarray  # (U, 4U)
    bias: np.ndarray | None  # (4U,) or None


class GateArrays(NamedTuple):
    f: np.ndarray
    i: np.ndarray
    o: np.ndarray
    c: np.ndarray
    h: np.ndarray


def lstm_forward(
    x: np.ndarray,
    weights: LSTMWeights,
    activation: Activation,
    recurrent_activation: Activation,
    mask: np.ndarray | None = None,
    go_backwards: bool = False,
) -> GateArrays:
    """Run an LSTM over ``x`` (B, T, D) and return f, i, o, c, h, each (B, T, U) float32.

    Steps are in processing order (reversed input when ``go_backwards``). At a masked step
    all five arrays repeat the previous step's values (zeros before the first step), as the
    framework carries h and c over.
    """
    x = np.asarray(x, dtype=np.float32)
    if go_backwards:
        x = x[:, ::-1]
        mask = None if mask is None else mask[:, ::-1]
    batch, steps, _ = x.shape
    units = weights.recurrent.shape[0]
    # time-major, so every step reads and writes contiguous blocks
    z_in = np.ascontiguousarray(x.transpose(1, 0, 2)).reshape(steps * batch, -1) @ weights.kernel
    if weights.bias is not None:
        z_in += weights.bias
    z_in = z_in.reshape(steps, batch, 4 * units)
    out = np.zeros((5, steps, batch, units), dtype=np.float32)
    f_all, i_all, o_all, c_all, h_all = out
    h = np.zeros((batch, units), dtype=np.float32)
    c = np.zeros((batch, units), dtype=np.float32)
    z = np.empty((batch, 4 * units), dtype=np.float32)
    keep_all = None if mask is None else np.ascontiguousarray(mask.T)[:, :, None]
    for t in range(steps):
        np.matmul(h, weights.recurrent, out=z)
        z += z_in[t]
        i_t = recurrent_activation(z[:, :units])
        f_t = recurrent_activation(z[:, units : 2 * units])
        o_t = recurrent_activation(z[:, 3 * units :])
        c_new = f_t * c + i_t * activation(z[:, 2 * units : 3 * units])
        h_new = o_t * activation(c_new)
        if keep_all is None:
            f_all[t], i_all[t], o_all[t] = f_t, i_t, o_t
            c, h = c_new, h_new
        else:
            keep = keep_all[t]
            previous = t - 1 if t else None
            for gate, values in ((f_all, f_t), (i_all, i_t), (o_all, o_t)):
                gate[t] = values if previous is None else np.where(keep, values, gate[previous])
                if previous is None:
                    gate[t] *= keep
            c = np.where(keep, c_new, c)
            h = np.where(keep, h_new, h)
        c_all[t], h_all[t] = c, h
    return GateArrays(*(np.swapaxes(a, 0, 1) for a in out))
