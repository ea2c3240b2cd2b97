"""Traces from the model's own forward pass (``h`` read from the framework, gates from one
batched matmul) equal the reference kernel (the layer recomputed step by step from its
weights, ``recompute=True``) within 1e-5 for every component, cell, framework and option:
masking, go_backwards, bidirectional halves, stacked layers, ``proj_size``, packed
sequences. The reference itself is checked against the frameworks' outputs in
test_keras_adapter.py and test_torch.py; here ``h`` is also checked against them."""

from __future__ import annotations

import re
import threading

import numpy as np
import pytest
import torch
from helpers import blas_threads
from torch import nn
from torch.nn.utils.rnn import pack_padded_sequence

from pytest_rnncov import BC, Coverage, InvalidArgument, Profile, RNNCovWarning, RNNModel
from pytest_rnncov.adapters.base import DEVICE_TRACE_BYTES, HOST_BATCH, OVERLAP_BATCH
from pytest_rnncov.core.abstractions import ABSTRACTIONS
from pytest_rnncov.core.activations import Activation
from pytest_rnncov.core.cells import GRUCell, LSTMCell
from pytest_rnncov.core.metrics.base import Signals

TOL = 1e-5


def assert_same_trace(fast, reference):
    assert fast.names == reference.names
    assert fast.length == reference.length
    if reference.mask is None:
        assert fast.mask is None
    else:
        np.testing.assert_array_equal(fast.mask, reference.mask)
    for name in reference.names:
        np.testing.assert_allclose(
            fast.components[name], reference.components[name], atol=TOL, rtol=0, err_msg=name
        )


def both_paths(model, *args, **kwargs):
    fast = RNNModel(model, *args, **kwargs)
    reference = RNNModel(model, *args, recompute=True, **kwargs)
    assert fast.reads_states and not reference.reads_states
    return fast, reference


# -- Keras 3 --------------------------------------------------------------------------------
KERAS_CELLS = [
    ("LSTM", {}),
    ("LSTM", {"recurrent_activation": "hard_sigmoid", "use_bias": False}),
    ("GRU", {}),
    ("GRU", {"reset_after": False}),
    ("SimpleRNN", {"activation": "relu"}),
]


@pytest.mark.parametrize(("cell", "options"), KERAS_CELLS)
@pytest.mark.parametrize("backwards", [False, True])
@pytest.mark.parametrize("sequences", [False, True])
def test_keras_layers(keras, seq_inputs, cell, options, backwards, sequences):
    keras.utils.set_random_seed(3)
    layer = getattr(keras.layers, cell)
    model = keras.Sequential(
        [
            keras.Input((7, 3)),
            layer(6, return_sequences=True),
            layer(5, name="traced", go_backwards=backwards, return_sequences=sequences, **options),
            keras.layers.Flatten(),
            keras.layers.Dense(2),
        ]
    )
    fast, reference = both_paths(model, "traced")
    outputs, trace = fast.run(seq_inputs)
    assert_same_trace(trace, reference.trace(seq_inputs))
    np.testing.assert_allclose(outputs, model.predict_on_batch(seq_inputs), atol=1e-6)
    if sequences:  # h is the layer's own output sequence (in processing order)
        own = keras.Model(model.inputs, model.get_layer("traced").output)
        np.testing.assert_allclose(trace.h, own.predict_on_batch(seq_inputs), atol=1e-6)


@pytest.mark.parametrize("cell", ["LSTM", "GRU", "SimpleRNN"])
@pytest.mark.parametrize("direction", ["forward", "backward"])
def test_keras_masked_bidirectional_with_states(keras, token_inputs, cell, direction):
    """An Embedding's mask through a Bidirectional layer that returns its states, read by a
    second recurrent layer downstream: the mask must reach it, as in the model."""
    keras.utils.set_random_seed(5)
    layer = getattr(keras.layers, cell)
    inputs = keras.Input((8,), dtype="int32")
    embedded = keras.layers.Embedding(30, 4, mask_zero=True)(inputs)
    sequence = keras.layers.Bidirectional(layer(5, return_sequences=True), name="bi")(embedded)
    last = layer(3)(sequence)
    model = keras.Model(inputs, keras.layers.Dense(2)(last))
    fast, reference = both_paths(model, "bi", direction=direction)
    outputs, trace = fast.run(token_inputs)
    assert_same_trace(trace, reference.trace(token_inputs))
    np.testing.assert_allclose(outputs, model.predict_on_batch(token_inputs), atol=1e-6)
    assert not trace.mask.all()


def test_keras_layer_returning_its_state(keras, seq_inputs):
    keras.utils.set_random_seed(6)
    inputs = keras.Input((7, 3))
    out, h, c = keras.layers.LSTM(5, return_state=True, name="traced")(inputs)
    model = keras.Model(inputs, keras.layers.Dense(2)(keras.layers.Concatenate()([out, h, c])))
    fast, reference = both_paths(model, "traced")
    outputs, trace = fast.run(seq_inputs)
    assert_same_trace(trace, reference.trace(seq_inputs))
    np.testing.assert_allclose(outputs, model.predict_on_batch(seq_inputs), atol=1e-6)


def test_keras_only_what_the_metrics_read(keras, stacked_model, seq_inputs):
    """Coverage traces only the components its metrics read, through the window's end; the
    coverage is that of the reference path."""
    fast, reference = both_paths(stacked_model)
    profile = Profile(window=(0, 4)).fit(reference, seq_inputs)
    for metrics, read in [(("SC", "TC"), ("h",)), (("BC", "SC", "TC"), ("f", "h"))]:
        a, b = Coverage(fast, profile, metrics), Coverage(reference, profile, metrics)
        assert a.components_ == read
        chunks = list(a.stream(seq_inputs))
        assert chunks[0].trace.names == read and chunks[0].trace.n_steps == 5 < 7
        b.update(seq_inputs)
        for name in metrics:
            np.testing.assert_array_equal(a[name].covered_, b[name].covered_)
            np.testing.assert_allclose(a[name].best_fitness_, b[name].best_fitness_, atol=1e-5)


def signal_metrics():
    from pytest_rnncov.core.metrics import BC, SC, TC

    return (BC("h", "net"), SC("h", "delta"), TC("h", "avg", w=3))


