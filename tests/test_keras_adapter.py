"""RNNModel / load_model: trace exactness against the frameworks, and clear errors."""

from __future__ import annotations

import multiprocessing

import numpy as np
import pytest
from reference import layer_states

from pytest_rnncov import (
    Coverage,
    InvalidArgument,
    InvalidInput,
    ModelError,
    Profile,
    RNNModel,
    UnknownLayer,
    load_model,
)
from pytest_rnncov.core.arrays import PARALLEL_SCAN, all_finite

H_TOL, C_TOL = 1e-5, 1e-4


def assert_matches_framework(rnn, x):
    trace = rnn.trace(x)
    h_seq, states = layer_states(rnn, x)
    np.testing.assert_allclose(trace.h, h_seq, atol=H_TOL, rtol=0)
    np.testing.assert_allclose(trace.h[:, -1], states[0], atol=H_TOL, rtol=0)
    if rnn.cell_kind == "lstm":
        np.testing.assert_allclose(trace.c[:, -1], states[1], atol=C_TOL, rtol=0)
    return trace


def test_keras3_sigmoid_lstm_return_sequences_false(keras, seq_inputs):
    keras.utils.set_random_seed(3)
    model = keras.Sequential(
        [keras.Input((7, 3)), keras.layers.LSTM(4, name="only"), keras.layers.Dense(2)]
    )
    rnn = RNNModel(model)
    assert rnn.layer_name == "only" and rnn.units == 4
    trace = assert_matches_framework(rnn, seq_inputs)
    assert trace.h.shape == trace.f.shape == (12, 7, 4)
    # the model's own (return_sequences=False) LSTM output is the last h
    last = keras.Model(model.inputs, model.get_layer("only").output).predict_on_batch(seq_inputs)
    np.testing.assert_allclose(trace.h[:, -1], last, atol=H_TOL, rtol=0)
    # the gates follow Eq. 1: c_t = f_t c_{t-1} + i_t c~_t, so gates lie in (0, 1)
    for gate in (trace.f, trace.i, trace.o):
        assert ((gate > 0) & (gate < 1)).all()


def test_the_adapters_first_traces_do_not_warn_of_retracing(keras, seq_inputs, caplog):
    """Each twin the adapter builds is traced at its first call, and Keras' predict
    functions share one retracing counter: a script that predicted, traced and measured a
    few metrics printed "5 out of the last 5 calls ... triggered tf.function retracing"."""
    import logging

    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((7, 3)), keras.layers.LSTM(4), keras.layers.Dense(2)])
    rnn = RNNModel(model)
    profile = Profile().fit(rnn, seq_inputs)
    with caplog.at_level(logging.WARNING, logger="tensorflow"):
        rnn.predict(seq_inputs[:5]), rnn.trace(seq_inputs[:7]), rnn.run(seq_inputs[:9])
        for metrics in (("BC",), ("SC",), ("TC",), ("BC", "SC", "TC", "NC")):
            Coverage(rnn, profile, metrics=metrics).update(seq_inputs[:11])
    assert not [r for r in caplog.records if "retracing" in r.getMessage()]
    with caplog.at_level(logging.WARNING, logger="tensorflow"):  # the user's own calls warn
        logging.getLogger("tensorflow").warning("5 calls triggered tf.function retracing")
    assert [r for r in caplog.records if "retracing" in r.getMessage()]


def test_only_the_adapters_own_thread_is_quiet(caplog):
    """The filter was added and removed around each call: two threads' calls overlapping
    let one's warning through, and the user's warning from another thread was dropped."""
    import logging
    import threading

    from pytest_rnncov.adapters.keras import _first_traces_quiet

    inside, done = threading.Event(), threading.Event()

    def adapter_call():
        with _first_traces_quiet():
            inside.set()
            done.wait(10)

    worker = threading.Thread(target=adapter_call)
    worker.start()
    inside.wait(10)
    with caplog.at_level(logging.WARNING, logger="tensorflow"):
        with _first_traces_quiet():  # this thread's own call: dropped
            logging.getLogger("tensorflow").warning("ours triggered tf.function retracing")
        logging.getLogger("tensorflow").warning("yours triggered tf.function retracing")
    done.set()
    worker.join()
    assert [r.getMessage() for r in caplog.records] == ["yours triggered tf.function retracing"]
    caplog.clear()
    logging.logThreads = False  # records then carry no thread: the filter went blind
    try:
        with caplog.at_level(logging.WARNING, logger="tensorflow"), _first_traces_quiet():
            logging.getLogger("tensorflow").warning("ours triggered tf.function retracing")
    finally:
        logging.logThreads = True
    assert not caplog.records


