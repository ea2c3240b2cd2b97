"""The ONNX adapter: ``LSTM``, ``GRU`` and ``RNN`` nodes of an ONNX graph, run by ONNX Runtime.

A ``.onnx`` file is read with ``onnx.load`` and checked (``onnx.checker``, standard operator
domains only, external data only from files inside the model's own folder): nothing in it
runs code. In memory, the traced node's input ``X`` and output ``Y`` (and, where the graph
computes them, its ``sequence_lens`` and initial states) become extra graph outputs, and one
``onnxruntime.InferenceSession`` (CPU) runs the modified graph: one ``session.run`` per
batch gives the model's outputs, the node's input and ``h`` at every step, all from the same
run. The gates follow from the node's weights (initializers), converted from ONNX's gate
layout (LSTM ``W``/``R``/``B`` blocks i, o, f, c; GRU z, r, h; ``B`` holds ``Wb`` then
``Rb``) to the canonical one. ``sequence_lens`` becomes the mask (steps at or beyond a
sequence's length are masked; ONNX zero-fills ``Y`` there, and the trace repeats the last
real step as for every other framework). onnx and onnxruntime are imported only when an
ONNX model is wrapped.
"""

from __future__ import annotations

import hashlib
import math
import os
from pathlib import Path
from typing import Any, NoReturn

import numpy as np

from ..core.activations import Activation
from ..core.cells import Cell, GRUCell, LSTMCell, SimpleRNNCell
from ..errors import InvalidArgument, MissingResource, ModelError, UnknownLayer, UnsafeModel
from ..validation import physical_memory
from .base import REORDERED, Adapter, OrderCheck, direction_hint, model_error_from

KINDS = {"LSTM": "lstm", "GRU": "gru", "RNN": "simple_rnn"}
#: gate blocks per node type
BLOCKS = {"LSTM": 4, "GRU": 3, "RNN": 1}
#: operator domains ONNX Runtime implements itself (no custom-op library)
STANDARD_DOMAINS = ("", "ai.onnx", "ai.onnx.ml", "com.microsoft")
#: ONNX activation names with a numpy twin (HardSigmoid at its defaults alpha 0.2, beta 0.5)
ACTIVATIONS = {
    "sigmoid": "sigmoid",
    "tanh": "tanh",
    "relu": "relu",
    "hardsigmoid": "hard_sigmoid_keras2",
}
#: the default activations of one direction
DEFAULT_ACTIVATIONS = {
    "LSTM": ("Sigmoid", "Tanh", "Tanh"),
    "GRU": ("Sigmoid", "Tanh"),
    "RNN": ("Tanh",),
}
#: numpy dtypes of the ONNX input element types the adapter feeds
INPUT_TYPES = {1: "float32", 6: "int32", 7: "int64"}
_INSTALL = "ONNX models need onnx and onnxruntime: pip install 'pytest-rnncov[onnx]'"


def _modules() -> tuple[Any, Any]:
    try:
        import onnx
        import onnxruntime
    except ImportError:
        raise MissingResource(_INSTALL) from None
    return onnx, onnxruntime


# -- reading and checking ---------------------------------------------------------------
#: the most values of the model's sparse tensors together: ONNX Runtime makes a dense copy
#: of each (and pytest-rnncov of those it reads)
MAX_SPARSE_VALUES = 1 << 28


def _stored(proto: Any) -> Any:
    """Every tensor (``TensorProto``) and sparse tensor (``SparseTensorProto``) the model
    stores: initializers, attributes (constants), subgraphs, and local functions' nodes
    and attribute defaults (``attribute_proto``, which a node can take by reference)."""

    def of_graph(graph: Any) -> Any:
        yield from graph.initializer
        yield from graph.sparse_initializer
        yield from of_attributes(a for node in graph.node for a in node.attribute)

    def of_attributes(attributes: Any) -> Any:
        for attribute in attributes:
            if attribute.HasField("t"):
                yield attribute.t
            yield from attribute.tensors
            yield from attribute.sparse_tensors
            if attribute.HasField("sparse_tensor"):
                yield attribute.sparse_tensor
            if attribute.HasField("g"):
                yield from of_graph(attribute.g)
            for sub in attribute.graphs:
                yield from of_graph(sub)

    yield from of_graph(proto.graph)
    for function in proto.functions:
        yield from of_attributes(a for node in function.node for a in node.attribute)
        yield from of_attributes(getattr(function, "attribute_proto", ()))


def _sparse(stored: Any) -> bool:
    """Whether a stored tensor is a ``SparseTensorProto`` (its data: values and indices)."""
    return type(stored).__name__ == "SparseTensorProto"


def _external_tensors(proto: Any) -> list[Any]:
    """Every tensor whose data lies in another file, a sparse tensor's values and indices
    included."""
    tensors = (
        part
        for stored in _stored(proto)
        for part in ((stored.values, stored.indices) if _sparse(stored) else (stored,))
    )
    return [t for t in tensors if t.data_location == 1]  # TensorProto.EXTERNAL


def _external(proto: Any) -> list[tuple[str, str]]:
    """(tensor name, location) of every tensor whose data lies in another file."""
    return [(t.name, _external_info(t).get("location", "")) for t in _external_tensors(proto)]


def _external_info(tensor: Any) -> dict[str, str]:
    return {entry.key: entry.value for entry in tensor.external_data}


#: bits per element of ONNX's tensor element types (TensorProto.DataType; strings have
#: no fixed size and are never stored apart)
ELEMENT_BITS = {
    1: 32, 2: 8, 3: 8, 4: 16, 5: 16, 6: 32, 7: 64, 9: 8, 10: 16, 11: 64, 12: 32, 13: 64,
    14: 64, 15: 128, 16: 16, 17: 8, 18: 8, 19: 8, 20: 8, 21: 4, 22: 4, 23: 4, 24: 8,
    25: 2, 26: 2, 27: 6, 28: 6,
}  # fmt: skip
#: the largest file protobuf reads (2 GiB): a larger model keeps its weights apart
MAX_PROTO_BYTES = 2**31 - 1


