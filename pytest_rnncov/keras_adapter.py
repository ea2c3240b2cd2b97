"""Adapters for Keras 3 and tf_keras (Keras 2) models: ``RNNModel`` and ``load_model``."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import Any, Callable

import numpy as np

from . import _lstm
from .errors import InvalidArgument, InvalidInput, ModelError
from .trace import COMPONENTS, Trace

DIRECTIONS = ("forward", "backward")


def load_model(path: str | os.PathLike[str]) -> Any:
    """Load a Keras model without compiling it.

    ``.keras`` files load with Keras 3 (safe mode on). ``.h5`` files saved by Keras 2 load
    with tf_keras (``pip install 'pytest-rnncov[legacy]'``); ``.h5`` files saved by Keras 3
    load with Keras 3.
    """
    path = Path(path)
    if not path.is_file():
        raise InvalidArgument(f"no model file at {str(path)!r}; pass the path of a .keras or .h5 file")
    suffix = path.suffix.lower()
    if suffix == ".keras":
        import keras

        return keras.models.load_model(path, compile=False, safe_mode=True)
    if suffix in (".h5", ".hdf5"):
        if _h5_keras_major(path) >= 3:
            import keras

            return keras.models.load_model(path, compile=False)
        try:
            import tf_keras
        except ImportError:
            raise ModelError(
                f"{str(path)!r} was saved by Keras 2 and only loads with tf_keras; "
                "install it with: pip install 'pytest-rnncov[legacy]'"
            ) from None
        return tf_keras.models.load_model(path, compile=False)
    raise InvalidArgument(
        f"cannot load {str(path)!r}: expected a .keras or .h5 file; for a SavedModel "
        "directory, load the model yourself and pass it to RNNModel"
    )


def _h5_keras_major(path: Path) -> int:
    import h5py

    with h5py.File(path, "r") as f:
        version = f.attrs.get("keras_version", b"2")
    if isinstance(version, bytes):
        version = version.decode()
    try:
        return int(str(version).split(".")[0])
    except ValueError:
        return 2


def _framework(model: Any) -> str:
    module = type(model).__module__
    if module.startswith("tf_keras") or module.startswith("tensorflow.python.keras"):
        return "tf_keras"
    if module.startswith("keras"):
        return "keras"
    raise InvalidArgument(
        f"RNNModel needs a Keras model, got {type(model).__module__}.{type(model).__name__}; "
        "load it with keras, tf_keras or pytest_rnncov.load_model"
    )


def _numpy_activation(fn: Callable[..., Any], framework: str) -> _lstm.Activation:
    """The numpy twin of a layer's activation function (taken from the loaded layer)."""
    name = getattr(fn, "__name__", "")
    known: dict[str, _lstm.Activation] = {
        "sigmoid": _lstm.sigmoid,
        "tanh": np.tanh,
        "relu": _lstm.relu,
        "linear": _lstm.linear,
        "hard_sigmoid": _lstm.hard_sigmoid_keras2
        if framework == "tf_keras"
        else _lstm.hard_sigmoid_keras3,
    }
    if name in known and getattr(fn, "__module__", "").split(".")[0] in ("keras", "tf_keras"):
        return known[name]

    def through_framework(x: np.ndarray) -> np.ndarray:  # exact but slower
        return np.asarray(fn(x), dtype=np.float32)

    return through_framework


def _is_lstm(layer: Any) -> bool:
    return type(layer).__name__ == "LSTM"


def _is_bidirectional_lstm(layer: Any) -> bool:
    return type(layer).__name__ == "Bidirectional" and _is_lstm(getattr(layer, "forward_layer", None))