def test_predict_and_run_agree_with_model(keras, stacked_model, seq_inputs):
    rnn = RNNModel(stacked_model, "lstm_b", batch_size=5)  # three batches: 5, 5, 2
    outputs, trace = rnn.run(seq_inputs)
    expected = stacked_model.predict_on_batch(seq_inputs)
    np.testing.assert_allclose(outputs, expected, atol=1e-6)
    np.testing.assert_allclose(rnn.predict(seq_inputs), expected, atol=1e-6)
    assert trace.batch_size == 12


def test_second_of_two_stacked_lstms(keras, stacked_model, seq_inputs):
    rnn = RNNModel(stacked_model, "lstm_b")
    trace = assert_matches_framework(rnn, seq_inputs)
    own = keras.Model(stacked_model.inputs, stacked_model.get_layer("lstm_b").output)
    np.testing.assert_allclose(trace.h, own.predict_on_batch(seq_inputs), atol=H_TOL, rtol=0)
    assert RNNModel(stacked_model, 1).layer_name == "lstm_b"
    assert RNNModel(stacked_model).layer_name == "lstm_a"


def test_use_bias_false_and_relu_activation(keras, seq_inputs):
    keras.utils.set_random_seed(4)
    model = keras.Sequential(
        [
            keras.Input((7, 3)),
            keras.layers.LSTM(
                4, use_bias=False, activation="relu", recurrent_activation="hard_sigmoid"
            ),
        ]
    )
    assert_matches_framework(RNNModel(model), seq_inputs)


def test_masked_embedding_front_end(keras, token_inputs):
    keras.utils.set_random_seed(5)
    model = keras.Sequential(
        [
            keras.Input((8,), dtype="int32"),
            keras.layers.Embedding(30, 4, mask_zero=True),
            keras.layers.LSTM(5, return_sequences=True, name="lstm"),
            keras.layers.GlobalAveragePooling1D(),
            keras.layers.Dense(1),
        ]
    )
    rnn = RNNModel(model)
    trace = assert_matches_framework(rnn, token_inputs)
    np.testing.assert_array_equal(trace.mask, token_inputs != 0)
    # masked steps carry h and c over: left padding holds zeros, right padding repeats
    assert np.all(trace.h[0, :3] == 0) and np.all(trace.c[0, :3] == 0)
    np.testing.assert_array_equal(trace.h[1, 5:], np.repeat(trace.h[1, 4:5], 3, axis=0))
    np.testing.assert_array_equal(trace.f[1, 5:], np.repeat(trace.f[1, 4:5], 3, axis=0))
    assert np.all(trace.h[2] == 0)
    # a mask given for the ids (x > 0) read as ids 0 and 1: refused
    with pytest.raises(InvalidInput, match="takes integer token ids, got booleans"):
        rnn.trace(token_inputs > 0)


def test_go_backwards_trace_is_in_processing_order(keras, seq_inputs):
    keras.utils.set_random_seed(6)
    model = keras.Sequential(
        [keras.Input((7, 3)), keras.layers.LSTM(4, go_backwards=True, return_sequences=True)]
    )
    rnn = RNNModel(model)
    trace = assert_matches_framework(rnn, seq_inputs)
    # step 0 of the trace consumed the last input step: same as a forward LSTM on x reversed
    forward = keras.Sequential([keras.Input((7, 3)), keras.layers.LSTM(4, return_sequences=True)])
    forward.set_weights(model.get_weights())
    np.testing.assert_allclose(trace.h, RNNModel(forward).trace(seq_inputs[:, ::-1]).h, atol=1e-6)


def test_bidirectional_each_direction(keras, seq_inputs):
    keras.utils.set_random_seed(7)
    model = keras.Sequential(
        [
            keras.Input((7, 3)),
            keras.layers.Bidirectional(keras.layers.LSTM(4, return_sequences=True), name="bi"),
        ]
    )
    own = model.predict_on_batch(seq_inputs)  # concat of forward and (re-reversed) backward
    forward = RNNModel(model, "bi")
    backward = RNNModel(model, "bi", direction="backward")
    assert (forward.layer_name, backward.layer_name) == ("bi/forward", "bi/backward")
    np.testing.assert_allclose(forward.trace(seq_inputs).h, own[..., :4], atol=H_TOL, rtol=0)
    np.testing.assert_allclose(
        backward.trace(seq_inputs).h[:, ::-1], own[..., 4:], atol=H_TOL, rtol=0
    )
    assert_matches_framework(backward, seq_inputs)
    assert forward.fingerprint() != backward.fingerprint()
    # the name the reports print is a layer and a direction: the error says how to pass it
    with pytest.raises(ModelError, match="pass layer='bi', direction='backward'"):
        RNNModel(model, "bi/backward")