def _nodes(graph: Any) -> Any:
    yield from _with_subgraphs(graph.node)


def _with_subgraphs(nodes: Any) -> Any:
    """``nodes`` and every node of their subgraphs."""
    for node in nodes:
        yield node
        for attribute in node.attribute:
            if attribute.HasField("g"):
                yield from _nodes(attribute.g)
            for sub in attribute.graphs:
                yield from _nodes(sub)


def _prune(graph: Any, wanted: set[str]) -> None:
    """Keep only the outputs of ``graph`` in ``wanted`` and the nodes they depend on.
    ONNX Runtime computes every node, also those no fetched output needs: a 2 KB model
    whose extra output is a 60,000 x 60,000 constant took 14.6 GB at each run."""
    producers = {name: i for i, node in enumerate(graph.node) for name in node.output if name}
    needed: set[int] = set()
    stack = list(wanted)
    while stack:
        index = producers.get(stack.pop())
        if index is None or index in needed:
            continue
        needed.add(index)
        # a subgraph may read any name of the graph around it: all of them count
        stack.extend(used for inner in _with_subgraphs([graph.node[index]]) for used in inner.input)
    # rebuilt from copies in one pass (deleting one element at a time is quadratic)
    if len(needed) < len(graph.node):
        nodes = [_copy(graph.node[index]) for index in sorted(needed)]
        del graph.node[:]
        graph.node.extend(nodes)
    outputs = [_copy(info) for info in graph.output if info.name in wanted]
    if len(outputs) < len(graph.output):
        del graph.output[:]
        graph.output.extend(outputs)


def _copy(message: Any) -> Any:
    """A copy of a protobuf message, independent of the container it came from."""
    copy = type(message)()
    copy.CopyFrom(message)
    return copy


def _all_nodes(proto: Any) -> Any:
    """Every node of the model: its graph's, its subgraphs' and its local functions'."""
    yield from _nodes(proto.graph)
    for function in proto.functions:
        yield from _with_subgraphs(function.node)


def check_onnx(proto: Any, where: str) -> None:
    """Refuse a model the checker rejects or that needs custom operators."""
    onnx, _ = _modules()
    if not isinstance(proto, onnx.ModelProto) or not proto.HasField("graph"):
        raise ModelError(f"{where} is not an ONNX model (no graph); export it with torch.onnx")
    try:
        onnx.checker.check_model(proto)
    except Exception as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise ModelError(f"{where} is not a valid ONNX model: {first[:300]}") from None
    local = {function.domain for function in proto.functions}
    custom = sorted(
        {
            f"{node.op_type} (domain {node.domain!r})"
            for node in _all_nodes(proto)
            if node.domain not in STANDARD_DOMAINS and node.domain not in local
        }
    )
    if custom:
        raise UnsafeModel(
            f"{where} uses custom operators {', '.join(custom[:5])}, which ONNX Runtime runs "
            "only from a compiled library; pytest-rnncov loads standard operators only"
        )
    dense = sum(
        math.prod(int(d) for d in t.dims) if all(d >= 0 for d in t.dims) else MAX_SPARSE_VALUES + 1
        for t in _stored(proto)
        if _sparse(t)
    )
    if dense > MAX_SPARSE_VALUES:
        raise ModelError(
            f"{where} holds sparse tensors of {dense:,} values once dense, which ONNX Runtime "
            f"makes dense when it loads the model; pytest-rnncov loads at most "
            f"{MAX_SPARSE_VALUES:,}: store them dense, or leave them out"
        )