class RNNModel:
    """A Keras model with one of its LSTM layers made traceable.

    ``layer`` picks the LSTM by name, by index into ``model.layers`` or, when ``None``, the
    first one. For a ``Bidirectional`` LSTM, ``direction`` picks ``"forward"`` (default) or
    ``"backward"``. Inputs are fed in batches of ``batch_size``.
    """

    def __init__(
        self,
        model: Any,
        layer: str | int | None = None,
        *,
        direction: str = "forward",
        batch_size: int = 512,
    ) -> None:
        self.framework = _framework(model)
        self.model = model
        if direction not in DIRECTIONS:
            raise InvalidArgument(f"direction={direction!r}; use 'forward' or 'backward'")
        if not isinstance(batch_size, int) or batch_size < 1:
            raise InvalidArgument(f"batch_size={batch_size!r}; use a positive integer")
        self.batch_size = batch_size
        if len(model.inputs) != 1:
            raise ModelError(
                f"model {model.name!r} has {len(model.inputs)} inputs; RNNModel supports "
                "models with one input tensor"
            )
        self.wrapper = self._find_layer(layer)
        self.direction = direction if _is_bidirectional_lstm(self.wrapper) else "forward"
        if _is_bidirectional_lstm(self.wrapper):
            self.layer = (
                self.wrapper.forward_layer if direction == "forward" else self.wrapper.backward_layer
            )
        else:
            self.layer = self.wrapper
        cell = self.layer.cell
        weights = self.layer.get_weights()
        bias = weights[2] if cell.use_bias else None
        self.weights = _lstm.LSTMWeights(
            np.asarray(weights[0], np.float32), np.asarray(weights[1], np.float32),
            None if bias is None else np.asarray(bias, np.float32),
        )
        self.units = int(cell.units)
        self.go_backwards = bool(self.layer.go_backwards)
        self._activation = _numpy_activation(cell.activation, self.framework)
        self._recurrent_activation = _numpy_activation(cell.recurrent_activation, self.framework)
        self.input_shape = tuple(model.inputs[0].shape[1:])
        self.input_dtype = np.dtype(_dtype_name(model.inputs[0].dtype))
        self._probe = self._build_probe()

    @property
    def layer_name(self) -> str:
        """Name of the traced layer; ``name/backward`` for a Bidirectional's backward LSTM."""
        if self.wrapper is self.layer:
            return str(self.layer.name)
        return f"{self.wrapper.name}/{self.direction}"

    @property
    def n_steps(self) -> int | None:
        """Steps of the traced layer, when the model fixes them."""
        steps = self._layer_input_shape[1]
        return None if steps is None else int(steps)

    def fingerprint(self) -> str:
        """A short hash of the traced layer's weights, activations and direction."""
        digest = hashlib.sha256()
        for array in self.weights:
            if array is not None:
                digest.update(str(array.shape).encode())
                digest.update(np.ascontiguousarray(array, np.float32).tobytes())
        cell = self.layer.cell
        digest.update(
            f"{self.framework}|{cell.activation.__name__}|{cell.recurrent_activation.__name__}|"
            f"{self.go_backwards}".encode()
        )
        return digest.hexdigest()[:16]

    # -- layer selection -------------------------------------------------------------
    def _find_layer(self, layer: str | int | None) -> Any:
        layers = list(self.model.layers)
        candidates = [
            (index, lay) for index, lay in enumerate(layers)
            if _is_lstm(lay) or _is_bidirectional_lstm(lay)
        ]
        listing = ", ".join(f"{lay.name!r} (index {index})" for index, lay in candidates)
        if not candidates:
            raise ModelError(
                f"model {self.model.name!r} has no LSTM layer (layers: "
                f"{', '.join(repr(lay.name) for lay in layers)}); pytest-rnncov traces "
                "keras.layers.LSTM and Bidirectional(LSTM)"
            )
        if layer is None:
            return candidates[0][1]
        if isinstance(layer, bool) or not isinstance(layer, (str, int)):
            raise InvalidArgument(f"layer={layer!r}; pass a layer name, an index or None")
        for index, lay in candidates:
            if layer == lay.name or layer == index:
                return lay
        raise ModelError(
            f"layer={layer!r} is not an LSTM layer of model {self.model.name!r}; "
            f"its LSTM layers are {listing}: pass one of those names or indices"
        )

    # -- running the model -----------------------------------------------------------
    def _build_probe(self) -> Callable[[np.ndarray, bool], tuple[np.ndarray, np.ndarray | None, np.ndarray | None]]:
        """A function x, with_outputs -> (layer input, its mask or None, model outputs or None).

        Two sub-models share the model's layers: one stops at the traced layer's input (for
        traces alone), one also returns the model's output (one call for both).
        """
        model, wrapper = self.model, self.wrapper
        if self.framework == "keras":
            import keras

            node = wrapper._inbound_nodes[0]
            args, kwargs = node.arguments.args, node.arguments.kwargs
            if kwargs.get("initial_state") is not None or len(args) > 1:
                raise ModelError(
                    f"layer {wrapper.name!r} is called with an initial state; pytest-rnncov "
                    "traces LSTMs that start from zeros"
                )
            sequence = args[0] if args else kwargs.get("sequences", kwargs.get("inputs"))
            mask = kwargs.get("mask")
            self._layer_input_shape = tuple(sequence.shape)
            head = [sequence] + ([mask] if mask is not None else [])
            subs = {False: keras.Model(model.inputs, head),
                    True: keras.Model(model.inputs, head + [model.outputs[0]])}

            def probe_keras(x: np.ndarray, with_outputs: bool) -> tuple[Any, Any, Any]:
                result = subs[with_outputs].predict_on_batch(x)
                result = result if isinstance(result, (list, tuple)) else [result]
                has_mask = mask is not None
                return (result[0], result[1] if has_mask else None,
                        result[-1] if with_outputs else None)

            return probe_keras

        import tensorflow as tf
        import tf_keras

        sequence = wrapper.input
        if isinstance(sequence, (list, tuple)):
            raise ModelError(
                f"layer {wrapper.name!r} is called with an initial state; pytest-rnncov "
                "traces LSTMs that start from zeros"
            )
        self._layer_input_shape = tuple(sequence.shape)
        sub = tf_keras.Model(model.inputs, [sequence, model.outputs[0]])
        head = tf_keras.Model(model.inputs, sequence)

        def with_mask(seq: Any) -> Any:
            mask = getattr(seq, "_keras_mask", None)
            return tf.zeros((0,), tf.bool) if mask is None else mask

        @tf.function(reduce_retracing=True)
        def run_all(x: Any) -> Any:
            seq, out = sub(x, training=False)
            return seq, with_mask(seq), out

        @tf.function(reduce_retracing=True)
        def run_head(x: Any) -> Any:
            seq = head(x, training=False)
            return seq, with_mask(seq)

        def probe_tf(x: np.ndarray, with_outputs: bool) -> tuple[Any, Any, Any]:
            tensor = tf.convert_to_tensor(x)
            if with_outputs:
                seq, mask, out = run_all(tensor)
                out = out.numpy()
            else:
                (seq, mask), out = run_head(tensor), None
            mask_np = mask.numpy()
            return seq.numpy(), (mask_np if mask_np.size else None), out

        return probe_tf

    def check_input(self, x: Any) -> np.ndarray:
        """Validate ``x`` against the model's input and return it as a numpy array."""
        try:
            array = np.asarray(x)
        except (TypeError, ValueError) as exc:
            raise InvalidInput(f"inputs cannot be read as an array: {exc}") from None
        expected = self.input_shape
        shown = "(batch, " + ", ".join("any" if d is None else str(d) for d in expected) + ")"
        if array.dtype.kind not in "biuf":
            raise InvalidInput(
                f"inputs have dtype {array.dtype}; model {self.model.name!r} takes numbers of "
                f"shape {shown}. Encode text or SMILES into token ids first"
            )
        if array.ndim != len(expected) + 1 or any(
            d is not None and d != got for d, got in zip(expected, array.shape[1:])
        ):
            hint = " (add a batch axis: x[None])" if array.shape == tuple(expected) else ""
            raise InvalidInput(
                f"inputs have shape {array.shape}; model {self.model.name!r} expects {shown}{hint}"
            )
        if array.shape[0] == 0:
            raise InvalidInput("inputs are an empty batch; pass at least one input")
        if array.dtype.kind == "f" and not np.isfinite(array).all():
            bad = np.argwhere(~np.isfinite(array).reshape(len(array), -1).all(axis=1)).ravel()
            raise InvalidInput(
                f"inputs hold NaN or inf (rows {bad[:5].tolist()}"
                f"{', ...' if bad.size > 5 else ''}); clean or drop those rows"
            )
        if self.input_dtype.kind in "iu":
            if array.dtype.kind == "f":
                if not np.array_equal(array, np.round(array)):
                    raise InvalidInput(
                        f"model {self.model.name!r} takes integer token ids, got non-integer "
                        "floats; encode the inputs to token ids"
                    )
            return array.astype(self.input_dtype)
        return array.astype(np.float32, copy=False)

    def run(self, x: Any) -> tuple[np.ndarray, Trace]:
        """Model outputs and the trace of the layer for ``x``, from one model call per batch."""
        outputs, trace = self._run(x, with_outputs=True)
        assert outputs is not None
        return outputs, trace

    def trace(self, x: Any) -> Trace:
        """The trace (f, i, o, c, h) of the layer for inputs ``x``."""
        return self._run(x, with_outputs=False)[1]

    def _run(self, x: Any, with_outputs: bool) -> tuple[np.ndarray | None, Trace]:
        return self._compute(self.check_input(x), with_outputs)

    def _compute(self, x: np.ndarray, with_outputs: bool) -> tuple[np.ndarray | None, Trace]:
        """Outputs (if asked) and trace of inputs already validated by ``check_input``."""
        outputs, traces = [], []
        for start in range(0, len(x), self.batch_size):
            sequence, mask, out = self._probe(x[start : start + self.batch_size], with_outputs)
            if with_outputs:
                outputs.append(np.asarray(out))
            mask = None if mask is None else np.asarray(mask, bool)
            gates = _lstm.lstm_forward(
                np.asarray(sequence),
                self.weights,
                self._activation,
                self._recurrent_activation,
                mask=mask,
                go_backwards=self.go_backwards,
            )
            if mask is not None and self.go_backwards:
                mask = mask[:, ::-1]
            traces.append(Trace(gates.f, gates.i, gates.o, gates.c, gates.h, mask=mask))
        return (np.concatenate(outputs) if with_outputs else None), _concat_traces(traces)

    def predict(self, x: Any) -> np.ndarray:
        """The model's outputs for ``x`` (validated, batched)."""
        x = self.check_input(x)
        return np.concatenate(
            [np.asarray(self.model.predict_on_batch(x[s : s + self.batch_size]))
             for s in range(0, len(x), self.batch_size)]
        )

    def __repr__(self) -> str:
        return (
            f"RNNModel({self.model.name!r}, layer={self.layer_name!r}, units={self.units}, "
            f"framework={self.framework!r})"
        )


def _dtype_name(dtype: Any) -> str:
    name = getattr(dtype, "name", dtype)
    return str(name)


def _concat_traces(parts: list[Trace]) -> Trace:
    if len(parts) == 1:
        return parts[0]
    arrays = {n: np.concatenate([p.component(n) for p in parts]) for n in COMPONENTS}
    masks = [p.mask for p in parts if p.mask is not None]
    return Trace(**arrays, mask=np.concatenate(masks) if masks else None)
