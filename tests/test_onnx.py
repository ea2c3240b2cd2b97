"""The ONNX adapter: LSTM, GRU and RNN nodes exported by torch.onnx or built by hand (GRU
with linear_before_reset 0 and 1, forward, reverse and bidirectional, sequence_lens),
traced through ONNX Runtime. Every trace component equals the numpy reference
kernel, ``h`` equals the node's own ``Y`` and the outputs equal ONNX Runtime's and torch's;
hostile files are refused before anything runs."""

from __future__ import annotations

import itertools
import math
import warnings
from typing import Any

import numpy as np
import pytest

onnx = pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")
torch = pytest.importorskip("torch")

from onnx import TensorProto, helper, numpy_helper  # noqa: E402
from torch import nn  # noqa: E402
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence  # noqa: E402

from pytest_rnncov import (  # noqa: E402
    Coverage,
    InvalidArgument,
    InvalidInput,
    ModelError,
    Profile,
    RNNModel,
    StaleProfile,
    UnknownLayer,
    UnsafeModel,
    load_model,
)

TOL = 1e-5
KINDS = {"lstm": "LSTM", "gru": "GRU", "simple_rnn": "RNN"}


class Head(nn.Module):
    """Batch-first inputs, a recurrent module, a linear head on the last step."""

    def __init__(self, rnn: nn.Module) -> None:
        super().__init__()
        self.rnn = rnn
        self.head = nn.Linear(rnn.hidden_size * (2 if rnn.bidirectional else 1), 3)

    def forward(self, x):
        out, _ = self.rnn(x)
        return self.head(out[:, -1])


def export(module: nn.Module, path, features: int = 3) -> str:
    """``module`` exported by the classic exporter, batch and steps dynamic."""
    module.eval()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module,
            (torch.randn(2, 6, features),),
            str(path),
            dynamo=False,
            input_names=["x"],
            output_names=["y"],
            dynamic_axes={"x": {0: "batch", 1: "steps"}, "y": {0: "batch"}},
        )
    return str(path)


def ort_run(model, x: np.ndarray, fetch: list[str] | None = None) -> list[np.ndarray]:
    """ONNX Runtime's own run of ``model``; ``fetch`` may name inner values too."""
    if fetch:
        model = onnx.load(model) if isinstance(model, str) else model.__deepcopy__()
        for name in fetch:
            if name not in {o.name for o in model.graph.output}:
                value = helper.make_tensor_value_info(name, TensorProto.FLOAT, None)
                model.graph.output.append(value)
    source = model if isinstance(model, str) else model.SerializeToString()
    session = ort.InferenceSession(source, providers=["CPUExecutionProvider"])
    return session.run(fetch, {session.get_inputs()[0].name: x})


def largest(a, b) -> float:
    return float(np.max(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64))))


def check_exact(model, x: np.ndarray, layer=None, direction="forward") -> dict[str, float]:
    """Every component of the trace (h read from ONNX Runtime's run) equals the numpy
    reference kernel, and the outputs equal ONNX Runtime's own; the differences."""
    traced = RNNModel(model, layer, direction=direction)
    reference = RNNModel(model, layer, direction=direction, recompute=True)
    outputs, trace = traced.run(x)
    expected = reference.trace(x)
    assert trace.names == expected.names
    differences = {n: largest(trace.components[n], expected.components[n]) for n in trace.names}
    differences["outputs"] = largest(outputs, ort_run(model, x)[0])
    for name, value in differences.items():
        assert value <= TOL, (traced.layer_name, name, value)
    if trace.mask is not None or expected.mask is not None:
        np.testing.assert_array_equal(trace.mask, expected.mask)
    return differences


@pytest.fixture(scope="module")
def x():
    return np.random.default_rng(0).normal(size=(9, 6, 3)).astype(np.float32)


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """Exported files and the torch modules they came from."""
    folder = tmp_path_factory.mktemp("onnx")
    torch.manual_seed(0)
    modules = {
        "lstm": Head(nn.LSTM(3, 5, batch_first=True)),
        "gru": Head(nn.GRU(3, 5, batch_first=True)),
        "rnn_tanh": Head(nn.RNN(3, 5, batch_first=True)),
        "rnn_relu": Head(nn.RNN(3, 5, batch_first=True, nonlinearity="relu")),
        "bi_lstm": Head(nn.LSTM(3, 4, batch_first=True, bidirectional=True)),
        "bi_gru": Head(nn.GRU(3, 4, batch_first=True, bidirectional=True)),
        "stacked_gru": Head(nn.GRU(3, 4, batch_first=True, num_layers=2)),
        "stacked_bi_lstm": Head(nn.LSTM(3, 4, batch_first=True, num_layers=2, bidirectional=True)),
    }
    return {k: (export(m, folder / f"{k}.onnx"), m) for k, m in modules.items()}


def node_of(path: str, index: int = 0):
    graph = onnx.load(path).graph
    return [n for n in graph.node if n.op_type in ("LSTM", "GRU", "RNN")][index]


def node_y(path: str, node, x: np.ndarray) -> np.ndarray:
    """The node's own Y (T, dirs, B, H), fetched by ONNX Runtime as an added output."""
    return ort_run(path, x, [node.output[0]])[0]


# -- exported by torch.onnx -------------------------------------------------------------
@pytest.mark.parametrize(
    ("name", "op", "cell"),
    [
        ("lstm", "LSTM", "lstm"),
        ("gru", "GRU", "gru"),
        ("rnn_tanh", "RNN", "simple_rnn"),
        ("rnn_relu", "RNN", "simple_rnn"),
    ],
)
def test_exported_layers_are_exact(exported, x, name, op, cell):
    path, module = exported[name]
    node = node_of(path)
    assert node.op_type == op  # the classic exporter emits the recurrent op itself
    if op == "GRU":
        attributes = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        assert attributes["linear_before_reset"] == 1  # PyTorch's GRU
    rnn = RNNModel(path)
    assert rnn.cell_kind == cell and rnn.framework == "onnx" and rnn.layer_name == node.name
    check_exact(path, x)
    trace = rnn.trace(x)
    y = node_y(path, node, x)  # (T, 1, B, H)
    np.testing.assert_array_equal(trace.h, np.swapaxes(y[:, 0], 0, 1))  # h is the node's Y
    with torch.no_grad():
        out, _ = module.rnn(torch.from_numpy(x))
        np.testing.assert_allclose(trace.h, out.numpy(), atol=TOL, rtol=0)
        np.testing.assert_allclose(
            rnn.predict(x), module(torch.from_numpy(x)).numpy(), atol=TOL, rtol=0
        )


@pytest.mark.parametrize("name", ["bi_lstm", "bi_gru"])
def test_exported_bidirectional_halves(exported, x, name):
    path, module = exported[name]
    node = node_of(path)
    y = node_y(path, node, x)  # (T, 2, B, H)
    forward, backward = RNNModel(path), RNNModel(path, direction="backward")
    assert backward.layer_name == f"{node.name}/backward" and backward.cell.go_backwards
    check_exact(path, x)
    check_exact(path, x, direction="backward")
    np.testing.assert_array_equal(forward.trace(x).h, np.swapaxes(y[:, 0], 0, 1))
    # the backward half's trace runs in processing order: last step first
    np.testing.assert_array_equal(backward.trace(x).h[:, ::-1], np.swapaxes(y[:, 1], 0, 1))
    with torch.no_grad():
        out, _ = module.rnn(torch.from_numpy(x))
    np.testing.assert_allclose(backward.trace(x).h[:, ::-1], out[..., 4:].numpy(), atol=TOL)