def _check_external(tensor: Any, folder: Path, shown: str) -> int:
    """The bytes of the tensor's external data; refused when outside ``folder``, missing,
    or of another size than the tensor declares (ONNX would read a whole file for a
    tensor of a few values)."""
    name, info = tensor.name, _external_info(tensor)
    location = info.get("location", "")
    if "\0" in location:
        raise ModelError(
            f"{shown}: tensor {name!r} names its data file {location!r}, which is not a file "
            "name (it holds a NUL byte); export the model again"
        )
    target = (folder / location).resolve()
    if (
        not location
        or os.path.isabs(location)
        or not target.is_relative_to(folder)
        or target == folder
    ):
        raise UnsafeModel(
            f"{shown}: tensor {name!r} keeps its data at {location!r}, outside the "
            f"model's folder {str(folder)!r}; pytest-rnncov reads external data only "
            "from files beside the model: save it with its data in that folder"
        )
    if not target.is_file():
        what = "is not a regular file" if target.exists() else "does not exist"
        raise ModelError(
            f"{shown}: tensor {name!r} keeps its data in {location!r}, which {what} in "
            f"{str(folder)!r}; copy the data file beside the model"
        )
    try:
        offset = int(info.get("offset") or 0)
        length = None if info.get("length") in (None, "") else int(info["length"])
    except ValueError:
        raise ModelError(
            f"{shown}: tensor {name!r} has external data at offset {info.get('offset', '0')!r}, "
            f"length {info.get('length')!r}, which are not whole numbers; export it again"
        ) from None
    dims = [int(d) for d in tensor.dims]
    if any(d < 0 for d in dims):
        raise ModelError(
            f"{shown}: tensor {name!r} declares shape {dims}, with a negative dimension; "
            "export the model again"
        )
    size = target.stat().st_size
    held = size - offset if length is None else length
    span = f"offset {offset:,}, " + ("to the end" if length is None else f"length {length:,}")
    if offset < 0 or held < 0 or offset + held > size:
        raise ModelError(
            f"{shown}: tensor {name!r} keeps its data in {location!r} at {span}, outside the "
            f"file's {size:,} bytes; export the model again with its data"
        )
    bits = ELEMENT_BITS.get(tensor.data_type)  # None: a type newer than this table
    declared = None if bits is None else -(-math.prod(dims) * bits // 8)
    if declared is not None and held != declared:
        raise ModelError(
            f"{shown}: tensor {name!r} of shape {dims} needs {declared:,} bytes, and its "
            f"data in {location!r} ({span}) is {held:,}: export the model again with its data"
        )
    return held


def read_onnx(path: Path) -> Any:
    """The checked ``onnx.ModelProto`` in ``path``, its external data (only files inside the
    model's folder) loaded."""
    onnx, _ = _modules()
    shown = repr(str(path))
    size = path.stat().st_size
    if size > MAX_PROTO_BYTES:
        raise ModelError(
            f"{shown} is {size:,} bytes, more than the 2 GiB an ONNX file (a protobuf) can "
            "hold; save a larger model with its weights as external data beside it "
            "(onnx.save_model(..., save_as_external_data=True))"
        )
    try:
        proto = onnx.load(str(path), load_external_data=False)
    except Exception as exc:
        raise ModelError(
            f"{shown} is not an ONNX file ({type(exc).__name__}: {str(exc)[:200]}); "
            "export the model with torch.onnx.export or tf2onnx"
        ) from None
    if not proto.HasField("graph") or proto.ir_version <= 0:
        raise ModelError(
            f"{shown} is not an ONNX file (no graph or IR version); export the model with "
            "torch.onnx.export or tf2onnx"
        )
    external = _external_tensors(proto)
    if external:
        folder = path.resolve().parent
        held, memory = sum(_check_external(t, folder, shown) for t in external), physical_memory()
        if held > memory:
            raise ModelError(
                f"{shown} keeps {held:,} bytes of weights apart, more than the memory this "
                f"process may use ({memory:,} bytes: the machine's, or its container's limit); "
                "load it on a larger machine"
            )
        try:
            onnx.load_external_data_for_model(proto, str(folder))
        except Exception as exc:
            raise ModelError(f"{shown}: its external data cannot be read ({exc})") from None
        for name, location in _external(proto):  # what ONNX did not load (sparse tensors,
            raise UnsafeModel(  # functions' in older onnx): ONNX Runtime would read it
                f"{shown}: tensor {name!r} keeps its data in {location!r}, which ONNX "
                "does not load here, and ONNX Runtime would read it from the current "
                "directory; save the model with that tensor's data inside it"
            )
    check_onnx(proto, shown)
    return proto


def _constant(graph: Any, name: str) -> np.ndarray | None:
    """The value of ``name`` when the graph fixes it (an initializer, dense or sparse, or
    a Constant node)."""
    onnx, _ = _modules()
    for tensor in graph.initializer:
        if tensor.name == name:
            return np.asarray(onnx.numpy_helper.to_array(tensor))
    for sparse in graph.sparse_initializer:
        if sparse.values.name == name:
            return _dense(sparse)
    for node in graph.node:
        if node.op_type == "Constant" and list(node.output) == [name]:
            for attribute in node.attribute:
                if attribute.name == "value":
                    return np.asarray(onnx.numpy_helper.to_array(attribute.t))
                if attribute.name == "sparse_value":
                    return _dense(attribute.sparse_tensor)
    return None


def _dense(sparse: Any) -> np.ndarray:
    """An ONNX SparseTensorProto as a dense array (indices: linear, or one row of
    coordinates per value)."""
    onnx, _ = _modules()
    values = np.asarray(onnx.numpy_helper.to_array(sparse.values))
    indices = np.asarray(onnx.numpy_helper.to_array(sparse.indices), np.int64)
    shape = tuple(int(d) for d in sparse.dims)
    size = math.prod(shape)
    if any(d < 0 for d in shape) or size > MAX_SPARSE_VALUES:
        raise ModelError(
            f"a sparse tensor of the ONNX model has shape {shape}; pytest-rnncov reads "
            f"sparse tensors of at most {MAX_SPARSE_VALUES:,} values: store it dense"
        )
    dense = np.zeros(size, values.dtype)
    try:
        flat = indices if indices.ndim == 1 else np.ravel_multi_index(indices.T, shape)
        dense[flat] = values.ravel()
    except (ValueError, IndexError):
        raise ModelError(
            f"a sparse tensor of the ONNX model has {values.size} values and indices of "
            f"shape {indices.shape} that do not fit its shape {shape}; fix the export"
        ) from None
    return dense.reshape(shape)


def _attributes(node: Any) -> dict[str, Any]:
    onnx, _ = _modules()
    values = {}
    for attribute in node.attribute:
        value = onnx.helper.get_attribute_value(attribute)
        if isinstance(value, bytes):
            value = value.decode("utf-8", "replace")
        elif isinstance(value, list):
            value = [v.decode("utf-8", "replace") if isinstance(v, bytes) else v for v in value]
        values[attribute.name] = value
    return values


def _optional(node: Any, index: int) -> str:
    """The name of the node's ``index``-th input, "" when absent."""
    return node.input[index] if len(node.input) > index else ""


def _from_input(graph: Any, name: str, producers: dict[str, Any]) -> bool:
    """Whether the value ``name`` is computed from the graph's input (not from weights
    alone)."""
    weights = {tensor.name for tensor in graph.initializer}  # listed as inputs before IR 4
    inputs = {value.name for value in graph.input} - weights
    seen, todo = set(), [name]
    while todo:
        value = todo.pop()
        if value in inputs:
            return True
        if value in seen or value not in producers:
            continue
        seen.add(value)
        todo.extend(v for v in producers[value].input if v)
    return False


def _batch_order(graph: Any, name: str) -> str | None:
    """The indices of the ``Gather`` that picks the batch's rows in a new order before they
    become ``name``, the recurrent node's (T, B, D) input (what ``torch.onnx.export``
    writes for ``pack_padded_sequence(..., enforce_sorted=False)``: the batch sorted by
    length, the output unsorted after), followed back through nodes that keep each row
    whole: Transpose, Cast, Identity, Squeeze, a Reshape that keeps the axes up to the
    batch's, and the recurrent nodes below (stacked layers); None when there is none."""
    producers = {output: node for node in graph.node for output in node.output}
    axis: int = 1  # the batch's axis in ``name``
    rank: int | None = 3  # its rank (None: not known)
    while name in producers:
        node = producers[name]
        op, attributes = node.op_type, _attributes(node)
        if op == "Transpose":
            perm = attributes.get("perm") or (None if rank is None else list(range(rank))[::-1])
            if perm is None:
                return None
            axis, rank = int(perm[axis]), len(perm)
        elif op in ("LSTM", "GRU", "RNN"):
            if list(node.output[:1]) != [name] or axis != 2:  # Y: (T, directions, B, H)
                return None
            axis, rank = 1, 3  # X: (T, B, D)
        elif op == "Squeeze":
            given = attributes.get("axes")
            if given is None and len(node.input) > 1:
                given = _constant(graph, node.input[1])
            if given is None or rank is None:
                return None
            taken = np.atleast_1d(np.asarray(given, np.int64))
            before = rank + len(taken)  # the input's rank
            kept = [a for a in range(before) if a not in set((taken % before).tolist())]
            axis, rank = kept[axis], before
        elif op == "Reshape":
            # keeps the batch's axis where the new shape copies it and those before
            shape = _constant(graph, node.input[1]) if len(node.input) > 1 else None
            if shape is None or shape.ndim != 1 or np.any(shape[: axis + 1] != 0):
                return None
            rank = None
        elif op == "Gather":
            if rank is None or int(attributes.get("axis", 0)) % rank != axis:
                return None
            data, indices = node.input[0], node.input[1]
            # the batch's rows picked, not rows of a table (an embedding: its indices are
            # the inputs' tokens, its data the weights, however the graph computes them)
            if _constant(graph, indices) is not None or not _from_input(graph, data, producers):
                return None
            return indices
        elif op not in ("Cast", "Identity"):
            return None
        name = node.input[0]
    return None


class OnnxModel(Adapter):
    """An ONNX model (a ``.onnx`` path or an ``onnx.ModelProto``) with one of its ``LSTM``,
    ``GRU`` or ``RNN`` nodes made traceable, run by ONNX Runtime on the CPU.

    ``layer``: the node's name, an index into the recurrent nodes (graph order), or None
    (the first). ``direction``: a bidirectional node's forward or backward half.
    ``output``: which graph output (index or name) ``predict`` returns, when there are
    several. The model takes one input, batch first; its shape and dtype come from the
    graph. ``recompute=True`` recomputes the node from its weights (the reference kernel)
    instead of reading its ``Y`` from the run.
    """

    framework = "onnx"
    fingerprint_covers = (
        "every initializer (but string ones) and node of the graph, also those past the "
        "traced node; the model it was exported from has a fingerprint of its own"
    )

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
        onnx, ort = _modules()
        self._init_common(model, direction, batch_size, recompute)
        self.reads_states = not self.recompute
        self.proto, self.name = self._proto(model)
        graph = self.proto.graph
        fixed = {t.name for t in graph.initializer}
        fixed |= {t.values.name for t in graph.sparse_initializer}
        inputs = [i for i in graph.input if i.name not in fixed]
        if len(inputs) != 1:
            raise ModelError(
                f"ONNX model {self.name!r} takes {len(inputs)} inputs "
                f"({', '.join(repr(i.name) for i in inputs)}); pytest-rnncov feeds one input "
                "array: export the model with its one input (lengths computed inside the graph)"
            )
        self.input_name = inputs[0].name
        self._input_info(inputs[0])
        self.node_index, self.node = self._find(layer)
        self.op = self.node.op_type
        self.attributes = _attributes(self.node)
        self.node_direction = str(self.attributes.get("direction", "forward"))
        if self.node_direction not in ("forward", "reverse", "bidirectional"):
            raise ModelError(
                f"node {self.node_name!r} has direction={self.node_direction!r}; ONNX "
                "allows forward, reverse or bidirectional"
            )
        self.direction = (
            direction
            if self.node_direction == "bidirectional"
            else self._forward_only(direction, self.node_name)
        )
        self._refuse_unsupported()
        if self.node.input[0] == self.input_name:  # layout 0: X is (steps, batch, features)
            self._refuse(
                "its X fed the model's input itself, which ONNX's layout 0 reads time-major",
                "pytest-rnncov feeds (batch, steps, features): export the model batch-first "
                "(a Transpose before the node, as torch.onnx.export writes for batch_first)",
            )
        batch = self._fixed_batch
        if batch > 1 or (batch == 1 and self.batch_size != 1):
            one = " (a model fixed at 1 also runs with RNNModel(..., batch_size=1))"
            raise ModelError(
                f"ONNX model {self.name!r} takes batches of exactly {batch} (its input "
                f"{self.input_name!r} fixes dimension 0); export it with a dynamic batch, "
                f"e.g. torch.onnx.export(..., dynamic_axes={{{self.input_name!r}: "
                "{0: 'batch'}})" + (one if batch == 1 else "")
            )
        self.cell = self._cell()
        self.units = self.cell.units
        self._n_steps = None
        #: whether a batch of more than one input showed them on the node's batch axis
        self._batch_axis_seen = False
        self._order = OrderCheck()  # whether the node gets the inputs' rows in order
        self.output_name = self._pick_output(output)
        self.trace_on = self._pick_trace_on(
            trace_on, False, False, "ONNX Runtime gives numpy arrays: traces run in numpy"
        )
        self._session = self._make_session(onnx, ort)

    # -- reading --------------------------------------------------------------------
    @staticmethod
    def _proto(model: Any) -> tuple[Any, str]:
        onnx, _ = _modules()
        if isinstance(model, (str, os.PathLike)):
            path = Path(model)
            if path.suffix.lower() != ".onnx":
                raise InvalidArgument(
                    f"RNNModel({str(model)!r}): a path must name a .onnx file; load Keras "
                    "files with pytest_rnncov.load_model(path) and pass the model"
                )
            if not path.is_file():
                what = "a directory" if path.is_dir() else "no file"
                raise InvalidArgument(f"{str(path)!r} is {what}; pass the path of a .onnx file")
            return read_onnx(path), path.stem
        if not isinstance(model, onnx.ModelProto):
            raise InvalidArgument(
                f"RNNModel needs a .onnx path or an onnx.ModelProto, got {type(model).__name__}"
            )
        external = _external(model)
        if external:
            raise ModelError(
                f"the onnx.ModelProto keeps tensor {external[0][0]!r} in an external file "
                f"({external[0][1]!r}); pass the .onnx file's path instead, so its folder "
                "is known"
            )
        check_onnx(model, "the onnx.ModelProto")
        return model, model.graph.name or "onnx"

    def _input_info(self, info: Any) -> None:
        if not info.type.HasField("tensor_type"):
            raise ModelError(
                f"ONNX model {self.name!r} takes input {info.name!r} as a "
                f"{info.type.WhichOneof('value') or 'value of no type'}, not a tensor; "
                "pytest-rnncov feeds one tensor (batch, steps, ...): export the model so"
            )
        tensor = info.type.tensor_type
        element = INPUT_TYPES.get(tensor.elem_type)
        if element is None:
            raise ModelError(
                f"ONNX model {self.name!r} takes input {info.name!r} of element type "
                f"{tensor.elem_type}; pytest-rnncov feeds float32 features or int32/int64 "
                "token ids"
            )
        if not tensor.HasField("shape") or len(tensor.shape.dim) < 2:
            raise ModelError(
                f"ONNX model {self.name!r} does not declare the rank of its input "
                f"{info.name!r}; export it with the input's shape (batch, steps, ...)"
            )
        zero = [
            k
            for k, d in enumerate(tensor.shape.dim)
            if d.HasField("dim_value") and d.dim_value == 0
        ]
        if zero:
            raise ModelError(
                f"ONNX model {self.name!r} declares dimension {zero[0]} of its input "
                f"{info.name!r} as 0; export it with that dimension dynamic or of its real size"
            )
        first = tensor.shape.dim[0]
        #: the batch the input's dimension 0 fixes (0: none; checked once the node is known)
        self._fixed_batch = int(first.dim_value) if first.HasField("dim_value") else 0
        self.input_shape = tuple(
            int(d.dim_value) if d.HasField("dim_value") and d.dim_value > 0 else None
            for d in list(tensor.shape.dim)[1:]
        )
        self.input_dtype = np.dtype(element)
        if element != "float32":
            for node in self.proto.graph.node:  # an embedding: Gather(table, ids)
                if node.op_type == "Gather" and list(node.input)[1:2] == [info.name]:
                    table = _constant(self.proto.graph, node.input[0])
                    axis = int(_attributes(node).get("axis", 0))
                    if table is not None and -table.ndim <= axis < table.ndim:
                        self.id_range = (0, int(table.shape[axis]))  # the axis ids index
                        break

    def _find(self, layer: str | int | None) -> tuple[int, Any]:
        graph = self.proto.graph
        candidates = [
            (i, node)
            for i, node in enumerate(graph.node)
            if node.op_type in KINDS and node.domain in ("", "ai.onnx")
        ]
        if not candidates:
            types = sorted({node.op_type for node in graph.node})
            raise ModelError(
                f"ONNX model {self.name!r} has no LSTM, GRU or RNN node (its op types: "
                f"{', '.join(types) or 'none'}); pytest-rnncov traces recurrent nodes "
                "(a loop exported as Loop or Scan is not one: export with the recurrent "
                "module's own op)"
            )
        names = [self._display(i, node) for i, node in candidates]
        listing = ", ".join(
            f"{name!r} ({node.op_type}, index {k})"
            for k, (name, (_, node)) in enumerate(zip(names, candidates))
        )
        if isinstance(layer, str) and names.count(layer) > 1:
            raise ModelError(
                f"layer={layer!r} names {names.count(layer)} recurrent nodes of "
                f"{self.name!r} (an unnamed node is shown as OpType_index); pass an index: "
                f"the recurrent nodes are {listing}"
            )
        if layer is None:
            return candidates[0]
        if isinstance(layer, bool) or not isinstance(layer, (str, int)):
            raise InvalidArgument(f"layer={layer!r}; pass a node name, an index or None")
        if isinstance(layer, int):
            if not 0 <= layer < len(candidates):
                raise UnknownLayer(
                    f"layer={layer} is no index of a recurrent node (0 to "
                    f"{len(candidates) - 1}); the recurrent nodes are {listing}"
                )
            return candidates[layer]
        if layer in names:
            return candidates[names.index(layer)]
        raise UnknownLayer(
            f"layer={layer!r} is not a recurrent node of {self.name!r}; they are "
            f"{listing}{direction_hint(layer)}"
        )

    @staticmethod
    def _display(index: int, node: Any) -> str:
        return str(node.name) if node.name else f"{node.op_type}_{index}"

    @property
    def node_name(self) -> str:
        return self._display(self.node_index, self.node)

    @property
    def layer_name(self) -> str:  # type: ignore[override]
        return self.node_name + ("/backward" if self.direction == "backward" else "")

    def _refuse(self, what: str, fix: str) -> NoReturn:
        raise ModelError(f"{self.op} node {self.node_name!r} has {what}: {fix}")

    def _refuse_unsupported(self) -> None:
        attributes = self.attributes
        if "clip" in attributes:
            self._refuse(
                f"clip={attributes['clip']}",
                "pytest-rnncov computes the gates unclipped; export without clip",
            )
        if int(attributes.get("input_forget", 0)):
            self._refuse(
                "input_forget=1 (coupled input and forget gates)",
                "not supported; export with input_forget=0",
            )
        if int(attributes.get("layout", 0)) != 0:
            self._refuse(
                f"layout={attributes['layout']} (batch-first X and Y)",
                "ONNX Runtime runs recurrent nodes with layout=0 only (time-major, as "
                "torch.onnx.export writes them, with a Transpose before); export with layout=0",
            )
        for name in ("activation_alpha", "activation_beta"):
            if name in attributes:
                self._refuse(
                    f"{name}={attributes[name]}",
                    "activations with parameters are not supported; use Sigmoid, Tanh, "
                    "Relu or HardSigmoid at its defaults",
                )
        if self.op == "LSTM" and _optional(self.node, 7):
            peepholes = _constant(self.proto.graph, self.node.input[7])
            if peepholes is None or np.any(peepholes != 0):
                self._refuse(
                    "peephole weights (input P)",
                    "LSTMs with peepholes are not supported; export without peepholes",
                )
        for index, state in ((5, "initial_h"), (6, "initial_c")):
            if index == 6 and self.op != "LSTM":
                continue
            name = _optional(self.node, index)
            value = None if not name else _constant(self.proto.graph, name)
            if value is not None and np.any(value != 0):
                self._refuse(
                    f"a non-zero {state}",
                    "pytest-rnncov traces recurrent layers that start from zeros",
                )

    # -- the cell ---------------------------------------------------------------------
    def _activations(self) -> list[Activation]:
        per_direction = len(DEFAULT_ACTIVATIONS[self.op])
        given = self.attributes.get("activations")
        half = 1 if self.direction == "backward" else 0
        if given is None:
            names = list(DEFAULT_ACTIVATIONS[self.op])
        else:
            names = list(given)[half * per_direction : (half + 1) * per_direction]
            if len(names) != per_direction:
                self._refuse(
                    f"activations={given}", f"an {self.op} needs {per_direction} per direction"
                )
        picked = []
        for name in names:
            twin = ACTIVATIONS.get(str(name).lower())
            if twin is None:
                self._refuse(
                    f"activation {name!r}",
                    f"pytest-rnncov computes {', '.join(sorted(ACTIVATIONS))} "
                    "(Sigmoid, Tanh, Relu, HardSigmoid); export with one of those",
                )
            picked.append(Activation.named(twin))
        return picked

    def _weights(self) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """W (G*H, D), R (G*H, H), Wb and Rb (G*H) of the traced direction."""
        graph, node = self.proto.graph, self.node
        values = []
        for index, label in ((1, "W"), (2, "R")):
            value = _constant(graph, node.input[index])
            if value is None:
                self._refuse(
                    f"its {label} computed in the graph",
                    "pytest-rnncov reads weights from initializers; export with constant "
                    "folding on (the default)",
                )
            values.append(value)
        w, r = values
        bias_name = _optional(node, 3)
        bias = None if not bias_name else _constant(graph, bias_name)
        if bias_name and bias is None:
            self._refuse(
                "its B computed in the graph",
                "pytest-rnncov reads weights from initializers; export with constant "
                "folding on (the default)",
            )
        if w.dtype != np.float32:
            self._refuse(
                f"{w.dtype} weights", "pytest-rnncov traces float32 models; export in float32"
            )
        directions = 2 if self.node_direction == "bidirectional" else 1
        size = BLOCKS[self.op] * int(r.shape[-1])
        if w.ndim != 3 or r.ndim != 3 or w.shape[0] != directions or w.shape[1] != size:
            self._refuse(
                f"W of shape {w.shape} and R of shape {r.shape}",
                "expected (num_directions, gates*hidden_size, input) and "
                "(num_directions, gates*hidden_size, hidden_size)",
            )
        hidden = self.attributes.get("hidden_size")
        if hidden is not None and int(hidden) != int(r.shape[-1]):
            self._refuse(f"hidden_size={hidden} but R of shape {r.shape}", "fix the export")
        d = 1 if self.direction == "backward" else 0
        if bias is None:
            bias = np.zeros((directions, 2 * size), np.float32)
        bias = np.asarray(bias, np.float32)
        if bias.shape != (directions, 2 * size):
            self._refuse(
                f"B of shape {bias.shape}",
                f"expected (num_directions, 2*gates*hidden_size) = {(directions, 2 * size)}",
            )
        for label, value in (("W", w), ("R", r), ("B", bias)):
            if not np.isfinite(value).all():
                self._refuse(
                    f"NaN or infinite values in {label}",
                    "the trace would not be a number; export a trained model's weights",
                )
        return w[d], r[d], bias[d, :size], bias[d, size:]

    def _cell(self) -> Cell:
        w, r, wb, rb = self._weights()
        units = r.shape[-1]
        backwards = self.node_direction == "reverse" or self.direction == "backward"
        activations = self._activations()
        if self.op == "LSTM":
            gate, candidate, output = activations
            if candidate.name != output.name:
                self._refuse(
                    f"activations g={candidate.name} and h={output.name}",
                    "pytest-rnncov's LSTM applies one activation to both: export with g = h",
                )
            # ONNX blocks i, o, f, c -> the canonical i, f, c, o
            order = np.concatenate([np.arange(k * units, (k + 1) * units) for k in (0, 2, 3, 1)])
            return LSTMCell(
                w[order].T, r[order].T, (wb + rb)[order], candidate, gate, backwards, None
            )
        if self.op == "GRU":  # ONNX blocks z, r, h are the canonical z, r, n
            gate, candidate = activations
            if int(self.attributes.get("linear_before_reset", 0)):
                return GRUCell(w.T, r.T, wb, rb, True, candidate, gate, backwards)
            # n = g(x W_h + (r * h) R_h + Wb_h + Rb_h): both biases outside the reset gate
            return GRUCell(w.T, r.T, wb + rb, None, False, candidate, gate, backwards)
        (activation,) = activations
        return SimpleRNNCell(w.T, r.T, wb + rb, activation, backwards)

    # -- the session --------------------------------------------------------------------
    def _pick_output(self, output: str | int | None) -> str | None:
        picked = self._output_name(output)
        for info in self.proto.graph.output:
            if info.name == picked and not info.type.HasField("tensor_type"):
                raise ModelError(
                    f"ONNX model {self.name!r} returns {picked!r} as a "
                    f"{info.type.WhichOneof('value')}, not a tensor of one prediction per "
                    "input; export the tensor before it (a ZipMap's input, say) as the output"
                )
        return picked

    def _output_name(self, output: str | int | None) -> str | None:
        names = [o.name for o in self.proto.graph.output]
        if output is None:
            return names[0] if len(names) == 1 else None
        if isinstance(output, bool) or not isinstance(output, (int, str)):
            raise InvalidArgument(f"output={output!r}; pass an output index or name")
        if isinstance(output, int):
            if not 0 <= output < len(names):
                raise InvalidArgument(
                    f"output={output}; model {self.name!r} has outputs 0..{len(names) - 1}"
                )
            return names[output]
        if output not in names:
            raise InvalidArgument(f"output={output!r}; the outputs are {', '.join(names)}")
        return output

    def _make_session(self, onnx: Any, ort: Any) -> Any:
        """One session of the graph with the node's input, output, lengths and non-constant
        initial states added as outputs (``self._fetch``: what to fetch for each)."""
        graph, node = self.proto.graph, self.node
        modified = onnx.ModelProto()
        modified.CopyFrom(self.proto)
        target = modified.graph.node[self.node_index]
        if not target.output or not target.output[0]:
            name = f"{self.node_name}/rnncov_Y"
            if target.output:
                target.output[0] = name
            else:
                target.output.append(name)
        outputs = {o.name for o in modified.graph.output}
        graph_inputs = {i.name for i in graph.input}
        self._fetch: dict[str, str | None] = {}

        def add(key: str, name: str, element: int) -> None:
            if not name or name in graph_inputs:
                self._fetch[key] = None if not name else name
                return
            if name not in outputs:
                modified.graph.output.append(
                    onnx.helper.make_tensor_value_info(name, element, None)
                    if element
                    else onnx.ValueInfoProto(name=name)  # ONNX Runtime infers the type
                )
                outputs.add(name)
            self._fetch[key] = name

        add("x", target.input[0], onnx.TensorProto.FLOAT)
        add("y", target.output[0], onnx.TensorProto.FLOAT)
        order = _batch_order(graph, node.input[0])
        if order:
            add("order", order, onnx.TensorProto.UNDEFINED)  # its type: as the graph has it
        lengths = _optional(node, 4)
        self._lengths = None if not lengths else _constant(graph, lengths)
        if lengths and self._lengths is None:
            add("lengths", lengths, onnx.TensorProto.INT32)
        for index, key in ((5, "initial_h"), (6, "initial_c")):
            name = _optional(node, index) if (index == 5 or self.op == "LSTM") else ""
            if name and _constant(graph, name) is None:
                add(key, name, onnx.TensorProto.FLOAT)
        _prune(modified.graph, {name for name in (*self._fetch.values(), self.output_name) if name})
        options = ort.SessionOptions()
        options.log_severity_level = 3
        try:
            return ort.InferenceSession(
                modified.SerializeToString(), options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:
            raise model_error_from(exc, f"creating an ONNX Runtime session for {self.name!r}")

    def _run(self, x: np.ndarray, wanted: list[str], quiet: bool = False) -> dict[str, np.ndarray]:
        """One session run: ``wanted`` (keys of ``_fetch``, or "out") as numpy arrays;
        ``quiet``: a failure is not logged by ONNX Runtime (a run that may fail by design)."""
        names: list[str] = []
        for key in wanted:
            name = self.output_name if key == "out" else self._fetch.get(key)
            if key == "out" and name is None:
                raise ModelError(
                    f"ONNX model {self.name!r} has "
                    f"{len(self.proto.graph.output)} outputs "
                    f"({', '.join(o.name for o in self.proto.graph.output)}); pass "
                    "output=INDEX (or a name) to say which one predict() and the oracle use"
                )
            if name is not None and name != self.input_name and name not in names:
                names.append(name)
        try:
            options = None
            if quiet:
                _, ort = _modules()
                options = ort.RunOptions()
                options.log_severity_level = 4  # fatal only: no red error line of its own
            values = self._session.run(names, {self.input_name: x}, options) if names else []
        except Exception as exc:
            raise model_error_from(exc, f"running ONNX model {self.name!r}") from exc
        got = dict(zip(names, values))
        got[self.input_name] = x
        out = {}
        for key in wanted:
            name = self.output_name if key == "out" else self._fetch.get(key)
            if name is not None:
                out[key] = np.asarray(got[name])
        return out

    def _forward(
        self,
        x: np.ndarray,
        outputs: bool,
        layer_input: bool = True,
        states: tuple[str, ...] | None = None,
    ) -> tuple[Any, Any, Any, Any]:
        wanted = ["out"] if outputs else []
        # the node's input always comes along: its batch axis is checked against x's
        wanted += ["x", "order", "lengths", "initial_h", "initial_c"]
        if states is not None:
            wanted.append("y")
        got = self._run(x, wanted)
        for key in ("initial_h", "initial_c"):
            if key in got and np.any(got[key] != 0):
                self._refuse(
                    f"a non-zero {key} in this run",
                    "pytest-rnncov traces recurrent layers that start from zeros",
                )
        self._refuse_batch_axis(got["x"], len(x))
        rows = self._input_rows(got, len(x))
        sequence = np.swapaxes(got["x"], 0, 1)  # (T, B, D) -> (B, T, D)
        sequence = np.ascontiguousarray(sequence if rows is None else sequence[rows], np.float32)
        steps = sequence.shape[1]
        if not self._batch_axis_seen and len(x) > 1:
            if len(x) == steps:  # as many inputs as steps: the shape cannot tell the axes
                self._check_batch_axis(x[:1])
            self._batch_axis_seen = True
        if self._n_steps is None and all(d is not None for d in self.input_shape[:1]):
            self._n_steps = steps
        lengths = got.get("lengths", self._lengths)
        mask = None
        if lengths is not None:
            lengths = np.asarray(lengths).reshape(-1)
            if lengths.size not in (1, len(x)):
                raise ModelError(
                    f"node {self.node_name!r} gets {lengths.size} sequence_lens for {len(x)} "
                    "inputs; compute them from the model's input inside the graph"
                )
            lengths = np.broadcast_to(lengths, (len(x),))
            if rows is not None:
                lengths = lengths[rows]
            mask = np.arange(steps)[None, :] < lengths[:, None]
        self._check_order(x, sequence, lengths)
        h = None
        if states is not None:
            half = 1 if self.direction == "backward" else 0
            h = np.swapaxes(got["y"][:, half], 0, 1)  # (T, dirs, B, H) -> (B, T, H)
            if rows is not None:
                h = h[rows]
            if self.cell.go_backwards:  # processing order
                h = h[:, ::-1]
            h = np.ascontiguousarray(h, np.float32)
        return (
            got.get("out") if outputs else None,
            sequence if layer_input or states is None else None,
            mask,
            h,
        )

    def _input_rows(self, got: dict[str, np.ndarray], n: int) -> np.ndarray | None:
        """For each of the ``n`` inputs, the node's batch row that holds it, when a Gather
        reorders the batch before the node (``_batch_order``); None when none does."""
        order = got.get("order")
        if order is None:
            return None
        order = np.asarray(order).reshape(-1)
        if order.dtype.kind in "iu" and order.size == n:
            order = np.where(order < 0, order + n, order)  # Gather counts -1 from the end
            if np.array_equal(np.sort(order), np.arange(n)):
                return np.argsort(order)
        raise ModelError(
            f"node {self.node_name!r} gets its batch through a Gather whose indices are not "
            f"an order of the {n} inputs; pytest-rnncov traces a node that runs each input "
            "once: export the model so"
        )

    def _check_order(self, x: np.ndarray, sequence: np.ndarray, lengths: Any) -> None:
        """Refuse a model whose node does not get the inputs' rows in order, once rows a
        Gather reorders are put back (``_batch_order``): the trace's rows would not be the
        inputs'. ``OrderCheck`` runs the model on reorderings of the first batches."""

        def run(batch: np.ndarray) -> np.ndarray:
            got = self._run(batch, ["x", "order"], quiet=True)  # a failure is expected
            self._refuse_batch_axis(got["x"], len(batch))
            back = self._input_rows(got, len(batch))
            rows = np.swapaxes(got["x"], 0, 1)
            return rows if back is None else rows[back]

        if not self._order.keeps_order(x, sequence, lengths, run, np.allclose):
            raise ModelError(
                f"ONNX model {self.name!r}: node {self.node_name!r} does not get the inputs' "
                "rows in their order (rows a Gather of the batch reorders, as "
                "torch.onnx.export writes for pack_padded_sequence(..., "
                "enforce_sorted=False), are put back first): " + REORDERED
            )

    def _refuse_batch_axis(self, node_input: np.ndarray, rows: int) -> None:
        """Refuse a node whose input (T, B, D) does not have the ``rows`` inputs on B."""
        if node_input.ndim != 3 or node_input.shape[1] != rows:
            raise ModelError(
                f"node {self.node_name!r} gets an input of shape {node_input.shape} for "
                f"{rows} input{'s' if rows != 1 else ''}: its batch axis is not the model "
                "input's first axis. pytest-rnncov feeds inputs batch first (export the "
                "model so)"
            )

    def _check_batch_axis(self, one: np.ndarray) -> None:
        """Run one input (once per model, when a batch had as many inputs as steps): a
        time-major model then shows its steps on the node's batch axis."""
        self._refuse_batch_axis(self._run(one, ["x"])["x"], 1)

    def _predict(self, x: np.ndarray) -> np.ndarray:
        return self._run(x, ["out"])["out"]

    # -- fingerprint --------------------------------------------------------------------
    def _weight_arrays(self) -> list[np.ndarray]:
        onnx, _ = _modules()
        graph = self.proto.graph
        tensors = [*graph.initializer]
        tensors += [
            t for sparse in graph.sparse_initializer for t in (sparse.values, sparse.indices)
        ]
        arrays = []
        for tensor in tensors:  # quantized (integer, int4, float8) weights count too
            value = np.asarray(onnx.numpy_helper.to_array(tensor))
            if value.dtype.kind in "biuf":
                arrays.append(value)
            elif value.dtype.kind not in "OSU":  # bfloat16, int4, float8: by their bytes
                arrays.append(np.ascontiguousarray(value).reshape(-1).view(np.uint8))
        return arrays

    def earlier_fingerprints(self) -> tuple[str, ...]:
        """Releases before 2026-11-29 took only the dense float initializers."""
        onnx, _ = _modules()
        dense = [np.asarray(onnx.numpy_helper.to_array(t)) for t in self.proto.graph.initializer]
        earlier = self._digest([a for a in dense if a.dtype.kind == "f"])
        return () if earlier == self.fingerprint() else (earlier,)

    def _structure(self) -> str:
        digest = hashlib.sha256()
        for node in self.proto.graph.node:
            digest.update(node.SerializeToString())
        digest.update(f"{self.node_index}|{self.direction}".encode())
        return digest.hexdigest()
