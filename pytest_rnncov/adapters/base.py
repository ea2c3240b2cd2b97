"""The adapter boundary: a model plus inputs in, model outputs and a trace out.

Every framework adapter subclasses :class:`Adapter` and implements two things:
:meth:`Adapter._forward` (one framework call per batch, returning the model's outputs, the
traced layer's input and mask and, where the adapter ``reads_states``, the layer's own
``h`` at every step) and the layer's :class:`~pytest_rnncov.core.cells.Cell` (its weights
in canonical layout). Everything else (validation, batching, the trace from the states or
recomputed from the weights, fingerprints) lives here, once. Users meet adapters
through :class:`~pytest_rnncov.adapters.model.RNNModel`.
"""

from __future__ import annotations

import hashlib
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import AbstractContextManager, nullcontext
from typing import Any, Callable, Iterator

import numpy as np

from ..core.arrays import all_finite, array_namespace, input_array, to_host
from ..core.cells import Cell
from ..core.source import CheckedInputs, flagged_rows
from ..core.threads import blas_threads, numpy_work
from ..core.trace import Trace, concat_traces, select_components
from ..errors import InvalidArgument, InvalidInput, ModelError
from ..validation import check_bool, check_choice, check_int, cut

DIRECTIONS = ("forward", "backward")


def direction_hint(layer: object) -> str:
    """For a ``layer=`` written as the reports name a direction ("bigru/backward"): how to
    pass it (the name and ``direction=``); "" otherwise."""
    if isinstance(layer, str) and "/" in layer:
        name, _, direction = layer.rpartition("/")
        if direction in DIRECTIONS and name:
            return f"; for one direction of a layer pass layer={name!r}, direction={direction!r}"
    return ""


TRACE_ON = ("auto", "numpy", "device")

#: Inputs per framework call when ``batch_size`` is not given and traces run on the host:
#: a framework call's fixed cost is paid once per 2,048 inputs, and a batch's trace stays
#: small (docs/models.md, "Batches").
HOST_BATCH = 2048
#: On the device path (``trace_on="device"``) a batch holds as many inputs as keep its
#: trace, and the gates and layer input they are computed from, within about this many
#: bytes (``Adapter.chunk_size``): an accelerator's
#: fixed costs per call (kernel launches, one transfer of reduced results) are paid once
#: per batch, so larger batches are cheaper per input there.
DEVICE_TRACE_BYTES = 1 << 31
#: When the forward pass gives only per-step sums (``iter_traces(summed=True)``) no trace
#: array bounds a batch: it holds as many inputs as keep the traced layer's input and
#: states (float32, every step) within about this many bytes, at least HOST_BATCH. A
#: framework call on 10,000 inputs costs less per input than five on 2,048
#: (``bench/bench_core.py``), and the model's own batch call is what tracking is measured
#: against.
HOST_SUMS_BYTES = 1 << 29
#: ... and at most this many inputs: the framework's own working memory during the call is
#: several times the states counted above (3.8x measured for a Keras LSTM(32) of 20 steps),
#: so a small model's budget of millions of inputs took gigabytes in one call.
HOST_SUMS_MAX = 16384
#: Inputs per framework call where the adapter computes each batch's trace beside the next
#: call (``Adapter.overlaps_trace``) and ``batch_size`` is not given: small enough that the
#: first call and the last trace, which nothing overlaps, are short (1,000 inputs make four
#: batches), and large enough for the framework's per-call cost (bench/bench_core.py,
#: docs/performance.md).
OVERLAP_BATCH = 256

#: largest |h - framework h| per compute dtype, documented in docs/definitions.md
MIXED_PRECISION_NOTE = (
    "traces are recomputed in float32 while the layer computes in {dtype}: "
    "expect differences up to about 4e-3 (float16) / 2e-2 (bfloat16)"
)


def check_not_a_scalar_object(x: Any, array: np.ndarray) -> None:
    """Refuse inputs numpy could only wrap as one object (a generator, a dict, ...)."""
    if array.dtype == object and array.ndim == 0:
        raise InvalidInput(
            f"inputs are a {type(x).__name__}, not an array; pass a numpy array or a tensor "
            "of shape (batch, ...) (np.stack a generator's items first)"
        )