@pytest.mark.parametrize("name", ["stacked_gru", "stacked_bi_lstm"])
def test_the_second_of_stacked_layers(exported, x, name):
    path, module = exported[name]
    second = node_of(path, 1)
    rnn = RNNModel(path, 1)
    assert rnn.layer_name == second.name and RNNModel(path, second.name).layer_name == second.name
    check_exact(path, x, layer=1)
    with torch.no_grad():
        out, _ = module.rnn(torch.from_numpy(x))
    np.testing.assert_allclose(rnn.trace(x).h, out[..., :4].numpy(), atol=TOL, rtol=0)
    if module.rnn.bidirectional:
        check_exact(path, x, layer=1, direction="backward")
        backward = RNNModel(path, 1, direction="backward").trace(x)
        np.testing.assert_allclose(backward.h[:, ::-1], out[..., 4:].numpy(), atol=TOL)


class PackedHead(nn.Module):
    """Right-padded inputs packed with enforce_sorted=False: the export sorts the batch by
    length before the recurrent nodes and unsorts their output after."""

    def __init__(self, rnn: nn.Module, flip: bool = False) -> None:
        super().__init__()
        self.rnn, self.flip = rnn, flip
        self.head = nn.Linear(rnn.hidden_size * (2 if rnn.bidirectional else 1), 2)

    def forward(self, x):
        if self.flip:  # a reordering no Gather shows
            return self.head(self.rnn(torch.flip(x, dims=(0,)))[0][:, -1]).flip(0)
        lengths = (x.abs().sum(-1) != 0).sum(1).clamp(min=1)
        packed = pack_padded_sequence(x, lengths, batch_first=True, enforce_sorted=False)
        out, _ = pad_packed_sequence(self.rnn(packed)[0], batch_first=True)
        return self.head(out.sum(1))


@pytest.mark.parametrize("kind", [nn.LSTM, nn.GRU, nn.RNN])
def test_an_exported_packed_model_is_traced_in_the_inputs_order(padded, tmp_path, kind):
    # the node's rows are sorted by length: each input got another's trace
    torch.manual_seed(1)
    module = PackedHead(kind(3, 4, batch_first=True, num_layers=2, bidirectional=True))
    path = export(module, tmp_path / "packed.onnx")
    for layer, direction in itertools.product((0, 1), ("forward", "backward")):
        onnx_trace = RNNModel(path, layer, direction=direction).trace(padded)
        torch_trace = RNNModel(module, f"rnn.l{layer}", direction=direction).trace(padded)
        real = np.arange(6) < LENGTHS[:, None]  # processing order: a backward half's reversed
        np.testing.assert_array_equal(
            onnx_trace.mask, real if direction == "forward" else real[:, ::-1]
        )
        np.testing.assert_array_equal(onnx_trace.mask, torch_trace.mask)
        for name in onnx_trace.names:
            assert largest(onnx_trace.components[name], torch_trace.components[name]) <= TOL
    top = RNNModel(path, 1).trace(padded).h
    with torch.no_grad():  # the top layer's forward h: each input run alone
        for row, length in enumerate(LENGTHS):
            own = module.rnn(torch.from_numpy(padded[row : row + 1, :length]))[0][0, :, :4]
            assert largest(top[row, :length], own.numpy()) <= TOL


def test_a_reordered_batch_the_adapter_cannot_follow_is_refused(x, tmp_path):
    class FlipsThenPacks(PackedHead):  # inputs of one length: checked all the same
        def forward(self, x):
            return super().forward(torch.flip(x, dims=(0,))).flip(0)

    path = export(FlipsThenPacks(nn.GRU(3, 4, batch_first=True)), tmp_path / "packed.onnx")
    with pytest.raises(ModelError, match="does not get the inputs' rows in their order"):
        RNNModel(path).trace(x)
    module = PackedHead(nn.GRU(3, 4, batch_first=True), flip=True)
    path = export(module, tmp_path / "flip.onnx")
    with pytest.raises(
        ModelError, match="does not get the inputs' rows in their order \\(rows a Gather of the"
    ):
        RNNModel(path).trace(x)


def test_a_graph_that_cannot_run_a_reordered_batch_is_traced(tmp_path, capfd):
    """A graph that fixes its batch inside (an initial state of 4 rows) could not run the
    probe of 3 inputs, and that error refused a model that traces right; ONNX Runtime's
    own red error line for the failed probe is not printed either."""

    class FixedStart(nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = nn.GRU(3, 4, batch_first=True)
            self.register_buffer("h0", torch.zeros(1, 4, 4))

        def forward(self, x):
            return self.rnn(x, self.h0)[1][-1]

    torch.manual_seed(0)
    module = FixedStart()
    x = np.random.default_rng(1).normal(size=(4, 6, 3)).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module.eval(), (torch.from_numpy(x),), str(tmp_path / "fixed.onnx"), dynamo=False,
            input_names=["x"], dynamic_axes={"x": {0: "batch", 1: "steps"}},
        )  # fmt: skip
    path = str(tmp_path / "fixed.onnx")
    with torch.no_grad():
        own = module.rnn(torch.from_numpy(x))[0].numpy()
    capfd.readouterr()
    np.testing.assert_allclose(RNNModel(path).trace(x).h, own, atol=TOL, rtol=0)
    assert "onnxruntime" not in capfd.readouterr().err


@pytest.mark.parametrize("table_op", ["Cast", "Identity"])
def test_an_embedding_of_a_table_computed_in_the_graph_is_not_a_reordering(table_op):
    """The Gather of an embedding whose table the graph computes (normalised, cast) was
    taken for one that reorders the batch, and the model refused."""
    rng = np.random.default_rng(0)
    table = rng.normal(size=(10, 3)).astype(np.float32)
    w = rng.normal(size=(1, 12, 3)).astype(np.float32)
    r = rng.normal(size=(1, 12, 4)).astype(np.float32)
    nodes = [
        helper.make_node(
            table_op, ["table"], ["vectors"], **({"to": 1} if table_op == "Cast" else {})
        ),
        helper.make_node("Gather", ["vectors", "ids"], ["embedded"], axis=0),
        helper.make_node("Transpose", ["embedded"], ["X"], perm=[1, 0, 2]),
        helper.make_node("GRU", ["X", "W", "R"], ["Y", "Y_h"], hidden_size=4, name="gru"),
        helper.make_node("Squeeze", ["Y_h", "zero_axis"], ["out"]),
    ]
    graph = helper.make_graph(
        nodes,
        "embedded",
        [helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", 5])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", 4])],
        [
            numpy_helper.from_array(table, "table"),
            numpy_helper.from_array(w, "W"),
            numpy_helper.from_array(r, "R"),
            numpy_helper.from_array(np.array([0], np.int64), "zero_axis"),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    ids = rng.integers(0, 10, size=(4, 5))
    check_exact(model, ids)
    y = node_y(model, node_of_proto(model), ids)  # the node's own h, in the inputs' order
    np.testing.assert_allclose(RNNModel(model).trace(ids).h, y[:, 0].swapaxes(0, 1), atol=TOL)


def node_of_proto(model):
    return [n for n in model.graph.node if n.op_type == "GRU"][0]


def test_model_proto_and_load_model(exported, x):
    path, _ = exported["lstm"]
    proto = load_model(path)
    assert isinstance(proto, onnx.ModelProto)
    np.testing.assert_array_equal(RNNModel(proto).trace(x).h, RNNModel(path).trace(x).h)
    assert RNNModel(proto).fingerprint() == RNNModel(path).fingerprint()
    assert isinstance(RNNModel(path), RNNModel)


# -- built by hand: sequence_lens, GRU linear_before_reset=0, reverse directions ---------
def hand_model(
    op: str,
    units: int = 4,
    features: int = 3,
    *,
    direction: str = "forward",
    lengths: bool = True,
    seed: int = 0,
    attributes: dict | None = None,
    peepholes: np.ndarray | None = None,
    initial_h: np.ndarray | None = None,
    weights: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None,
):
    """x (B, T, D), right-padded with all-zero steps -> [sequence_lens from the non-zero
    steps] -> op -> its final state, flattened (B, dirs * H)."""
    rng = np.random.default_rng(seed)
    dirs = 2 if direction == "bidirectional" else 1
    gates = {"LSTM": 4, "GRU": 3, "RNN": 1}[op]
    if weights is None:
        w = rng.normal(scale=0.6, size=(dirs, gates * units, features)).astype(np.float32)
        r = rng.normal(scale=0.6, size=(dirs, gates * units, units)).astype(np.float32)
        b = rng.normal(scale=0.3, size=(dirs, 2 * gates * units)).astype(np.float32)
    else:
        w, r, b = weights
    initializers = [
        numpy_helper.from_array(w, "W"),
        numpy_helper.from_array(r, "R"),
        numpy_helper.from_array(b, "B"),
        numpy_helper.from_array(np.array([0.0], np.float32), "zero"),
        numpy_helper.from_array(np.array([1], np.int64), "axis1"),
    ]
    nodes = []
    if lengths:
        nodes += [
            helper.make_node("Abs", ["x"], ["magnitude"]),
            helper.make_node("ReduceMax", ["magnitude"], ["peak"], axes=[2], keepdims=0),
            helper.make_node("Greater", ["peak", "zero"], ["real"]),
            helper.make_node("Cast", ["real"], ["real_int"], to=TensorProto.INT32),
            helper.make_node("ReduceSum", ["real_int", "axis1"], ["lengths"], keepdims=0),
        ]
    nodes.append(helper.make_node("Transpose", ["x"], ["X"], perm=[1, 0, 2]))
    inputs = ["X", "W", "R", "B", "lengths" if lengths else ""]
    if initial_h is not None:
        initializers.append(numpy_helper.from_array(initial_h, "initial_h"))
        inputs.append("initial_h")
    if peepholes is not None:
        initializers.append(numpy_helper.from_array(peepholes, "P"))
        inputs += [""] * (7 - len(inputs)) + ["P"]
    options = {"hidden_size": units, "direction": direction}
    options.update(attributes or {})
    nodes.append(helper.make_node(op, inputs, ["Y", "Y_h"], name="recurrent", **options))
    # Y_h (dirs, B, H) -> (B, dirs, H)
    nodes.append(helper.make_node("Transpose", ["Y_h"], ["final"], perm=[1, 0, 2]))
    nodes.append(helper.make_node("Flatten", ["final"], ["out"], axis=1))
    graph = helper.make_graph(
        nodes,
        "hand",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 6, features])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", dirs * units])],
        initializers,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


