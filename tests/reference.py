"""Reference computations by the framework itself, for checking traces."""

from __future__ import annotations

import numpy as np


def layer_states(rnn, x):
    """(h sequence, final h, final c) from a clone of the traced layer built by its framework.

    The clone shares the layer's config and weights, with return_sequences and return_state
    switched on, and is fed the layer's own input and mask.
    """
    layer = rnn.layer
    config = dict(layer.get_config(), return_sequences=True, return_state=True, name="reference")
    clone = type(layer).from_config(config)
    sequence, mask, _ = rnn._probe(rnn.check_input(x), False)
    if rnn.framework == "tf_keras":
        import tensorflow as tf

        seq_t = tf.convert_to_tensor(sequence)
        mask_t = None if mask is None else tf.convert_to_tensor(mask)
    else:
        seq_t, mask_t = np.asarray(sequence), (None if mask is None else np.asarray(mask))
    clone(seq_t[:1], mask=None if mask_t is None else mask_t[:1])  # build
    clone.set_weights(layer.get_weights())
    h_seq, h_last, c_last = clone(seq_t, mask=mask_t)
    return tuple(np.asarray(a) for a in (h_seq, h_last, c_last))