@pytest.mark.parametrize(("cell", "options"), KERAS_CELLS)
@pytest.mark.parametrize("backwards", [False, True])
def test_keras_pass_gives_the_sums_of_h(keras, seq_inputs, cell, options, backwards):
    """When every metric reads only signals of h and the layer's last state alone goes on,
    the forward pass sums h (no (B, T, U) states come back): the per-step sums equal
    float64 sums of the reference kernel's h, and the coverage is the reference path's."""
    keras.utils.set_random_seed(4)
    layer = getattr(keras.layers, cell)(5, go_backwards=backwards, name="traced", **options)
    model = keras.Sequential([keras.Input((7, 3)), layer, keras.layers.Dense(2)])
    fast, reference = both_paths(model, "traced")
    profile = Profile(window=(1, 5)).fit(reference, seq_inputs)
    a = Coverage(fast, profile, signal_metrics())
    b = Coverage(reference, profile, signal_metrics())
    assert a.sums_only_ and fast.gives_sums(a.components_)
    (chunk,) = a.stream(seq_inputs)
    trace = chunk.trace
    assert trace.names == ("h",) and not trace.components and trace.n_steps == 6
    assert (trace.length, trace.units) == (7, 5)
    np.testing.assert_allclose(chunk.outputs, model.predict_on_batch(seq_inputs), atol=1e-6)
    h = reference.trace(seq_inputs).h[:, :6].astype(np.float64)
    sums = trace.step_sums("h")
    assert sums.dtype == np.float64 and sums.shape == (12, 6, 2)
    np.testing.assert_allclose(sums[..., 0], h.sum(-1), atol=TOL, rtol=0)
    np.testing.assert_allclose(sums[..., 1], np.maximum(h, 0).sum(-1), atol=TOL, rtol=0)
    b.update(seq_inputs)
    for name in ("BC", "SC", "TC"):
        np.testing.assert_array_equal(a[name].covered_, b[name].covered_)
        np.testing.assert_allclose(a[name].best_fitness_, b[name].best_fitness_, atol=1e-5)


@pytest.mark.parametrize(("cell", "options"), KERAS_CELLS)
def test_keras_pass_gives_the_sums_alone_where_no_metric_reads_positive_parts(
    keras, seq_inputs, cell, options
):
    """The testrnn preset's signals (h/net, h/delta_net) and h/avg derive from the sums
    over units alone: the pass gives only those, (B, T, 1), equal to float64 sums of the
    reference kernel's h, and the same coverage. A stream that also feeds a coverage
    reading h/delta gives the sums of the positive parts too, and its coverage is the
    reference path's."""
    from pytest_rnncov.core.metrics import SC, TC

    keras.utils.set_random_seed(8)
    layer = getattr(keras.layers, cell)(5, name="traced", **options)
    model = keras.Sequential([keras.Input((7, 3)), layer, keras.layers.Dense(2)])
    fast, reference = both_paths(model, "traced")
    profile = Profile(window=(1, 5)).fit(reference, seq_inputs)
    metrics = (BC("h", "net"), SC("h", "delta_net"), TC("h", "avg", w=3))
    a, b = Coverage(fast, profile, metrics), Coverage(reference, profile, metrics)
    assert a.sums_only_ and not a.positive_parts_
    (chunk,) = a.stream(seq_inputs)
    sums = chunk.trace.step_sums("h")
    assert sums.dtype == np.float64 and sums.shape == (12, 6, 1)
    h = reference.trace(seq_inputs).h[:, :6].astype(np.float64)
    np.testing.assert_allclose(sums[..., 0], h.sum(-1), atol=TOL, rtol=0)
    np.testing.assert_allclose(chunk.outputs, model.predict_on_batch(seq_inputs), atol=1e-6)
    b.update(seq_inputs)
    for name in ("BC", "SC", "TC"):
        np.testing.assert_array_equal(a[name].covered_, b[name].covered_)
        np.testing.assert_allclose(a[name].best_fitness_, b[name].best_fitness_, atol=1e-5)
    with pytest.raises(InvalidArgument, match="not the sums of its positive parts"):
        chunk.signals.get("h", "delta")
    fed, expected = (Coverage(m, profile, (SC("h", "delta"),)) for m in (fast, reference))
    assert fed.positive_parts_
    (chunk,) = a.stream(seq_inputs, feeds=fed)
    assert chunk.trace.step_sums("h").shape == (12, 6, 2)
    fed.update_signals(chunk.signals)
    expected.update(seq_inputs)
    np.testing.assert_array_equal(fed["SC"].covered_, expected["SC"].covered_)


def test_a_source_without_the_positive_option_gives_both_sums(keras, seq_inputs):
    """A trace source whose ``iter_traces`` predates ``positive=`` (it takes ``summed``
    only) is not passed it: it gives both sums, under either preset."""
    model = keras.Sequential(
        [keras.Input((7, 3)), keras.layers.GRU(5, name="traced"), keras.layers.Dense(2)]
    )

    class Source:
        def __init__(self, inner):
            self.inner = inner

        def __getattr__(self, name):
            return getattr(self.inner, name)

        def iter_traces(self, x, *, outputs=True, until=None, components=None, summed=False):
            return self.inner.iter_traces(
                x, outputs=outputs, until=until, components=components, summed=summed
            )

    rnn = RNNModel(model)
    profile = Profile(window=(1, 5)).fit(rnn, seq_inputs)
    for preset in ("paper", "testrnn"):
        a, b = Coverage(Source(rnn), profile, preset=preset), Coverage(rnn, profile, preset=preset)
        (chunk,) = a.stream(seq_inputs)
        assert chunk.trace.step_sums("h").shape == (12, 6, 2)
        b.update(seq_inputs)
        for name in ("BC", "SC", "TC"):
            np.testing.assert_array_equal(a[name].times_, b[name].times_)


@pytest.mark.parametrize("abstraction", ABSTRACTIONS)
def test_a_coverage_reads_positive_parts_only_for_pos_neg_and_delta(keras, seq_inputs, abstraction):
    """SPEC section 2: pos sums the positive parts, neg is the sum less them, delta adds
    the changes of both; avg, net and delta_net derive from the sum alone. The paper
    preset's SC reads h/delta, the testrnn preset's nothing but sums over units."""
    from pytest_rnncov.core.metrics import SC, TC

    model = keras.Sequential(
        [keras.Input((7, 3)), keras.layers.GRU(5, name="traced"), keras.layers.Dense(2)]
    )
    rnn = RNNModel(model)
    profile = Profile(window=(1, 5)).fit(rnn, seq_inputs)
    reads = abstraction in ("pos", "neg", "delta")
    for metric in (BC("h", abstraction), SC("h", abstraction), TC("h", abstraction, w=3)):
        assert Coverage(rnn, profile, (metric,)).positive_parts_ is reads, metric
    assert Coverage(rnn, profile).positive_parts_
    assert not Coverage(rnn, profile, preset="testrnn").positive_parts_