LENGTHS = np.array([6, 3, 5, 1, 6, 2, 4, 6, 2])


@pytest.fixture(scope="module")
def padded(x):
    """x right-padded to LENGTHS with all-zero steps."""
    out = x.copy()
    out[np.arange(6)[None, :] >= LENGTHS[:, None]] = 0
    return out


@pytest.mark.parametrize(
    ("op", "attributes"),
    [
        ("LSTM", {}),
        ("GRU", {"linear_before_reset": 0}),
        ("GRU", {"linear_before_reset": 1}),
        ("RNN", {}),
        ("RNN", {"activations": ["Relu"]}),
    ],
)
@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
def test_hand_built_nodes_with_sequence_lens(padded, op, attributes, direction):
    if direction == "bidirectional" and "activations" in attributes:
        attributes = {"activations": ["Relu", "Tanh"]}  # one per direction
    model = hand_model(op, direction=direction, attributes=attributes)
    halves = ["forward", "backward"] if direction == "bidirectional" else ["forward"]
    y = ort_run(model, padded, ["Y"])[0]  # (T, dirs, B, H), zeros at padded steps
    for k, half in enumerate(halves):
        check_exact(model, padded, direction=half)
        rnn = RNNModel(model, "recurrent", direction=half)
        trace = rnn.trace(padded)
        backwards = direction == "reverse" or half == "backward"
        assert rnn.cell.go_backwards == backwards
        real = np.arange(6)[None, :] < LENGTHS[:, None]
        np.testing.assert_array_equal(trace.mask, real[:, ::-1] if backwards else real)
        h = np.swapaxes(y[:, k], 0, 1)  # (B, T, H) in input order
        in_order = trace.h[:, ::-1] if backwards else trace.h
        # at real steps h is the node's Y; at padded ones the trace repeats the last real
        # step (zeros before the first), where ONNX writes zeros
        np.testing.assert_allclose(in_order[real], h[real], atol=TOL, rtol=0)
        last = in_order[np.arange(len(LENGTHS)), LENGTHS - 1]
        if not backwards:
            np.testing.assert_allclose(trace.h[:, -1], last, atol=0)
        out = ort_run(model, padded)[0].reshape(len(padded), len(halves), -1)
        final = trace.h[:, -1]  # forward: h at the last real step; backward: at step 0
        np.testing.assert_allclose(final, out[:, k], atol=TOL, rtol=0)


def test_no_lengths_and_x_fed_straight_in(x):
    """Without sequence_lens no mask; a node whose X is the graph input itself reads it
    time-major (ONNX's layout 0), refused when the model is wrapped: it was refused at a
    call only when the batch and the steps differed in number, and with as many inputs as
    steps every row's results came from a column of the inputs, silently."""
    model = hand_model("LSTM", direction="bidirectional", lengths=False)
    y = ort_run(model, x, ["Y"])[0]  # (T, 2, B, H)
    check_exact(model, x)
    check_exact(model, x, direction="backward")
    assert RNNModel(model).trace(x).mask is None
    np.testing.assert_array_equal(RNNModel(model).trace(x).h, np.swapaxes(y[:, 0], 0, 1))
    np.testing.assert_array_equal(
        RNNModel(model, direction="backward").trace(x).h[:, ::-1], np.swapaxes(y[:, 1], 0, 1)
    )
    time_major = hand_model("GRU", lengths=False)
    nodes = time_major.graph.node
    nodes.remove(next(n for n in nodes if n.op_type == "Transpose" and n.output[0] == "X"))
    next(n for n in nodes if n.op_type == "GRU").input[0] = "x"
    with pytest.raises(ModelError, match="X fed the model's input itself.*time-major"):
        RNNModel(time_major)
    # with its step count fixed (dimension 0 of a time-major input): still the time-major
    # refusal, not "a fixed batch" (which would mark the steps as the batch)
    with pytest.raises(ModelError, match="X fed the model's input itself.*time-major"):
        RNNModel(with_input_shape(time_major, [6, "batch", 3]))


def sigmoid(v: float) -> float:
    return 1 / (1 + math.exp(-v))


def test_lstm_gate_order_by_hand():
    """One unit, one feature, two steps: ONNX's W/R/B blocks are i, o, f, c."""
    wi, wo, wf, wc = 0.5, -0.4, 0.3, 0.8
    ri, ro, rf, rc = 0.2, 0.6, -0.7, 0.1
    bi, bo, bf, bc = 0.1, -0.2, 0.3, -0.1  # Wb; Rb adds 0.05 to every gate
    w = np.array([[[wi], [wo], [wf], [wc]]], np.float32)
    r = np.array([[[ri], [ro], [rf], [rc]]], np.float32)
    b = np.array([[bi, bo, bf, bc, 0.05, 0.05, 0.05, 0.05]], np.float32)
    model = hand_model("LSTM", 1, 1, lengths=False, weights=(w, r, b))
    xs = [1.5, -2.0]
    h = c = 0.0
    expected = []
    for value in xs:  # the LSTM by hand, in float64
        i = sigmoid(wi * value + ri * h + bi + 0.05)
        o = sigmoid(wo * value + ro * h + bo + 0.05)
        f = sigmoid(wf * value + rf * h + bf + 0.05)
        g = math.tanh(wc * value + rc * h + bc + 0.05)
        c = f * c + i * g
        h = o * math.tanh(c)
        expected.append({"i": i, "f": f, "o": o, "c": c, "h": h})
    # step 1 written out: i = sigmoid(0.75 + 0.15) = sigmoid(0.9) = 0.71095...
    assert abs(expected[0]["i"] - 0.7109495) < 1e-6
    inputs = np.zeros((1, 6, 1), np.float32)
    inputs[0, :2, 0] = xs
    trace = RNNModel(model).trace(inputs)
    for step, values in enumerate(expected):
        for name, value in values.items():
            assert abs(float(trace.components[name][0, step, 0]) - value) < 1e-6, (step, name)


