"""Reference computations by the framework itself, for checking traces."""

from __future__ import annotations

import numpy as np


def layer_states(rnn, x):
    """(h sequence, final states) from a clone of the traced layer built by its framework.

    The clone shares the layer's config and weights, with return_sequences and return_state
    switched on, and is fed the layer's own input and mask. Final states: (h, c) for an
    LSTM, (h,) for GRU and SimpleRNN.
    """
    layer = rnn.layer
    config = dict(layer.get_config(), return_sequences=True, return_state=True, name="reference")
    clone = type(layer).from_config(config)
    sequence, mask = rnn.layer_input(x)
    if rnn.framework == "tf_keras":
        import tensorflow as tf

        seq_t = tf.convert_to_tensor(sequence)
        mask_t = None if mask is None else tf.convert_to_tensor(mask)
    else:
        seq_t, mask_t = np.asarray(sequence), (None if mask is None else np.asarray(mask))
    clone(seq_t[:1], mask=None if mask_t is None else mask_t[:1])  # build
    clone.set_weights(layer.get_weights())
    out = clone(seq_t, mask=mask_t)
    h_seq, *states = out
    return np.asarray(h_seq), tuple(np.asarray(s) for s in states)
