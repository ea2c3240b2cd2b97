"""GRU and SimpleRNN (and LSTM) in Keras 3 and tf_keras: every recomputed trace equals the
framework's own layer, with masking, go_backwards and inside Bidirectional."""

from __future__ import annotations

import numpy as np
import pytest
from reference import layer_states

from pytest_rnncov import RNNModel

H_TOL = 1e-5


def check(rnn, x):
    trace = rnn.trace(x)
    h_seq, states = layer_states(rnn, x)
    np.testing.assert_allclose(trace.h, h_seq, atol=H_TOL, rtol=0)
    np.testing.assert_allclose(trace.h[:, -1], states[0], atol=H_TOL, rtol=0)
    return trace


CELLS = [
    ("GRU", {}),
    ("GRU", {"reset_after": False}),
    ("GRU", {"activation": "relu", "recurrent_activation": "hard_sigmoid"}),
    ("GRU", {"use_bias": False}),
    ("SimpleRNN", {}),
    ("SimpleRNN", {"activation": "relu", "use_bias": False}),
    ("LSTM", {"recurrent_activation": "hard_sigmoid"}),
]


@pytest.mark.parametrize(("cell", "options"), CELLS)
@pytest.mark.parametrize("backwards", [False, True])
def test_keras3_cells_match_the_layer(keras, seq_inputs, cell, options, backwards):
    keras.utils.set_random_seed(11)
    layer = getattr(keras.layers, cell)(
        5, return_sequences=True, go_backwards=backwards, name="rec", **options
    )
    model = keras.Sequential([keras.Input((7, 3)), layer, keras.layers.Dense(2)])
    rnn = RNNModel(model)
    trace = check(rnn, seq_inputs)
    assert rnn.cell_kind == {"GRU": "gru", "SimpleRNN": "simple_rnn", "LSTM": "lstm"}[cell]
    assert (
        trace.names
        == {"gru": ("z", "r", "n", "h"), "simple_rnn": ("h",), "lstm": ("f", "i", "o", "c", "h")}[
            rnn.cell_kind
        ]
    )


def test_gru_gates_follow_the_update_rule(keras, seq_inputs):
    """h_t = z_t h_{t-1} + (1 - z_t) n_t, with the recorded z and n."""
    keras.utils.set_random_seed(12)
    model = keras.Sequential([keras.Input((7, 3)), keras.layers.GRU(4, return_sequences=True)])
    trace = RNNModel(model).trace(seq_inputs)
    previous = np.concatenate([np.zeros_like(trace.h[:, :1]), trace.h[:, :-1]], axis=1)
    np.testing.assert_allclose(trace.h, trace.z * previous + (1 - trace.z) * trace.n, atol=1e-6)
    assert ((trace.r > 0) & (trace.r < 1)).all() and (np.abs(trace.n) <= 1).all()


@pytest.mark.parametrize("cell", ["GRU", "SimpleRNN", "LSTM"])
def test_masked_cells_carry_their_state(keras, token_inputs, cell):
    keras.utils.set_random_seed(13)
    model = keras.Sequential(
        [
            keras.Input((8,), dtype="int32"),
            keras.layers.Embedding(30, 4, mask_zero=True),
            getattr(keras.layers, cell)(5, return_sequences=True, name="rec"),
        ]
    )
    rnn = RNNModel(model)
    trace = check(rnn, token_inputs)
    np.testing.assert_array_equal(trace.mask, token_inputs != 0)
    for name in trace.names:  # right padding repeats the last real step
        values = trace.component(name)
        np.testing.assert_array_equal(values[1, 5:], np.repeat(values[1, 4:5], 3, axis=0))


@pytest.mark.parametrize("cell", ["GRU", "SimpleRNN"])
def test_bidirectional_cells(keras, seq_inputs, cell):
    keras.utils.set_random_seed(14)
    model = keras.Sequential(
        [
            keras.Input((7, 3)),
            keras.layers.Bidirectional(
                getattr(keras.layers, cell)(4, return_sequences=True), name="bi"
            ),
        ]
    )
    own = model.predict_on_batch(seq_inputs)
    forward = RNNModel(model, "bi")
    backward = RNNModel(model, "bi", direction="backward")
    np.testing.assert_allclose(forward.trace(seq_inputs).h, own[..., :4], atol=H_TOL, rtol=0)
    np.testing.assert_allclose(
        backward.trace(seq_inputs).h[:, ::-1], own[..., 4:], atol=H_TOL, rtol=0
    )


def test_rnn_wrapper_of_a_cell(keras, seq_inputs):
    keras.utils.set_random_seed(15)
    model = keras.Sequential(
        [keras.Input((7, 3)), keras.layers.RNN(keras.layers.GRUCell(4), return_sequences=True)]
    )
    rnn = RNNModel(model)
    assert rnn.cell_kind == "gru"
    np.testing.assert_allclose(
        rnn.trace(seq_inputs).h, model.predict_on_batch(seq_inputs), atol=H_TOL, rtol=0
    )


@pytest.mark.parametrize(
    ("cell", "options"), [("GRU", {}), ("GRU", {"reset_after": False}), ("SimpleRNN", {})]
)
def test_tf_keras_cells(token_inputs, cell, options):
    import tf_keras

    tf_keras.utils.set_random_seed(16)
    model = tf_keras.Sequential(
        [
            tf_keras.Input((8,), dtype="int32"),
            tf_keras.layers.Embedding(30, 4, mask_zero=True),
            getattr(tf_keras.layers, cell)(5, return_sequences=True, name="rec", **options),
        ]
    )
    rnn = RNNModel(model)
    assert rnn.framework == "tf_keras"
    check(rnn, token_inputs)