def test_gru_linear_before_reset_by_hand():
    """One unit, one feature, two steps: ONNX's GRU blocks are z, r, h, and the candidate's
    recurrent term is reset before (0) or after (1) the recurrent matmul."""
    wz, wr, wh = 0.5, -0.4, 0.9
    rz, rr, rh = 0.3, 0.7, -0.6
    wbz, wbr, wbh, rbz, rbr, rbh = 0.1, 0.2, -0.3, 0.05, -0.1, 0.4
    w = np.array([[[wz], [wr], [wh]]], np.float32)
    r = np.array([[[rz], [rr], [rh]]], np.float32)
    b = np.array([[wbz, wbr, wbh, rbz, rbr, rbh]], np.float32)
    xs = [1.2, -0.7]
    inputs = np.zeros((1, 6, 1), np.float32)
    inputs[0, :2, 0] = xs
    for linear in (0, 1):
        model = hand_model(
            "GRU",
            1,
            1,
            lengths=False,
            weights=(w, r, b),
            attributes={"linear_before_reset": linear},
        )
        trace = RNNModel(model).trace(inputs)
        h = 0.0
        for step, value in enumerate(xs):
            z = sigmoid(wz * value + rz * h + wbz + rbz)
            rg = sigmoid(wr * value + rr * h + wbr + rbr)
            if linear:
                n = math.tanh(wh * value + rg * (rh * h + rbh) + wbh)
            else:
                n = math.tanh(wh * value + rh * (rg * h) + rbh + wbh)
            h = (1 - z) * n + z * h
            for name, want in (("z", z), ("r", rg), ("n", n), ("h", h)):
                got = float(trace.components[name][0, step, 0])
                assert abs(got - want) < 1e-6, (linear, step, name)


# -- coverage, profiles and the plugin ------------------------------------------------
def test_coverage_and_profile_on_an_onnx_model(exported, x, tmp_path):
    path, _ = exported["lstm"]
    rnn = RNNModel(path)
    train = np.random.default_rng(3).normal(size=(60, 6, 3)).astype(np.float32)
    profile = Profile(window=(1, 5)).fit(rnn, train)
    profile.save(tmp_path / "p.json")
    loaded = Profile.load(tmp_path / "p.json")
    loaded.check(RNNModel(path))
    coverage = Coverage(rnn, loaded)
    coverage.update(x)
    assert coverage.n_inputs_ == 9 and 0 < coverage.rates()["TC"] <= 1
    changed = onnx.load(path)
    weight = next(t for t in changed.graph.initializer if t.name == node_of(path).input[2])
    value = numpy_helper.to_array(weight) + np.float32(0.01)
    weight.CopyFrom(numpy_helper.from_array(value, weight.name))
    with pytest.raises(Exception, match="weights fingerprint"):
        loaded.check(RNNModel(changed))


def test_tracked_by_the_plugin(pytester, exported):
    path, _ = exported["gru"]
    pytester.makeconftest(
        f"""
import numpy as np
import pytest
from pytest_rnncov import RNNModel


@pytest.fixture(scope="session")
def gru(rnncov):
    x_train = np.random.default_rng(0).normal(size=(64, 6, 3)).astype("float32")
    return rnncov.track(RNNModel({path!r}), x_train=x_train, window=(1, 5), name="gru")
"""
    )
    pytester.makepyfile(
        test_feed="""
import numpy as np


def test_feed(gru):
    x = np.random.default_rng(1).normal(size=(16, 6, 3)).astype("float32")
    assert gru.predict(x).shape == (16, 3)
"""
    )
    result = pytester.runpytest("--rnn-coverage=0.01", "-p", "no:randomly")
    result.assert_outcomes(passed=1)
    assert "gru" in result.stdout.str()