def framework_of(model: Any) -> str:
    """The framework of a model: "keras" (Keras 3), "tf_keras" (Keras 2) or "torch"."""
    module = type(model).__module__
    if module.startswith(("tf_keras", "tensorflow.python.keras", "keras.src.legacy")):
        return "tf_keras"
    if module.startswith("keras"):
        return "keras"
    import sys

    for library in ("keras", "tf_keras"):  # a user's subclass of a Keras model
        base = getattr(sys.modules.get(library), "Model", None)
        if isinstance(base, type) and isinstance(model, base):  # (Keras on torch: a Module)
            own = [
                c.__qualname__
                for c in type(model).__mro__
                if "call" in vars(c)
                and not (c.__module__ == library or c.__module__.startswith(f"{library}."))
            ]
            if not own:  # Keras' own call() over the layer graph
                return "keras" if library == "keras" else "tf_keras"
            raise ModelError(
                f"model {type(model).__name__} subclasses {library}.Model with its own "
                f"call() ({own[0]}.call): the layer graph pytest-rnncov traces may not be "
                "what it computes; build the same layers with the functional API or "
                "Sequential (and copy the weights with set_weights)"
            )
    try:
        torch = sys.modules.get("torch")
        if torch is not None and isinstance(model, torch.nn.Module):
            return "torch"
    except AttributeError:
        pass
    raise InvalidArgument(
        f"RNNModel needs a Keras or PyTorch model or an ONNX one (a .onnx path or an "
        f"onnx.ModelProto), got {type(model).__module__}.{type(model).__name__}; load it "
        "with keras, tf_keras, torch or pytest_rnncov.load_model"
    )


