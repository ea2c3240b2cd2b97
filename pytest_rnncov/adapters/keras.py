"""The Keras adapter: Keras 3 (any backend: TensorFlow, JAX, torch) and tf_keras (Keras 2).

Keras 3: a twin of the model shares every layer and calls the traced layer with
``return_sequences=True`` (its own kernel, its own weights), so one framework call gives the
model's outputs, the layer's ``h`` at every step and, when gates are read, the layer's input
and mask; the gates then follow in one batched matmul
(:meth:`~pytest_rnncov.core.cells.Cell.from_states`). tf_keras (Keras 2), and
``recompute=True``, take the layer's input from a sub-model and recompute the layer in numpy
from its weights (the reference kernel). Keras 3 imports TensorFlow only when the
TensorFlow backend is in use.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import json
import logging
import threading
import warnings
from typing import Any, Callable

import numpy as np

from ..core.abstractions import step_positive, step_total
from ..core.activations import Activation
from ..core.arrays import all_finite
from ..core.cells import Cell, GRUCell, LSTMCell, SimpleRNNCell
from ..errors import InvalidArgument, ModelError, RNNCovWarning, UnknownLayer, user_stacklevel
from .base import (
    MIXED_PRECISION_NOTE,
    Adapter,
    direction_hint,
    framework_of,
    model_error_from,
    not_finite,
)

#: cell class name -> cell kind
CELLS = {"LSTMCell": "lstm", "GRUCell": "gru", "SimpleRNNCell": "simple_rnn"}


def _recurrent(layer: Any) -> bool:
    return type(getattr(layer, "cell", None)).__name__ in CELLS and hasattr(layer, "go_backwards")


def _bidirectional(layer: Any) -> bool:
    return type(layer).__name__ == "Bidirectional" and _recurrent(
        getattr(layer, "forward_layer", None)
    )


def _numpy_activation(fn: Callable[..., Any], framework: str) -> Activation:
    """The numpy twin of a layer's activation function (taken from the loaded layer)."""
    name = getattr(fn, "__name__", type(fn).__name__)
    module = getattr(fn, "__module__", "") or ""
    if module.split(".")[0] in ("keras", "tf_keras"):
        if name == "hard_sigmoid":
            return Activation.named(
                "hard_sigmoid_keras2" if framework == "tf_keras" else "hard_sigmoid_keras3"
            )
        if name in ("sigmoid", "tanh", "relu", "linear"):
            return Activation.named(name)

    def through(x: np.ndarray) -> Any:
        result = fn(x)
        if framework == "keras":
            import keras

            return keras.ops.convert_to_numpy(result)
        return np.asarray(result)

    return Activation.through(name, through)


#: Batches are padded to a multiple of this many rows, so Keras sees a few batch shapes only
#: and does not re-trace its predict function for every new batch size.
PAD_ROWS = 32


def _keras_own(layer: Any) -> bool:
    """Whether ``layer`` is of Keras' own classes: a subclass may have its own ``call``,
    which a tap running the layer's cell (or its formula) would not run."""
    return type(layer).__module__.startswith("keras.")


class _FirstTraces(logging.Filter):
    """Drops TensorFlow's "triggered tf.function retracing" warning logged by a thread
    inside the adapter's own model calls. Each model this adapter builds (the twin for
    each set of components, the predictor) is traced at its first call, and Keras' predict
    functions share one retracing counter, so a few first calls read as excessive
    retracing (inputs are padded to a few batch shapes)."""

    def __init__(self) -> None:
        super().__init__()
        self.lock = threading.Lock()
        #: the threads inside an adapter call, and how deep
        self.depth: dict[int, int] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        # a logger's filters run in the logging thread (record.thread is None when
        # logging.logThreads is off)
        inside = threading.get_ident() in self.depth
        return not (inside and "triggered tf.function retracing" in record.getMessage())


_FIRST_TRACES = _FirstTraces()


@contextlib.contextmanager
def _first_traces_quiet() -> Any:
    """During the block (the adapter's own model calls), TensorFlow's retracing warning
    from this thread is dropped; other threads' calls (the user's own) keep it. The filter
    stays on the "tensorflow" logger once added."""
    ident = threading.get_ident()
    with _FIRST_TRACES.lock:
        _FIRST_TRACES.depth[ident] = _FIRST_TRACES.depth.get(ident, 0) + 1
        logging.getLogger("tensorflow").addFilter(_FIRST_TRACES)  # once: a no-op after
    try:
        yield
    finally:
        with _FIRST_TRACES.lock:
            if _FIRST_TRACES.depth[ident] == 1:
                del _FIRST_TRACES.depth[ident]
            else:
                _FIRST_TRACES.depth[ident] -= 1