# -- refused ---------------------------------------------------------------------------
def dense_model():
    graph = helper.make_graph(
        [
            helper.make_node("Gemm", ["x", "W"], ["hidden"], transB=1),
            helper.make_node("Relu", ["hidden"], ["out"]),
        ],
        "dense",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", 3])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, ["batch", 2])],
        [numpy_helper.from_array(np.ones((2, 3), np.float32), "W")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def test_a_graph_without_recurrent_nodes_is_refused_by_name(tmp_path):
    path = tmp_path / "dense.onnx"
    onnx.save(dense_model(), str(path))
    with pytest.raises(ModelError, match=r"no LSTM, GRU or RNN node \(its op types: Gemm, Relu\)"):
        RNNModel(str(path))


def test_files_that_are_not_onnx_models(tmp_path, exported):
    text = tmp_path / "notes.onnx"
    text.write_text("this is a text file, not a model\n" * 20)
    with pytest.raises(ModelError, match="not an ONNX file|not a valid ONNX model"):
        RNNModel(text)
    data = open(exported["lstm"][0], "rb").read()
    truncated = tmp_path / "truncated.onnx"
    truncated.write_bytes(data[: len(data) // 2])
    with pytest.raises(ModelError, match="not an ONNX file|not a valid ONNX model"):
        RNNModel(truncated)
    with pytest.raises(ModelError, match="not an ONNX file|not a valid ONNX model"):
        load_model(truncated)
    empty = tmp_path / "empty.onnx"
    empty.write_bytes(b"")
    with pytest.raises(ModelError, match="not an ONNX file"):
        RNNModel(empty)
    with pytest.raises(InvalidArgument, match="must name a .onnx file"):
        RNNModel(str(tmp_path / "model.keras"))
    with pytest.raises(InvalidArgument, match="is no file"):
        RNNModel(tmp_path / "missing.onnx")


@pytest.mark.parametrize("location", ["../secret.bin", "/etc/hostname", "sub/../../secret.bin"])
def test_external_data_outside_the_folder_is_refused(tmp_path, location):
    folder = tmp_path / "model"
    folder.mkdir()
    (tmp_path / "secret.bin").write_bytes(np.zeros(64, np.float32).tobytes())
    model = hand_model("GRU", lengths=False)
    weight = next(t for t in model.graph.initializer if t.name == "W")
    weight.ClearField("raw_data")
    weight.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("offset", "0"), ("length", "144")):
        entry = weight.external_data.add()
        entry.key, entry.value = key, value
    path = folder / "gru.onnx"
    path.write_bytes(model.SerializeToString())
    with pytest.raises(UnsafeModel, match="outside the model's folder"):
        RNNModel(path)
    with pytest.raises(UnsafeModel, match="outside the model's folder"):
        load_model(path)


def _external_tensor(name: str, location: str, data_type: int, dims: list[int]) -> Any:
    tensor = TensorProto(name=name, data_type=data_type, dims=dims)
    tensor.data_location = TensorProto.EXTERNAL
    for key, value in (("location", location), ("length", str(4 * int(np.prod(dims))))):
        entry = tensor.external_data.add()
        entry.key, entry.value = key, value
    return tensor


def test_external_data_of_a_local_function_comes_from_the_models_folder(tmp_path, monkeypatch):
    """A tensor inside one of the model's local functions (ModelProto.functions) escaped
    the location check, and ONNX Runtime read its file from the current directory into the
    outputs: now it is checked like the graph's, and read from the model's folder."""
    folder, cwd = tmp_path / "model", tmp_path / "cwd"
    folder.mkdir()
    cwd.mkdir()
    (cwd / "secret.bin").write_bytes(np.arange(1, 17, dtype=np.float32).tobytes())
    model = hand_model("GRU", lengths=False)
    leak = _external_tensor("leak", "secret.bin", TensorProto.FLOAT, [16])
    model.functions.append(
        helper.make_function(
            "evil.local",
            "Leak",
            ["x"],
            ["y"],
            [helper.make_node("Constant", [], ["y"], value=leak)],
            opset_imports=[helper.make_opsetid("", 17)],
        )
    )
    path = folder / "gru.onnx"
    path.write_bytes(model.SerializeToString())
    monkeypatch.chdir(cwd)
    with pytest.raises(ModelError, match="'secret.bin', which does not exist in"):
        RNNModel(path)  # once: read from cwd
    (folder / "secret.bin").write_bytes(np.zeros(16, np.float32).tobytes())
    loaded = load_model(path)
    read = numpy_helper.to_array(loaded.functions[0].node[0].attribute[0].t)
    np.testing.assert_array_equal(read, np.zeros(16, np.float32))  # the folder's, not cwd's
    model.functions[0].node[0].attribute[0].t.external_data[0].value = "../cwd/secret.bin"
    path.write_bytes(model.SerializeToString())
    with pytest.raises(UnsafeModel, match="outside the model's folder"):
        RNNModel(path)


def test_external_data_onnx_does_not_load_is_refused(tmp_path, monkeypatch):
    """ONNX loads no sparse tensor's external data, and ONNX Runtime read it from the
    current directory: whatever stays external after loading is refused."""
    folder, cwd = tmp_path / "model", tmp_path / "cwd"
    folder.mkdir()
    cwd.mkdir()
    for where in (folder, cwd):
        (where / "s.bin").write_bytes(np.full(4, 1000, np.float32).tobytes())
    model = hand_model("GRU", lengths=False)
    values = _external_tensor("s_values", "s.bin", TensorProto.FLOAT, [4])
    indices = numpy_helper.from_array(np.arange(4, dtype=np.int64), "s_indices")
    model.graph.sparse_initializer.append(helper.make_sparse_tensor(values, indices, [4]))
    path = folder / "gru.onnx"
    path.write_bytes(model.SerializeToString())
    monkeypatch.chdir(cwd)
    with pytest.raises(UnsafeModel, match="tensor 's_values' keeps its data in 's.bin', which"):
        RNNModel(path)


def test_external_data_inside_the_folder_loads(tmp_path, x):
    model = hand_model("GRU", lengths=False)
    path = tmp_path / "gru.onnx"
    saved = model.__deepcopy__()  # onnx.save moves the tensors of what it saves out
    onnx.save(saved, str(path), save_as_external_data=True, location="gru.data", size_threshold=0)
    assert (tmp_path / "gru.data").is_file()
    np.testing.assert_array_equal(RNNModel(path).trace(x).h, RNNModel(model).trace(x).h)
    with pytest.raises(ModelError, match="pass the .onnx file's path"):
        RNNModel(onnx.load(str(path), load_external_data=False))


@pytest.mark.parametrize(
    ("build", "match"),
    [
        (
            lambda: hand_model("LSTM", peepholes=np.full((1, 12), 0.1, np.float32)),
            "peephole weights \\(input P\\)",
        ),
        (lambda: hand_model("LSTM", attributes={"clip": 3.0}), "clip=3.0"),
        (lambda: hand_model("GRU", attributes={"layout": 1}), "layout=1"),
        (lambda: hand_model("LSTM", attributes={"input_forget": 1}), "input_forget=1"),
        (
            lambda: hand_model("RNN", attributes={"activations": ["Softsign"]}),
            "activation 'Softsign'",
        ),
        (
            lambda: hand_model(
                "RNN", attributes={"activations": ["LeakyRelu"], "activation_alpha": [0.1]}
            ),
            "activation_alpha",
        ),
        (
            lambda: hand_model("LSTM", attributes={"activations": ["Sigmoid", "Tanh", "Relu"]}),
            "g=tanh and h=relu",
        ),
        (
            lambda: hand_model("GRU", initial_h=np.ones((1, 1, 4), np.float32)),
            "non-zero initial_h",
        ),
        (  # a bare numpy broadcasting error before
            lambda: hand_model(
                "GRU",
                weights=(
                    np.zeros((1, 12, 3), np.float32),
                    np.zeros((1, 12, 4), np.float32),
                    np.zeros((1, 12), np.float32),
                ),
            ),
            r"B of shape \(1, 12\): expected .* \(1, 24\)",
        ),
    ],
)
def test_unsupported_nodes_are_refused(build, match):
    with pytest.raises(ModelError, match=match):
        RNNModel(build())


def test_zero_peepholes_are_plain_lstms(padded):
    model = hand_model("LSTM", peepholes=np.zeros((1, 12), np.float32))
    check_exact(model, padded)


def test_custom_operators_and_several_inputs_are_refused():
    model = dense_model()
    model.graph.node[1].domain = "my.ops"
    model.opset_import.append(helper.make_opsetid("my.ops", 1))
    with pytest.raises(UnsafeModel, match=r"custom operators Relu \(domain 'my.ops'\)"):
        RNNModel(model)
    model = hand_model("GRU", lengths=False)
    model.graph.input.append(helper.make_tensor_value_info("extra", TensorProto.FLOAT, [1]))
    with pytest.raises(ModelError, match="takes 2 inputs \\('x', 'extra'\\)"):
        RNNModel(model)


def test_layers_and_outputs_are_chosen_clearly(exported, x):
    path, _ = exported["stacked_gru"]
    first, second = node_of(path, 0), node_of(path, 1)
    with pytest.raises(UnknownLayer, match=f"'{first.name}' \\(GRU, index 0\\), '{second.name}'"):
        RNNModel(path, "decoder")
    with pytest.raises(
        UnknownLayer,
        match=r"layer=2 is no index of a recurrent node \(0 to 1\); the recurrent nodes are",
    ):
        RNNModel(path, 2)
    with pytest.raises(InvalidArgument, match="not bidirectional"):
        RNNModel(path, direction="backward")
    with pytest.raises(ModelError, match="trace_on='device' is not available"):
        RNNModel(path, trace_on="device")
    model = onnx.load(path)
    model.graph.output.append(  # the checker wants a shape: its rank, sizes unknown
        helper.make_tensor_value_info(second.output[0], TensorProto.FLOAT, [None] * 4)
    )
    rnn = RNNModel(model)
    rnn.trace(x)  # traces need no prediction
    with pytest.raises(ModelError, match="has 2 outputs .*pass output=INDEX"):
        rnn.predict(x)
    np.testing.assert_array_equal(RNNModel(model, output="y").predict(x), ort_run(path, x)[0])
    np.testing.assert_array_equal(RNNModel(model, output=0).predict(x), ort_run(path, x)[0])


def test_only_what_is_fetched_runs(x):
    """ONNX Runtime runs every node of a graph, also one no fetched output needs: an extra
    output that fails at run time (a Reshape of the batch to 7 x 7) failed every predict,
    and one of 60,000 x 60,000 took 14.6 GB each time. The session keeps the nodes the
    fetched outputs need, also those a subgraph reads from the graph around it."""
    model = hand_model("GRU")
    want = ort_run(model, x)[0]
    graph = model.graph
    flatten = next(n for n in graph.node if n.op_type == "Flatten")
    flatten.output[0] = "flat"  # read only inside the If's branches, not as an input
    branches = [
        helper.make_graph(
            [helper.make_node("Identity", ["flat"], [f"{side}_out"])],
            side,
            [],
            [helper.make_tensor_value_info(f"{side}_out", TensorProto.FLOAT, None)],
        )
        for side in ("then", "else")
    ]
    graph.initializer.extend(
        [
            numpy_helper.from_array(np.array(True), "yes"),
            numpy_helper.from_array(np.array([7, 7], np.int64), "seven_by_seven"),
        ]
    )
    graph.node.extend(
        [
            helper.make_node(
                "If", ["yes"], ["out"], then_branch=branches[0], else_branch=branches[1]
            ),
            helper.make_node("Reshape", ["x", "seven_by_seven"], ["broken"]),
        ]
    )
    graph.output.append(helper.make_tensor_value_info("broken", TensorProto.FLOAT, [7, 7]))
    with pytest.raises(Exception, match="(?i)reshape"):  # the graph as it is
        ort_run(model, x, ["out"])
    rnn = RNNModel(model, output="out")
    np.testing.assert_array_equal(rnn.predict(x), want)
    np.testing.assert_array_equal(rnn.trace(x).h, RNNModel(hand_model("GRU")).trace(x).h)


def test_profile_fit_on_the_command_line(exported, tmp_path):
    import subprocess
    import sys

    path, _ = exported["gru"]
    train = np.random.default_rng(4).normal(size=(40, 6, 3)).astype(np.float32)
    np.save(tmp_path / "x.npy", train)
    done = subprocess.run(
        [sys.executable, "-m", "pytest_rnncov", "profile", "fit", path, "--x-train", "x.npy"]
        + ["--window", "1,5", "--out", "p.json"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    Profile.load(tmp_path / "p.json").check(RNNModel(path))


def test_keras_converted_by_tf2onnx(x):
    """tf2onnx writes a Keras LSTM (and a Bidirectional one) as an LSTM node; Keras' GRU and
    SimpleRNN become a Loop, which is refused by name."""
    tf2onnx = pytest.importorskip("tf2onnx")
    keras = pytest.importorskip("keras")
    import tensorflow as tf

    keras.utils.set_random_seed(0)
    spec = (tf.TensorSpec((None, 6, 3), tf.float32, name="x"),)
    layers = {
        "lstm": keras.layers.LSTM(4, return_sequences=True),
        "bidirectional": keras.layers.Bidirectional(keras.layers.LSTM(4, return_sequences=True)),
        "gru": keras.layers.GRU(4, return_sequences=True),
    }
    for name, layer in layers.items():
        model = keras.Sequential(
            [keras.Input((6, 3)), layer, keras.layers.Flatten(), keras.layers.Dense(2)]
        )
        proto, _ = tf2onnx.convert.from_function(
            tf.function(lambda v, m=model: m(v)), input_signature=spec, opset=17
        )
        if name == "gru":
            with pytest.raises(ModelError, match=r"no LSTM, GRU or RNN node \(.*Loop"):
                RNNModel(proto)
            continue
        check_exact(proto, x)
        sequence = np.asarray(keras.Model(model.inputs[0], model.layers[0].output)(x))
        np.testing.assert_allclose(RNNModel(proto).trace(x).h, sequence[..., :4], atol=TOL)
        np.testing.assert_allclose(RNNModel(proto).predict(x), np.asarray(model(x)), atol=TOL)
        if name == "bidirectional":
            check_exact(proto, x, direction="backward")
            backward = RNNModel(proto, direction="backward").trace(x)
            np.testing.assert_allclose(backward.h[:, ::-1], sequence[..., 4:], atol=TOL)


def with_input_shape(model, dims):
    model.graph.input[0].CopyFrom(helper.make_tensor_value_info("x", TensorProto.FLOAT, dims))
    return model


def test_a_fixed_batch_is_refused_naming_the_export_fix(x):
    """torch.onnx.export without dynamic_axes fixes the batch: every call of another size
    failed in ONNX Runtime, with the cause cut off the message."""
    with pytest.raises(ModelError, match=r"batches of exactly 4 .*dynamic_axes=\{'x': \{0:"):
        RNNModel(with_input_shape(hand_model("GRU", lengths=False), [4, 6, 3]))
    any_steps = RNNModel(with_input_shape(hand_model("GRU", lengths=False), ["b", "t", 3]))
    with pytest.raises(
        InvalidInput, match=r"expects \(batch, any, 3\) \(if this is one input, add a batch axis"
    ):
        any_steps.predict(x[0])
    with pytest.raises(InvalidInput, match=r"expects \(batch, any, 3\)$"):
        any_steps.predict(x[0, :, 0])
    fixed_at_one = with_input_shape(hand_model("GRU", lengths=False), [1, 6, 3])
    with pytest.raises(
        ModelError, match=r"exactly 1 .*also runs with RNNModel\(..., batch_size=1\)"
    ):
        RNNModel(fixed_at_one)
    np.testing.assert_allclose(
        RNNModel(fixed_at_one, batch_size=1).predict(x[:3]),
        np.concatenate([ort_run(fixed_at_one, x[i : i + 1])[0] for i in range(3)]),
        atol=1e-6,
    )


def test_the_command_line_fits_a_model_fixed_at_one_and_names_it_by_its_file(x, tmp_path):
    """profile fit said "also runs with RNNModel(..., batch_size=1)", which it had no option
    for; it named the model after its graph ('hand'), where Python names it after its file;
    and it took --unsafe-load for an ONNX file, which holds no code to run."""
    import subprocess
    import sys

    onnx.save(with_input_shape(hand_model("GRU", lengths=False), [1, 6, 3]), tmp_path / "gru.onnx")
    np.save(tmp_path / "x.npy", x)

    def fit(*options):
        return subprocess.run(
            [sys.executable, "-m", "pytest_rnncov", "profile", "fit", "gru.onnx", "--x-train",
             "x.npy", "--out", "p.json", *options],
            cwd=tmp_path, capture_output=True, text=True,
        )  # fmt: skip

    refused = fit()
    assert refused.returncode == 4 and not (tmp_path / "p.json").exists()
    assert "ONNX model 'gru' takes batches of exactly 1" in refused.stderr
    assert "(a model fixed at 1 also runs with --batch-size 1)" in refused.stderr
    assert "--batch-size 0 must be an integer >= 1" in fit("--batch-size", "0").stderr
    unsafe = fit("--batch-size", "1", "--unsafe-load")
    assert unsafe.returncode == 4 and "drop --unsafe-load" in unsafe.stderr
    done = fit("--batch-size", "1")
    assert done.returncode == 0, done.stderr
    expected = Profile().fit(RNNModel(tmp_path / "gru.onnx", batch_size=1), x)
    assert Profile.load(tmp_path / "p.json").text() == expected.text()


def test_token_ids_are_checked_against_the_gathered_axis():
    """Gather(table (features, vocab), ids, axis=1): ids index the table's second axis (the
    range was read from the first: valid ids 2-9 were refused)."""
    rng = np.random.default_rng(0)
    table = rng.normal(size=(3, 10)).astype(np.float32)
    model = hand_model("GRU", lengths=False)
    graph = model.graph
    graph.initializer.append(numpy_helper.from_array(table, "table"))
    graph.node.insert(0, helper.make_node("Gather", ["table", "ids"], ["features"], axis=1))
    graph.node.insert(1, helper.make_node("Transpose", ["features"], ["x"], perm=[1, 2, 0]))
    graph.input[0].CopyFrom(helper.make_tensor_value_info("ids", TensorProto.INT64, ["batch", 6]))
    onnx.checker.check_model(model)
    rnn = RNNModel(model)
    assert rnn.id_range == (0, 10)
    ids = rng.integers(0, 10, size=(5, 6)).astype(np.int64)
    np.testing.assert_allclose(rnn.predict(ids), ort_run_inputs(model, {"ids": ids}), atol=1e-6)
    with pytest.raises(InvalidInput, match=r"\[0, 10\)"):
        rnn.predict(ids + 10)


def ort_run_inputs(model, feeds):
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(None, feeds)[0]


def test_an_output_that_is_not_a_tensor_is_refused():
    """A ZipMap's sequence of maps came back as an object array of dicts."""
    model = hand_model("GRU", lengths=False)
    model.graph.node.append(
        helper.make_node(
            "ZipMap", ["out"], ["probs"], domain="ai.onnx.ml", classlabels_int64s=[0, 1, 2, 3]
        )
    )
    maps = helper.make_sequence_type_proto(
        helper.make_map_type_proto(
            TensorProto.INT64, helper.make_tensor_type_proto(TensorProto.FLOAT, [])
        )
    )
    model.graph.output[0].CopyFrom(helper.make_value_info("probs", maps))
    model.opset_import.append(helper.make_opsetid("ai.onnx.ml", 3))
    with pytest.raises(ModelError, match="returns 'probs' as a sequence_type, not a tensor"):
        RNNModel(model)


@pytest.mark.parametrize("value", [0.0, 0.5])
def test_a_sparse_initial_state_is_read(x, value):
    """initial_h as a sparse initializer, which the adapter did not read: a non-zero one
    was not refused (the trace started from zeros where the node did not); zeros trace."""
    model = hand_model("GRU", lengths=False)
    node = next(n for n in model.graph.node if n.op_type == "GRU")
    node.input.append("initial_h")
    count = 1 if value else 0
    sparse = helper.make_sparse_tensor(
        numpy_helper.from_array(np.full(count, value, np.float32), "initial_h"),
        numpy_helper.from_array(np.zeros(count, np.int64), "initial_h_indices"),
        [1, len(x), 4],
    )
    model.graph.sparse_initializer.append(sparse)
    if value:
        with pytest.raises(ModelError, match="non-zero initial_h"):
            RNNModel(model)
        return
    np.testing.assert_allclose(RNNModel(model).predict(x), ort_run(model, x)[0], atol=1e-6)


def test_a_name_shared_by_two_nodes_is_refused():
    """An unnamed node is shown as OpType_index, which a named one may also be called:
    the name picked the first silently."""
    model = hand_model("GRU", lengths=False)
    node = next(n for n in model.graph.node if n.op_type == "GRU")
    node.name = "GRU_99"
    twin = onnx.NodeProto()
    twin.CopyFrom(node)
    twin.name, twin.output[0], twin.output[1] = "", "Y2", "Y_h2"
    model.graph.node.insert(99, twin)
    names = [RNNModel(model, i).layer_name for i in (0, 1)]
    shown = names[1]
    node.name = shown
    with pytest.raises(ModelError, match=f"layer='{shown}' names 2 recurrent nodes"):
        RNNModel(model, shown)


# -- a hostile review's findings (2026-11-29) ---------------------------------------------
def test_external_data_in_a_functions_attribute_default_is_checked(tmp_path, monkeypatch):
    """A local function's attribute default (FunctionProto.attribute_proto), taken by a
    Constant by reference, held an external tensor no check saw, and ONNX Runtime read
    the file from the current directory into the outputs."""
    folder, cwd = tmp_path / "model", tmp_path / "cwd"
    folder.mkdir()
    cwd.mkdir()
    (cwd / "secret.bin").write_bytes(np.arange(1, 5, dtype=np.float32).tobytes())
    model = hand_model("GRU", lengths=False)
    constant = helper.make_node("Constant", [], ["y"])
    reference = constant.attribute.add()
    reference.name, reference.ref_attr_name = "value", "v"
    reference.type = onnx.AttributeProto.TENSOR
    function = helper.make_function(
        "evil.local", "Leak", [], ["y"], [constant], [helper.make_opsetid("", 17)]
    )
    leak = _external_tensor("leak", "secret.bin", TensorProto.FLOAT, [4])
    function.attribute_proto.append(helper.make_attribute("v", leak))
    model.functions.append(function)
    model.opset_import.append(helper.make_opsetid("evil.local", 1))
    model.graph.node.append(helper.make_node("Leak", [], ["leaked"], domain="evil.local"))
    model.graph.output.append(helper.make_tensor_value_info("leaked", TensorProto.FLOAT, [4]))
    model.ir_version = 9
    path = folder / "m.onnx"
    path.write_bytes(model.SerializeToString())
    monkeypatch.chdir(cwd)
    with pytest.raises(ModelError, match="'leak' keeps its data in 'secret.bin', which does not"):
        RNNModel(path, output="leaked")
    (folder / "secret.bin").write_bytes(np.zeros(4, np.float32).tobytes())
    with pytest.raises(UnsafeModel, match="'leak' keeps its data in 'secret.bin', which ONNX"):
        RNNModel(path, output="leaked")  # beside the model, but ONNX would not load it


def test_external_data_of_another_size_than_its_tensor_is_refused_unread(tmp_path):
    """ONNX read a whole data file for a tensor of 48 values (6 GiB of memory for a 3 GiB
    file): a tensor's data must be the bytes its shape and type need."""
    model = hand_model("GRU", lengths=False)
    path = tmp_path / "gru.onnx"
    onnx.save(model, str(path), save_as_external_data=True, location="w.bin", size_threshold=0)
    proto = onnx.load(str(path), load_external_data=False)
    for tensor in proto.graph.initializer:  # every tensor's data to the end of the file
        del tensor.external_data[:]
        for key, value in (("location", "w.bin"), ("offset", "0")):
            entry = tensor.external_data.add()
            entry.key, entry.value = key, value
    path.write_bytes(proto.SerializeToString())
    with pytest.raises(ModelError, match=r"tensor 'W' of shape \[1, 12, 3\] needs 144 bytes"):
        RNNModel(path)
    with open(tmp_path / "w.bin", "r+b") as data:  # beyond the file's end
        data.truncate(100)
    for key, value in (("offset", "50"), ("length", "144")):
        entry = proto.graph.initializer[0].external_data.add()
        entry.key, entry.value = key, value
    del proto.graph.initializer[0].external_data[1]  # the offset 0
    path.write_bytes(proto.SerializeToString())
    with pytest.raises(ModelError, match="at offset 50, length 144, outside the file's 100 bytes"):
        load_model(path)


def test_a_file_larger_than_protobuf_reads_is_refused_unread(tmp_path, monkeypatch):
    import pytest_rnncov.adapters.onnx as onnx_adapter

    path = tmp_path / "big.onnx"
    path.write_bytes(hand_model("GRU", lengths=False).SerializeToString())
    monkeypatch.setattr(onnx_adapter, "MAX_PROTO_BYTES", path.stat().st_size - 1)
    with pytest.raises(ModelError, match="more than the 2 GiB an ONNX file"):
        RNNModel(path)


def test_sparse_tensors_onnx_runtime_would_make_dense_are_bounded():
    """ONNX Runtime makes every sparse initializer dense when it loads the model, used or
    not: a 911-byte file declaring 2 GiB took 4 GiB of memory."""
    model = hand_model("GRU", lengths=False)
    values = numpy_helper.from_array(np.ones(1, np.float32), "bomb")
    indices = numpy_helper.from_array(np.zeros(1, np.int64), "bomb_indices")
    model.graph.sparse_initializer.append(helper.make_sparse_tensor(values, indices, [2**29]))
    with pytest.raises(ModelError, match="sparse tensors of 536,870,912 values once dense"):
        RNNModel(model)


def test_a_custom_operator_inside_a_local_function_is_unsafe():
    model = hand_model("GRU", lengths=False)
    body = [helper.make_node("Evil", ["a"], ["b"], domain="evil.ops")]
    model.functions.append(
        helper.make_function(
            "my.local",
            "Wrap",
            ["a"],
            ["b"],
            body,
            [helper.make_opsetid("", 17), helper.make_opsetid("evil.ops", 1)],
        )
    )
    with pytest.raises(UnsafeModel, match=r"custom operators Evil \(domain 'evil.ops'\)"):
        RNNModel(model)


def test_a_time_major_model_fed_as_many_inputs_as_steps_is_refused(tmp_path):
    """With a layer between the input and a time-major LSTM, only the node's batch axis
    tells; with as many inputs as steps it could not, and input i's trace was batch
    column i of every input's step: one input is run to tell."""

    class TimeMajor(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear, self.rnn = nn.Linear(3, 3), nn.LSTM(3, 4)

        def forward(self, x):  # x: (steps, batch, 3)
            return self.rnn(self.linear(x))[0][-1]

    torch.manual_seed(0)
    path = tmp_path / "time_major.onnx"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            TimeMajor().eval(),
            (torch.randn(6, 2, 3),),
            str(path),
            dynamo=False,
            input_names=["x"],
            output_names=["y"],
            dynamic_axes={"x": {0: "steps", 1: "batch"}, "y": {0: "batch"}},
        )
    square = np.random.default_rng(0).normal(size=(6, 6, 3)).astype(np.float32)
    with pytest.raises(ModelError, match="its batch axis is not the model input's first"):
        RNNModel(path).trace(square)
    with pytest.raises(ModelError, match="its batch axis is not the model input's first"):
        RNNModel(path).trace(square[:5])


def test_square_batches_of_a_batch_first_model_are_traced(exported):
    path, module = exported["lstm"]
    square = np.random.default_rng(1).normal(size=(6, 6, 3)).astype(np.float32)
    with torch.no_grad():
        own = module.rnn(torch.from_numpy(square))[0].numpy()
    np.testing.assert_allclose(RNNModel(path).trace(square).h, own, atol=TOL)


def test_the_fingerprint_covers_integer_and_sparse_initializers():
    """A quantized (int8) or sparse weight that changed left the fingerprint as it was,
    so a profile of the old model was taken for the new one's."""
    fingerprints = []
    for scale in (1, 2):
        model = hand_model("GRU", lengths=False)
        quantized = numpy_helper.from_array(np.full(3, scale, np.int8), "q")
        model.graph.initializer.append(quantized)
        values = numpy_helper.from_array(np.full(1, scale, np.float32), "s")
        indices = numpy_helper.from_array(np.zeros(1, np.int64), "s_indices")
        model.graph.sparse_initializer.append(helper.make_sparse_tensor(values, indices, [2]))
        fingerprints.append(RNNModel(model).fingerprint())
        model.graph.initializer[-1].CopyFrom(numpy_helper.from_array(np.full(3, 3, np.int8), "q"))
        fingerprints.append(RNNModel(model).fingerprint())
    assert len(set(fingerprints)) == 4


@pytest.mark.parametrize(
    ("change", "match"),
    [
        (lambda m: m.graph.initializer[0].raw_data.__len__(), None),  # unchanged: traced
        (
            lambda m: m.graph.initializer[0].CopyFrom(
                numpy_helper.from_array(np.full((1, 12, 3), np.nan, np.float32), "W")
            ),
            "NaN or infinite values in W",
        ),
        (
            lambda m: m.graph.input[0].type.tensor_type.shape.dim[2].__setattr__("dim_value", 0),
            "declares dimension 2 of its input 'x' as 0",
        ),
        (  # -1 is how some converters write a dynamic dimension: read as one
            lambda m: m.graph.input[0].type.tensor_type.shape.dim[0].__setattr__("dim_value", -1),
            None,
        ),
        (
            lambda m: m.graph.input[0].CopyFrom(
                helper.make_tensor_sequence_value_info("x", TensorProto.FLOAT, None)
            ),
            "takes input 'x' as a sequence_type, not a tensor",
        ),
    ],
)
def test_weights_and_inputs_that_cannot_be_traced_are_refused(x, change, match):
    model = hand_model("GRU", lengths=False)
    change(model)
    if match is None:
        RNNModel(model).trace(x)
        return
    with pytest.raises(ModelError, match=match):
        RNNModel(model)


def test_a_nul_byte_or_a_fifo_as_the_data_file_is_refused(tmp_path):
    import os

    model = hand_model("GRU", lengths=False)
    path = tmp_path / "gru.onnx"
    onnx.save(model, str(path), save_as_external_data=True, location="w.bin", size_threshold=0)
    proto = onnx.load(str(path), load_external_data=False)
    location = proto.graph.initializer[0].external_data[0]
    assert location.key == "location"
    location.value = "w.bin\0x"
    path.write_bytes(proto.SerializeToString())
    with pytest.raises(ModelError, match="not a file name \\(it holds a NUL byte\\)"):
        RNNModel(path)
    os.mkfifo(tmp_path / "fifo.bin")  # reading it would wait forever
    location.value = "fifo.bin"
    path.write_bytes(proto.SerializeToString())
    with pytest.raises(ModelError, match="'fifo.bin', which is not a regular file"):
        RNNModel(path)


@pytest.mark.parametrize(
    ("data_type", "values"),
    [
        (TensorProto.INT4, [1, 2, 3, -1, 0]),
        (TensorProto.UINT4, [1, 2, 3, 15, 0]),
        (26, [1, 0, -1, 1, 0]),  # INT2 (onnx 1.20)
        (TensorProto.BFLOAT16, [1.0, 2.0, 3.0, 4.0, 5.0]),
        (TensorProto.FLOAT8E4M3FN, [1.0, 2.0, 3.0, 4.0, 5.0]),
    ],
)
def test_packed_and_narrow_initializers_load_from_external_data(tmp_path, x, data_type, values):
    """Each external tensor's bytes are checked against its shape and type: types of
    fewer than 8 bits pack several values a byte, and a valid model must still load;
    their fingerprint follows their bytes."""
    fingerprints = []
    for scale in (1, 0):
        model = hand_model("GRU", lengths=False)
        scaled = [v * scale for v in values]
        model.graph.initializer.append(helper.make_tensor("q", data_type, [5], scaled))
        model.ir_version = 11
        path = tmp_path / f"m{scale}.onnx"
        onnx.save(model, str(path), save_as_external_data=True, location=f"d{scale}.bin",
                  size_threshold=0)  # fmt: skip
        rnn = RNNModel(path)
        assert rnn.trace(x).h.shape == (9, 6, 4)
        fingerprints.append(rnn.fingerprint())
    assert fingerprints[0] != fingerprints[1]


def test_external_data_larger_than_the_machine_is_refused_unread(tmp_path, monkeypatch):
    import pytest_rnncov.adapters.onnx as onnx_adapter

    path = tmp_path / "gru.onnx"
    model = hand_model("GRU", lengths=False)
    onnx.save(model, str(path), save_as_external_data=True, location="w.bin", size_threshold=0)
    monkeypatch.setattr(onnx_adapter, "physical_memory", lambda: 100)
    with pytest.raises(
        ModelError,
        match=r"keeps 444 bytes of weights apart, more than the memory this process may use \(100 ",
    ):
        RNNModel(path)


def test_a_profile_fingerprinted_by_an_earlier_release_says_so(x):
    """The fingerprint now covers integer initializers; a profile fitted before says why
    it is stale, rather than that the weights changed."""
    model = hand_model("GRU", lengths=False)
    model.graph.initializer.append(numpy_helper.from_array(np.arange(3, dtype=np.int64), "k"))
    rnn = RNNModel(model)
    (earlier,) = rnn.earlier_fingerprints()
    profile = Profile(window=(1, 4)).fit(rnn, x)
    profile.fingerprint_ = earlier
    with pytest.raises(StaleProfile, match="fitted by an earlier pytest-rnncov, whose"):
        Coverage(rnn, profile)
    profile.fingerprint_ = "0" * 16
    with pytest.raises(
        StaleProfile, match=r"every initializer \(but string ones\) and node of the graph, also"
    ):
        Coverage(rnn, profile)
    floats_only = hand_model("GRU", lengths=False)
    del floats_only.graph.initializer[-1]  # the int64 axis, unused without lengths
    assert RNNModel(floats_only).earlier_fingerprints() == ()  # the same as before