@pytest.mark.parametrize(
    ("cell", "options", "gates"),
    [
        ("LSTM", {}, ("f", "c")),
        ("LSTM", {"recurrent_activation": "hard_sigmoid", "use_bias": False}, ("i", "o")),
        ("GRU", {}, ("z", "n")),
        ("GRU", {"reset_after": False}, ("r", "z")),
    ],
)
@pytest.mark.parametrize("backwards", [False, True])
def test_keras_pass_gives_the_sums_of_gates(keras, seq_inputs, cell, options, gates, backwards):
    """Metrics on gates or the cell state (the paper's BC on an LSTM's forget gate) read
    only signals too: the pass gives the sums of those and of h (the layer's cell by its
    formula), equal to float64 sums of the reference kernel's, and the same coverage."""
    from pytest_rnncov.core.metrics import BC, SC, TC

    keras.utils.set_random_seed(7)
    layer = getattr(keras.layers, cell)(5, go_backwards=backwards, name="traced", **options)
    model = keras.Sequential([keras.Input((7, 3)), layer, keras.layers.Dense(2)])
    fast, reference = both_paths(model, "traced")
    profile = Profile(window=(1, 5)).fit(reference, seq_inputs)
    metrics = (BC(gates[0], "avg"), SC(gates[1], "delta"), TC("h", "net", w=3))
    a, b = Coverage(fast, profile, metrics), Coverage(reference, profile, metrics)
    (chunk,) = a.stream(seq_inputs)
    assert set(chunk.trace.sums) == {*gates, "h"} and not chunk.trace.components
    np.testing.assert_allclose(chunk.outputs, model.predict_on_batch(seq_inputs), atol=1e-6)
    states = reference.trace(seq_inputs)
    for name in (*gates, "h"):
        values = states.components[name][:, :6].astype(np.float64)
        sums = chunk.trace.step_sums(name)
        np.testing.assert_allclose(sums[..., 0], values.sum(-1), atol=TOL, rtol=0, err_msg=name)
        positive = np.maximum(values, 0).sum(-1)
        np.testing.assert_allclose(sums[..., 1], positive, atol=TOL, rtol=0, err_msg=name)
    b.update(seq_inputs)
    for name in ("BC", "SC", "TC"):
        np.testing.assert_array_equal(a[name].covered_, b[name].covered_)
        np.testing.assert_allclose(a[name].best_fitness_, b[name].best_fitness_, atol=1e-5)


@pytest.mark.parametrize("cell", ["LSTM", "GRU"])
def test_keras_pass_sums_h_of_a_layer_returning_its_state(keras, seq_inputs, cell):
    """The model reads the layer's output and states: the summing twin gives them too."""
    keras.utils.set_random_seed(6)
    inputs = keras.Input((7, 3))
    out, *states = getattr(keras.layers, cell)(5, return_state=True, name="traced")(inputs)
    joined = keras.layers.Concatenate()([out, *states])
    model = keras.Model(inputs, keras.layers.Dense(2)(joined))
    fast, reference = both_paths(model, "traced")
    profile = Profile(window=(1, 5)).fit(reference, seq_inputs)
    (chunk,) = Coverage(fast, profile, signal_metrics()).stream(seq_inputs)
    assert chunk.trace.sums and chunk.trace.units == 5
    np.testing.assert_allclose(chunk.outputs, model.predict_on_batch(seq_inputs), atol=1e-6)
    h = reference.trace(seq_inputs).h[:, :6].astype(np.float64)
    np.testing.assert_allclose(chunk.trace.step_sums("h")[..., 0], h.sum(-1), atol=TOL, rtol=0)


def test_keras_pass_sums_are_float64_sums_of_its_own_h(keras, seq_inputs):
    """The sums the pass gives are the float64 sums of the h the same pass computes (the
    host's sums of the states path), not float32 ones: equal to 1e-12."""
    keras.utils.set_random_seed(5)
    model = keras.Sequential(
        [keras.Input((7, 3)), keras.layers.SimpleRNN(64, name="traced"), keras.layers.Dense(2)]
    )
    rnn = RNNModel(model, "traced")
    x = (seq_inputs * 3).astype(np.float32)
    sums = rnn._forward_sums(x, False, ("h",), True)[1]["h"]
    h = rnn.trace(x).h.astype(np.float64)
    np.testing.assert_allclose(sums[..., 0], h.sum(-1), atol=1e-12, rtol=0)
    np.testing.assert_allclose(sums[..., 1], np.maximum(h, 0).sum(-1), atol=1e-12, rtol=0)
    totals = rnn._forward_sums(x, False, ("h",), False)[1]["h"]  # no positive parts read
    assert totals.shape == (*h.shape[:2], 1)
    np.testing.assert_array_equal(totals[..., 0], sums[..., 0])


def test_pairwise_two_sum_keeps_what_float32_rounds_away(keras):
    """Hand-checked: float32 sums 2**24 + 1 + 1 + 1 - 2**24 + 0.5 to 0.5 (each 1 is lost);
    the pairwise sum with each rounding error kept gives 3.5 (6 values: padded to 8)."""
    from pytest_rnncov.adapters.keras import _pairwise_two_sum

    values = np.array([[2.0**24, 1, 1, 1, -(2.0**24), 0.5]], np.float32)
    assert float(np.float32(0)) + sum(np.float32(v) for v in values[0]) == 0.5
    high, low = (keras.ops.convert_to_numpy(a) for a in _pairwise_two_sum(values))
    assert high.dtype == low.dtype == np.float32
    assert np.float64(high[0]) + np.float64(low[0]) == 3.5


@pytest.mark.parametrize(
    "case",
    [
        "sequences",
        "masked",
        "bidirectional",
        "recompute",
        "neurons",
        "float64",
        "subclass",
        "subclass gates",
    ],
)
def test_keras_states_where_the_pass_cannot_sum(keras, seq_inputs, token_inputs, case):
    """h's states come back (and the host sums them) where the pass cannot give the sums:
    the sequence goes on, masked steps, a Bidirectional half, the reference kernel, a
    metric that reads single units, a layer computing in another dtype (the tap's RNN
    would start from float32 states) or a subclass with its own ``call`` (the tap runs
    the cell, not the layer; with a gate metric too, where the gate tap ran the cell's
    formula instead of the subclass's call and the outputs were off by 0.1); the outputs
    are the model's, the coverage the reference path's."""
    from pytest_rnncov.core.metrics import BC

    keras.utils.set_random_seed(6)
    x, metrics = seq_inputs, signal_metrics()
    if case == "subclass gates":
        metrics = (BC("f", "avg"), *metrics[1:])
    head = [keras.Input((7, 3))]
    if case == "masked":
        x = token_inputs
        head = [keras.Input((8,), dtype="int32"), keras.layers.Embedding(30, 3, mask_zero=True)]
    dtype = {"dtype": "float64"} if case == "float64" else {}
    kind = keras.layers.LSTM
    if case.startswith("subclass"):

        class Doubling(keras.layers.LSTM):
            def call(self, sequences, initial_state=None, mask=None, training=False):
                return super().call(2 * sequences, initial_state, mask, training)

        kind = Doubling
    layer = kind(5, return_sequences=case == "sequences", name="traced", **dtype)
    if case == "bidirectional":
        layer = keras.layers.Bidirectional(keras.layers.LSTM(5), name="traced")
    model = keras.Sequential([*head, layer, keras.layers.Flatten(), keras.layers.Dense(2)])
    if case.startswith("subclass"):
        with pytest.warns(
            RNNCovWarning,
            match=r"subclasses Keras' LSTM with its own call\(\).*f, i, o, c come from",
        ):
            rnn = RNNModel(model, "traced")
    else:
        rnn = RNNModel(model, "traced", recompute=case == "recompute")
    if case == "neurons":
        metrics = (*metrics, "NC")
    profile = Profile(window=(1, 5)).fit(rnn, x)
    coverage = Coverage(rnn, profile, metrics)
    summed = coverage.sums_only_ and rnn.gives_sums(coverage.components_)
    assert not summed
    (chunk,) = coverage.stream(x)
    assert not chunk.trace.sums and "h" in chunk.trace.components
    np.testing.assert_allclose(chunk.outputs, model.predict_on_batch(x), atol=1e-5)
    if case.startswith("subclass"):  # the reference recomputes the cell, not the layer's call
        return
    reference = Coverage(RNNModel(model, "traced", recompute=True), profile, metrics)
    reference.update(x)
    for name in coverage.metrics:
        np.testing.assert_array_equal(coverage[name].covered_, reference[name].covered_)


