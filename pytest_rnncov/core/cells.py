"""Recurrent cells in float32, recording their gates (SPEC section 1).

Each cell holds its weights in one canonical layout (Keras's gate order; adapters convert
other frameworks' layouts) and the layer's own activation functions. Two ways to a trace:

- ``from_states`` (the fast path): the framework's own forward pass gives the layer's
  ``h`` at every step; the gates of all steps then follow from ``[x_t, h_{t-1}]`` in one
  batched matmul, and only an LSTM's cell state needs its elementwise recurrence. Only
  the components asked for are computed (none but ``h`` for metrics reading ``h``).
- ``forward`` (the reference, and the fallback where a framework hides ``h``): the layer
  run again step by step, one matmul for all input projections, one per step for the
  recurrence, activations applied in place on contiguous gate blocks.

At a masked step the framework keeps the previous state; every component then repeats the
previous step's values (zeros before the first real step).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from ..errors import InvalidArgument
from ..validation import check_int
from .activations import Activation
from .arrays import array_namespace, device, is_host, is_jax_array, like
from .trace import CELL_COMPONENTS, Trace, select_components

#: bytes of ``[x_t, h_{t-1}]`` per block of rows when gates are computed on the host
HOST_BLOCK_BYTES = 1 << 21


def _f32(a: Any) -> np.ndarray:
    return np.ascontiguousarray(a, dtype=np.float32)


def _halve_sigmoid_blocks(
    activation: Activation, *arrays: np.ndarray | None, columns: slice
) -> tuple[bool, list[np.ndarray | None]]:
    """For a sigmoid recurrent activation, the weights of the sigmoid blocks halved, so that
    ``sigmoid(z) = 0.5 * tanh(z') + 0.5`` with ``z' = z / 2`` computed by the matmuls
    themselves (halving is exact in binary floating point)."""
    if activation.name != "sigmoid":
        return False, [None if a is None else _f32(a) for a in arrays]
    out: list[np.ndarray | None] = []
    for a in arrays:
        if a is None:
            out.append(None)
            continue
        a = np.array(a, dtype=np.float32)
        a[..., columns] *= np.float32(0.5)
        out.append(a)
    return True, out


def _finish_sigmoid(block: np.ndarray) -> None:
    """``0.5 * tanh(block) + 0.5`` in place (the block holds z / 2)."""
    np.tanh(block, out=block)
    block *= np.float32(0.5)
    block += np.float32(0.5)


class Cell:
    """A recurrent cell: ``forward(x, mask)`` returns its trace, (B, T, U) per component.

    Kernels work time-major and in place: the input projections of every step are computed
    by one matmul into the array that then holds the gates, so each gate is a view, never a
    copy.
    """

    kind: ClassVar[str]
    #: how many gate blocks the kernel's columns hold (LSTM 4, GRU 3, SimpleRNN 1)
    blocks: ClassVar[int]
    kernel: np.ndarray
    activation: Activation
    go_backwards: bool
    #: the weights as device arrays, per (namespace, device)
    cache: dict[Any, Any]

    @property
    def components(self) -> tuple[str, ...]:
        return CELL_COMPONENTS[self.kind]

    @property
    def units(self) -> int:
        return int(self.kernel.shape[1] // self.blocks)

    def arrays(self) -> list[np.ndarray]:
        """Every weight array (for fingerprints)."""
        raise NotImplementedError

    def describe(self) -> str:
        """The cell's type and options, for fingerprints and messages."""
        raise NotImplementedError

    def _run(self, x: np.ndarray, keep: np.ndarray | None) -> dict[str, np.ndarray]:
        """Time-major components (T, B, width) for time-major-ready input ``x`` (B, T, D)."""
        raise NotImplementedError

    def _activations(self) -> list[Activation]:
        """The activations the cell applies."""
        return [self.activation]

    def _step_xp(
        self, xp: Any, w: dict[str, Any], x_t: Any, state: dict[str, Any]
    ) -> dict[str, Any]:
        """One step in array-API form: the components at this step (new state included)."""
        raise NotImplementedError

    def _named_weights(self) -> dict[str, np.ndarray | None]:
        """The weights under the names ``_step_xp`` uses (None: absent)."""
        raise NotImplementedError

    def _weights_xp(self, like_array: Any) -> dict[str, Any]:
        """The weights as float32 arrays of ``like_array``'s namespace and device, converted
        once per namespace and device."""
        key = (array_namespace(like_array).__name__, str(device(like_array)))
        if key not in self.cache:
            f32 = array_namespace(like_array).float32
            self.cache[key] = {
                name: None if value is None else like(value, like_array, f32)
                for name, value in self._named_weights().items()
            }
        return self.cache[key]

    @property
    def on_device(self) -> bool:
        """Whether this cell can run on a framework's own arrays (known activations)."""
        return all(a.on_device for a in self._activations())

    def forward(
        self, x: Any, mask: Any = None, until: int | None = None, components: Any = None
    ) -> Trace:
        """The trace of ``x`` (B, T, D) recomputed from the weights (the reference kernel);
        ``mask`` (B, T) marks real steps (input order). With ``until``, only the first
        ``until`` steps (in processing order) are computed; ``components`` keeps only those.
        numpy input runs the in-place numpy kernel; a framework's arrays (torch, JAX) run
        the array-API kernel where they are, and the trace stays there."""
        names = select_components(self.kind, components)
        if until is not None:
            check_int("until", until, minimum=1)
        _check_some_steps("x", x)
        trace = self._forward_all(x, mask, until)
        if names == trace.names:
            return trace
        return Trace(
            {n: trace.components[n] for n in names},
            cell=self.kind,
            mask=trace.mask,
            length=trace.length,
        )

    def _forward_all(self, x: Any, mask: Any, until: int | None) -> Trace:
        if not is_host(x) and self.on_device:
            return self._forward_xp(x, mask, until)
        if not is_host(x):
            from .arrays import to_host

            x, mask = to_host(x), None if mask is None else to_host(mask)
        x = np.asarray(x, dtype=np.float32)
        length = x.shape[1]
        if self.go_backwards:
            x = x[:, ::-1]
            mask = None if mask is None else mask[:, ::-1]
        if until is not None and until < length:
            x = x[:, :until]
            mask = None if mask is None else mask[:, :until]
        keep = None if mask is None else np.ascontiguousarray(np.asarray(mask, bool).T)[:, :, None]
        out = self._run(x, keep)
        return Trace(
            {n: np.swapaxes(out[n], 0, 1) for n in self.components},
            cell=self.kind,
            mask=None if mask is None else np.asarray(mask, bool),
            length=length,
        )

    def from_states(
        self,
        x: Any,
        states: Any,
        mask: Any = None,
        until: int | None = None,
        components: Any = None,
    ) -> Trace:
        """The trace from the layer's own states: ``states`` is the framework's ``h``
        (B, T, H) at every step in processing order, or a dict of ``h`` and any other
        components the framework gave; ``x`` (B, T, D) is the layer's input and ``mask``
        (B, T) its real steps, both in input order (``x`` may be None when nothing is
        left to compute).

        The gates asked for and not given are computed for all steps at once from
        ``[x_t, h_{t-1}]``; an LSTM's cell state by its elementwise recurrence. At masked
        steps every component repeats the step before (zeros before the first real step),
        as in ``forward``. Arrays stay in their own namespace (numpy, or a framework's on
        its device). ``until`` cuts the trace to its first steps, except a JAX ``h`` that
        nothing is computed from, unmasked: there a cut would be a copy of its own."""
        names = select_components(self.kind, components)
        if until is not None:
            check_int("until", until, minimum=1)
        given = dict(states) if isinstance(states, dict) else {"h": states}
        _check_some_steps("states", given["h"])
        xp = array_namespace(given["h"])
        length = int(given["h"].shape[1])
        steps = length if until is None else min(int(until), length)
        missing = tuple(n for n in names if n not in given)
        if is_jax_array(given["h"]) and mask is None and not missing:
            steps = length  # nothing to compute: under JAX a cut is a dispatch and a copy
        if mask is not None:
            mask = xp.flip(mask, axis=1) if self.go_backwards else mask
            mask = xp.astype(mask[:, :steps], xp.bool)
            rows = int(given["h"].shape[0])
            if tuple(int(n) for n in mask.shape) != (rows, steps):
                raise InvalidArgument(
                    f"mask has shape {tuple(mask.shape)} for states of {rows} inputs and "
                    f"{length} steps; pass one boolean per input and step"
                )
        held = _Holder(xp, mask)
        out = {
            n: held(_first_steps(xp, v, steps)) for n, v in given.items() if n in names or n == "h"
        }
        if missing:
            if x is None:
                raise InvalidArgument(
                    f"x=None, but {', '.join(missing)} must be computed from the layer's "
                    "input: pass x, or ask only for components the states hold"
                )
            x = xp.flip(x, axis=1) if self.go_backwards else x
            computed = self._computed(xp, x[:, :steps], out["h"], mask, missing)
            out.update({n: v for n, v in computed.items() if n not in out})
        return Trace({n: out[n] for n in names}, cell=self.kind, mask=mask, length=length)

    def _computed(
        self, xp: Any, x: Any, h: Any, mask: Any, missing: tuple[str, ...]
    ) -> dict[str, Any]:
        """The ``missing`` components (and the gates they need) from the layer's input
        and ``h``, held at masked steps. numpy arrays go in blocks of rows whose ``[x_t,
        h_{t-1}]`` stays in a core's cache (``HOST_BLOCK_BYTES``): the same matmuls and
        values, faster than over a whole batch (docs/performance.md)."""
        rows = int(x.shape[0])
        block = max(1, HOST_BLOCK_BYTES // (4 * int(x.shape[1]) * int(x.shape[2] + h.shape[2])))
        if not is_host(x) or rows <= block:
            return self._computed_rows(xp, x, h, mask, missing)
        parts = [
            self._computed_rows(
                xp,
                x[s : s + block],
                h[s : s + block],
                None if mask is None else mask[s : s + block],
                missing,
            )
            for s in range(0, rows, block)
        ]
        return {n: np.concatenate([part[n] for part in parts]) for n in parts[0]}

    def _computed_rows(
        self, xp: Any, x: Any, h: Any, mask: Any, missing: tuple[str, ...]
    ) -> dict[str, Any]:
        held = _Holder(xp, mask)
        inputs = _Steps(xp, x, h)
        gates = self._gates(xp, self._selected_weights(inputs.x), inputs, missing)
        out = {n: held(gates[n]) for n in missing if n != "c"}
        if "c" in missing:
            out["c"] = self._recurrence(xp, gates, mask)
        return out

    def _selected_weights(self, like_array: Any) -> "_Weights":
        key = ("columns", array_namespace(like_array).__name__, str(device(like_array)))
        return _Weights(self._weights_xp(like_array), self.cache.setdefault(key, {}))

    def _gates(
        self, xp: Any, w: "_Weights", inputs: "_Steps", names: tuple[str, ...]
    ) -> dict[str, Any]:
        """The gates among (or needed for) ``names`` at every step, (B, T, U) each."""
        raise NotImplementedError

    def _cell_state(self, xp: Any, gates: dict[str, Any], mask: Any) -> Any:
        raise NotImplementedError

    def _recurrence(self, xp: Any, gates: dict[str, Any], mask: Any) -> Any:
        """``_cell_state``; for JAX arrays compiled once (each of its per-step operations
        would otherwise be a dispatch of its own: 3x the model's call on a GPU)."""
        if not is_jax_array(gates["i"]):
            return self._cell_state(xp, gates, mask)
        if "jit_cell_state" not in self.cache:
            import jax

            self.cache["jit_cell_state"] = jax.jit(
                lambda gates, mask: self._cell_state(array_namespace(gates["i"]), gates, mask)
            )
        return self.cache["jit_cell_state"](gates, mask)

    def _forward_xp(self, x: Any, mask: Any, until: int | None) -> Trace:
        xp = array_namespace(x)
        x = xp.astype(x, xp.float32)
        length = x.shape[1]
        if self.go_backwards:
            x = xp.flip(x, axis=1)
            mask = None if mask is None else xp.flip(mask, axis=1)
        if until is not None and until < length:
            x = x[:, :until]
            mask = None if mask is None else mask[:, :until]
        w = self._weights_xp(x)
        run = self._run_xp
        if is_jax_array(x):  # one compiled computation per shape instead of an op per call
            if "jit" not in self.cache:
                import jax

                self.cache["jit"] = jax.jit(self._run_xp)
            run = self.cache["jit"]
        return Trace(run(w, x, mask), cell=self.kind, mask=mask, length=length)

    def _run_xp(self, w: dict[str, Any], x: Any, mask: Any) -> dict[str, Any]:
        """Every step in array-API form: the components, (B, T, width) each."""
        xp = array_namespace(x)
        batch = x.shape[0]
        state = {
            name: xp.zeros((batch, self._width_xp(name, w)), dtype=xp.float32, **_on(x))
            for name in self.components
        }
        steps: dict[str, list[Any]] = {name: [] for name in self.components}
        for t in range(x.shape[1]):
            new = self._step_xp(xp, w, x[:, t], state)
            if mask is not None:  # masked rows keep every component of the step before
                keep = mask[:, t][:, None]
                new = {n: xp.where(keep, v, state[n]) for n, v in new.items()}
            state = new
            for name in self.components:
                steps[name].append(new[name])
        return {n: xp.stack(v, axis=1) for n, v in steps.items()}

    def _width_xp(self, component: str, w: dict[str, Any]) -> int:
        return self.units

    @staticmethod
    def _input_projection(x: np.ndarray, kernel: np.ndarray, bias: np.ndarray | None) -> np.ndarray:
        """x @ kernel (+ bias) for all steps at once, time-major: (T, B, width)."""
        batch, steps, _ = x.shape
        z = np.ascontiguousarray(x.transpose(1, 0, 2)).reshape(steps * batch, -1) @ kernel
        if bias is not None:
            z += bias
        return z.reshape(steps, batch, -1)

    @staticmethod
    def _hold(t: int, keep: np.ndarray | None, *arrays: np.ndarray) -> None:
        """At masked rows of step t, every array repeats step t-1 (zeros at t = 0)."""
        if keep is None:
            return
        for values in arrays:
            if t == 0:
                values[0] *= keep[0]
            else:
                np.copyto(values[t], values[t - 1], where=~keep[t])


@dataclass(frozen=True, eq=False)
class LSTMCell(Cell):
    """LSTM with gate blocks i, f, c~, o (Keras order; PyTorch's i, f, g, o is the same).

    ``projection`` (U, P) is PyTorch's ``proj_size``: h = (o * act(c)) @ projection, and the
    recurrent kernel then has P rows.
    """

    kernel: np.ndarray  # (D, 4U)
    recurrent: np.ndarray  # (U or P, 4U)
    bias: np.ndarray | None  # (4U,)
    activation: Activation
    recurrent_activation: Activation
    go_backwards: bool = False
    projection: np.ndarray | None = None  # (U, P)

    cache: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    kind: ClassVar[str] = "lstm"
    blocks: ClassVar[int] = 4

    def _activations(self) -> list[Activation]:
        return [self.activation, self.recurrent_activation]

    def _named_weights(self) -> dict[str, np.ndarray | None]:
        return {
            "kernel": self.kernel,
            "recurrent": self.recurrent,
            "bias": self.bias,
            "projection": self.projection,
        }

    def _width_xp(self, component: str, w: dict[str, Any]) -> int:
        if component == "h" and w["projection"] is not None:
            return int(w["projection"].shape[1])
        return self.units

    def _step_xp(
        self, xp: Any, w: dict[str, Any], x_t: Any, state: dict[str, Any]
    ) -> dict[str, Any]:
        u = self.units
        z = x_t @ w["kernel"] + state["h"] @ w["recurrent"]
        if w["bias"] is not None:
            z = z + w["bias"]
        gate, act = self.recurrent_activation, self.activation
        i, f = gate.xp(xp, z[:, :u]), gate.xp(xp, z[:, u : 2 * u])
        g, o = act.xp(xp, z[:, 2 * u : 3 * u]), gate.xp(xp, z[:, 3 * u :])
        c = i * g + f * state["c"]
        h = o * act.xp(xp, c)
        if w["projection"] is not None:
            h = h @ w["projection"]
        return {"f": f, "i": i, "o": o, "c": c, "h": h}

    def _gates(
        self, xp: Any, w: "_Weights", inputs: "_Steps", names: tuple[str, ...]
    ) -> dict[str, Any]:
        wanted = set(names) | ({"i", "f", "g"} if "c" in names else set())
        blocks = [b for b in ("i", "f", "g", "o") if b in wanted]
        z = _projection(
            xp,
            w,
            self.units,
            (0, 1, 2, 3),
            [("i", "f", "g", "o").index(b) for b in blocks],
            inputs,
            "kernel",
            "recurrent",
            "bias",
        )
        out: dict[str, Any] = {}
        for k, block in enumerate(blocks):
            act = self.activation if block == "g" else self.recurrent_activation
            out[block] = _activate(act, xp, z[k])
        return out

    def _cell_state(self, xp: Any, gates: dict[str, Any], mask: Any) -> Any:
        i, f, g = gates["i"], gates["f"], gates["g"]
        if is_host(i):  # in place, time-major: c_t = f_t * c_{t-1} + (i * g)_t
            c_all = np.ascontiguousarray(np.swapaxes(i * g, 0, 1))
            f_t = np.ascontiguousarray(np.swapaxes(f, 0, 1))
            keep = None if mask is None else np.ascontiguousarray(mask.T)[:, :, None]
            scratch = np.empty_like(c_all[0])
            for t in range(c_all.shape[0]):
                if t:
                    np.multiply(f_t[t], c_all[t - 1], out=scratch)
                    c_all[t] += scratch
                self._hold(t, keep, c_all)
            return np.swapaxes(c_all, 0, 1)
        c = xp.zeros_like(i[:, 0])
        states = []
        for t in range(i.shape[1]):
            new = f[:, t] * c + i[:, t] * g[:, t]
            c = new if mask is None else xp.where(mask[:, t][:, None], new, c)
            states.append(c)
        return xp.stack(states, axis=1)

    def arrays(self) -> list[np.ndarray]:
        return [
            a for a in (self.kernel, self.recurrent, self.bias, self.projection) if a is not None
        ]

    def describe(self) -> str:
        return (
            f"lstm|{self.activation.name}|{self.recurrent_activation.name}|"
            f"backwards={self.go_backwards}|projection={self.projection is not None}"
        )

    def _run(self, x: np.ndarray, keep: np.ndarray | None) -> dict[str, np.ndarray]:
        u = self.units
        # blocks reordered to i, f, o | c~: one in-place call covers the three gates
        order = np.r_[0 : 2 * u, 3 * u : 4 * u, 2 * u : 3 * u]
        halved, (kernel, recurrent, bias) = _halve_sigmoid_blocks(
            self.recurrent_activation,
            self.kernel[:, order],
            self.recurrent[:, order],
            None if self.bias is None else self.bias[order],
            columns=slice(0, 3 * u),
        )
        assert kernel is not None and recurrent is not None
        gates = self._input_projection(x, kernel, bias)  # (T, B, 4U): becomes i, f, o, c~
        steps, batch = gates.shape[:2]
        width = recurrent.shape[0]
        c_all = np.empty((steps, batch, u), np.float32)
        h_all = np.empty((steps, batch, width), np.float32)
        recur = np.empty((batch, 4 * u), np.float32)
        scratch = np.empty((batch, u), np.float32)
        act = self.activation.apply
        gate = _finish_sigmoid if halved else self.recurrent_activation.apply
        for t in range(steps):
            z = gates[t]
            if t:
                np.matmul(h_all[t - 1], recurrent, out=recur)
                z += recur
            gate(z[:, : 3 * u])
            act(z[:, 3 * u :])
            i, f, o, g = z[:, :u], z[:, u : 2 * u], z[:, 2 * u : 3 * u], z[:, 3 * u :]
            c = c_all[t]
            np.multiply(i, g, out=c)
            if t:
                np.multiply(f, c_all[t - 1], out=scratch)
                c += scratch
            np.copyto(scratch, c)
            act(scratch)
            scratch *= o
            if self.projection is None:
                np.copyto(h_all[t], scratch)
            else:
                np.matmul(scratch, self.projection, out=h_all[t])
            self._hold(t, keep, gates, c_all, h_all)
        return {
            "i": gates[..., :u],
            "f": gates[..., u : 2 * u],
            "o": gates[..., 2 * u : 3 * u],
            "c": c_all,
            "h": h_all,
        }


@dataclass(frozen=True, eq=False)
class GRUCell(Cell):
    """GRU with gate blocks z, r, n (Keras order; adapters reorder PyTorch's r, z, n).

    ``reset_after=True`` (Keras 3 default, PyTorch): n = act(x W_n + b_n + r * (h U_n + c_n)).
    ``reset_after=False``: n = act(x W_n + b_n + (r * h) U_n). Then h = z * h + (1 - z) * n.
    """

    kernel: np.ndarray  # (D, 3U)
    recurrent: np.ndarray  # (U, 3U)
    input_bias: np.ndarray | None  # (3U,)
    recurrent_bias: np.ndarray | None  # (3U,), only with reset_after
    reset_after: bool
    activation: Activation
    recurrent_activation: Activation
    go_backwards: bool = False

    cache: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    kind: ClassVar[str] = "gru"
    blocks: ClassVar[int] = 3

    def _activations(self) -> list[Activation]:
        return [self.activation, self.recurrent_activation]

    def _named_weights(self) -> dict[str, np.ndarray | None]:
        return {
            "kernel": self.kernel,
            "recurrent": self.recurrent,
            "input_bias": self.input_bias,
            "recurrent_bias": self.recurrent_bias,
        }

    def _step_xp(
        self, xp: Any, w: dict[str, Any], x_t: Any, state: dict[str, Any]
    ) -> dict[str, Any]:
        u = self.units
        x_proj = x_t @ w["kernel"]
        if w["input_bias"] is not None:
            x_proj = x_proj + w["input_bias"]
        h_prev = state["h"]
        gate, act = self.recurrent_activation, self.activation
        if self.reset_after:
            rec = h_prev @ w["recurrent"]
            if w["recurrent_bias"] is not None:
                rec = rec + w["recurrent_bias"]
            z = gate.xp(xp, x_proj[:, :u] + rec[:, :u])
            r = gate.xp(xp, x_proj[:, u : 2 * u] + rec[:, u : 2 * u])
            n = act.xp(xp, x_proj[:, 2 * u :] + r * rec[:, 2 * u :])
        else:
            rec = h_prev @ w["recurrent"][:, : 2 * u]
            z = gate.xp(xp, x_proj[:, :u] + rec[:, :u])
            r = gate.xp(xp, x_proj[:, u : 2 * u] + rec[:, u:])
            n = act.xp(xp, x_proj[:, 2 * u :] + (r * h_prev) @ w["recurrent"][:, 2 * u :])
        h = n + z * (h_prev - n)
        return {"z": z, "r": r, "n": n, "h": h}

    def _gates(
        self, xp: Any, w: "_Weights", inputs: "_Steps", names: tuple[str, ...]
    ) -> dict[str, Any]:
        u = self.units
        x, previous = inputs.x, inputs.previous
        wanted = set(names) | ({"r"} if "n" in names else set())
        out: dict[str, Any] = {}
        if self.reset_after:
            blocks = [k for k, b in enumerate("zrn") if b in wanted]
            x_part = _projection(xp, w, u, (0, 1, 2), blocks, x, "kernel", None, "input_bias")
            h_part = _projection(
                xp, w, u, (0, 1, 2), blocks, previous, "recurrent", None, "recurrent_bias"
            )
            parts = dict(zip(("zrn"[k] for k in blocks), zip(x_part, h_part)))
            for gate in ("z", "r"):
                if gate in parts:
                    x_g, h_g = parts[gate]
                    out[gate] = _activate(self.recurrent_activation, xp, x_g + h_g)
            if "n" in wanted:
                x_n, h_n = parts["n"]
                out["n"] = _activate(self.activation, xp, x_n + out["r"] * h_n)
            return out
        blocks = [k for k, b in enumerate("zr") if b in wanted]
        z = _projection(xp, w, u, (0, 1), blocks, inputs, "kernel", "recurrent", "input_bias")
        for k, values in zip(blocks, z):
            out["zr"[k]] = _activate(self.recurrent_activation, xp, values)
        if "n" in wanted:
            (x_n,) = _projection(xp, w, u, (2,), [0], x, "kernel", None, "input_bias")
            (h_n,) = _projection(xp, w, u, (2,), [0], out["r"] * previous, "recurrent")
            out["n"] = _activate(self.activation, xp, x_n + h_n)
        return out

    def arrays(self) -> list[np.ndarray]:
        return [
            a
            for a in (self.kernel, self.recurrent, self.input_bias, self.recurrent_bias)
            if a is not None
        ]

    def describe(self) -> str:
        return (
            f"gru|{self.activation.name}|{self.recurrent_activation.name}|"
            f"backwards={self.go_backwards}|reset_after={self.reset_after}"
        )

    def _run(self, x: np.ndarray, keep: np.ndarray | None) -> dict[str, np.ndarray]:
        u = self.units
        gates_only = slice(0, 2 * u)
        halved, (kernel, recurrent, input_bias, recurrent_bias) = _halve_sigmoid_blocks(
            self.recurrent_activation,
            self.kernel,
            self.recurrent,
            self.input_bias,
            self.recurrent_bias,
            columns=gates_only,
        )
        assert kernel is not None and recurrent is not None
        gates = self._input_projection(x, kernel, input_bias)  # (T, B, 3U): becomes z, r, n
        steps, batch = gates.shape[:2]
        h_all = np.empty((steps, batch, u), np.float32)
        recur = np.zeros((batch, 3 * u), np.float32)
        gate = _finish_sigmoid if halved else self.recurrent_activation.apply
        act = self.activation.apply
        for t in range(steps):
            z_all = gates[t]
            previous = h_all[t - 1] if t else None
            if self.reset_after:
                if previous is not None:
                    np.matmul(previous, recurrent, out=recur)
                if recurrent_bias is not None:
                    if previous is None:
                        recur[...] = 0
                    recur += recurrent_bias
                z_all[:, gates_only] += recur[:, gates_only]
                gate(z_all[:, gates_only])
                r = z_all[:, u : 2 * u]
                z_all[:, 2 * u :] += r * recur[:, 2 * u :]  # the candidate's columns are whole
            else:
                if previous is not None:
                    np.matmul(previous, recurrent[:, gates_only], out=recur[:, gates_only])
                    z_all[:, gates_only] += recur[:, gates_only]
                gate(z_all[:, gates_only])
                r = z_all[:, u : 2 * u]
                if previous is not None:
                    z_all[:, 2 * u :] += (r * previous) @ recurrent[:, 2 * u :]
            act(z_all[:, 2 * u :])
            zg, n, h = z_all[:, :u], z_all[:, 2 * u :], h_all[t]
            # h = z * h_prev + (1 - z) * n  ==  n + z * (h_prev - n)
            if previous is None:
                np.multiply(zg, n, out=h)
                np.subtract(n, h, out=h)
            else:
                np.subtract(previous, n, out=h)
                h *= zg
                h += n
            self._hold(t, keep, gates, h_all)
        return {
            "z": gates[..., :u],
            "r": gates[..., u : 2 * u],
            "n": gates[..., 2 * u :],
            "h": h_all,
        }


@dataclass(frozen=True, eq=False)
class SimpleRNNCell(Cell):
    """Elman RNN: h = act(x W + b + h U)."""

    kernel: np.ndarray  # (D, U)
    recurrent: np.ndarray  # (U, U)
    bias: np.ndarray | None  # (U,)
    activation: Activation
    go_backwards: bool = False

    cache: dict[Any, Any] = field(default_factory=dict, compare=False, repr=False)

    kind: ClassVar[str] = "simple_rnn"
    blocks: ClassVar[int] = 1

    def _named_weights(self) -> dict[str, np.ndarray | None]:
        return {"kernel": self.kernel, "recurrent": self.recurrent, "bias": self.bias}

    def _step_xp(
        self, xp: Any, w: dict[str, Any], x_t: Any, state: dict[str, Any]
    ) -> dict[str, Any]:
        h = x_t @ w["kernel"] + state["h"] @ w["recurrent"]
        if w["bias"] is not None:
            h = h + w["bias"]
        return {"h": self.activation.xp(xp, h)}

    def arrays(self) -> list[np.ndarray]:
        return [a for a in (self.kernel, self.recurrent, self.bias) if a is not None]

    def describe(self) -> str:
        return f"simple_rnn|{self.activation.name}|backwards={self.go_backwards}"

    def _run(self, x: np.ndarray, keep: np.ndarray | None) -> dict[str, np.ndarray]:
        recurrent = _f32(self.recurrent)
        h_all = self._input_projection(
            x, _f32(self.kernel), None if self.bias is None else _f32(self.bias)
        )
        recur = np.empty(h_all.shape[1:], np.float32)
        for t in range(h_all.shape[0]):
            if t:
                np.matmul(h_all[t - 1], recurrent, out=recur)
                h_all[t] += recur
            self.activation.apply(h_all[t])
            self._hold(t, keep, h_all)
        return {"h": h_all}


class _Steps:
    """A layer's input ``x`` and its state before each step ``previous`` (zeros, then
    ``h_{t-1}``), (B, T, width) each; on the host side by side in one array ``joined``
    (x and previous are views of it), so one matmul covers both."""

    def __init__(self, xp: Any, x: Any, h: Any) -> None:
        self.joined: Any = None
        if is_host(x):
            batch, steps, width = x.shape
            self.joined = np.empty((batch, steps, width + h.shape[2]), np.float32)
            self.joined[..., :width] = x
            self.joined[:, 0, width:] = 0
            self.joined[:, 1:, width:] = h[:, :-1]
            self.x, self.previous = self.joined[..., :width], self.joined[..., width:]
        else:
            self.x = xp.astype(x, xp.float32)
            self.previous = xp.concat([xp.zeros_like(h[:, :1]), h[:, :-1]], axis=1)


class _Weights:
    """A cell's weights in one namespace and device, with their gate columns selected once
    per selection (weights are fixed)."""

    def __init__(self, weights: dict[str, Any], selections: dict[Any, Any]) -> None:
        self.weights, self.selections = weights, selections

    def has(self, name: str) -> bool:
        return self.weights[name] is not None

    def columns(self, xp: Any, name: str, columns: list[int]) -> Any:
        key = (name, tuple(columns))
        if key not in self.selections:
            weight = self.weights[name]
            self.selections[key] = xp.take(weight, like(np.asarray(columns), weight), axis=-1)
        return self.selections[key]

    def stacked(self, names: tuple[str, str], columns: list[int]) -> np.ndarray:
        """numpy: the columns of two weights stacked, ``[kernel; recurrent]``."""
        key = (names, tuple(columns))
        if key not in self.selections:
            self.selections[key] = np.ascontiguousarray(
                np.concatenate([self.columns(np, n, columns) for n in names], axis=0)
            )
        return self.selections[key]


def _projection(
    xp: Any,
    w: _Weights,
    units: int,
    layout: tuple[int, ...],
    blocks: list[int],
    values: Any,
    kernel: str,
    recurrent: str | None = None,
    bias: str | None = None,
) -> list[Any]:
    """``x @ kernel (+ previous @ recurrent) (+ bias)`` for gate ``blocks`` (positions in
    ``layout``, the weight's block numbers) of every step in one matmul each: (B, T, U) per
    block. ``values`` is a (B, T, width) array ``x`` or, with ``recurrent``, the
    :class:`_Steps` holding ``x`` and ``previous``."""
    columns = [c for k in blocks for c in range(layout[k] * units, (layout[k] + 1) * units)]
    x = values if recurrent is None else values.x
    previous = None if recurrent is None else values.previous
    batch, steps = x.shape[0], x.shape[1]
    if is_host(x):  # per block, one matmul of [x_t, h_{t-1}] with the stacked weights
        joined = x if recurrent is None else values.joined
        joined = joined.reshape(batch * steps, -1)
        out = []
        for k in range(len(blocks)):
            block = columns[k * units : (k + 1) * units]
            weight = (
                w.columns(np, kernel, block)
                if recurrent is None
                else w.stacked((kernel, recurrent), block)
            )
            z = np.matmul(joined, weight)  # contiguous, so activations run at full speed
            if bias is not None and w.has(bias):
                z += w.columns(np, bias, block)
            out.append(z.reshape(batch, steps, units))
        return out

    def times(part: Any, name: str) -> Any:
        weight = w.columns(xp, name, columns)
        return xp.matmul(xp.reshape(part, (batch * steps, part.shape[2])), weight)

    z = times(x, kernel)
    if recurrent is not None:
        z = z + times(previous, recurrent)
    if bias is not None and w.has(bias):
        z = z + w.columns(xp, bias, columns)
    z = xp.reshape(z, (batch, steps, len(columns)))
    return [z[..., k * units : (k + 1) * units] for k in range(len(blocks))]


def _activate(act: Activation, xp: Any, values: Any) -> Any:
    """``act`` on a fresh array: in place with the numpy twin on the host, the array-API
    twin elsewhere."""
    if is_host(values):
        act.apply(values)
        return values
    return act.xp(xp, values)


class _Holder:
    """Makes masked steps repeat the step before (zeros before the first real step)."""

    def __init__(self, xp: Any, mask: Any) -> None:
        self.xp, self.mask = xp, mask
        self.source: Any = None
        if mask is not None and is_host(mask):
            steps = np.arange(mask.shape[1])
            self.source = np.maximum.accumulate(np.where(mask, steps, -1), axis=1)

    def __call__(self, values: Any) -> Any:
        if self.mask is None:
            return values
        xp, mask = self.xp, self.mask
        if self.source is not None:  # numpy: one gather of whole rows of units
            batch, steps = self.source.shape
            rows = np.arange(batch)[:, None] * steps + np.maximum(self.source, 0)
            flat = values.reshape(batch * steps, *values.shape[2:])
            held = np.take(flat, rows.ravel(), axis=0).reshape(values.shape)
            held[self.source < 0] = 0
            return held
        state = xp.zeros_like(values[:, 0])
        steps = []
        for t in range(values.shape[1]):
            state = xp.where(mask[:, t][:, None], values[:, t], state)
            steps.append(state)
        return xp.stack(steps, axis=1)


def _on(array: Any) -> dict[str, Any]:
    """The ``device=`` keyword for creating arrays beside ``array`` (none for JAX)."""
    return {} if is_jax_array(array) else {"device": device(array)}


def _first_steps(xp: Any, values: Any, steps: int) -> Any:
    """The first ``steps`` steps of (B, T, U) ``values`` as float32, without a copy when
    nothing is cut or cast (a device array's slice is a dispatch of its own under JAX)."""
    if int(values.shape[1]) != steps:
        values = values[:, :steps]
    return values if values.dtype == xp.float32 else xp.astype(values, xp.float32)


def _check_some_steps(what: str, array: Any) -> None:
    """Raise InvalidArgument unless ``array`` (B, T, ...) holds at least one input and step."""
    shape = tuple(getattr(array, "shape", ()))
    if len(shape) < 3 or 0 in shape[:2]:
        raise InvalidArgument(
            f"{what} has shape {shape}; pass (batch, steps, features) arrays with at least one "
            "input and one step"
        )