def _padded(x: np.ndarray, cap: int) -> np.ndarray:
    """``x`` with copies of its first row appended up to a multiple of PAD_ROWS (<= cap)."""
    rows = len(x)
    target = min(-(-rows // PAD_ROWS) * PAD_ROWS, max(cap, rows))
    if target == rows:
        return x
    return np.concatenate([x, np.repeat(x[:1], target - rows, axis=0)])


def _tap_base(layer: Any) -> Any:
    """The base of the taps that stand in for ``layer``: masks pass as ``layer`` passes them
    (its outputs' masks), and the appended sequence keeps the input's mask."""
    import keras

    class Tap(keras.layers.Layer):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.supports_masking = True

        def compute_mask(self, sequences: Any, mask: Any = None) -> Any:
            own = layer.compute_mask(sequences, mask)
            return [*(own if isinstance(own, (list, tuple)) else [own]), mask]

    return Tap


def _cell_tap_base(layer: Any, cell_class: Any) -> Any:
    """The base of a tap that runs ``layer``'s steps as a Keras RNN (``self.rnn``, returning
    its sequence and states, in ``layer``'s direction) of a ``cell_class`` cell."""
    import keras

    class CellTap(_tap_base(layer)):  # type: ignore[misc]
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            policy = layer.dtype_policy  # the layer's own dtypes (states start in them)
            self.rnn = keras.layers.RNN(
                cell_class(dtype=policy),
                return_sequences=True,
                return_state=True,
                go_backwards=layer.go_backwards,
                zero_output_for_mask=bool(getattr(layer, "zero_output_for_mask", False)),
                dtype=policy,
            )

        def build(self, sequences_shape: Any) -> None:
            self.rnn.build(sequences_shape)

    return CellTap


#: Held while a sequence tap switches its shared layer's ``return_sequences`` and
#: ``return_state`` on for a call: two threads tracing taps of one layer at once would
#: otherwise restore each other's switch mid-call (h came back as (B, U)).
_LAYER_SWITCH = threading.RLock()


def _sequence_tap(layer: Any, traced: Any) -> Any:
    """A Keras layer calling ``layer`` as the model does, returning ``[its output..., h]``:
    ``h`` (B, T, U) is ``traced``'s output at every step, from the framework's own kernel.
    ``traced`` is ``layer`` itself (called once, with ``return_sequences`` and
    ``return_state`` on for the call, its output rebuilt from them) or one half of a
    ``Bidirectional`` ``layer`` (called beside it)."""

    class SequenceTap(_tap_base(layer)):  # type: ignore[misc]
        def call(self, *args: Any, **kwargs: Any) -> Any:
            with _LAYER_SWITCH:
                own = (traced.return_sequences, traced.return_state)
                if traced is not layer:
                    result = layer(*args, **kwargs)
                    outputs = list(result) if isinstance(result, (list, tuple)) else [result]
                traced.return_sequences, traced.return_state = True, True
                try:
                    sequence, *states = traced(*args, **kwargs)
                finally:
                    traced.return_sequences, traced.return_state = own
            if traced is layer:
                # states[0] is h after the last step; with zero_output_for_mask the output
                # is the sequence's last step, zeros where the last step was masked
                zeroed = getattr(layer, "zero_output_for_mask", False)
                last = sequence if own[0] else sequence[:, -1] if zeroed else states[0]
                outputs = [last, *states] if own[1] else [last]
            return [*outputs, sequence]

    return SequenceTap(name=f"{layer.name}_sequence_tap")


def _formula_step(cell: Any) -> Callable[[Any, Any, Any], tuple[Any, dict[str, Any]]]:
    """One step of a Keras LSTM or GRU ``cell`` by its formula, with its own weights and
    activation functions: ``(inputs, h_prev, c_prev) -> (h, its gates and cell state)``
    (``c_prev`` is None for a GRU)."""
    from keras import ops

    units = int(cell.units)
    gate, act = cell.recurrent_activation, cell.activation
    if CELLS[type(cell).__name__] == "lstm":

        def lstm_step(inputs: Any, h_prev: Any, c_prev: Any) -> tuple[Any, dict[str, Any]]:
            z = ops.matmul(inputs, cell.kernel) + ops.matmul(h_prev, cell.recurrent_kernel)
            z = z if cell.bias is None else z + cell.bias
            zi, zf, zc, zo = ops.split(z, 4, axis=-1)
            i, f, o = gate(zi), gate(zf), gate(zo)
            c = f * c_prev + i * act(zc)
            return o * act(c), {"i": i, "f": f, "o": o, "c": c}

        return lstm_step

    bias = cell.bias
    reset_after = bool(getattr(cell, "reset_after", False))

    def gru_step(inputs: Any, h_prev: Any, c_prev: Any) -> tuple[Any, dict[str, Any]]:
        x_part = ops.matmul(inputs, cell.kernel)
        if bias is not None:
            x_part = x_part + (bias[0] if reset_after else bias)
        x_z, x_r, x_n = ops.split(x_part, 3, axis=-1)
        if reset_after:
            rec = ops.matmul(h_prev, cell.recurrent_kernel)
            rec = rec if bias is None else rec + bias[1]
            r_z, r_r, r_n = ops.split(rec, 3, axis=-1)
            zg, r = gate(x_z + r_z), gate(x_r + r_r)
            n = act(x_n + r * r_n)
        else:
            kernel_zr, kernel_n = ops.split(cell.recurrent_kernel, [2 * units], axis=-1)
            r_z, r_r = ops.split(ops.matmul(h_prev, kernel_zr), 2, axis=-1)
            zg, r = gate(x_z + r_z), gate(x_r + r_r)
            n = act(x_n + ops.matmul(r * h_prev, kernel_n))
        return zg * h_prev + (1 - zg) * n, {"z": zg, "r": r, "n": n}

    return gru_step


def _gate_tap(layer: Any, emit: tuple[str, ...]) -> Any:
    """Like :func:`_sequence_tap`, but ``layer`` (an LSTM or GRU) runs as a Keras RNN of a
    cell that computes the layer's own cell with its own weights and activation functions
    and also emits the components ``emit`` at every step: its last output is
    ``[h, *emit]`` (B, T, U * (1 + len(emit))), and the model's output is rebuilt from it."""
    import keras
    from keras import ops

    cell, units = layer.cell, int(layer.cell.units)
    lstm = CELLS[type(cell).__name__] == "lstm"
    step = _formula_step(cell)
    width = units * (1 + len(emit))

    class EmittingCell(keras.layers.Layer):
        """The layer's cell; its first state is its whole output ``[h, *emit]`` (Keras on
        JAX keeps a masked step's output from the first state), its h the first units."""

        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.state_size = [width, units] if lstm else [width]
            self.output_size = width

        def build(self, input_shape: Any) -> None:
            self.built = True

        def call(self, inputs: Any, states: Any, training: Any = None) -> Any:
            h, parts = step(inputs, states[0][..., :units], states[1] if lstm else None)
            out = ops.concatenate([h, *(parts[e] for e in emit)], axis=-1)
            return out, [out, parts["c"]] if lstm else [out]

    class GateTap(_cell_tap_base(layer, EmittingCell)):  # type: ignore[misc]
        def call(self, sequences: Any, mask: Any = None, training: Any = None) -> Any:
            sequence, emitted, *cell_state = self.rnn(sequences, mask=mask, training=training)
            h = emitted[..., :units]  # h after the last step
            if layer.return_sequences:
                last = sequence[..., :units]
            elif getattr(layer, "zero_output_for_mask", False):  # zeros if masked at the end
                last = sequence[:, -1, :units]
            else:
                last = h
            outputs = [last, h, *cell_state] if layer.return_state else [last]
            return [*outputs, sequence]

    return GateTap(name=f"{layer.name}_gate_tap")


#: ``emit[0]`` of the twin whose traced layer gives the per-step sums of the components
#: ``emit[1:]`` (``_sums_tap``): the sums over units and of the positive parts ...
SUMS = "sums of"
#: ... or the sums over units alone (where no metric reads the positive parts)
TOTALS = "totals of"


def _sums_tap(layer: Any, components: tuple[str, ...], positive: bool) -> Any:
    """Like :func:`_sequence_tap`, but ``layer`` runs as a Keras RNN of a cell that emits, at
    every step and for each of ``components`` in turn, the sum over units and (with
    ``positive``) the sum of the positive parts instead of the states: its last output is
    (B, T, 2 x sums x components), the sums rounded to float32, then what the rounding
    lost, which the host adds up to the float64 sums. For ``h`` alone the cell is the
    layer's own; for gates or the cell state, the layer's cell by its formula (as
    :func:`_gate_tap`). The sums run in float64, or (JAX without 64-bit mode) as
    error-free pairwise float32 sums."""
    import keras
    from keras import ops

    cell, units = layer.cell, int(layer.cell.units)
    own = components == ("h",)
    lstm = CELLS[type(cell).__name__] == "lstm"
    step = None if own else _formula_step(cell)

    class SummingCell(keras.layers.Layer):
        def __init__(self, **kwargs: Any) -> None:
            super().__init__(**kwargs)
            self.state_size = cell.state_size if own else [units, units] if lstm else [units]
            self.output_size = (4 if positive else 2) * len(components)

        def build(self, input_shape: Any) -> None:
            self.built = True

        def call(self, inputs: Any, states: Any, training: Any = None) -> Any:
            if step is None:
                h, new_states = cell(inputs, states, training=training)
                parts = {"h": h}
            else:
                h, parts = step(inputs, states[0], states[1] if lstm else None)
                parts["h"] = h
                new_states = [h, parts["c"]] if lstm else [h]
            split = [_split_sums(ops.cast(parts[name], "float32"), positive) for name in components]
            return ops.concatenate([p[0] for p in split] + [p[1] for p in split], -1), new_states

    class SumsTap(_cell_tap_base(layer, SummingCell)):  # type: ignore[misc]
        def call(self, sequences: Any, mask: Any = None, training: Any = None) -> Any:
            sums, *states = self.rnn(sequences, mask=mask, training=training)
            outputs = [states[0], *states] if layer.return_state else [states[0]]
            return [*outputs, sums]

    return SumsTap(name=f"{layer.name}_sums_tap")


def _split_sums(values: Any, positive: bool) -> tuple[Any, Any]:
    """float32 (..., U) -> (..., 2) sums over units (the total, the positive parts'; without
    ``positive``, (..., 1): the total), rounded to float32, and as many of what the
    rounding lost: the two add up to the float64 sums. In float64 where the backend has
    it, else (JAX without 64-bit mode) as error-free pairwise float32 sums."""
    import keras
    from keras import ops

    if keras.backend.backend() != "jax" or _jax_x64():
        values = ops.cast(values, "float64")
        sums = [ops.sum(values, axis=-1)]
        if positive:  # relu, not maximum: Keras-on-torch's gives float32
            sums.append(ops.sum(ops.relu(values), axis=-1))
        exact = ops.stack(sums, axis=-1)
        high = ops.cast(exact, "float32")
        return high, ops.cast(exact - ops.cast(high, "float64"), "float32")
    summed = [values, ops.relu(values)] if positive else [values]
    return _pairwise_two_sum(ops.stack(summed, axis=-2))


def _jax_x64() -> bool:
    import jax

    return bool(jax.config.read("jax_enable_x64"))


def _pairwise_two_sum(values: Any) -> tuple[Any, Any]:
    """Sums over the last axis of float32 ``values`` as (rounded sum, error): pairwise, each
    addition's rounding error recovered exactly (Knuth's TwoSum) and carried beside it, so
    the two add up to the sum within float32's rounding of the (tiny) error term."""
    from keras import ops

    width = int(values.shape[-1])
    size = 1 << max(width - 1, 0).bit_length()
    if size != width:
        values = ops.pad(values, [(0, 0)] * (len(values.shape) - 1) + [(0, size - width)])
    high, low = values, ops.zeros_like(values)
    while size > 1:
        size //= 2
        a, b = high[..., :size], high[..., size:]
        total = a + b
        b_part = total - a
        error = (a - (total - b_part)) + (b - b_part)
        high, low = total, low[..., :size] + low[..., size:] + error
    return high[..., 0], low[..., 0]


class KerasModel(Adapter):
    """A Keras 3 or tf_keras model with one recurrent layer (LSTM, GRU, SimpleRNN, their
    ``keras.layers.RNN`` forms, or any of them inside ``Bidirectional``) made traceable.
    ``recompute=True`` recomputes the layer from its weights (the reference kernel) instead
    of reading its states from the model's own forward pass."""

    def __init__(
        self,
        model: Any,
        layer: str | int | None = None,
        *,
        direction: str = "forward",
        output: str | int | None = None,
        batch_size: int | None = None,
        trace_on: str = "auto",
        recompute: bool = False,
    ) -> None:
        self.framework = framework_of(model)
        self._init_common(model, direction, batch_size, recompute)
        self.name = str(model.name)
        try:
            inputs = model.inputs
        except AttributeError:  # Keras 3: a Sequential without Input, never built
            inputs = None
        if inputs is None:  # tf_keras: the same
            raise ModelError(
                f"model {self.name!r} is not built: it has no inputs yet; start it with "
                "keras.Input(shape=(steps, features)), or call model.build((None, steps, "
                "features)) before tracking it"
            )
        if len(model.inputs) != 1:
            raise ModelError(
                f"model {self.name!r} has {len(model.inputs)} inputs; pytest-rnncov feeds "
                "one array per call: build the model with one input (concatenate the "
                "inputs' features and split them with layers inside the model)"
            )
        self.output_index = self._pick_output(output)
        self.wrapper = self._find_layer(layer)
        if _bidirectional(self.wrapper):
            self.direction = direction
            self.layer = (
                self.wrapper.forward_layer
                if direction == "forward"
                else self.wrapper.backward_layer
            )
        else:
            self.direction = self._forward_only(direction, str(self.wrapper.name))
            self.layer = self.wrapper
        self._refuse_untraceable()
        self.cell = self._cell()
        self._warn_own_call()
        self.units = int(self.cell.units)
        self.input_shape = tuple(None if d is None else int(d) for d in model.inputs[0].shape[1:])
        self.input_dtype = np.dtype(
            str(getattr(model.inputs[0].dtype, "name", model.inputs[0].dtype))
        )
        self._build_probe()
        # Keras 3: states from the forward pass; tf_keras: its graph is not rebuilt here
        self.reads_states = self.framework == "keras" and not self.recompute
        self.id_range = self._embedding_range()
        backend = self._backend()
        #: whether the model runs on a GPU or TPU (where Keras may run the layer through a
        #: fused kernel, e.g. cuDNN, that a Keras RNN of its cell would not reproduce)
        self._accelerated = _accelerator(backend)
        self.trace_on = self._pick_trace_on(
            trace_on,
            self._accelerated,
            backend in ("jax", "torch") and self.cell.on_device,
            f"the {backend} backend's arrays have no array-API kernel here"
            if backend not in ("jax", "torch")
            else "an activation has no array-API twin",
        )

    def _warn_own_call(self) -> None:
        """Announce a subclass of a Keras recurrent layer with its own ``call``: its ``h`` is
        the layer's own, its gates and cell state the formula of the cell's."""
        own: Any = type(self.layer)
        keras_class: Any = next(
            (c for c in own.__mro__ if c.__module__.startswith(("keras.", "tf_keras."))), own
        )
        if own.call is keras_class.call or self.cell.components == ("h",):
            return
        warnings.warn(
            f"layer {self.layer_name!r} (class {own.__name__}) subclasses Keras' "
            f"{keras_class.__name__} with its own call(): the trace's h is the layer's own, "
            f"its {', '.join(c for c in self.cell.components if c != 'h')} come from "
            f"{keras_class.__name__}'s formula on the layer's input and h, which is what the "
            "layer computes only if its call() hands its input to the cell unchanged",
            RNNCovWarning,
            stacklevel=user_stacklevel(),
        )

    @property
    def layer_name(self) -> str:  # type: ignore[override]
        """Name of the traced layer; ``name/backward`` for a Bidirectional's backward half."""
        if self.wrapper is self.layer:
            return str(self.layer.name)
        return f"{self.wrapper.name}/{self.direction}"

    # -- choosing -----------------------------------------------------------------------
    def _pick_output(self, output: str | int | None) -> int:
        """The index in ``model.outputs`` of ``output``: an index, an output layer's name,
        or the key of a model whose output is a dict."""
        outputs = list(self.model.outputs)
        names = [str(n) for n in getattr(self.model, "output_names", None) or []]
        if len(names) != len(outputs):
            names = [str(i) for i in range(len(outputs))]
        keys: dict[str, int] = {}
        structure = getattr(self.model, "output", None)
        if isinstance(structure, dict):  # its keys name the outputs, as predict returns them
            index = {id(tensor): i for i, tensor in enumerate(outputs)}
            keys = {str(k): index[id(t)] for k, t in structure.items() if id(t) in index}
        shown_names = ", ".join([f"{k} (index {i})" for k, i in keys.items()] or names)
        if output is None:
            if len(outputs) > 1:
                raise ModelError(
                    f"model {self.name!r} has {len(outputs)} outputs ({shown_names}); pass "
                    "output=INDEX (or a name) to say which one predict() and the oracle use"
                )
            return 0
        if isinstance(output, bool) or not isinstance(output, (int, str)):
            raise InvalidArgument(f"output={output!r}; pass an output index or name")
        if isinstance(output, int):
            if not 0 <= output < len(outputs):
                raise InvalidArgument(
                    f"output={output}; model {self.name!r} has outputs 0..{len(outputs) - 1}"
                )
            return output
        if output in keys:
            return keys[output]
        if output not in names:
            raise InvalidArgument(f"output={output!r}; the outputs are {shown_names}")
        return names.index(output)

    def _find_layer(self, layer: str | int | None) -> Any:
        layers = list(self.model.layers)
        candidates = [
            (i, lay) for i, lay in enumerate(layers) if _recurrent(lay) or _bidirectional(lay)
        ]
        listing = ", ".join(
            f"{lay.name!r} ({type(lay).__name__}, index {i})" for i, lay in candidates
        )
        if not candidates:
            nested = [lay.name for lay in layers if hasattr(lay, "layers")]
            hint = (
                f"; recurrent layers inside nested models ({', '.join(nested)}) are not "
                "searched: build the model flat"
                if nested
                else ""
            )
            other = [
                f"{lay.name!r} (an RNN of {type(lay.cell).__name__})"
                for lay in layers
                if getattr(lay, "cell", None) is not None and hasattr(lay, "go_backwards")
            ]
            if other:
                hint += (
                    f"; {', '.join(other)} runs a cell it cannot trace: build it of "
                    "LSTM, GRU or SimpleRNN cells, one layer per cell (StackedRNNCells: "
                    "stacked layers)"
                )
            raise ModelError(
                f"model {self.name!r} has no recurrent layer (layers: "
                f"{', '.join(repr(lay.name) for lay in layers)}); pytest-rnncov traces LSTM, "
                f"GRU and SimpleRNN layers, also inside Bidirectional{hint}"
            )
        if layer is None:
            return candidates[0][1]
        if isinstance(layer, bool) or not isinstance(layer, (str, int)):
            raise InvalidArgument(f"layer={layer!r}; pass a layer name, an index or None")
        for index, lay in candidates:
            if layer == lay.name or layer == index:
                return lay
        raise UnknownLayer(
            f"layer={layer!r} is not a recurrent layer of model {self.name!r}; its recurrent "
            f"layers are {listing}: pass one of those names or indices{direction_hint(layer)}"
        )

    def _refuse_untraceable(self) -> None:
        layer = self.layer
        if getattr(layer, "stateful", False):
            raise ModelError(
                f"layer {layer.name!r} is stateful: it carries its state from one batch to the "
                "next, so a trace from the zero state would differ from the model; trace a "
                "stateless copy (same weights, stateful=False)"
            )
        if getattr(layer, "time_major", False):
            raise ModelError(f"layer {layer.name!r} is time-major; build it batch-major")
        policy = getattr(layer, "dtype_policy", None)
        compute = str(getattr(policy, "compute_dtype", "float32"))
        if compute not in ("float32", "float64"):
            warnings.warn(
                f"layer {layer.name!r}: " + MIXED_PRECISION_NOTE.format(dtype=compute),
                RNNCovWarning,
                stacklevel=4,
            )

    # -- the cell --------------------------------------------------------------------
    def _cell(self) -> Cell:
        layer, framework = self.layer, self.framework
        cell = layer.cell
        kind = CELLS[type(cell).__name__]
        weights = [np.asarray(w, np.float32) for w in layer.get_weights()]
        activation = _numpy_activation(cell.activation, framework)
        backwards = bool(layer.go_backwards)
        if kind == "simple_rnn":
            return SimpleRNNCell(
                weights[0], weights[1], weights[2] if cell.use_bias else None, activation, backwards
            )
        recurrent_activation = _numpy_activation(cell.recurrent_activation, framework)
        if kind == "lstm":
            return LSTMCell(
                weights[0],
                weights[1],
                weights[2] if cell.use_bias else None,
                activation,
                recurrent_activation,
                backwards,
            )
        reset_after = bool(getattr(cell, "reset_after", False))
        input_bias = recurrent_bias = None
        if cell.use_bias:
            bias = weights[2]
            if reset_after:
                input_bias, recurrent_bias = bias[0], bias[1]
            else:
                input_bias = bias
        return GRUCell(
            weights[0],
            weights[1],
            input_bias,
            recurrent_bias,
            reset_after,
            activation,
            recurrent_activation,
            backwards,
        )

    def _embedding_range(self) -> tuple[int, int] | None:
        if self.input_dtype.kind not in "iu":
            return None
        for lay in self.model.layers:
            if type(lay).__name__ == "Embedding":
                return (0, int(lay.input_dim))
        return None

    # -- running the model --------------------------------------------------------------
    def _only_call(self) -> Any:
        """The node of the model's graph that calls the traced layer, refusing a layer the
        model calls more than once (a trace is of one call)."""
        graph = getattr(self.model, "_functional", None) or self.model
        nodes = [
            node
            for depth in graph._nodes_by_depth.values()
            for node in depth  # Keras 3 names a node's layer operation, tf_keras layer
            if (getattr(node, "operation", None) or getattr(node, "layer", None)) is self.wrapper
        ]
        if len(nodes) != 1:
            raise ModelError(
                f"layer {self.wrapper.name!r} is called {len(nodes)} times in model "
                f"{self.name!r}; pytest-rnncov traces a layer the model calls once: give each "
                "call a layer of its own (the same weights: a copy from get_config() and "
                "set_weights())"
            )
        return nodes[0]

    def _build_probe(self) -> None:
        """Sub-models that share the model's layers: one stops at the traced layer's input
        (traces alone), one also returns the model's output (one call for both)."""
        model, wrapper = self.model, self.wrapper
        if self.framework == "keras":
            import keras

            node = self._only_call()
            args, kwargs = node.arguments.args, node.arguments.kwargs
            if kwargs.get("initial_state") is not None or len(args) > 1:
                raise ModelError(
                    f"layer {wrapper.name!r} is called with an initial state; pytest-rnncov "
                    "traces recurrent layers that start from zeros"
                )
            sequence = args[0] if args else kwargs.get("sequences", kwargs.get("inputs"))
            mask = kwargs.get("mask")
            self._n_steps = None if sequence.shape[1] is None else int(sequence.shape[1])
            output = model.outputs[self.output_index]
            inputs = model.inputs[0] if len(model.inputs) == 1 else model.inputs  # as called
            self._inputs = inputs
            self._head = keras.Model(inputs, [sequence] + ([mask] if mask is not None else []))
            #: the tensors sub-models may return, per emitted components (None: no states):
            #: the layer's input and mask, its states, the model's output
            self._tensors: dict[Any, tuple[Any, Any, Any, Any]] = {
                None: (sequence, mask, None, output)
            }
            self._models: dict[tuple[bool, bool, Any], Any] = {}
            self._device_calls: dict[
                tuple[int, tuple[str, ...] | None], Callable[[np.ndarray], Any]
            ] = {}
            self._has_mask = mask is not None
            self._predictor = keras.Model(inputs, output) if len(model.outputs) > 1 else model
            return

        import tensorflow as tf
        import tf_keras

        sequence = self._only_call().input_tensors  # this model's call of the layer
        if isinstance(sequence, (list, tuple)):
            raise ModelError(
                f"layer {wrapper.name!r} is called with an initial state; pytest-rnncov traces "
                "recurrent layers that start from zeros"
            )
        self._n_steps = None if sequence.shape[1] is None else int(sequence.shape[1])
        output = model.outputs[self.output_index]
        sub = tf_keras.Model(model.inputs, [sequence, output])
        self._head = tf_keras.Model(model.inputs, sequence)
        self._predictor = tf_keras.Model(model.inputs, output) if len(model.outputs) > 1 else model

        def with_mask(seq: Any) -> Any:
            mask = getattr(seq, "_keras_mask", None)
            return tf.zeros((0,), tf.bool) if mask is None else mask

        @tf.function(reduce_retracing=True)
        def run_all(x: Any) -> Any:
            seq, out = sub(x, training=False)
            return seq, with_mask(seq), out

        @tf.function(reduce_retracing=True)
        def run_head(x: Any) -> Any:
            seq = self._head(x, training=False)
            return seq, with_mask(seq)

        self._tf_calls = (run_all, run_head)

    def gives(self, components: tuple[str, ...]) -> tuple[str, ...]:
        """An LSTM or GRU called directly (not a Bidirectional half) emits its gates and
        cell state from the forward pass on the host. On the device path the layer runs as
        it is (on a GPU Keras may run it through cuDNN, whose numbers the formula does not
        reproduce) and the gates are computed from its own ``h`` after the call."""
        if (
            self.wrapper is not self.layer
            or self.cell.kind == "simple_rnn"
            or self.trace_on == "device"
            or not _keras_own(self.layer)
        ):
            return ()
        return tuple(c for c in components if c != "h")

    def gives_sums(self, components: tuple[str, ...] | None) -> bool:
        """A Keras 3 layer of Keras' own classes (an LSTM, GRU, SimpleRNN or RNN of their
        cells, in float32), which the model calls directly, unmasked, on the CPU, and whose
        last state alone goes on (no ``return_sequences``), gives the per-step sums of
        ``h`` and, for an LSTM or GRU, of its gates and cell state from the forward pass
        (``_sums_tap``): no (B, T, U) array of states is written. The tap runs the
        layer's cell, not the layer's ``call``: a subclass's own ``call`` keeps states.

        On the device path under JAX, where the metrics read gates or the cell state of
        an unmasked layer, those (computed from the layer's input and ``h``, the layer run
        as it is) and ``h`` are summed by one compiled function right after the model's
        call, and only the sums and the outputs come to the host, in one transfer. Where
        they read ``h`` alone, its states come back as before: on an H200 that measured
        faster (docs/performance.md)."""
        if components is None or not self.reads_states:
            return False
        if self.trace_on == "device":
            gates = any(c != "h" for c in components)
            return self._backend() == "jax" and gates and not self._has_mask
        layer = self.layer
        policy = getattr(layer, "dtype_policy", None)
        return (
            self.trace_on == "numpy"
            and not self._accelerated
            and self.wrapper is layer
            and _keras_own(layer)
            and str(getattr(policy, "compute_dtype", "")) == "float32"
            and str(getattr(policy, "variable_dtype", "")) == "float32"
            and not layer.return_sequences
            and not self._has_mask
            and set(components) <= {"h", *self.gives(components)}
        )

    def _forward_sums(
        self, x: np.ndarray, outputs: bool, components: tuple[str, ...], positive: bool
    ) -> tuple[Any, dict[str, np.ndarray]]:
        rows, k = len(x), len(components)
        on_device = self.trace_on == "device"
        padded = _padded(x, self.batch_size if on_device else self.chunk_size(x, summed=True))
        positive = positive or on_device  # the device path sums both (``_unit_sums``)
        emit = (SUMS if positive else TOTALS, *components)
        out, _, _, found, finite = self._call(padded, outputs, False, emit)
        if finite is not None and not bool(finite):
            raise not_finite(x)
        found = _rows(found, rows)
        width = 2 if positive else 1  # sums per component and step
        if on_device:  # summed as the device path sums states (``_unit_sums``)
            sums = found.astype(np.float64)
        else:  # the sums rounded to float32, then what the rounding lost
            sums = found[..., : width * k].astype(np.float64) + found[..., width * k :]
        return _rows(out, rows), {
            n: sums[..., width * j : width * (j + 1)] for j, n in enumerate(components)
        }

    def _twin_tensors(self, emit: tuple[str, ...]) -> tuple[Any, Any, Any, Any]:
        """The twin graph: every layer of the model called again (shared, weights and all),
        the traced one through a sequence tap (or, to ``emit`` components, a gate tap; for
        ``(SUMS or TOTALS, *components)``, a sums tap); its (layer input, mask, states, output)."""
        import keras

        graph = getattr(self.model, "_functional", None) or self.model
        tensors = {id(t): t for t in graph.inputs}
        found: list[Any] = []
        for depth in sorted(graph._nodes_by_depth, reverse=True):
            for node in graph._nodes_by_depth[depth]:
                if not node.operation or node.is_input:
                    continue
                args, kwargs = node.arguments.fill_in(tensors)
                if node.operation is self.wrapper:
                    if emit and emit[0] in (SUMS, TOTALS):
                        tap = _sums_tap(self.layer, emit[1:], positive=emit[0] == SUMS)
                    elif emit:
                        tap = _gate_tap(self.layer, emit)
                    else:
                        tap = _sequence_tap(self.wrapper, self.layer)
                    *result, h = tap(*args, **kwargs)
                    result = result[0] if len(result) == 1 else result
                    sequence = args[0] if args else kwargs.get("sequences", kwargs.get("inputs"))
                    found = [sequence, kwargs.get("mask"), h]
                else:
                    result = node.operation(*args, **kwargs)
                for own, new in zip(node.outputs, keras.tree.flatten(result)):
                    tensors[id(own)] = new
        return (*found, tensors[id(graph.outputs[self.output_index])])  # type: ignore[return-value]

    def _sub_model(self, outputs: bool, layer_input: bool, emit: tuple[str, ...] | None) -> Any:
        """The sub-model returning [layer input?, mask?, states?, output?] (built once):
        states when ``emit`` is not None, [h, *emit] side by side."""
        key = (outputs, layer_input, emit)
        if key not in self._models:
            import keras

            if emit not in self._tensors:
                self._tensors[emit] = self._twin_tensors(emit or ())
            sequence, mask, h, output = self._tensors[emit]
            wanted = [sequence] if layer_input else []
            wanted += [mask] if mask is not None else []
            wanted += [h] if emit is not None else []
            wanted += [output] if outputs else []
            self._models[key] = keras.Model(self._inputs, wanted)
        return self._models[key]

    def _forward(
        self,
        x: np.ndarray,
        outputs: bool,
        layer_input: bool = True,
        states: tuple[str, ...] | None = None,
    ) -> tuple[np.ndarray | None, Any, Any, Any]:
        rows = len(x)
        emit = None if states is None else self.gives(states)
        out, sequence, mask, found, finite = self._call(
            _padded(x, self.batch_size), outputs, layer_input, emit
        )
        if finite is not None and not bool(finite):  # read once the pass has run
            raise not_finite(x)
        if found is not None:  # [h, *emit] side by side
            assert emit is not None
            u = self.units
            found = _rows(found, rows)
            if emit:
                found = {n: found[:, :, k * u : (k + 1) * u] for k, n in enumerate(("h", *emit))}
            else:
                found = {"h": found}
        return _rows(out, rows), _rows(sequence, rows), _rows(mask, rows), found

    def _backend(self) -> str:
        if self.framework == "tf_keras":
            return "tensorflow"
        import keras

        return str(keras.backend.backend())

    def _call(
        self, x: np.ndarray, outputs: bool, layer_input: bool, emit: tuple[str, ...] | None
    ) -> tuple[Any, Any, Any, Any, Any]:
        """(outputs, layer input, mask, states, finite), each None unless asked for (mask:
        when the layer has one; states: [h, *emit] side by side, when ``emit`` is not None;
        finite: whether the inputs hold no NaN or inf, a device scalar, when
        ``_finite_on_device``)."""
        with _first_traces_quiet():
            return self._model_call(x, outputs, layer_input, emit)

    def _model_call(
        self, x: np.ndarray, outputs: bool, layer_input: bool, emit: tuple[str, ...] | None
    ) -> tuple[Any, Any, Any, Any, Any]:
        finite = None
        try:
            if self.framework == "keras":
                summed = self.trace_on == "device" and emit is not None and emit[:1] == (SUMS,)
                if summed:  # gates from the layer's input and h, summed: host arrays
                    assert emit is not None and not layer_input
                    model = self._sub_model(outputs, True, ())
                    result, finite = self._device_call(model, emit[1:])(x)
                elif self.trace_on == "device":  # backend tensors stay where the model runs
                    model = self._sub_model(outputs, layer_input, emit)
                    result, finite = self._device_call(model)(x)
                else:
                    result = self._sub_model(outputs, layer_input, emit).predict_on_batch(x)
                result = list(result) if isinstance(result, (list, tuple)) else [result]
                found = iter(result)
                sequence = next(found) if layer_input else None
                mask = next(found) if self._has_mask else None
                h = next(found) if emit is not None else None
                out = next(found) if outputs else None
                if self.trace_on != "device":
                    sequence, mask, h = (
                        None if a is None else np.asarray(a) for a in (sequence, mask, h)
                    )
                if out is not None:
                    import keras

                    out = keras.ops.convert_to_numpy(out)
                return out, sequence, mask, h, finite
            import tensorflow as tf

            run_all, run_head = self._tf_calls
            tensor = tf.convert_to_tensor(x)
            if outputs:
                seq, mask, out = run_all(tensor)
                out = out.numpy()
            else:
                (seq, mask), out = run_head(tensor), None
            mask_np = mask.numpy()
            return out, seq.numpy(), (mask_np if mask_np.size else None), None, None
        except Exception as exc:  # a framework error becomes a project error naming the call
            if self._floats_on_device(x) and not all_finite(x):  # the model failed on NaN/inf
                raise not_finite(x) from None
            raise model_error_from(exc, f"running model {self.name!r}") from exc

    def _finite_on_device(self) -> bool:
        return self.trace_on == "device" and self._backend() == "jax"

    def _device_call(
        self, model: Any, sums: tuple[str, ...] | None = None
    ) -> Callable[[np.ndarray], tuple[Any, Any]]:
        """A sub-model's call returning the backend's own arrays and whether float inputs
        are all finite (None where not checked here), compiled once per sub-model where
        the backend compiles (JAX: ``jit`` of the stateless call, the variables passed as
        arguments, not baked in as constants, the inputs' check in the same call; torch:
        eager under ``no_grad``, as Keras predicts). With ``sums`` (JAX; a sub-model
        giving [layer input, h, outputs?]), the (B, T, 2k) per-step sums over units of
        those components take the place of the layer's input and h: computed by
        a second compiled function (``_unit_sums``), and every result comes to the host
        in one transfer."""
        key = (id(model), sums)
        if key not in self._device_calls:
            backend = self._backend()
            if backend == "jax":
                import jax
                import jax.numpy as jnp

                def stateless(trainable: Any, fixed: Any, x: Any) -> tuple[Any, Any]:
                    result = model.stateless_call(trainable, fixed, x, training=False)[0]
                    floats = jnp.issubdtype(x.dtype, jnp.floating)
                    return result, jnp.all(jnp.isfinite(x)) if floats else jnp.array(True)

                compiled = jax.jit(stateless)
                summing = (
                    None
                    if sums is None
                    else jax.jit(functools.partial(self._unit_sums, names=sums))
                )

                def call(x: np.ndarray) -> tuple[Any, Any]:
                    result, finite = compiled(
                        [v.value for v in model.trainable_variables],
                        [v.value for v in model.non_trainable_variables],
                        x,
                    )
                    if summing is None:
                        return result, finite
                    sequence, h, *rest = result
                    return jax.device_get(([summing(sequence, h), *rest], finite))  # type: ignore[no-any-return]

            else:
                import torch

                def call(x: np.ndarray) -> tuple[Any, Any]:
                    with torch.no_grad():
                        return model(x, training=False), None

            self._device_calls[key] = call
        return self._device_calls[key]

    def _unit_sums(self, sequence: Any, h: Any, names: tuple[str, ...]) -> Any:
        """(B, T, 2k) per-step sums over units of ``names`` (the total, the positive
        parts'), computed from the layer's input ``sequence`` and its ``h``
        (``Cell.from_states``), accumulated as the device path sums states (float64 in
        JAX's 64-bit mode, else float32); in a traced JAX function."""
        import jax.numpy as jnp

        # a copy of the cell, whose caches then hold no traced values
        cell = dataclasses.replace(self.cell, cache={})  # type: ignore[type-var]
        components = cell.from_states(sequence, h, None, None, names).components
        every_step = (0, int(h.shape[1]) - 1)
        parts = []
        for name in names:
            values = jnp.asarray(components[name], jnp.float32)
            parts += [step_total(values, every_step), step_positive(values, every_step)]
        return jnp.stack(parts, axis=-1)

    def _predict(self, x: np.ndarray) -> np.ndarray:
        try:
            with _first_traces_quiet():
                outputs = self._predictor.predict_on_batch(_padded(x, self.batch_size))
            return np.asarray(outputs)[: len(x)]
        except Exception as exc:
            raise model_error_from(exc, f"predicting with model {self.name!r}") from exc

    # -- fingerprint --------------------------------------------------------------------
    def _upstream(self) -> list[Any]:
        """The layers from the model input to the traced layer's input."""
        return [lay for lay in self._head.layers]

    def _weight_arrays(self) -> list[np.ndarray]:
        return [np.asarray(w, np.float32) for lay in self._upstream() for w in lay.get_weights()]

    def _structure(self) -> str:
        parts = []
        for lay in self._upstream():
            config = {
                k: v for k, v in lay.get_config().items() if k not in ("name", "trainable", "dtype")
            }
            # objects JSON cannot show are named by type only (never by address)
            text = json.dumps(config, sort_keys=True, default=lambda o: type(o).__name__)
            parts.append(f"{type(lay).__name__}:{text}")
        return "|".join(parts)


def _rows(array: Any, rows: int) -> Any:
    """The first ``rows`` rows of a padded batch (None stays None), without a slice when
    nothing is padded: a device array's slice is a dispatch of its own under JAX."""
    return array if array is None or len(array) == rows else array[:rows]


def _accelerator(backend: str) -> bool:
    """Whether the Keras backend runs on an accelerator (a GPU or TPU)."""
    if backend == "jax":
        import jax

        return jax.default_backend() != "cpu"
    if backend == "torch":
        import torch

        return bool(torch.cuda.is_available())
    import tensorflow as tf

    return bool(tf.config.list_physical_devices("GPU"))
