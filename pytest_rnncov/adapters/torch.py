"""The PyTorch adapter: ``nn.LSTM``, ``nn.GRU`` and ``nn.RNN`` anywhere in a module tree.

The traced layer's input and output sequence come from forward hooks on the recurrent
module, during the same forward pass that gives the model's outputs, so any model around it
works (embeddings, ``PackedSequence`` inputs, ``batch_first`` either way). ``h`` at every
step is the module's own output; the gates follow in one batched matmul from the module's
weights, converted from PyTorch's gate layout (LSTM i, f, g, o; GRU r, z, n with the reset
gate applied to ``W_hn h + b_hn``) to the canonical one (``recompute=True`` runs the whole
layer again in numpy: the reference kernel); that work runs in a worker thread beside the
next batch's forward pass (``Adapter.overlaps_trace``). Stacked layers (``num_layers > 1``)
are picked with a ``.lK`` suffix (``"encoder.rnn.l1"``); when the pass must give a stacked layer's
input or a lower layer's ``h``, the module runs, inside the model's own call, as copies of
the layers below, the traced one and those above. Models run on whatever device they are
on, in eval mode and without gradients. torch is imported only when a torch model is
wrapped.
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
import threading
import warnings
import weakref
from contextlib import contextmanager
from typing import Any, Callable, Iterator, TypeVar, cast

import numpy as np

from ..core.activations import Activation
from ..core.arrays import all_finite, input_array
from ..core.cells import Cell, GRUCell, LSTMCell, SimpleRNNCell
from ..errors import InvalidArgument, InvalidInput, ModelError, RNNCovWarning, UnknownLayer
from ..validation import check_choice
from .base import (
    MIXED_PRECISION_NOTE,
    REORDERED,
    Adapter,
    OrderCheck,
    check_not_a_scalar_object,
    direction_hint,
    model_error_from,
    not_finite,
    rows_holding,
)

KINDS = {"LSTM": "lstm", "GRU": "gru", "RNN": "simple_rnn"}


def _numpy(tensor: Any) -> np.ndarray:
    """A tensor as a float32 numpy array (bfloat16, which numpy lacks, included)."""
    return np.array(tensor.detach().cpu().float().numpy())  # a copy, not the weights' memory


def _weight_names(module: Any) -> list[str]:
    """The parameters an ``nn.LSTM``/``nn.GRU``/``nn.RNN`` holds, by PyTorch's names."""
    kinds = ["weight_ih", "weight_hh"] + (["bias_ih", "bias_hh"] if module.bias else [])
    kinds += ["weight_hr"] if getattr(module, "proj_size", 0) else []
    suffixes = [""] + (["_reverse"] if module.bidirectional else [])
    return [
        f"{kind}_l{layer}{suffix}"
        for layer in range(module.num_layers)
        for suffix in suffixes
        for kind in kinds
    ]


def _autocast_dtype(device: str) -> Any:
    """The dtype ``torch.autocast`` computes in on ``device`` (a device type) now, None
    where it is off; torch 2.4 takes the device type, earlier versions had functions of
    their own for the CPU and the GPU."""
    import torch

    if hasattr(torch, "get_autocast_dtype"):
        return torch.get_autocast_dtype(device) if torch.is_autocast_enabled(device) else None
    if device == "cpu":
        return torch.get_autocast_cpu_dtype() if torch.is_autocast_cpu_enabled() else None
    return torch.get_autocast_gpu_dtype() if torch.is_autocast_enabled() else None


def _type_name(value: Any) -> str:
    """``dict`` for a built-in type, else with its module: ``numpy.ndarray``."""
    kind = type(value)
    return kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__name__}"


def _version(tensor: Any) -> int:
    """A tensor's version counter (every in-place change bumps it); -1 where torch keeps
    none (an inference-mode tensor)."""
    try:
        return int(tensor._version)
    except RuntimeError:
        return -1


class _LayerReached(BaseException):
    """Raised by the forward pre-hook to stop a forward pass at the traced module (a
    BaseException, so that a model's own ``except Exception`` does not swallow it)."""


def _readable(x: Any) -> np.ndarray:
    """Inputs as a numpy array: a tensor from any device (bfloat16, which numpy lacks, as
    float32), anything else through ``input_array``."""
    if not hasattr(x, "detach"):
        return input_array(x, "inputs")  # a masked array refused by name
    import torch

    tensor = x.detach().cpu()
    return (tensor.float() if tensor.dtype == torch.bfloat16 else tensor).numpy()


def _shape(value: Any) -> tuple[int, ...]:
    """``input_shape`` (one input, no batch axis) as a tuple of positive ints."""
    if (
        isinstance(value, (str, bytes))
        or not isinstance(value, (tuple, list))
        or not value
        or not all(
            isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d > 0 for d in value
        )
    ):
        raise InvalidArgument(
            f"input_shape={value!r}; give one input's shape without the batch "
            "axis, e.g. input_shape=(29, 12) for 29 steps of 12 features"
        )
    return tuple(int(d) for d in value)


#: a CPU call whose work per step (its rows x the model's parameters, at least the
#: multiply-adds of one step of its recurrent modules) is below this runs on one thread
SMALL_CALL_WORK = 1 << 25