def test_keras2_h5_with_hard_sigmoid_loads_through_tf_keras(tmp_path, seq_inputs):
    import tf_keras  # installed by the test extra: a missing one must fail, not skip

    tf_keras.utils.set_random_seed(8)
    model = tf_keras.Sequential(
        [
            tf_keras.Input((7, 3)),
            tf_keras.layers.LSTM(
                6, return_sequences=True, recurrent_activation="hard_sigmoid", name="legacy"
            ),
            tf_keras.layers.Dense(2),
        ]
    )
    path = tmp_path / "legacy.h5"
    model.save(path)
    loaded = load_model(path)
    assert type(loaded).__module__.startswith("tf_keras")
    rnn = RNNModel(loaded)
    assert rnn.framework == "tf_keras"
    trace = assert_matches_framework(rnn, seq_inputs)
    own = tf_keras.Model(loaded.inputs, loaded.get_layer("legacy").output)(seq_inputs)
    np.testing.assert_allclose(trace.h, np.asarray(own), atol=H_TOL, rtol=0)
    # the gate function taken from the loaded layer is Keras 2's clip(0.2 x + 0.5, 0, 1),
    # not Keras 3's relu6(x + 3) / 6 (which gives 1/3 and 2/3 at -1 and 1)
    z = np.array([-2.7, -1.0, 0.0, 1.0, 2.7], np.float32)
    np.testing.assert_allclose(rnn.cell.recurrent_activation(z), [0, 0.3, 0.5, 0.7, 1], atol=1e-7)


def test_tf_keras_masked_stack(token_inputs):
    import tf_keras

    tf_keras.utils.set_random_seed(9)
    model = tf_keras.Sequential(
        [
            tf_keras.Input((8,), dtype="int32"),
            tf_keras.layers.Embedding(30, 4, mask_zero=True),
            tf_keras.layers.LSTM(5, return_sequences=True),
            tf_keras.layers.LSTM(3, return_sequences=True, name="top"),
        ]
    )
    rnn = RNNModel(model, "top")
    trace = assert_matches_framework(rnn, token_inputs)
    np.testing.assert_array_equal(trace.mask, token_inputs != 0)


def test_keras3_model_saved_and_loaded(keras, tmp_path, stacked_model, seq_inputs):
    path = tmp_path / "m.keras"
    stacked_model.save(path)
    loaded = load_model(path)
    a = RNNModel(stacked_model, "lstm_b")
    b = RNNModel(loaded, "lstm_b")
    assert a.fingerprint() == b.fingerprint()
    np.testing.assert_allclose(a.trace(seq_inputs).c, b.trace(seq_inputs).c, atol=1e-6)


# -- errors ---------------------------------------------------------------------------------
def test_model_without_lstm(keras):
    model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(2, name="d")], name="plain")
    with pytest.raises(ModelError, match="has no recurrent layer.*'d'"):
        RNNModel(model)


def test_unknown_layer_lists_the_lstms(stacked_model):
    with pytest.raises(ModelError, match=r"'lstm_a' \(LSTM, index 0\), 'lstm_b' \(LSTM, index 1\)"):
        RNNModel(stacked_model, "lstm_c")
    with pytest.raises(UnknownLayer, match="not a recurrent layer"):
        RNNModel(stacked_model, "head")
    with pytest.raises(InvalidArgument, match="direction"):
        RNNModel(stacked_model, direction="up")


def test_not_a_keras_model():
    with pytest.raises(InvalidArgument, match="needs a Keras or PyTorch model"):
        RNNModel(object())


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (np.zeros((7, 3), np.float32), r"expects \(batch, 7, 3\) \(add a batch axis"),
        (np.zeros((2, 6, 3), np.float32), r"shape \(2, 6, 3\)"),
        (np.array([["a"] * 3] * 7)[None], "dtype <U1"),
        (np.full((2, 7, 3), np.nan, np.float32), r"NaN or inf in rows \[0, 1\]"),
        (
            np.full((1, 7, 3), 1e39),
            r"values beyond float32's range \(inf once cast\) in rows \[0\]",
        ),
        (np.full((1, 7, 3), np.inf), "NaN or inf"),
        (np.zeros((0, 7, 3)), "empty batch"),
    ],
)
def test_bad_inputs(stacked_model, bad, message):
    rnn = RNNModel(stacked_model, "lstm_b")
    with pytest.raises(InvalidInput, match=message):
        rnn.trace(bad)