@pytest.mark.parametrize(
    ("cell", "options"),
    [
        ("SimpleRNN", {}),
        ("LSTM", {}),
        ("LSTM", {"return_sequences": True}),
        ("GRU", {"go_backwards": True}),
        ("GRU", {"return_sequences": True, "go_backwards": True}),
    ],
)
def test_zero_output_for_mask_gives_the_models_outputs(keras, seq_inputs, cell, options):
    """A layer with ``zero_output_for_mask`` outputs zeros at masked steps, and as its last
    output where the last step is masked; the taps gave the carried state there instead
    (outputs off by up to 1.8, silently). Rows whose last steps (first, backwards) are
    masked; h metrics and, for an LSTM or GRU, a gate metric (the gate tap)."""
    from pytest_rnncov.core.metrics import BC, SC, TC

    keras.utils.set_random_seed(3)
    x = seq_inputs.copy()
    x[0, 5:] = 0  # masked at the end
    x[1, :2] = 0  # masked at the start
    layer = getattr(keras.layers, cell)(4, zero_output_for_mask=True, name="traced", **options)
    model = keras.Sequential(
        [
            keras.Input((7, 3)),
            keras.layers.Masking(0.0),
            layer,
            keras.layers.Flatten(),
            keras.layers.Dense(2),
        ]
    )
    expected = model.predict_on_batch(x)
    fast, reference = both_paths(model, "traced")
    outputs, trace = fast.run(x)
    np.testing.assert_allclose(outputs, expected, atol=1e-6)
    np.testing.assert_allclose(trace.h, reference.trace(x).h, atol=1e-5)
    gate = {"LSTM": "f", "GRU": "z"}.get(cell, "h")
    metrics = (BC(gate, "avg"), SC("h", "delta"), TC("h", "net", w=3))
    profile = Profile(window=(1, 5)).fit(reference, x)
    a, b = Coverage(fast, profile, metrics), Coverage(reference, profile, metrics)
    streamed = np.concatenate([chunk.outputs for chunk in a.stream(x)])
    np.testing.assert_allclose(streamed, expected, atol=1e-6)
    b.update(x)
    for name in ("BC", "SC", "TC"):
        np.testing.assert_array_equal(a[name].covered_, b[name].covered_)


def test_summed_batches_are_sized_by_what_the_framework_holds(keras, seq_inputs):
    """Only sums come back, so a batch holds as many inputs as keep the layer's input and
    states within HOST_SUMS_BYTES (at least HOST_BATCH, at most HOST_SUMS_MAX: the
    framework's working memory is several times the states, and a tiny model's budget of
    2.4 million inputs took gigabytes in one call); a given batch_size is kept."""
    from pytest_rnncov.adapters.base import HOST_SUMS_BYTES, HOST_SUMS_MAX

    model = keras.Sequential(
        [keras.Input((7, 3)), keras.layers.GRU(5, name="traced"), keras.layers.Dense(2)]
    )
    rnn = RNNModel(model)
    assert HOST_SUMS_BYTES // (4 * 7 * (5 + 3)) > HOST_SUMS_MAX
    assert rnn.chunk_size(seq_inputs, summed=True) == HOST_SUMS_MAX
    wide = np.zeros((1, 5000, 3), np.float32)  # 5,000 steps: the bytes bound it
    assert rnn.chunk_size(wide, summed=True) == HOST_SUMS_BYTES // (4 * 5000 * (5 + 3))
    long = np.zeros((1, 10**6, 3), np.float32)
    assert rnn.chunk_size(long, summed=True) == HOST_BATCH
    assert RNNModel(model, batch_size=4).chunk_size(seq_inputs, summed=True) == 4
    profile = Profile(window=(1, 5)).fit(rnn, seq_inputs)
    chunks = list(Coverage(RNNModel(model, batch_size=5), profile).stream(seq_inputs))
    assert [len(c.signals) for c in chunks] == [5, 5, 2] and chunks[0].trace.sums


# -- PyTorch --------------------------------------------------------------------------------
class Stack(nn.Module):
    def __init__(self, rnn: nn.Module) -> None:
        super().__init__()
        self.rnn = rnn
        self.head = nn.LazyLinear(2)

    def forward(self, x):
        out, _ = self.rnn(x if self.rnn.batch_first else x.transpose(0, 1))
        out = out if self.rnn.batch_first else out.transpose(0, 1)
        return self.head(out[:, -1])


TORCH_CASES = [
    (nn.LSTM, {}),
    (nn.LSTM, {"proj_size": 2}),
    (nn.LSTM, {"bias": False, "batch_first": False}),
    (nn.GRU, {}),
    (nn.GRU, {"batch_first": False}),
    (nn.RNN, {"nonlinearity": "relu"}),
]


@pytest.mark.parametrize(("kind", "options"), TORCH_CASES)
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("depth", [0, 1, 2])
def test_torch_modules(seq_inputs, kind, options, bidirectional, depth):
    torch.manual_seed(depth)
    options = {"batch_first": True, **options}
    model = Stack(kind(3, 5, num_layers=3, bidirectional=bidirectional, **options)).eval()
    with torch.no_grad():
        expected = model(torch.from_numpy(seq_inputs)).numpy()
    for direction in ("forward", "backward") if bidirectional else ("forward",):
        fast, reference = both_paths(model, f"rnn.l{depth}", direction=direction)
        outputs, trace = fast.run(seq_inputs)
        assert_same_trace(trace, reference.trace(seq_inputs))
        np.testing.assert_allclose(outputs, expected, atol=1e-6)


class Packed(nn.Module):
    def __init__(self, kind: type, bidirectional: bool) -> None:
        super().__init__()
        self.embed = nn.Embedding(20, 4, padding_idx=0)
        self.rnn = kind(4, 5, batch_first=True, bidirectional=bidirectional, num_layers=2)
        self.head = nn.Linear(5 * (2 if bidirectional else 1), 1)

    def forward(self, ids):
        lengths = (ids != 0).sum(dim=1).clamp(min=1)
        packed = pack_padded_sequence(
            self.embed(ids), lengths.cpu(), batch_first=True, enforce_sorted=False
        )
        _, h = self.rnn(packed)
        h = h[0] if isinstance(h, tuple) else h
        return self.head(torch.cat([h[-2], h[-1]], dim=1) if self.rnn.bidirectional else h[-1])