Method = TypeVar("Method", bound=Callable[..., Any])
#: one lock per traced module (several adapters of one module hook the same module)
_MODULE_LOCKS: "weakref.WeakKeyDictionary[Any, threading.RLock]" = weakref.WeakKeyDictionary()
_LOCKS_LOCK = threading.Lock()


def _module_lock(module: Any) -> threading.RLock:
    """The lock every adapter of ``module`` takes for a pass."""
    with _LOCKS_LOCK:
        lock = _MODULE_LOCKS.get(module)
        if lock is None:
            lock = _MODULE_LOCKS[module] = threading.RLock()
        return lock


def _locked(method: Method) -> Method:
    """``method`` under the adapter's lock: the hooks' buffers are the adapter's, so two
    threads' passes must not interleave (they swapped batches of one size)."""

    @functools.wraps(method)
    def run(self: "TorchModel", *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            return method(self, *args, **kwargs)

    return cast(Method, run)


class TorchModel(Adapter):
    """A ``torch.nn.Module`` with one of its recurrent modules made traceable.

    ``layer``: the qualified name of an ``nn.LSTM`` / ``nn.GRU`` / ``nn.RNN`` in the module
    tree (``"encoder.rnn"``; add ``".l1"`` for the second of stacked layers), an index into
    the recurrent modules, or None (the first). ``output``: which element of a model that
    returns a tuple is its prediction. The input shape and dtype are learned from the first
    inputs (integer arrays are token ids, int64) and enforced afterwards, or given with
    ``input_shape`` / ``input_dtype``. ``recompute=True`` recomputes the layer from its
    weights (the reference kernel) instead of reading its output from the forward pass.
    """

    framework = "torch"
    #: a module's layers run in the order its forward() calls them, which only a call shows
    fingerprint_covers = (
        "every floating-point tensor of the module's state_dict, also those past the traced "
        "layer, and its structure (repr); its ONNX export has a fingerprint of its own"
    )
    overlaps_trace = True

    def __init__(
        self,
        model: Any,
        layer: str | int | None = None,
        *,
        direction: str = "forward",
        output: int | None = None,
        batch_size: int | None = None,
        input_shape: tuple[int, ...] | None = None,
        input_dtype: str | None = None,
        trace_on: str = "auto",
        recompute: bool = False,
    ) -> None:
        import torch

        self._init_common(model, direction, batch_size, recompute)
        self.reads_states = not self.recompute
        self.name = type(model).__name__
        if any(p.is_meta for p in model.parameters()):
            raise ModelError(
                f"model {self.name} has parameters on the meta device, which hold no values; "
                "load its weights first (model.to_empty(device='cpu'), then "
                "model.load_state_dict(...))"
            )
        self.module_name, self.module, self.depth = self._find(layer)
        own = dict(self.module.named_parameters(recurse=False))
        computed = [  # a weight a hook computes at each call: stale when read here
            name for name in _weight_names(self.module) if name not in own
        ]
        if computed:
            raise ModelError(
                f"module {self.module_name!r} holds {', '.join(computed)} as other than its "
                "parameters (weight_norm, spectral_norm and pruning recompute such a weight "
                "at each call), so the weights read here may not be those it computes "
                "with; remove that before tracking (torch.nn.utils.remove_weight_norm, "
                "remove_spectral_norm or prune.remove: the weights stay as they are)"
            )
        kind = type(self.module).__name__
        self.direction = (
            direction
            if self.module.bidirectional
            else self._forward_only(direction, self.module_name or self.name)
        )
        if output is not None and (
            isinstance(output, bool) or not isinstance(output, int) or output < 0
        ):
            raise InvalidArgument(
                f"output={output!r}; pass the index of the prediction in the "
                "tuple the model returns"
            )
        self.output_index = output
        #: whether output= was checked against what the model returns (``_prediction``; a
        #: pass that stops at the traced layer, as fitting a profile's, never sees them)
        self._output_checked = output is None
        self.cell = self._cell(self.module, self.depth, self.direction == "backward")
        #: the traced module's parameters' version counters when the cell copied them
        self._weights_version = self._parameter_versions()
        compute = next(self.module.parameters()).dtype
        if compute in (torch.float16, torch.bfloat16):
            note = MIXED_PRECISION_NOTE.format(dtype=str(compute).removeprefix("torch."))
            warnings.warn(
                f"module {self.module_name or self.name!r}: {note}", RNNCovWarning, stacklevel=3
            )
        self._lower = self._stacked_copy(0, self.depth) if self.depth else None
        #: a stacked module's forward pass split at the traced layer (copies of the layers
        #: below, the traced one and those above), so one pass gives its input and output
        layers = self.module.num_layers
        split = layers > 1 and not self.recompute
        self._single = self._stacked_copy(self.depth, 1) if split else None
        self._upper = (
            self._stacked_copy(self.depth + 1, layers - self.depth - 1)
            if split and self.depth < layers - 1
            else None
        )
        self._split: tuple[Any, Any] | None = None
        self.units = int(
            self.cell.units
            if not (kind == "LSTM" and self.module.proj_size)
            else self.module.proj_size
        )
        self._n_steps = None
        self.input_shape = () if input_shape is None else _shape(input_shape)
        self._shape_known = input_shape is not None
        embeddings = [m for m in model.modules() if isinstance(m, torch.nn.Embedding)]
        if input_dtype is not None:
            check_choice("input_dtype", input_dtype, ("float32", "int64"))
        # token ids for a model with an embedding, float features otherwise
        self.input_dtype = np.dtype(input_dtype or ("int64" if embeddings else "float32"))
        if embeddings:  # which one reads the inputs shows only in a pass: the widest range
            self.id_range = (0, max(int(e.num_embeddings) for e in embeddings))
        self._captured: list[Any] = []
        self._produced: list[Any] = []
        #: the tensors the hooks kept in this pass, with their version counters then
        self._kept: list[tuple[Any, int]] = []
        #: whether the hooks keep copies: set once a model was seen changing the traced
        #: layer's input or output in place after the call (ReLU(inplace=True) after it)
        self._keep_copies = False
        self._autocast_warned = False
        self._stop: str | None = None  # where a forward pass may stop: "before"/"after" it
        self._runs_once = False
        #: held through each pass: the hooks' buffers above and the hooks on the module
        #: are shared by the threads (one lock per module, for every adapter of it)
        self._lock = _module_lock(self.module)
        #: whether a pass on one input has shown which axis the module reads as the batch
        #: (needed once a batch of n inputs reached it as n sequences of n steps)
        self._layout_known = False
        self._order = OrderCheck()  # whether the module gets the inputs' rows in order
        self._step_work: int | None = None  # ``_work_per_row``, once known
        self._threads_lowered = False  # while ``_framework_threads`` holds one fewer
        self._device = next((p.device for p in model.parameters()), torch.device("cpu"))
        #: what float inputs are cast to: the dtype of the model's first float parameter
        self._float_dtype = next(
            (p.dtype for p in model.parameters() if p.is_floating_point()), torch.float32
        )
        self.trace_on = self._pick_trace_on(
            trace_on,
            self._device.type != "cpu",
            self.cell.on_device,
            "an activation has no array-API twin",
        )

    @property
    def layer_name(self) -> str:  # type: ignore[override]
        name = self.module_name + (f".l{self.depth}" if self.module.num_layers > 1 else "")
        return name + ("/backward" if self.direction == "backward" else "")

    def __getstate__(self) -> dict[str, Any]:
        """Copies and pickles leave the lock out (each copy gets its own, and counts its
        weights' versions from its own copy of them)."""
        state = self.__dict__.copy()
        del state["_lock"]
        state["_weights_version"] = None if self._weights_changed() else 0  # stays refused
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        stale = state["_weights_version"] is None
        self.__dict__.update(state)
        self._lock = _module_lock(self.module)
        # a copy's counters start anew; one of a model changed since it was wrapped stays
        # refused (its cell holds the old weights)
        self._weights_version = -2 if stale else self._parameter_versions()

    # -- choosing ---------------------------------------------------------------------
    def _find(self, layer: str | int | None) -> tuple[str, Any, int]:
        import torch

        candidates = [
            (name, m)
            for name, m in self.model.named_modules()
            if type(m) in (torch.nn.LSTM, torch.nn.GRU, torch.nn.RNN)
        ]
        listing = ", ".join(
            f"{n!r} ({type(m).__name__}, index {i}, "
            + (
                f"{m.num_layers} stacked layers: {n + '.l1'!r} for the second)"
                if m.num_layers > 1
                else "1 layer)"
            )
            for i, (n, m) in enumerate(candidates)
        )
        if not candidates:
            near = [
                f"{n!r} ({type(m).__name__})"
                for n, m in self.model.named_modules()
                if isinstance(m, torch.nn.RNNBase)
                or getattr(m, "original_name", None) in KINDS  # a TorchScript module
            ]
            hint = (
                f"; {', '.join(near)} {'is not one' if len(near) == 1 else 'are not'}: "
                "pytest-rnncov traces the eager modules "
                "themselves (not a subclass, a parametrized copy or a TorchScript one): "
                "track the model before torch.jit.script/trace, or without the "
                "parametrization (weight_norm: remove_parametrizations)"
                if near
                else ""
            )
            raise ModelError(f"model {self.name} has no nn.LSTM, nn.GRU or nn.RNN module{hint}")
        if layer is None:
            return candidates[0][0], candidates[0][1], 0
        if isinstance(layer, bool) or not isinstance(layer, (str, int)):
            raise InvalidArgument(f"layer={layer!r}; pass a module name, an index or None")
        if isinstance(layer, int):
            if not 0 <= layer < len(candidates):
                raise UnknownLayer(
                    f"layer={layer} is no index of a recurrent module (0 to "
                    f"{len(candidates) - 1}); the recurrent modules are {listing}"
                )
            return candidates[layer][0], candidates[layer][1], 0
        for candidate, module in candidates:  # a module's own name first: it may end in .lK
            if candidate == layer:
                return candidate, module, 0
        match = re.fullmatch(r"(.*?)(?:\.l([0-9]+))?", layer)  # ASCII digits only
        assert match is not None
        name, depth = match.group(1), int(match.group(2) or 0)
        for candidate, module in candidates:
            if candidate == name:
                if depth >= module.num_layers:
                    raise ModelError(
                        f"layer={layer!r}: {name!r} has {module.num_layers} stacked "
                        f"layers, .l0 to .l{module.num_layers - 1}"
                    )
                return candidate, module, depth
        aliases = {  # named_modules names a module held twice once
            name: module for name, module in self.model.named_modules(remove_duplicate=False)
        }
        for candidate, module in candidates:
            if aliases.get(layer) is module:
                raise ModelError(
                    f"layer={layer!r} is the module the model also holds as {candidate!r}: "
                    f"pass layer={candidate!r}"
                )
        raise UnknownLayer(
            f"layer={layer!r} is not a recurrent module of {self.name}; its "
            f"recurrent modules are {listing}{direction_hint(layer)}"
        )

    # -- the cell --------------------------------------------------------------------
    def _cell(self, module: Any, depth: int, backward: bool) -> Cell:
        suffix = f"_l{depth}" + ("_reverse" if backward else "")
        kind = type(module).__name__

        def weight(name: str) -> np.ndarray | None:
            tensor = getattr(module, f"{name}{suffix}", None)
            return None if tensor is None else _numpy(tensor)

        w_ih, w_hh = weight("weight_ih"), weight("weight_hh")
        b_ih, b_hh = weight("bias_ih"), weight("bias_hh")
        assert w_ih is not None and w_hh is not None
        if kind == "LSTM":
            projection = weight("weight_hr")
            bias = None if b_ih is None or b_hh is None else b_ih + b_hh
            return LSTMCell(
                w_ih.T,
                w_hh.T,
                bias,
                Activation.named("tanh"),
                Activation.named("sigmoid"),
                backward,
                None if projection is None else projection.T,
            )
        if kind == "GRU":
            u = w_ih.shape[0] // 3
            order = np.r_[u : 2 * u, 0:u, 2 * u : 3 * u]  # r, z, n -> z, r, n
            return GRUCell(
                w_ih[order].T,
                w_hh[order].T,
                None if b_ih is None else b_ih[order],
                None if b_hh is None else b_hh[order],
                True,
                Activation.named("tanh"),
                Activation.named("sigmoid"),
                backward,
            )
        bias = None if b_ih is None or b_hh is None else b_ih + b_hh
        activation = Activation.named("relu" if module.nonlinearity == "relu" else "tanh")
        return SimpleRNNCell(w_ih.T, w_hh.T, bias, activation, backward)

    def _stacked_copy(self, first: int, count: int) -> Any:
        """Stacked layers ``first`` .. ``first + count - 1`` as a module of their own (a copy
        of their weights, in eval mode), so PyTorch's own kernel runs them: the layers below
        the traced one compute its input; the traced one alone, its output sequence."""
        import torch

        module = self.module
        width = module.proj_size if getattr(module, "proj_size", 0) else module.hidden_size
        options: dict[str, Any] = {
            "input_size": module.input_size
            if first == 0
            else width * (2 if module.bidirectional else 1),
            "hidden_size": module.hidden_size,
            "num_layers": count,
            "bias": module.bias,
            "batch_first": module.batch_first,
            "bidirectional": module.bidirectional,
        }
        if isinstance(module, torch.nn.LSTM):
            options["proj_size"] = module.proj_size
        if type(module) is torch.nn.RNN:
            options["nonlinearity"] = module.nonlinearity
        parameter = next(module.parameters())
        lower = type(module)(**options).to(device=parameter.device, dtype=parameter.dtype)
        with torch.no_grad():
            for name, value in lower.named_parameters():
                base, layer, rest = re.fullmatch(r"(.*_l)(\d+)(.*)", name).groups()  # type: ignore[union-attr]
                value.copy_(getattr(module, f"{base}{int(layer) + first}{rest}"))
        return lower.eval()

    # -- running ---------------------------------------------------------------------
    @_locked  # it reads the input shape it may learn: one thread at a time
    def check_layout(self, x: Any) -> np.ndarray:
        array = self._read(x)
        with self._own_shape(array):
            return self._layout(array)

    @contextmanager
    def _own_shape(self, array: np.ndarray) -> Iterator[None]:
        """Until the input shape is learned, inputs are checked against their own shape;
        it is fixed only once a call on them went through (``_accept``): a batch refused
        here, by the model or by the caller fixes nothing."""
        if self._shape_known:
            yield
            return
        self.input_shape = tuple(int(d) for d in array.shape[1:])
        try:
            yield
        finally:
            self.input_shape = ()

    def _read(self, x: Any) -> np.ndarray:
        """Inputs as a numpy array of at least two axes (``_readable``), else InvalidInput
        (naming the shape the model takes once it is known)."""
        try:
            array = _readable(x)
        except InvalidInput:
            raise
        except (TypeError, ValueError, RuntimeError, NotImplementedError, AttributeError) as exc:
            raise InvalidInput(
                f"inputs cannot be read as an array ({type(exc).__name__}: {exc}); pass a "
                "numpy array or a CPU/GPU tensor of shape (batch, ...)"
            ) from None
        check_not_a_scalar_object(x, array)
        if array.ndim < 2:
            if self._shape_known:
                self._layout(array)  # names the shape the model takes
            raise InvalidInput(
                f"inputs have shape {array.shape}; pass a batch, of shape (batch, ...) "
                "(x[None] if this is one input)"
            )
        return array

    @_locked  # it learns the input shape from the first inputs: one thread at a time
    def check_input(self, x: Any) -> np.ndarray:
        array = self._read(x)
        known = self._shape_known
        with self._own_shape(array):
            checked = super().check_input(array)
        if not known and self._floats_on_device(checked) and not all_finite(checked):
            raise not_finite(checked)  # a first call: scanned here, as the host path does
        return self._within_half(checked)

    def _within_half(self, x: np.ndarray) -> np.ndarray:
        """``x``, refused where a float16 model would read a value beyond float16's range
        (it would compute with inf, silently: NaN outputs and traces)."""
        import torch

        if self._float_dtype != torch.float16 or x.dtype.kind != "f":
            return x
        beyond = ~(np.abs(x) <= np.finfo(np.float16).max)  # NaN too (the device path's)
        if beyond.any():
            raise InvalidInput(
                f"inputs hold values beyond float16's range (65504) or NaN in "
                f"{rows_holding(beyond)}, and model {self.name} computes in float16; scale or "
                "clip the inputs"
            )
        return x

    @contextmanager
    def _framework_threads(self) -> Iterator[None]:
        """One PyTorch thread fewer, in the main thread only: PyTorch's setting is partly
        per thread (a new thread starts from the last value set anywhere), so lowering it
        from several threads at once can leave one of them lowered for good."""
        import torch

        own = torch.get_num_threads()
        if own < 2 or threading.current_thread() is not threading.main_thread():
            yield
            return
        try:  # set inside: an interrupt between the two lines still sets it back
            torch.set_num_threads(own - 1)
            self._threads_lowered = True
            yield
        finally:
            self._threads_lowered = False
            torch.set_num_threads(own)

    def _accept(self, x: np.ndarray) -> None:
        if not self._shape_known:
            self.input_shape = tuple(int(d) for d in x.shape[1:])
            self._shape_known = True

    def _finite_on_device(self) -> bool:
        return self.trace_on == "device"

    def _hook(self, module: Any, args: Any, kwargs: Any) -> None:
        hx = args[1] if len(args) > 1 else kwargs.get("hx")
        states = () if hx is None else hx if isinstance(hx, (tuple, list)) else (hx,)
        if any(bool(state.any()) for state in states):  # zeros, as written out, are fine
            raise ModelError(
                f"module {self.module_name!r} is called with a nonzero initial state (hx); "
                "pytest-rnncov traces recurrent layers that start from zeros: call it "
                "without hx (or with zeros)"
            )
        self._warn_autocast()
        given = args[0] if args else kwargs["input"]
        if getattr(given, "ndim", 3) == 2:
            raise ModelError(
                f"module {self.module_name!r} is called with an unbatched (steps, features) "
                "input; pytest-rnncov traces a layer called on the batch: call it on "
                "(batch, steps, features)"
            )
        self._captured.append(self._keep(given))
        if self._stop == "before":
            raise _LayerReached  # only the layer's input is wanted: skip the rest of the model

    def _warn_autocast(self) -> None:
        """Announce (once) a layer run under ``torch.autocast``: it computes in a lower
        precision than the float32 trace, like a float16 module."""
        if self._autocast_warned:
            return
        lowered = _autocast_dtype(self._device.type)
        if lowered is None:
            return
        self._autocast_warned = True
        note = MIXED_PRECISION_NOTE.format(dtype=str(lowered).removeprefix("torch."))
        warnings.warn(
            f"module {self.module_name or self.name!r} runs under torch.autocast: {note}",
            RNNCovWarning,
            stacklevel=2,
        )

    def _keep(self, value: Any) -> Any:
        """A tensor (or PackedSequence) a hook keeps until the pass ends: a copy once the
        model was seen changing one in place, else the tensor, its version noted."""
        from torch.nn.utils.rnn import PackedSequence

        tensor = value.data if isinstance(value, PackedSequence) else value
        if self._keep_copies:
            copy = tensor.clone()
            if isinstance(value, PackedSequence):
                return PackedSequence(
                    copy, value.batch_sizes, value.sorted_indices, value.unsorted_indices
                )
            return copy
        self._kept.append((tensor, _version(tensor)))
        return value

    def _changed_in_place(self) -> bool:
        """Whether the model changed a kept tensor in place after the hook kept it (or its
        version is not tracked: an inference tensor)."""
        return any(v < 0 or _version(t) != v for t, v in self._kept)

    def _output_hook(self, module: Any, args: Any, output: Any) -> None:
        self._produced.append(self._keep(output[0]))
        if self._stop == "after":
            raise _LayerReached  # the layer's input and output are all that is wanted

    def _split_forward(self, input: Any, hx: Any = None) -> Any:  # noqa: A002 (torch's name)
        """The module's forward pass as its copies run it, keeping the traced layer's input
        and output (``_split``); returns what the module returns. Its arguments are named
        as ``nn.RNNBase.forward``'s (a model may call ``rnn(input=x)``)."""
        import torch

        finals, out = [], input
        for part in (self._lower, self._single, self._upper):
            if part is None:
                continue
            layer_input = out
            out, final = part(out)
            if part is self._single:
                self._split = (self._keep(layer_input), self._keep(out))
            finals.append(final)
        if isinstance(finals[0], tuple):  # LSTM: (h_n, c_n), layers stacked on axis 0
            return out, tuple(torch.cat(f, dim=0) for f in zip(*finals))
        return out, torch.cat(finals, dim=0)

    def _run_model(
        self, x: np.ndarray, outputs: bool = True, states: bool = False, split: bool = False
    ) -> Any:
        """(model output, the module's input, its output sequence when ``states`` and the
        traced layer is the module's top one); with ``split`` the module runs as its split
        copies and ``_split`` holds the traced layer's input and output."""
        import torch

        was_training = self.model.training
        top = states and self.depth == self.module.num_layers - 1
        # the input after the user's own pre-hooks (what the layer runs on), the output
        # before the user's own forward hooks (what the layer gave)
        handles = [self.module.register_forward_pre_hook(self._hook, with_kwargs=True)]
        if top or split:
            handles.append(self.module.register_forward_hook(self._output_hook, prepend=True))
        self._split = None
        if split:
            self.module.forward = self._split_forward
        self._captured.clear()
        self._produced.clear()
        self._kept.clear()
        # stop early only once a full pass has shown the module runs once per forward pass
        after = top or split
        self._stop = None if outputs or not self._runs_once else "after" if after else "before"
        out = finite = None
        try:
            self.model.eval()
            with torch.no_grad():
                array = np.ascontiguousarray(x)
                if self._device.type == "cpu" or not array.flags.writeable:
                    # the model may write to its input in place (not to the caller's array);
                    # torch warns on a read-only one (a memory-mapped file)
                    array = array.copy()
                tensor = torch.from_numpy(array).to(self._device)
                if tensor.is_floating_point():
                    finite = torch.isfinite(tensor).all() if self._finite_on_device() else None
                    tensor = tensor.to(self._float_dtype)
                out = self._call_model(tensor)
        except _LayerReached:
            pass
        except ModelError:
            raise
        except Exception as exc:
            if finite is not None and not bool(finite):  # the model failed on NaN or inf
                raise not_finite(array) from None
            raise model_error_from(exc, f"running model {self.name}") from exc
        finally:
            for handle in handles:
                handle.remove()
            if split:
                del self.module.forward  # the class's own forward again
            self.model.train(was_training)
        if finite is not None and not bool(finite):  # read once the pass has run
            raise not_finite(array)
        if self._changed_in_place():  # read the layer's own values: again, keeping copies
            self._keep_copies = True
            return self._run_model(x, outputs, states, split)
        if self._stop is not None and self._captured:
            return None, self._captured[0], self._produced[0] if top else None
        if len(self._captured) == 1:
            self._runs_once = True
        else:
            raise ModelError(
                f"module {self.module_name!r} ran {len(self._captured)} times in one "
                "forward pass; pytest-rnncov traces a module called once"
            )
        return out, self._captured[0], self._produced[0] if top else None

    def _work_per_row(self) -> float:
        """The model's parameters: at least the multiply-adds per input and step of its
        recurrent modules (an embedding table counts whole: such a call is not small);
        inf while a lazy module's parameters are not yet initialised."""
        import torch

        if self._step_work is None:
            parameters = list(self.model.parameters())
            if any(isinstance(p, torch.nn.parameter.UninitializedParameter) for p in parameters):
                return math.inf
            self._step_work = sum(p.numel() for p in parameters)
        return self._step_work

    def _call_model(self, tensor: Any) -> Any:
        """``self.model(tensor)``; a small call (``SMALL_CALL_WORK``) on the CPU from the
        main thread on one PyTorch thread, set back afterwards. With OpenMP's threads
        asleep between calls (``OMP_WAIT_POLICY=PASSIVE``, as the plugin sets it) each
        parallel region wakes one, which costs more than a small call's share of the
        work. Which calls are small depends on their size alone: a rerun makes the same
        calls on the same threads."""
        import torch

        own = torch.get_num_threads()
        if (
            own < 2
            or self._threads_lowered
            or self._device.type != "cpu"
            or int(tensor.shape[0]) * self._work_per_row() >= SMALL_CALL_WORK
            or threading.current_thread() is not threading.main_thread()
        ):
            return self.model(tensor)
        try:  # set inside: an interrupt between the two lines still sets it back
            torch.set_num_threads(1)
            return self.model(tensor)
        finally:
            torch.set_num_threads(own)

    def _prediction(self, out: Any) -> np.ndarray:
        if isinstance(out, (tuple, list)):
            if self.output_index is None:
                raise ModelError(
                    f"model {self.name} returns a {type(out).__name__} of "
                    f"{len(out)}; pass output=INDEX to say which is the prediction"
                )
            if self.output_index >= len(out):
                raise InvalidArgument(
                    f"output={self.output_index}; the model returns {len(out)} values"
                )
            out = out[self.output_index]
        elif self.output_index:  # output=7 on one tensor was ignored
            raise InvalidArgument(
                f"output={self.output_index}; model {self.name} returns one tensor, not a "
                "tuple: leave output= out (or pass output=0)"
            )
        if not hasattr(out, "detach") or out.ndim == 0:
            shown = "a 0-d tensor" if hasattr(out, "detach") else f"a {_type_name(out)}"
            raise ModelError(
                f"model {self.name} returns {shown} where pytest-rnncov reads a tensor of one "
                "prediction per input; wrap the model so that it returns that tensor (or a "
                "tuple holding it: output=INDEX)"
            )
        self._output_checked = True
        out = out.detach().cpu()
        half = out.is_floating_point() and out.element_size() < 4  # numpy lacks bfloat16
        return (out.float() if half else out).numpy()

    def _padded(self, sequence: Any, steps: int) -> Any:
        """A module input or output as a (B, T, width) float tensor; a PackedSequence is
        padded back to ``steps`` (its mask: ``_mask_of``)."""
        from torch.nn.utils.rnn import PackedSequence, pad_packed_sequence

        if isinstance(sequence, PackedSequence):
            if len(sequence.batch_sizes) > steps:
                raise ModelError(
                    f"module {self.module_name!r} runs a PackedSequence of "
                    f"{len(sequence.batch_sizes)} steps on inputs of {steps}; pytest-rnncov "
                    "traces a layer that runs the inputs' steps: add the extra steps to the "
                    "inputs, outside the model"
                )
            padded, _ = pad_packed_sequence(sequence, batch_first=True, total_length=steps)
            return padded.detach().float()
        sequence = sequence.detach().float()
        return sequence if self.module.batch_first else sequence.transpose(0, 1)

    def _mask_of(self, captured: Any, steps: int) -> Any:
        """The (B, T) mask of real steps of the module's input (None unless packed)."""
        from torch.nn.utils.rnn import PackedSequence

        if not isinstance(captured, PackedSequence):
            return None
        import torch

        sizes = captured.batch_sizes  # per step, how many (sorted) sequences go on
        device = captured.data.device  # batch_sizes stay on the CPU, the indices do not
        lengths = (sizes[None, :] > torch.arange(int(sizes[0]))[:, None]).sum(dim=1).to(device)
        if captured.unsorted_indices is not None:
            lengths = lengths[captured.unsorted_indices]
        return torch.arange(steps, device=device)[None, :] < lengths[:, None]

    def _host(self, tensor: Any) -> Any:
        """A tensor as the trace path wants it: numpy (float32, a view of a CPU tensor as
        it lies: PyTorch's fused CPU LSTM gives its output time-major, and the gates' own
        copy or the metrics' sums read it there, so no batch-major copy here) or where it
        is."""
        if tensor is None or self.trace_on != "numpy":
            return tensor
        array = tensor.cpu().numpy()
        return array if array.dtype in (np.float32, np.bool_) else array.astype(np.float32)

    def _parameter_versions(self) -> int:
        """The sum of the traced module's parameters' version counters, the weights the
        cell copied (an in-place change, an optimizer step or load_state_dict raises it;
        ``.data`` writes do not; a lazy layer elsewhere initialised by the first call is
        not the module's); -1 where torch keeps none (inference mode)."""
        versions = [_version(p) for p in self.module.parameters()]
        return -1 if -1 in versions else sum(versions)

    def _weights_changed(self) -> bool:
        """Whether the traced module's weights differ from the cell's copy of them: looked
        at only when the version counters moved (an identical load_state_dict, a no-op
        in-place constraint moves them too; then the new counters are kept)."""
        versions = self._parameter_versions()
        if versions == -1 or versions == self._weights_version:
            return False  # -1: inference-mode weights keep no counter (nothing to see)
        fresh = self._cell(self.module, self.depth, self.direction == "backward").arrays()
        kept = self.cell.arrays()
        if len(fresh) == len(kept) and all(map(np.array_equal, fresh, kept)):
            self._weights_version = versions
            return False
        return True

    def _check_weights(self) -> None:
        """Refuse a pass after the model's weights changed in place: the cell's copy of
        them, the fingerprint and the profile would describe the model as it was."""
        if self._weights_changed():
            raise ModelError(
                f"the weights of module {self.module_name!r} of model {self.name} changed "
                "since it was wrapped (trained further?): the trace, the fingerprint and the "
                "profile describe it as it was; wrap it again, RNNModel(model), and refit or "
                "reload its profile"
            )

    @_locked
    def _forward(
        self,
        x: np.ndarray,
        outputs: bool,
        layer_input: bool = True,
        states: tuple[str, ...] | None = None,
    ) -> tuple[Any, Any, Any, Any]:
        import torch

        self._check_weights()
        if not outputs and not self._output_checked and len(x):
            self._prediction(self._run_model(x[:1])[0])  # output=INDEX names a prediction

        top = self.depth == self.module.num_layers - 1
        # a stacked module runs split at the traced layer when the pass must give more than
        # the module's own output: the traced layer's input (gates) or a lower layer's h
        split = states is not None and self._single is not None and (layer_input or not top)
        out, captured, produced = self._run_model(x, outputs, states is not None, split)
        self._check_batch(captured, len(x))
        self._check_layout(x, captured)
        self._check_order(x, captured)
        steps = int(x.shape[1])
        if self._n_steps is None:
            self._n_steps = self._padded(captured, steps).shape[1]
        below = captured  # the traced layer's input
        if split:
            assert self._split is not None
            below, produced = self._split
        elif self._lower is not None and layer_input:
            with torch.no_grad():
                below = self._lower(captured)[0]  # deeper layers: the output of those below
        sequence = self._padded(below, steps) if layer_input else None
        mask = self._mask_of(captured, steps)
        h = None
        if states is not None:
            both = self._padded(produced, steps)
            width = both.shape[-1] // (2 if self.module.bidirectional else 1)
            if self.direction == "backward":  # in input order: processing order is reversed
                h = torch.flip(both[..., width:], dims=(1,))
            else:
                h = both[..., :width]
        return (
            self._prediction(out) if outputs else None,
            self._host(sequence),
            self._host(mask),
            self._host(h),
        )

    @_locked
    def _predict(self, x: np.ndarray) -> np.ndarray:
        return self._prediction(self._run_model(x)[0])

    def _check_batch(self, captured: Any, n: int, probe: bool = False) -> None:
        """Refuse a pass whose traced module ran on another batch than the ``n`` inputs (a
        model that takes its inputs time-major, as (steps, batch, ...)); ``probe``: the
        inputs were the given ones and one more, run to tell the axes apart."""
        from torch.nn.utils.rnn import PackedSequence

        if isinstance(captured, PackedSequence):
            batch = int(captured.batch_sizes[0])
        elif captured.ndim == 3:
            batch = int(captured.shape[0 if self.module.batch_first else 1])
        else:
            return
        if batch != n:
            given = (
                f"{n} inputs (the {n - 1} given and a copy of the first, run to tell "
                "which axis is the batch)"
                if probe
                else f"{n} inputs"
            )
            raise ModelError(
                f"module {self.module_name!r} ran on a batch of {batch} sequences for {given}"
                ": pytest-rnncov feeds inputs with the batch on axis 0; wrap a model "
                "that takes (steps, batch, ...) so that it takes (batch, steps, ...)"
            )

    def _check_layout(self, x: np.ndarray, captured: Any) -> None:
        """When ``len(x)`` inputs reached the module as that many sequences of that many
        steps, its shapes cannot tell a batch-major model from a time-major one (a model
        passing (batch, steps, ...) to a ``batch_first=False`` module traces wrong): once,
        run the model on one input more (never as many as the steps) and check that the
        module ran on that many sequences. The pass's own results stay as they were."""
        from torch.nn.utils.rnn import PackedSequence

        n = len(x)
        if self._layout_known or n < 2 or isinstance(captured, PackedSequence):
            return
        if captured.ndim != 3 or captured.shape[0] != captured.shape[1]:
            self._layout_known = True  # the batch check above told the axes apart
            return
        split = self._split  # the pass's split values: the probe's own pass resets them
        try:
            probe = self._run_model(np.concatenate([x, x[:1]]), outputs=False)[1]
        except ModelError as exc:
            raise ModelError(
                f"module {self.module_name!r} ran on {n} sequences of {n} steps, so its "
                f"shapes do not tell which axis is the batch, and running the model on {n + 1} "
                f"inputs to tell failed: {exc}"
            ) from None
        finally:
            self._split = split
        self._check_batch(probe, n + 1, probe=True)
        self._layout_known = True

    def _check_order(self, x: np.ndarray, captured: Any) -> None:
        """Refuse a model that reorders its batch before the module (sorts it by length to
        pack it with ``enforce_sorted=True``, takes ``x[perm]``): the module's rows, and so
        the trace's, would not be the inputs'. ``OrderCheck`` runs the model up to the
        module on reorderings of the first batches. The pass's own results stay."""
        import torch
        from torch.nn.utils.rnn import PackedSequence

        if self._order.done or len(x) < 2:
            return
        steps = int(x.shape[1])
        sizes = captured.batch_sizes if isinstance(captured, PackedSequence) else None
        split = self._split  # the pass's split values: the probe's own pass resets them
        try:
            kept = self._order.keeps_order(
                x,
                self._padded(captured, steps),
                sizes,
                lambda batch: self._padded(self._run_model(batch, outputs=False)[1], steps),
                torch.allclose,
            )
        finally:
            self._split = split
        if not kept:
            raise ModelError(
                f"model {self.name}: module {self.module_name!r} does not get the inputs' "
                f"rows in their order: {REORDERED}"
            )

    # -- fingerprint --------------------------------------------------------------------
    def _weight_arrays(self) -> list[np.ndarray]:
        return [_numpy(t) for t in self.model.state_dict().values() if t.is_floating_point()]

    def _structure(self) -> str:
        return hashlib.sha256(repr(self.model).encode()).hexdigest()