class Adapter:
    """A model with one of its recurrent layers made traceable (see ``RNNModel``)."""

    framework: str = ""
    #: what the fingerprint covers, for the message of a profile that does not match
    fingerprint_covers = "the weights and layers from the model input through the traced layer"
    #: canonical cell of the traced layer, set by the adapter
    cell: Cell
    layer_name: str
    name: str
    units: int
    input_shape: tuple[int | None, ...]
    input_dtype: np.dtype
    _n_steps: int | None
    #: where traces are computed: "numpy" (the host reference) or "device" (the framework's
    #: own arrays, where the model runs)
    trace_on: str = "numpy"
    #: whether traces come from the layer's own states in the model's forward pass (else the
    #: layer is recomputed from its weights: ``recompute=True``, or no states to read)
    reads_states: bool = False
    #: whether a batch's trace computed on the host after the framework call (gates from
    #: the layer's input, or the layer recomputed) runs in a worker thread while the
    #: framework runs the next batch with one thread fewer (``_framework_threads``): for
    #: frameworks whose recurrent kernels use a second core little (PyTorch's fused CPU
    #: LSTM: 1.13x its two-thread time on one thread here)
    overlaps_trace: bool = False

    def _pick_trace_on(self, option: str, accelerator: bool, supported: bool, why: str) -> str:
        """ "numpy" or "device" for ``trace_on=option`` ("auto": the device path where the
        model runs on an accelerator and the path supports it, else numpy)."""
        check_choice("trace_on", option, TRACE_ON)
        if option == "numpy":
            return "numpy"
        if option == "device" and not supported:
            raise ModelError(
                f"trace_on='device' is not available here: {why}; use trace_on='numpy'"
            )
        if option == "device" or (accelerator and supported):
            return "device"
        return "numpy"

    def _init_common(
        self, model: Any, direction: str, batch_size: int | None, recompute: bool
    ) -> None:
        self.model = model
        if not isinstance(recompute, (bool, np.bool_)):
            raise InvalidArgument(f"recompute={recompute!r}; pass True or False")
        self.recompute = bool(recompute)
        check_choice("direction", direction, DIRECTIONS)
        #: whether batches are sized by the path (``batch_size=None``), see ``chunk_size``
        self.auto_batch = batch_size is None
        #: inputs per framework call on the host path (the given ``batch_size``, else
        #: HOST_BATCH; ``chunk_size`` gives the size each path uses)
        self.batch_size = (
            HOST_BATCH
            if batch_size is None
            else check_int("batch_size", batch_size, minimum=1, example="512")
        )
        #: (low, high) of integer token ids the model accepts (an embedding's range)
        self.id_range: tuple[int, int] | None = None

    @staticmethod
    def _forward_only(direction: str, layer: str) -> str:
        """The direction of a one-directional layer: "forward"; "backward" is refused."""
        if direction != "forward":
            raise InvalidArgument(
                f"direction={direction!r}, but layer {layer!r} is not bidirectional: direction "
                "only applies to bidirectional layers; leave it out for this layer"
            )
        return direction

    # -- to implement -----------------------------------------------------------------
    def _forward(
        self,
        x: np.ndarray,
        outputs: bool,
        layer_input: bool = True,
        states: tuple[str, ...] | None = None,
    ) -> tuple[Any, Any, Any, Any]:
        """One framework call: (model outputs, the layer's input, its mask, its states);
        outputs only with ``outputs``, the input only with ``layer_input``, the mask
        whenever the layer has one. With ``states`` (asked only where ``reads_states``),
        the layer's ``h`` at every step in processing order, or a dict of ``h`` and those
        of ``states`` the framework gives (``gives(states)``)."""
        raise NotImplementedError

    def _forward_sums(
        self, x: np.ndarray, outputs: bool, components: tuple[str, ...], positive: bool
    ) -> tuple[Any, dict[str, np.ndarray]]:
        """One framework call where ``gives_sums(components)``: (model outputs or None, the
        (B, T, 2) float64 per-step sums over units and of the positive parts of each of
        ``components``, in processing order; without ``positive`` they may be (B, T, 1),
        the sums over units alone)."""
        raise NotImplementedError

    def _framework_threads(self) -> AbstractContextManager[None]:
        """Around a framework call whose trace work overlaps another batch's: the
        framework's threads, one fewer than its own setting (the trace has the other core)."""
        return nullcontext()

    def gives(self, components: tuple[str, ...]) -> tuple[str, ...]:
        """Which of ``components`` the forward pass itself gives (beside ``h``)."""
        return ()

    def gives_sums(self, components: tuple[str, ...] | None) -> bool:
        """Whether the forward pass can give the per-step sums over units of
        ``components`` instead of their states (``iter_traces(summed=True)``), summed in
        the framework where the model runs."""
        return False

    def _predict(self, x: np.ndarray) -> np.ndarray:
        """Model outputs of one validated batch."""
        raise NotImplementedError

    def _weight_arrays(self) -> list[np.ndarray]:
        """The weights the fingerprint covers (``fingerprint_covers``)."""
        raise NotImplementedError

    def _structure(self) -> str:
        """The layers the fingerprint covers, as text."""
        raise NotImplementedError

    # -- shared ---------------------------------------------------------------------------
    @property
    def cell_kind(self) -> str:
        return self.cell.kind

    @property
    def n_steps(self) -> int | None:
        """Steps of the traced layer, when the model fixes them."""
        return self._n_steps

    def fingerprint(self) -> str:
        """A short hash of the weights and layers ``fingerprint_covers`` names, the traced
        layer's cell type, activations and direction."""
        if getattr(self, "_fingerprint", None) is None:
            self._fingerprint = self._digest(self._weight_arrays())
        return self._fingerprint

    def earlier_fingerprints(self) -> tuple[str, ...]:
        """What earlier releases took as this model's fingerprint, where it differs (a
        profile holding one was fitted on this model, or one whose weights differ where
        those releases did not look)."""
        return ()

    def _digest(self, weights: list[np.ndarray]) -> str:
        digest = hashlib.sha256()
        for array in weights + self.cell.arrays():
            array = np.ascontiguousarray(array, np.float32)
            digest.update(str(array.shape).encode())
            digest.update(array.tobytes())
        digest.update(f"{self.framework}|{self.cell.describe()}|{self._structure()}".encode())
        return digest.hexdigest()[:16]

    def check_layout(self, x: Any) -> np.ndarray:
        """``x`` as a numpy array (no copy where it is one), refused unless it is a
        non-empty batch of numbers of the model's input shape; its values are not read."""
        return self._layout(x)

    def _layout(self, x: Any) -> np.ndarray:
        """``check_layout`` against ``input_shape`` as it is now."""
        array = input_array(x, "inputs")
        check_not_a_scalar_object(x, array)
        expected = self.input_shape
        shown = "(batch, " + ", ".join("any" if d is None else str(d) for d in expected) + ")"
        if array.dtype.kind not in "biuf":
            raise InvalidInput(
                f"inputs have dtype {array.dtype}; model {self.name!r} takes numbers of shape "
                f"{shown}. Encode text or SMILES into token ids first"
            )
        if array.ndim != len(expected) + 1 or any(
            d is not None and d != got for d, got in zip(expected, array.shape[1:])
        ):
            one = array.ndim == len(expected) and all(
                d is None or d == got for d, got in zip(expected, array.shape)
            )
            hint = (
                " (add a batch axis: x[None])"
                if array.shape == tuple(expected)
                else " (if this is one input, add a batch axis: x[None])"
                if one
                else ""
            )
            raise InvalidInput(
                f"inputs have shape {array.shape}; model {self.name!r} expects {shown}{hint}"
            )
        if array.shape[0] == 0:
            raise InvalidInput("inputs are an empty batch; pass at least one input")
        if 0 in array.shape[1:]:
            raise InvalidInput(
                f"inputs have shape {array.shape}: each input holds no values (an axis of "
                "length 0); pass inputs with at least one step and one feature"
            )
        return array

    def check_input(self, x: Any) -> np.ndarray:
        """Validate ``x`` against the model's input and return it as a numpy array.

        Its layout first (``check_layout``); then floats are cast to float32 and checked
        for NaN and inf *after* the cast, so a value beyond float32's range is refused too;
        integer token ids must be whole numbers within the embedding's range. On an
        adapter's device path, float32 inputs are checked for NaN and inf by the forward
        pass that reads them (``trace``, ``run``, ``iter_traces``), on the device, instead
        of here.
        """
        array = self._layout(x)
        if self.input_dtype.kind in "iu":
            if array.dtype.kind == "b":  # x > 0, say: every token would read as id 0 or 1
                raise InvalidInput(
                    f"model {self.name!r} takes integer token ids, got booleans; encode the "
                    "inputs to token ids (a mask such as x > 0 is no input)"
                )
            if array.dtype.kind == "f":
                if not np.isfinite(array).all() or not np.array_equal(array, np.round(array)):
                    raise InvalidInput(
                        f"model {self.name!r} takes integer token ids, got non-integer floats; "
                        "encode the inputs to token ids"
                    )
            low, high = self.id_range if self.id_range is not None else (-(2**31), 2**31)
            bad = (array < low) | (array >= high)  # compared before any cast can wrap
            if bad.any():
                raise InvalidInput(
                    f"token ids must lie in [{low}, {high}) for the embedding of model "
                    f"{self.name!r}; {rows_holding(bad)} hold {array[bad][0].item()!r}: encode "
                    "with the model's own vocabulary"
                )
            return array.astype(self.input_dtype, copy=False)
        with np.errstate(over="ignore", invalid="ignore"):
            cast = array.astype(np.float32, copy=False)
        if not self._floats_on_device(array) and not all_finite(cast):  # device: nothing cast
            raise not_finite(cast, array)
        return cast

    def _per_input(self, outputs: Any, n: int) -> np.ndarray:
        """A batch's model outputs as an array, refused unless it holds one row per input."""
        outputs = np.asarray(outputs)
        if outputs.ndim == 0 or len(outputs) != n:
            raise ModelError(
                f"model {self.name!r} returned outputs of shape {outputs.shape} for a batch of "
                f"{n} inputs; pytest-rnncov reads one prediction per input (the batch on axis 0)"
            )
        return outputs

    def _accept(self, x: np.ndarray) -> None:
        """A call on checked inputs ``x`` went through (the model ran, the caller took the
        result): an adapter that learns the input shape from its inputs fixes it now."""

    def _finite_on_device(self) -> bool:
        """Whether float inputs are checked for NaN and inf on the model's device, in the
        forward pass that reads them (``_forward``: an adapter's device path), instead of
        scanned on the host by ``check_input`` (``bench/bench_core.py``: the host scan of
        10,000 MNIST-shaped inputs is a fifth of a GPU model call)."""
        return False

    def _floats_on_device(self, x: np.ndarray) -> bool:
        """Whether ``check_input`` left float inputs ``x`` to the device's check."""
        return x.dtype == np.float32 and self._finite_on_device()

    def layer_input(self, x: Any) -> tuple[np.ndarray, np.ndarray | None]:
        """The traced layer's own input for ``x`` and its mask (None without masking), as
        the framework computes them (one batch: for checks and debugging)."""
        x = self.check_input(x)
        _, sequence, mask, _ = self._forward(x, False)
        self._accept(x)
        return (
            np.asarray(to_host(sequence), np.float32),
            None if mask is None else np.asarray(to_host(mask), bool),
        )

    def _plan(self, components: tuple[str, ...] | None) -> tuple[Any, Any, bool]:
        """For traces of ``components``: (their names, the states to ask the forward pass
        for or None, whether the layer's input is needed to compute the rest)."""
        names = select_components(self.cell.kind, components)
        if not self.reads_states:
            return names, None, True
        return names, names, not set(names) <= {"h", *self.gives(names)}

    def chunk_size(
        self, x: np.ndarray, components: int = 1, layer_input: bool = False, summed: bool = False
    ) -> int:
        """Inputs per framework call for inputs ``x`` whose traces hold ``components``
        components (computed, with ``layer_input``, from the layer's input): ``batch_size``
        when given or on the host path; on the device path as many as keep what a batch
        holds within DEVICE_TRACE_BYTES (at least one); for traces of per-step sums
        (``summed``) on the host path, see HOST_SUMS_BYTES (on the device path the states
        summed there bound a batch)."""
        steps = int(x.shape[1]) if x.ndim > 1 else 1
        if self.auto_batch and self._overlaps(layer_input) and not summed:
            return OVERLAP_BATCH
        if self.auto_batch and summed and self.trace_on != "device":
            per_input = 4 * steps * (self.units + int(self.cell.kernel.shape[0]))
            return min(HOST_SUMS_MAX, max(HOST_BATCH, HOST_SUMS_BYTES // per_input))
        if not self.auto_batch or self.trace_on != "device":
            return self.batch_size
        # float32 values per step: the components kept and, when gates are computed, four
        # gate blocks and the layer's input, held twice (as given, and beside h_{t-1})
        per_step = components * self.units
        if layer_input:
            per_step += 4 * self.units + 2 * int(self.cell.kernel.shape[0])
        return max(1, DEVICE_TRACE_BYTES // (4 * steps * per_step))

    def _summed_chunk_size(self, x: np.ndarray, names: tuple[str, ...]) -> int:
        """``chunk_size`` of traces of the per-step sums of ``names`` (on the device path
        the gates summed there are computed from the layer's input)."""
        return self.chunk_size(x, len(names), names != ("h",), summed=True)

    def _overlaps(self, layer_input: bool) -> bool:
        """Whether traces computed from the layer's input run beside the next call."""
        return self.overlaps_trace and layer_input and self.trace_on == "numpy"

    def iter_traces(
        self,
        x: np.ndarray,
        *,
        outputs: bool = True,
        until: int | None = None,
        components: tuple[str, ...] | None = None,
        summed: bool = False,
        positive: bool = True,
    ) -> Iterator[tuple[np.ndarray | None, Trace]]:
        """(outputs or None, trace) per batch (``chunk_size``) of validated inputs ``x``;
        ``until`` stops each trace after that many steps (what a window needs),
        ``components`` keeps only those (None: all); ``summed`` (where ``gives_sums``)
        keeps only their per-step sums over units (``Trace.step_sums``), and of their
        positive parts unless ``positive`` is False."""
        if summed and self.gives_sums(components):
            if until is not None:
                check_int("until", until, minimum=1)
            positive = check_bool("positive", positive)
            names = select_components(self.cell.kind, components)
            yield from self._summed_traces(x, outputs, until, names, positive)
            return
        names, states, layer_input = self._plan(components)
        size = self.chunk_size(x, len(names), layer_input)
        if len(x) > size and self._floats_on_device(x) and not all_finite(x):
            # several calls: refused before the first batch is yielded (and absorbed)
            raise not_finite(x)
        if self._overlaps(layer_input) and len(x) > size:  # one batch: nothing to overlap
            yield from self._overlapped_traces(x, outputs, until, names, states, size)
            return
        for start in range(0, len(x), size):
            batch = x[start : start + size]
            out, sequence, mask, found = self._forward(batch, outputs, layer_input, states)
            # numpy arrays run on the host, device arrays stay there
            with numpy_work(batched=states is not None):
                trace = self._trace_from(sequence, mask, found, until, names, states)
            yield (None if out is None else self._per_input(out, len(batch))), trace
            self._accept(x)  # the caller took the batch (it closes this generator if not)

    def _trace_from(
        self,
        sequence: Any,
        mask: Any,
        found: Any,
        until: int | None,
        names: tuple[str, ...],
        states: tuple[str, ...] | None,
    ) -> Trace:
        """A batch's trace from what its framework call gave: from the layer's states
        (the gates they lack computed from ``sequence``), else the layer recomputed."""
        if states:
            return self.cell.from_states(sequence, found, mask, until, names)
        return self.cell.forward(sequence, mask, until, names)

    def _overlapped_traces(
        self,
        x: np.ndarray,
        outputs: bool,
        until: int | None,
        names: tuple[str, ...],
        states: tuple[str, ...] | None,
        size: int,
    ) -> Iterator[tuple[np.ndarray | None, Trace]]:
        """``iter_traces`` where each batch's trace is computed in a worker thread while
        the framework runs the next batch (``overlaps_trace``). Batches come out in order;
        at most two are held. A failed model call first hands over the batch before it
        (which went through), then raises; an error in the worker stops the iteration at
        its batch; closing it waits for the worker's batch. numpy runs with the configured
        BLAS threads (``numpy_work``) until the iteration ends."""

        def taken(done: tuple[Any, int, Future[Trace]]) -> tuple[np.ndarray | None, Trace]:
            out, n, trace = done
            return (None if out is None else self._per_input(out, n)), trace.result()

        blas_threads()  # a wrong RNNCOV_BLAS_THREADS is refused here, not in the worker
        worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="rnncov-trace")
        # The worker thread sets numpy's BLAS limit for the stream and restores it (OpenBLAS
        # takes a raised thread count back only from the thread that lowered it); the
        # metric update between batches runs under it and changes nothing.
        limit = numpy_work()
        limited = worker.submit(limit.__enter__)
        # the batch whose trace the worker computes, not yet handed over (only it is held)
        pending: tuple[Any, int, Future[Trace]] | None = None
        done: tuple[Any, int, Future[Trace]] | None
        try:
            for start in range(0, len(x), size):
                batch = x[start : start + size]
                try:
                    with self._framework_threads():
                        out, sequence, mask, found = self._forward(batch, outputs, True, states)
                except BaseException:
                    if pending is not None:  # the batch before went through: it is kept
                        done, pending = pending, None
                        yield taken(done)
                        self._accept(x)
                    raise
                trace = worker.submit(self._trace_from, sequence, mask, found, until, names, states)
                done, pending = pending, (out, len(batch), trace)
                if done is not None:
                    yield taken(done)
                    self._accept(x)
            if pending is not None:
                done, pending = pending, None
                yield taken(done)
                self._accept(x)
        finally:
            if pending is not None:
                pending[2].cancel()  # not started: not computed
            if limited.exception() is None:
                worker.submit(limit.__exit__, None, None, None)
            worker.shutdown(wait=True)

    def _summed_traces(
        self,
        x: np.ndarray,
        outputs: bool,
        until: int | None,
        names: tuple[str, ...],
        positive: bool,
    ) -> Iterator[tuple[np.ndarray | None, Trace]]:
        """``iter_traces`` of the per-step sums of ``names`` the forward pass gives."""
        size = self._summed_chunk_size(x, names)
        if len(x) > size and self._floats_on_device(x) and not all_finite(x):
            raise not_finite(x)  # several calls: refused before the first batch is yielded
        for start in range(0, len(x), size):
            batch = x[start : start + size]
            out, sums = self._forward_sums(batch, outputs, names, positive)
            trace = Trace(
                {},
                cell=self.cell.kind,
                length=sums[names[0]].shape[1],
                sums={n: a[:, :until] for n, a in sums.items()},
                sum_units=self.units,
            )
            yield (None if out is None else self._per_input(out, len(batch))), trace
            self._accept(x)  # the caller took the batch (it closes this generator if not)

    def run(self, x: Any) -> tuple[np.ndarray, Trace]:
        """Model outputs and the trace of the layer for ``x``, from one model call per batch."""
        x = self.check_input(x)
        outputs, traces = [], []
        for out, trace in self.iter_traces(x, outputs=True):
            assert out is not None
            outputs.append(out)
            traces.append(trace)
        result = np.concatenate(outputs), concat_traces(traces)
        refuse_overflow(result[0])
        refuse_overflow_trace(result[1])
        return result

    def trace(self, x: Any) -> Trace:
        """The trace of the layer for inputs ``x``."""
        x = self.check_input(x)
        trace = concat_traces([t for _, t in self.iter_traces(x, outputs=False)])
        refuse_overflow_trace(trace)
        return trace

    def predict(self, x: Any) -> np.ndarray:
        """The model's outputs for ``x`` (validated, batched)."""
        inputs = CheckedInputs(self, x)
        whole = inputs.whole  # parts were cast, so scanned by check_input
        if whole is not None and self._floats_on_device(whole) and not all_finite(whole):
            raise not_finite(whole)  # the model's own predict checks nothing on the device
        outputs = []
        for part in inputs:
            size = self.chunk_size(part)
            for start in range(0, len(part), size):
                batch = part[start : start + size]
                outputs.append(self._per_input(self._predict(batch), len(batch)))
            self._accept(part)
        result = np.concatenate(outputs)
        refuse_overflow(result)
        return result

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}({self.name!r}, layer={self.layer_name!r}, "
            f"cell={self.cell_kind!r}, units={self.units}, framework={self.framework!r})"
        )


#: why a model whose recurrent layer does not get the inputs' rows in order is refused
REORDERED = (
    "the model reorders its batch before the layer (sorting by length to pack? pack with "
    "enforce_sorted=False, whose order PyTorch keeps and pytest-rnncov reads), or an "
    "input's rows there depend on the other inputs (statistics over the batch) or vary "
    "between runs (randomness at inference); each trace must be its own input's"
)


#: batches after which the batch-order check ends (``check_order``) when none showed the
#: order for good (each try costs model runs)
ORDER_TRIES = 3
#: the inputs the batch-order check runs the model on (the whole batch only when the model
#: runs no order of these: a graph that fixes its batch inside)
PROBE_ROWS = 32


def probe_orders(n: int) -> list[np.ndarray]:
    """Orders of ``n`` inputs that show whether a model keeps its rows in order: reversed
    (a batch sorted already shows a sort only reversed), rotated by one (a reversal cannot
    show a flip), its first two swapped (with the rotation, only keeping every row in place
    commutes: a swap of halves did not show) and reversed less its last input (for a model
    that takes some batch sizes only)."""
    orders = [np.arange(n - 1, -1, -1)]
    if n >= 3:
        orders += [np.roll(np.arange(n), 1), np.r_[1, 0, 2:n]]
    return [*orders, np.arange(n - 2, -1, -1)]


def same_rows(probe: Any, expected: Any, allclose: Callable[..., Any]) -> bool | None:
    """Whether a probe's (B, T, D) rows equal ``expected``'s (by the arrays' ``allclose``,
    NaN equal to NaN: non-finite values have checks of their own) over the steps both
    have: the leading ones, or the trailing ones for left-padded inputs (a model may trim
    its padding to the batch's longest input); None when the probe reached the layer as
    another number of rows (a model that pads its batch: nothing to compare)."""
    if probe.shape[0] != expected.shape[0]:
        return None
    common = min(probe.shape[1], expected.shape[1])
    return any(
        bool(allclose(p, e, rtol=1e-4, atol=1e-5, equal_nan=True))
        for p, e in (
            (probe[:, :common], expected[:, :common]),
            (probe[:, probe.shape[1] - common :], expected[:, expected.shape[1] - common :]),
        )
    )


def held_steps(x: np.ndarray) -> np.ndarray:
    """Per input, its steps that hold a nonzero value: the length a model sorts by."""
    return (np.asarray(x).reshape(len(x), x.shape[1], -1) != 0).any(axis=2).sum(axis=1)


def check_order(
    x: np.ndarray,
    held: np.ndarray,
    rows: Any,
    run: Callable[[np.ndarray], Any],
    allclose: Callable[..., Any],
) -> bool | None:
    """Run the model to its layer (``run``: the layer's (B, T, D) rows for a batch, in
    input order; ModelError when the model refuses the batch) on PROBE_ROWS inputs of
    ``x`` in each of ``probe_orders``, or on the whole batch when it runs none of those,
    and compare with the same inputs' ``rows``, the layer's rows for ``x`` (``held``:
    ``held_steps(x)``). The inputs: the longest and the shortest first (so that a sort
    has rows to move, and a model that trims to the batch's longest input trims the probe
    alike), then the first ones. False: an order came back otherwise; True: every compared
    order matched; None: the model ran no order as its rows (it refused them, or padded
    its batch)."""
    every = np.array(list(dict.fromkeys([int(held.argmax()), int(held.argmin()), *range(len(x))])))
    for inputs in (every[:PROBE_ROWS], every) if len(x) > PROBE_ROWS else (every,):
        compared = False
        for order in probe_orders(len(inputs)):
            picked = inputs[order]
            if np.array_equal(picked, np.arange(len(x))):  # the batch's own order shows nothing
                picked = inputs  # (two inputs, the longest last: reversed, they are as given)
            try:
                probe = run(np.ascontiguousarray(x[picked]))
            except ModelError:
                continue
            same = same_rows(probe, rows[picked], allclose)
            if same is False:
                return False
            compared = compared or same is True
        if compared:
            return True
    return None


class OrderCheck:
    """Whether a model's recurrent layer gets the inputs' rows in order (the adapters'
    state of it): batches are checked (``check_order``) until one shows the order for good
    (not a batch of one length: a sort of equal lengths moves rows only sometimes) or
    ORDER_TRIES batches were tried (each try costs model runs)."""

    def __init__(self) -> None:
        self.done = False
        self.tries = 0

    def keeps_order(
        self,
        x: np.ndarray,
        rows: Any,
        lengths: Any,
        run: Callable[[np.ndarray], Any],
        allclose: Callable[..., Any],
    ) -> bool:
        """False when the layer's ``rows`` (B, T, D) for ``x``, in input order, are not
        the inputs' own as far as ``check_order`` shows; ``lengths``: values all equal
        exactly when the layer's sequences have one length (their lengths, a
        PackedSequence's batch sizes), or None."""
        if self.done or len(x) < 2 or bool((rows == rows[:1]).all()):
            return True  # every row the same: no order shows
        held = held_steps(x)
        kept = check_order(x, held, rows, run, allclose)
        if kept is False:
            return False
        one_length = bool((held == held[0]).all()) or (
            lengths is not None and bool((lengths == lengths[0]).all())
        )
        self.tries += 1
        self.done = (kept is True and not one_length) or self.tries >= ORDER_TRIES
        return True


def not_finite(cast: np.ndarray, given: np.ndarray | None = None) -> InvalidInput:
    """The error for float32 inputs ``cast`` holding NaN or inf (``given``: the inputs
    before the cast, when they were not float32, to tell values beyond its range)."""
    bad = ~np.isfinite(cast)
    # values finite before the cast and not after it lay beyond float32's range
    beyond = given is not None and given.dtype.kind == "f" and np.isfinite(given[bad]).all()
    reason = "values beyond float32's range (inf once cast)" if beyond else "NaN or inf"
    return InvalidInput(f"inputs hold {reason} in {rows_holding(bad)}; clean or drop those rows")


def refuse_overflow(outputs: Any) -> None:
    """InvalidInput when the model's outputs for finite inputs hold NaN or +inf, or an
    input's outputs hold no finite value (all -inf): the model overflowed on them, and
    handed back such a row would read as a decision (its arg-max is 0). -inf beside finite
    values (a masked logit) is the model's own decision and passes."""
    outputs = np.asarray(to_host(outputs))
    if outputs.dtype.kind != "f" or not outputs.size or all_finite(outputs):
        return
    rows = outputs.reshape(len(outputs), -1)
    bad = np.isnan(rows).any(axis=1) | np.isposinf(rows).any(axis=1)
    bad |= ~np.isfinite(rows).any(axis=1)
    if bad.any():
        raise InvalidInput(
            f"the model's outputs hold NaN, +inf or no finite value for the inputs in "
            f"{rows_holding(bad)}, which are finite: the model overflowed on them; check "
            "those inputs (their scale) or the model's weights"
        ).about_rows(flagged_rows(bad)[:5])


def refuse_overflow_trace(trace: Trace) -> None:
    """InvalidInput when a trace's states or sums hold NaN or inf (for finite inputs: the
    layer overflowed)."""
    for name, values in {**trace.components, **trace.sums}.items():
        xp = array_namespace(values)
        if not xp.isdtype(values.dtype, "real floating") or bool(xp.all(xp.isfinite(values))):
            continue
        bad = ~np.isfinite(to_host(values))
        raise InvalidInput(
            f"the layer's states {name} hold NaN or inf for the inputs in "
            f"{rows_holding(bad)}, which are finite: the layer "
            "overflowed on them; check those inputs (their scale) or the model's weights"
        ).about_rows(flagged_rows(bad)[:5])


def rows_holding(bad: np.ndarray) -> str:
    """ "rows [i, j, ...]": the first five inputs (rows of the batch ``bad`` flags values
    of) that hold a flagged value."""
    rows = flagged_rows(bad)
    return f"rows {rows[:5].tolist()}{', ...' if rows.size > 5 else ''}"


def model_error_from(exc: Exception, what: str) -> ModelError:
    """A framework failure as a ModelError that says where it happened."""
    # the whole message on one line: ONNX Runtime, say, gives the cause on the second
    said = " ".join(str(exc).split()) or type(exc).__name__
    said = cut(said, 400)  # a framework's message can hold a whole graph or tensor
    return ModelError(f"{what} failed in the framework: {type(exc).__name__}: {said}")