@pytest.mark.parametrize("kind", [nn.LSTM, nn.GRU, nn.RNN])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("depth", [0, 1])
def test_torch_packed_sequences(kind, bidirectional, depth):
    torch.manual_seed(2)
    model = Packed(kind, bidirectional).eval()
    ids = np.random.default_rng(1).integers(1, 20, size=(7, 8))
    lengths = np.array([8, 3, 5, 1, 8, 2, 6])
    ids[np.arange(8)[None, :] >= lengths[:, None]] = 0
    for direction in ("forward", "backward") if bidirectional else ("forward",):
        fast, reference = both_paths(model, f"rnn.l{depth}", direction=direction)
        trace = fast.trace(ids)
        assert_same_trace(trace, reference.trace(ids))
        assert not trace.mask.all()


def test_torch_trace_alone_stops_after_the_layer(seq_inputs):
    """A trace without outputs needs the model only up to the traced module."""
    calls = []
    model = Stack(nn.LSTM(3, 5, batch_first=True)).eval()
    model.head.register_forward_hook(lambda *a: calls.append(1))
    fast, reference = both_paths(model)
    expected = reference.trace(seq_inputs)
    fast.run(seq_inputs)  # a full pass first shows the module runs once
    calls.clear()
    assert_same_trace(fast.trace(seq_inputs), expected)
    assert not calls


def test_torch_device_arrays_give_the_same_trace(seq_inputs):
    """The array-API form (torch tensors, as on a GPU) equals the numpy form."""
    torch.manual_seed(1)
    model = Stack(nn.LSTM(3, 5, batch_first=True, num_layers=2)).eval()
    host = RNNModel(model, "rnn.l1")
    device = RNNModel(model, "rnn.l1", trace_on="device")
    assert_same_trace(device.trace(seq_inputs).to_host(), host.trace(seq_inputs))


# -- the core -------------------------------------------------------------------------------
def test_device_batches_are_sized_by_the_trace_they_hold():
    """On the device path an accelerator's fixed costs per call are paid once per batch,
    so without ``batch_size`` a batch holds as many inputs as keep its trace within
    DEVICE_TRACE_BYTES; the host path and a given ``batch_size`` keep their sizes."""
    torch.manual_seed(1)
    model = Stack(nn.LSTM(3, 5, batch_first=True, num_layers=2)).eval()
    x = np.zeros((10, 7, 3), np.float32)
    device = RNNModel(model, "rnn.l1", trace_on="device")
    # h alone: 7 steps x 4 bytes x 5 units = 140 bytes an input
    assert device.chunk_size(x) == DEVICE_TRACE_BYTES // 140
    # gates computed: the traced layer (l1) reads the 5 features of l0: 7 x 4 x ((2
    # components + 4 gate blocks) x 5 units + 2 x 5 input features) = 7 x 4 x 40 = 1,120
    assert device.chunk_size(x, 2, layer_input=True) == DEVICE_TRACE_BYTES // 1120
    long = np.zeros((10, 70_000, 3), np.float32)  # 11,200,000 bytes an input
    assert device.chunk_size(long, 2, layer_input=True) == DEVICE_TRACE_BYTES // 11_200_000
    huge = np.broadcast_to(np.float32(0), (1, 10**9, 3))
    assert device.chunk_size(huge, 2, layer_input=True) == 1  # at least one
    wide = RNNModel(Stack(nn.GRU(300, 5, batch_first=True)).eval(), "rnn", trace_on="device")
    # 7 x 4 x ((2 + 4) x 5 + 2 x 300) = 17,640 bytes: the input's width counts
    assert wide.chunk_size(np.zeros((10, 7, 300), np.float32), 2, True) == 2**31 // 17_640
    # PyTorch computes gates beside the next call, in batches of OVERLAP_BATCH (below)
    assert RNNModel(model, "rnn.l1").chunk_size(x, 2, True) == OVERLAP_BATCH
    assert RNNModel(model, "rnn.l1").chunk_size(x, 1, False) == HOST_BATCH
    assert RNNModel(model, "rnn.l1", trace_on="device", batch_size=4).chunk_size(x, 2, True) == 4
    many = np.random.default_rng(0).normal(size=(3000, 7, 3)).astype(np.float32)
    assert len(list(device.iter_traces(many))) == 1  # 2,048 a batch on the host path
    assert len(list(RNNModel(model, "rnn.l1").iter_traces(many, components=("h",)))) == 2
    assert len(list(RNNModel(model, "rnn.l1").iter_traces(many))) == 12  # 3,000 / 256
    with pytest.raises(InvalidArgument, match="batch_size"):
        RNNModel(model, "rnn.l1", batch_size=0)


def _trace_workers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("rnncov-trace")]


@pytest.mark.parametrize("recompute", [False, True])
def test_torch_traces_computed_after_the_call_overlap_the_next_call(monkeypatch, recompute):
    """Where a PyTorch batch's trace is computed on the host after the call (gates from the
    layer's input, or the layer recomputed), a worker thread computes it while the model
    runs the next batch with one thread fewer: the same outputs and traces as one batch
    after the other, in order, and the worker gone afterwards."""
    torch.manual_seed(3)
    model = Stack(nn.LSTM(3, 5, batch_first=True, num_layers=2)).eval()
    x = np.random.default_rng(4).normal(size=(2 * OVERLAP_BATCH + 7, 6, 3)).astype(np.float32)
    overlapped = RNNModel(model, "rnn.l1", recompute=recompute)
    serial = RNNModel(model, "rnn.l1", recompute=recompute, batch_size=OVERLAP_BATCH)
    serial.overlaps_trace = False  # the same batches, one after the other
    own = torch.get_num_threads()
    calls: list[tuple[int, int]] = []
    forward = overlapped._forward

    def counted(batch, *args, **kwargs):
        calls.append((len(batch), torch.get_num_threads()))
        return forward(batch, *args, **kwargs)

    monkeypatch.setattr(overlapped, "_forward", counted)
    traced_in: list[str] = []
    kernel = LSTMCell.forward if recompute else LSTMCell.from_states

    def noted(self, *args, **kwargs):
        traced_in.append(threading.current_thread().name)
        return kernel(self, *args, **kwargs)

    monkeypatch.setattr(LSTMCell, "forward" if recompute else "from_states", noted)
    parts = list(overlapped.iter_traces(x, components=("c", "f", "h")))
    expected = list(serial.iter_traces(x, components=("c", "f", "h")))
    threads = max(1, own - 1)
    assert calls == [(OVERLAP_BATCH, threads), (OVERLAP_BATCH, threads), (7, threads)]
    assert torch.get_num_threads() == own
    assert all(name.startswith("rnncov-trace") for name in traced_in[:3])
    assert traced_in[3:] == ["MainThread"] * 3  # the serial path's
    assert [len(out) for out, _ in parts] == [OVERLAP_BATCH, OVERLAP_BATCH, 7]
    for (out, trace), (out_serial, trace_serial) in zip(parts, expected, strict=True):
        np.testing.assert_allclose(out, out_serial, atol=1e-6, rtol=0)  # threads may differ
        assert_same_trace(trace, trace_serial)
    assert not _trace_workers()
    if not recompute:  # h alone is read, not computed: batches of HOST_BATCH, no worker
        traced_in.clear()
        assert len(list(overlapped.iter_traces(x, components=("h",)))) == 1
        assert traced_in == ["MainThread"]