@pytest.mark.parametrize("row", [0, 23_000, 49_999])
@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_large_batches_are_checked_in_parallel_parts(stacked_model, row, value):
    """Inputs of PARALLEL_SCAN values or more are scanned for NaN/inf in parts on several
    threads: a bad value in the first, a middle or the last part is found and named."""
    rnn = RNNModel(stacked_model, "lstm_b")
    x = np.zeros((50_000, 7, 3), np.float32)
    assert x.size >= PARALLEL_SCAN
    assert rnn.check_input(x) is x  # float32 and finite: no copy
    x[row, 6, 2] = value
    with pytest.raises(InvalidInput, match=rf"NaN or inf in rows \[{row}\]"):
        rnn.check_input(x)


def _scan_large_batch(done):
    done.put(all_finite(np.zeros(PARALLEL_SCAN, np.float32)))


def test_the_parallel_scan_works_in_a_forked_child():
    """A forked child inherits the scan pool without its threads: it starts its own."""
    assert all_finite(np.zeros(PARALLEL_SCAN, np.float32))  # the parent's pool exists
    context = multiprocessing.get_context("fork")
    done = context.Queue()
    child = context.Process(target=_scan_large_batch, args=(done,))
    child.start()
    child.join(60)
    if child.is_alive():
        child.kill()
    assert child.exitcode == 0 and done.get(timeout=5) is True


def test_token_model_refuses_fractional_ids(keras):
    model = keras.Sequential(
        [keras.Input((4,), dtype="int32"), keras.layers.Embedding(9, 2), keras.layers.LSTM(2)]
    )
    with pytest.raises(InvalidInput, match="integer token ids"):
        RNNModel(model).trace(np.full((1, 4), 1.5))
    assert RNNModel(model).trace(np.ones((1, 4))).n_steps == 4


def test_load_model_errors(tmp_path, monkeypatch):
    with pytest.raises(InvalidArgument, match="is no file; pass the path"):
        load_model(tmp_path / "missing.keras")
    monkeypatch.chdir(tmp_path)  # a relative path: where it was looked for, and the fix
    with pytest.raises(
        InvalidArgument, match=r"is no file \(a relative path is read from the current direc"
    ) as refused:
        load_model("model.keras")
    assert repr(str(tmp_path)) in str(refused.value) and "Path(__file__)" in str(refused.value)
    other = tmp_path / "model.pb"
    other.write_text("x")
    with pytest.raises(InvalidArgument, match=r"expected a \.keras, \.h5 or \.onnx file"):
        load_model(other)


def test_two_threads_making_a_models_first_calls_at_once_agree(keras):
    """The sequence tap switches its shared layer's ``return_sequences`` on for its call;
    two threads tracing one cold model at once restored each other's switch mid-call (h
    came back (B, U): an error in one thread about half the time). Three fresh models,
    two threads each: no error, and each coverage equals the reference kernel's."""
    import threading

    from pytest_rnncov import Coverage, Profile
    from pytest_rnncov.core.metrics import SC

    rng = np.random.default_rng(3)
    xs = [rng.normal(size=(40, 7, 3)).astype(np.float32) for _ in range(2)]
    for trial in range(3):
        keras.utils.set_random_seed(trial)
        model = keras.Sequential(
            [keras.Input((7, 3)), keras.layers.LSTM(6, name="rec"), keras.layers.Dense(2)]
        )
        reference = RNNModel(model, "rec", recompute=True)  # fits without warming `cold`
        profile = Profile(window=(1, 5)).fit(reference, rng.normal(size=(60, 7, 3)))
        cold = RNNModel(model, "rec")
        metrics = ("NC", SC("h", "delta"))
        coverages = [Coverage(cold, profile, metrics) for _ in xs]
        errors: list[BaseException] = []

        def feed(i: int) -> None:
            try:
                coverages[i].update(xs[i])
            except BaseException as exc:  # noqa: BLE001 - reported below
                errors.append(exc)

        threads = [threading.Thread(target=feed, args=(i,)) for i in range(len(xs))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert not errors, errors
        for coverage, x in zip(coverages, xs):
            expected = Coverage(reference, profile, metrics)
            expected.update(x)
            for name in expected.metrics:
                np.testing.assert_array_equal(coverage[name].times_, expected[name].times_)