def test_an_error_beside_the_next_call_stops_the_iteration(monkeypatch):
    """A failure computing a batch's trace in the worker reaches the caller, after the
    batches before it; the worker is gone and the framework's threads are restored."""
    torch.manual_seed(3)
    model = Stack(nn.LSTM(3, 5, batch_first=True)).eval()
    x = np.random.default_rng(4).normal(size=(3 * OVERLAP_BATCH, 6, 3)).astype(np.float32)
    rnn = RNNModel(model)
    own = torch.get_num_threads()
    seen = []
    kernel = LSTMCell.from_states

    def failing(self, *args, **kwargs):
        seen.append(1)
        if len(seen) == 2:
            raise InvalidArgument("the second batch's trace failed")
        return kernel(self, *args, **kwargs)

    monkeypatch.setattr(LSTMCell, "from_states", failing)
    taken = []
    with pytest.raises(InvalidArgument, match="second batch"):
        for out, _ in rnn.iter_traces(x, components=("c", "h")):
            taken.append(len(out))
    assert taken == [OVERLAP_BATCH]
    assert not _trace_workers()
    assert torch.get_num_threads() == own


def test_an_overlapped_stream_holds_two_batches_at_most():
    """However many batches stream, at most two traces are alive: the one handed over
    and the one the worker computes (memory stays bounded)."""
    import gc

    from pytest_rnncov.core.trace import Trace

    def alive() -> int:
        gc.collect()
        return sum(type(o) is Trace for o in gc.get_objects())  # type(): no proxy is asked

    torch.manual_seed(3)
    model = Stack(nn.LSTM(3, 5, batch_first=True)).eval()
    x = np.random.default_rng(4).normal(size=(8 * OVERLAP_BATCH, 6, 3)).astype(np.float32)
    rnn = RNNModel(model)
    before, counts = alive(), []
    for _out, _trace in rnn.iter_traces(x, components=("c", "h")):
        counts.append(alive() - before)
    assert len(counts) == 8
    assert max(counts) <= 2, counts


def _failing_at(rnn, call: int, error: BaseException, monkeypatch) -> None:
    """Make the adapter's ``call``-th framework call raise ``error``."""
    forward, calls = rnn._forward, []

    def failing(*args, **kwargs):
        calls.append(1)
        if len(calls) == call:
            raise error
        return forward(*args, **kwargs)

    monkeypatch.setattr(rnn, "_forward", failing)


@pytest.mark.parametrize(
    "error", [KeyboardInterrupt(), RuntimeError("the model failed")], ids=["interrupt", "error"]
)
@pytest.mark.parametrize("call", [2, 3])
def test_a_later_call_that_fails_keeps_the_batches_that_went_through(monkeypatch, error, call):
    """Ctrl-C or a model error during model call k: the coverage keeps batches 1 to k-1, as
    one batch after the other would (batch k-1's trace was in the worker and is handed over
    first); the worker is gone and the framework's threads and numpy's BLAS limit are
    restored. A caller that stops early waits for the worker's batch."""
    torch.manual_seed(3)
    model = Stack(nn.LSTM(3, 5, batch_first=True)).eval()
    x = np.random.default_rng(4).normal(size=(4 * OVERLAP_BATCH, 6, 3)).astype(np.float32)
    rnn = RNNModel(model)
    rnn.predict(x[:1])  # the lazy head takes its shape
    profile = Profile(window=(0, 5)).fit(rnn, x[:50])
    coverage = Coverage(rnn, profile, [BC("c", "avg")])
    own, numpy_own = torch.get_num_threads(), blas_threads()
    _failing_at(rnn, call, error, monkeypatch)
    with pytest.raises(type(error)):
        coverage.update(x)
    assert coverage.n_inputs_ == (call - 1) * OVERLAP_BATCH
    assert not _trace_workers()
    assert (torch.get_num_threads(), blas_threads()) == (own, numpy_own)
    monkeypatch.undo()
    closed = rnn.iter_traces(x, components=("c", "h"))
    next(closed)
    closed.close()  # a caller that stops early: the worker's batch is waited for
    assert not _trace_workers()
    assert (torch.get_num_threads(), blas_threads()) == (own, numpy_own)


def test_streams_in_two_threads_restore_every_thread_setting():
    """The main thread's stream starts first and ends first, another thread's ends last:
    numpy's BLAS threads are back to its own setting (each stream's worker set and restored
    its limit), and PyTorch's are lowered only in the main thread, so no thread keeps a
    lowered setting."""
    x = np.random.default_rng(0).normal(size=(3 * OVERLAP_BATCH, 6, 3)).astype(np.float32)

    def coverage():
        rnn = RNNModel(Stack(nn.LSTM(3, 5, batch_first=True)).eval())
        rnn.predict(x[:1])
        return Coverage(rnn, Profile(window=(0, 5)).fit(rnn, x[:100]), [BC("c", "avg")])

    main, other = coverage(), coverage()
    own, numpy_own = torch.get_num_threads(), blas_threads()
    started, main_done = threading.Event(), threading.Event()
    seen: dict[str, int] = {}

    def background():
        for i, _ in enumerate(other.stream(x)):
            seen.setdefault("other's threads", torch.get_num_threads())
            if i == 0:
                started.set()
                main_done.wait(30)
        seen["other's threads after"] = torch.get_num_threads()

    stream = main.stream(x)
    next(stream)
    thread = threading.Thread(target=background)
    thread.start()
    assert started.wait(30)
    for _ in stream:
        pass
    main_done.set()
    thread.join(30)
    assert (torch.get_num_threads(), blas_threads()) == (own, numpy_own)
    assert seen == {"other's threads": own, "other's threads after": own}
    assert main.n_inputs_ == other.n_inputs_ == len(x)


def random_lstm_cell(rng: np.random.Generator) -> LSTMCell:
    """An LSTM cell of 3 inputs and 4 units with normal random weights."""
    return LSTMCell(
        rng.normal(size=(3, 16)).astype(np.float32),
        rng.normal(size=(4, 16)).astype(np.float32),
        rng.normal(size=16).astype(np.float32),
        Activation.named("tanh"),
        Activation.named("sigmoid"),
    )


def test_jax_arrays_give_the_same_trace_and_signals():
    """JAX arrays (the device path of Keras on JAX): the cell state's recurrence runs as one
    compiled function, each signal is compiled and comes to the host once, and all of it
    equals the numpy path's."""
    import jax.numpy as jnp

    rng = np.random.default_rng(4)
    cell = random_lstm_cell(rng)
    x = rng.normal(size=(6, 8, 3)).astype(np.float32)
    h = np.tanh(rng.normal(size=(6, 8, 4))).astype(np.float32)
    mask = rng.random((6, 8)) > 0.3
    names = ("f", "c", "h")
    host = cell.from_states(x, h, mask, components=names)
    fast = cell.from_states(jnp.asarray(x), jnp.asarray(h), jnp.asarray(mask), components=names)
    assert "jit_cell_state" in cell.cache and not fast.on_host
    assert_same_trace(fast.to_host(), host)
    for window in [(0, 5), (2, 7)]:
        on_host, on_device = Signals(host, window), Signals(fast, window)
        for abstraction in ABSTRACTIONS:
            value = on_device.get("c", abstraction)
            assert isinstance(value, np.ndarray), abstraction
            np.testing.assert_allclose(
                value, on_host.get("c", abstraction), atol=1e-5, err_msg=abstraction
            )


def test_gates_from_states_by_hand():
    """A one-unit LSTM and GRU over two steps, gates computed by hand from x and h."""
    sigmoid = Activation.named("sigmoid")
    tanh = Activation.named("tanh")
    kernel = np.array([[0.5, -1.0, 2.0, 1.0]], np.float32)  # i, f, c~, o for one input
    recurrent = np.array([[1.0, 0.5, -0.5, 2.0]], np.float32)
    bias = np.array([0.0, 1.0, 0.0, -1.0], np.float32)
    cell = LSTMCell(kernel, recurrent, bias, tanh, sigmoid)
    x = np.array([[[1.0], [2.0]]], np.float32)
    h = np.array([[[0.3], [-0.2]]], np.float32)  # any h: the gates follow from it
    trace = cell.from_states(x, h)

    def s(v):
        return 1 / (1 + np.exp(-v))

    i = [s(0.5), s(1.0 + 0.3)]
    f = [s(-1.0 + 1.0), s(-2.0 + 0.15 + 1.0)]
    g = [np.tanh(2.0), np.tanh(4.0 - 0.15)]
    c0 = i[0] * g[0]
    c = [c0, f[1] * c0 + i[1] * g[1]]
    np.testing.assert_allclose(trace.i[0, :, 0], i, atol=1e-6)
    np.testing.assert_allclose(trace.f[0, :, 0], f, atol=1e-6)
    np.testing.assert_allclose(trace.c[0, :, 0], c, atol=1e-6)
    np.testing.assert_array_equal(trace.h, h)
    with pytest.raises(InvalidArgument, match="x=None, but f must be computed"):
        cell.from_states(None, h, components=("f", "h"))

    gru = GRUCell(
        np.array([[1.0, -1.0, 0.5]], np.float32),  # z, r, n
        np.array([[0.5, 2.0, -1.0]], np.float32),
        None,
        np.array([0.0, 0.0, 0.25], np.float32),
        True,
        tanh,
        sigmoid,
    )
    trace = gru.from_states(x, h, components=("r", "n"))
    assert trace.names == ("r", "n")
    r = [s(-1.0), s(-2.0 + 0.6)]
    n = [np.tanh(0.5 + r[0] * 0.25), np.tanh(1.0 + r[1] * (-0.3 + 0.25))]
    np.testing.assert_allclose(trace.r[0, :, 0], r, atol=1e-6)
    np.testing.assert_allclose(trace.n[0, :, 0], n, atol=1e-6)


def unit_lstm() -> LSTMCell:
    """A one-unit LSTM whose weights are all 1, without bias."""
    return LSTMCell(
        np.ones((1, 4), np.float32),
        np.ones((1, 4), np.float32),
        None,
        Activation.named("tanh"),
        Activation.named("sigmoid"),
    )


def test_masked_steps_repeat_the_step_before():
    cell = unit_lstm()
    x = np.array([[[1.0], [5.0], [2.0], [7.0]]], np.float32)
    mask = np.array([[False, True, False, True]])
    h = np.array([[[9.0], [0.5], [9.0], [0.25]]], np.float32)  # masked steps: anything
    trace = cell.from_states(x, h, mask)
    assert trace.h[0, :, 0].tolist() == [0.0, 0.5, 0.5, 0.25]
    assert trace.f[0, 0, 0] == 0 and trace.f[0, 2, 0] == trace.f[0, 1, 0]
    assert trace.c[0, 0, 0] == 0 and trace.c[0, 2, 0] == trace.c[0, 1, 0]
    with pytest.raises(InvalidArgument, match=r"mask has shape \(1, 3\) for states of 1 inputs"):
        cell.from_states(x, h, mask[:, :3])


@pytest.mark.parametrize("backwards", [False, True])
def test_host_gates_in_blocks_of_rows_equal_the_reference(monkeypatch, backwards):
    """On the host the gates go in blocks of rows (a few MiB of [x_t, h_{t-1}] each); with
    blocks of 3 rows over 10 inputs (the last block short), masked steps and go_backwards,
    every component equals the reference kernel, and the blocks split no row."""
    import pytest_rnncov.core.cells as cells

    rng = np.random.default_rng(6)
    x = rng.normal(size=(10, 6, 3)).astype(np.float32)
    mask = rng.random((10, 6)) > 0.3
    tanh, sigmoid = Activation.named("tanh"), Activation.named("sigmoid")
    lstm = LSTMCell(
        rng.normal(size=(3, 16)).astype(np.float32),
        rng.normal(size=(4, 16)).astype(np.float32),
        rng.normal(size=16).astype(np.float32),
        tanh,
        sigmoid,
        go_backwards=backwards,
    )
    gru = GRUCell(
        rng.normal(size=(3, 12)).astype(np.float32),
        rng.normal(size=(4, 12)).astype(np.float32),
        rng.normal(size=12).astype(np.float32),
        rng.normal(size=12).astype(np.float32),
        True,
        tanh,
        sigmoid,
        go_backwards=backwards,
    )
    monkeypatch.setattr(cells, "HOST_BLOCK_BYTES", 4 * 6 * (3 + 4) * 3)  # 3 rows a block
    for cell, names in [(lstm, ("i", "f", "o", "c", "h")), (gru, ("z", "r", "n", "h"))]:
        reference = cell.forward(x, mask, components=names)
        h = reference.h  # in processing order, as the trace's components
        assert_same_trace(cell.from_states(x, h, mask, components=names), reference)
        window = cell.from_states(x, h, mask, until=4, components=names)
        assert_same_trace(window, cell.forward(x, mask, until=4, components=names))


@pytest.mark.parametrize("until", [0, -2, 1.5, True])
def test_until_must_be_a_number_of_steps(until):
    """Both paths refuse an ``until`` that is no number of steps (0 had failed inside the
    reference kernel with a bare reshape error)."""
    cell = unit_lstm()
    x = np.ones((2, 3, 1), np.float32)
    for call in (
        lambda: cell.forward(x, until=until),
        lambda: cell.from_states(x, np.zeros((2, 3, 1), np.float32), until=until),
    ):
        with pytest.raises(
            InvalidArgument, match=rf"until={until!r}( \(\w+\))? must be an integer"
        ):
            call()


@pytest.mark.parametrize("shape", [(2, 0, 1), (0, 3, 1)])
def test_the_kernels_refuse_inputs_without_steps_or_rows(shape):
    """Called directly, both paths refuse an empty batch or zero steps by name (they had
    failed with a bare reshape error and a division by zero in the row blocks)."""
    cell = unit_lstm()
    x = np.ones(shape, np.float32)
    with pytest.raises(InvalidArgument, match=re.escape(f"x has shape {shape}")):
        cell.forward(x)
    with pytest.raises(InvalidArgument, match="at least one input and one step"):
        cell.from_states(x, np.zeros(shape, np.float32))


@pytest.mark.parametrize("until", [0, -2, 1.5, True])
def test_summed_traces_refuse_an_until_that_is_no_number_of_steps(keras, seq_inputs, until):
    model = keras.Sequential(
        [keras.Input((7, 3)), keras.layers.GRU(5, name="traced"), keras.layers.Dense(2)]
    )
    rnn = RNNModel(model)
    assert rnn.gives_sums(("h",))
    with pytest.raises(InvalidArgument, match=rf"until={until!r}"):
        next(rnn.iter_traces(seq_inputs, until=until, components=("h",), summed=True))


def test_a_stream_feeds_only_a_coverage_of_the_same_profile(keras, seq_inputs):
    model = keras.Sequential(
        [keras.Input((7, 3)), keras.layers.GRU(5, name="traced"), keras.layers.Dense(2)]
    )
    rnn = RNNModel(model)
    profile = Profile(window=(1, 5)).fit(rnn, seq_inputs)
    other = Profile(window=(0, 6)).fit(rnn, seq_inputs)
    coverage = Coverage(rnn, profile)
    for feeds in (5, Coverage(rnn, other)):
        with pytest.raises(InvalidArgument, match="same profile"):
            next(coverage.stream(seq_inputs, feeds=feeds))
    (chunk,) = coverage.stream(seq_inputs, feeds=Coverage(rnn, profile, ("NC",)))
    assert "h" in chunk.trace.components  # NC reads single units: states, not sums


def test_small_torch_cpu_calls_run_on_one_thread_and_set_it_back(monkeypatch):
    """A model's CPU call from the main thread whose rows x parameters are below
    SMALL_CALL_WORK runs on one PyTorch thread, a larger one on PyTorch's setting, which
    is back after every call; the outputs are the model's own. Another thread's calls, and
    calls while the gates of the batch before are computed beside them (one thread fewer
    already), run as PyTorch is set."""
    from pytest_rnncov.adapters import torch as torch_adapter

    own = torch.get_num_threads()
    torch.set_num_threads(3)
    try:
        torch.manual_seed(3)
        model = Stack(nn.LSTM(3, 5, batch_first=True)).eval()
        x = np.random.default_rng(4).normal(size=(2 * OVERLAP_BATCH, 6, 3)).astype(np.float32)
        seen: list[tuple[int, int]] = []
        model.register_forward_pre_hook(
            lambda module, args: seen.append((len(args[0]), torch.get_num_threads()))
        )
        rnn = RNNModel(model)
        with torch.no_grad():
            expected = model(torch.from_numpy(x)).numpy()
        weights = sum(p.numel() for p in model.parameters())
        monkeypatch.setattr(torch_adapter, "SMALL_CALL_WORK", 100 * weights + 1)
        seen.clear()
        after = []
        for rows in (100, 101, 100):  # 100 x the parameters: small; 101: not
            np.testing.assert_array_equal(rnn.predict(x[:rows]), expected[:rows])
            after.append(torch.get_num_threads())
        assert seen == [(100, 1), (101, 3), (100, 1)] and after == [3, 3, 3]
        seen.clear()
        worker = threading.Thread(target=rnn.predict, args=(x[:100],))
        worker.start()
        worker.join()
        assert seen == [(100, 3)]  # PyTorch's setting is partly per thread: left alone there
        seen.clear()
        monkeypatch.setattr(torch_adapter, "SMALL_CALL_WORK", 10**12)
        list(rnn.iter_traces(x, components=("c", "h")))  # gates beside the next call
        # one fewer, not one; each batch's rows checked, up to the module, on 32 inputs
        # reversed, rotated, two swapped, and reversed less one (check_order: every input
        # here has every step, one length, which does not end the check)
        probes = [(32, 2), (32, 2), (32, 2), (31, 2)]
        assert seen == [(OVERLAP_BATCH, 2), *probes, (OVERLAP_BATCH, 2), *probes]
        assert torch.get_num_threads() == 3
    finally:
        torch.set_num_threads(own)


def test_jax_h_alone_is_not_cut_to_the_steps_a_window_needs():
    """Under JAX a cut of ``h`` to ``until`` steps is an operation and a copy of its own
    (about 0.5 ms per call on an H200, docs/performance.md): where nothing is computed
    from it and nothing is masked, the trace keeps the array as it came. The cut stays
    for numpy (a view), for a masked layer and where gates are computed from ``h``. On the
    CPU every signal of the window is the same either way (on a GPU XLA may sum the other
    shape in another order: docs/performance.md)."""
    import jax.numpy as jnp

    from pytest_rnncov import Trace

    rng = np.random.default_rng(5)
    cell = random_lstm_cell(rng)
    x = rng.normal(size=(5, 9, 3)).astype(np.float32)
    h = np.tanh(rng.normal(size=(5, 9, 4))).astype(np.float32)
    device_h = jnp.asarray(h)
    kept = cell.from_states(None, device_h, until=6, components=("h",))
    assert kept.h is device_h and kept.length == 9
    assert cell.from_states(None, h, until=6, components=("h",)).n_steps == 6
    masked = cell.from_states(None, device_h, jnp.ones((5, 9), bool), until=6, components=("h",))
    assert masked.n_steps == 6
    gates = cell.from_states(jnp.asarray(x), device_h, until=6, components=("f", "h"))
    assert gates.n_steps == 6
    on_host = Signals(kept, (2, 5)).host().trace  # neuron metrics: the window's steps cross
    assert on_host.on_host and on_host.n_steps == 6 and on_host.length == 9
    np.testing.assert_array_equal(on_host.h, h[:, :6])
    assert cell.from_states(None, h, components=("h",)).to_host(6).n_steps == 6  # numpy too
    for steps in (0, -1, 2.5, True, "6"):
        with pytest.raises(InvalidArgument, match="steps"):
            kept.to_host(steps)
    cut = Trace({"h": device_h[:, :6]}, cell="lstm", length=9)  # as the trace was
    for abstraction in ABSTRACTIONS:
        np.testing.assert_array_equal(
            Signals(kept, (2, 5)).get("h", abstraction),
            Signals(cut, (2, 5)).get("h", abstraction),
            err_msg=abstraction,
        )
