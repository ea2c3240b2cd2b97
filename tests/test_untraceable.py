"""Models the engine cannot trace exactly are refused or announced, never traced wrongly;
model files never run code when loaded."""

from __future__ import annotations

import json
import os
import zipfile

import h5py
import numpy as np
import pytest

from pytest_rnncov import (
    InvalidArgument,
    InvalidInput,
    ModelError,
    RNNCovWarning,
    RNNModel,
    UnsafeModel,
    load_model,
)


def test_a_model_with_two_inputs_is_refused_with_the_way_out(keras):
    series, extra = keras.Input((7, 3)), keras.Input((2,))
    summary = keras.layers.LSTM(4)(series)
    model = keras.Model([series, extra], keras.layers.Concatenate()([summary, extra]))
    with pytest.raises(ModelError, match="has 2 inputs; .* build the model with one input"):
        RNNModel(model)


def test_a_stateful_layer_is_refused(keras):
    model = keras.Sequential(
        [keras.Input((7, 3), batch_size=4), keras.layers.LSTM(3, stateful=True, name="s")]
    )
    with pytest.raises(ModelError, match="layer 's' is stateful.*stateful=False"):
        RNNModel(model)


def test_a_multi_output_model_needs_output(keras, seq_inputs):
    keras.utils.set_random_seed(1)
    inputs = keras.Input((7, 3))
    h = keras.layers.LSTM(4, return_sequences=True, name="lstm")(inputs)
    a = keras.layers.Dense(2, name="cls")(keras.layers.Flatten()(h))
    b = keras.layers.Dense(1, name="reg")(keras.layers.Flatten()(h))
    model = keras.Model(inputs, [a, b])
    with pytest.raises(ModelError, match=r"has 2 outputs \(cls, reg\); pass output=INDEX"):
        RNNModel(model)
    rnn = RNNModel(model, output="reg")
    expected = model.predict_on_batch(seq_inputs)[1]
    np.testing.assert_allclose(rnn.predict(seq_inputs), expected, atol=1e-6)
    outputs, _ = rnn.run(seq_inputs)
    assert outputs.shape == (12, 1)
    with pytest.raises(InvalidArgument, match=r"output=2; model .* has outputs 0..1"):
        RNNModel(model, output=2)


def test_a_dict_output_is_named_by_its_keys(keras, seq_inputs):
    """A model whose output is a dict: its keys name the outputs (as predict returns them),
    beside the output layers' names; the refusal lists the keys with their indices."""
    inputs = keras.Input((7, 3))
    h = keras.layers.GRU(4, name="gru")(inputs)
    outputs = {
        "score": keras.layers.Dense(2, name="d1")(h),
        "aux": keras.layers.Dense(3, name="d2")(h),
    }
    model = keras.Model(inputs, outputs)
    with pytest.raises(ModelError, match=r"2 outputs \(score \(index 1\), aux \(index 0\)\)"):
        RNNModel(model)
    rnn = RNNModel(model, output="score")
    assert rnn.output_index == RNNModel(model, output="d1").output_index == 1
    np.testing.assert_allclose(
        rnn.predict(seq_inputs), model.predict_on_batch(seq_inputs)["score"], atol=1e-6
    )
    with pytest.raises(InvalidArgument, match=r"output='nope'; the outputs are score \(index 1\)"):
        RNNModel(model, output="nope")


@pytest.fixture(params=["keras", "tf_keras"])
def library(request):
    """Keras 3 and tf_keras (Keras 2): the layer-graph checks hold for both."""
    import importlib

    return importlib.import_module(request.param)


def test_a_layer_called_twice_is_refused(library):
    """One layer applied twice: the trace is of one call (Keras 3's fast path traced the
    second, the reference the first; tf_keras traced the first, silently), so it is
    refused, naming the fix."""
    inputs = library.Input((7, 3))
    shared = library.layers.SimpleRNN(4, name="shared")
    twice = library.layers.Concatenate()(
        [shared(inputs), shared(library.layers.Rescaling(2.0)(inputs))]
    )
    model = library.Model(inputs, library.layers.Dense(2)(twice))
    with pytest.raises(ModelError, match="layer 'shared' is called 2 times .* a layer of its own"):
        RNNModel(model, "shared")


def test_a_layer_first_called_in_another_model_is_traced_at_this_models_call(library, seq_inputs):
    """The layer's first call belongs to another model: its call in this one is traced
    (the first call's node was taken: a bare Keras ValueError; tf_keras: an
    AssertionError)."""
    library.utils.set_random_seed(2)
    layer = library.layers.LSTM(4, name="lstm")
    first = library.Input((7, 3))
    library.Model(first, layer(first))
    inputs = library.Input((7, 3))
    model = library.Model(inputs, library.layers.Dense(2)(layer(library.layers.Dense(3)(inputs))))
    rnn = RNNModel(model, "lstm")
    outputs, trace = rnn.run(seq_inputs)
    np.testing.assert_allclose(outputs, model.predict_on_batch(seq_inputs), atol=1e-6)
    reference = RNNModel(model, "lstm", recompute=True).trace(seq_inputs)
    np.testing.assert_allclose(trace.h, reference.h, atol=1e-5)


def test_an_unbuilt_model_is_refused(keras):
    """A Sequential without an Input, never built or called, has no inputs yet (a bare
    AttributeError from Keras 3, a TypeError from tf_keras)."""
    import tf_keras

    for library in (keras, tf_keras):
        model = library.Sequential([library.layers.LSTM(4), library.layers.Dense(2)])
        with pytest.raises(ModelError, match=r"is not built.*model.build\(\(None, steps"):
            RNNModel(model)


def test_a_subclassed_keras_model_is_refused_unless_functional(keras, seq_inputs):
    """A keras.Model subclass with its own call() has no layer graph: refused as one (it
    was told to load a Keras model); a subclass built by the functional API is traced."""

    class Called(keras.Model):
        def __init__(self):
            super().__init__()
            self.rnn, self.head = keras.layers.LSTM(4), keras.layers.Dense(2)

        def call(self, x):
            return self.head(self.rnn(x))

    called = Called()
    called(seq_inputs[:1])
    with pytest.raises(ModelError, match="subclasses keras.Model with its own call.*functional"):
        RNNModel(called)

    class Built(keras.Model):
        def __init__(self):
            inputs = keras.Input((7, 3))
            super().__init__(inputs, keras.layers.Dense(2)(keras.layers.GRU(4, name="gru")(inputs)))

    built = Built()
    outputs, _ = RNNModel(built, "gru").run(seq_inputs)
    np.testing.assert_allclose(outputs, built.predict_on_batch(seq_inputs), atol=1e-6)

    class Doubled(Built):  # a functional subclass whose own call() changes the outputs
        def call(self, x, training=None):
            return super().call(x) * 2

    with pytest.raises(ModelError, match=r"own call\(\) \(.*Doubled.call\)"):
        RNNModel(Doubled())

    class Plain(keras.Sequential):  # no call() of its own: Keras' over the layer graph
        pass

    plain = Plain([keras.Input((7, 3)), keras.layers.LSTM(4), keras.layers.Dense(2)])
    outputs, _ = RNNModel(plain).run(seq_inputs)
    np.testing.assert_allclose(outputs, plain.predict_on_batch(seq_inputs), atol=1e-6)


def test_an_rnn_of_cells_it_cannot_trace_is_named(keras):
    cells = [keras.layers.LSTMCell(4), keras.layers.LSTMCell(3)]
    model = keras.Sequential(
        [keras.Input((7, 3)), keras.layers.RNN(keras.layers.StackedRNNCells(cells), name="r")]
    )
    with pytest.raises(
        ModelError, match=r"'r' \(an RNN of StackedRNNCells\) runs a cell it cannot"
    ):
        RNNModel(model)


def test_mixed_precision_is_announced(keras):
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        model = keras.Sequential([keras.Input((7, 3)), keras.layers.LSTM(3)])
    finally:
        keras.mixed_precision.set_global_policy("float32")
    with pytest.warns(RNNCovWarning, match="computes in float16: expect differences up to"):
        RNNModel(model)


def test_token_ids_beyond_the_embedding_are_refused(keras):
    model = keras.Sequential(
        [keras.Input((4,), dtype="int32"), keras.layers.Embedding(9, 2), keras.layers.LSTM(2)]
    )
    with pytest.raises(InvalidInput, match=r"token ids must lie in \[0, 9\).*rows \[1\] hold 12"):
        RNNModel(model).trace(np.array([[1, 2, 3, 4], [1, 12, 3, 4]]))


def test_an_initial_state_is_refused(keras):
    inputs = keras.Input((7, 3))
    state = keras.layers.Dense(3)(keras.layers.Flatten()(inputs))
    out = keras.layers.LSTM(3, name="seeded")(inputs, initial_state=[state, state])
    with pytest.raises(ModelError, match="called with an initial state"):
        RNNModel(keras.Model(inputs, out))


# -- loading files safely ---------------------------------------------------------------------
@pytest.fixture
def marker(tmp_path):
    """A file the malicious Lambda would create when its code ran."""
    return tmp_path / "ran.txt"


def lambda_model(tf_keras, marker):
    path = str(marker)

    def evil(x):
        open(path, "w").write("code from the model file ran")
        return x

    return tf_keras.Sequential(
        [tf_keras.Input((7, 3)), tf_keras.layers.Lambda(evil), tf_keras.layers.LSTM(2)]
    )


def test_keras2_h5_with_a_lambda_is_refused_and_runs_nothing(tmp_path, marker):
    import tf_keras

    path = tmp_path / "evil.h5"
    lambda_model(tf_keras, marker).save(path)
    marker.unlink(missing_ok=True)
    with pytest.raises(
        UnsafeModel, match="Lambda layer .* code stored in the file.*safe_mode=False"
    ):
        load_model(path)
    assert not marker.exists()
    loaded = load_model(path, safe_mode=False)  # explicit opt-in for a trusted file
    assert any(type(layer).__name__ == "Lambda" for layer in loaded.layers)


def test_a_lying_keras_version_attribute_is_refused(tmp_path, marker):
    import tf_keras

    path = tmp_path / "evil.h5"
    lambda_model(tf_keras, marker).save(path)
    marker.unlink(missing_ok=True)  # building the model ran the function once
    for version in (b"3.99.0", b"banana", b"9.0.0"):
        with h5py.File(path, "r+") as handle:
            handle.attrs["keras_version"] = version
        with pytest.raises((UnsafeModel, ModelError)):
            load_model(path)
    assert not marker.exists()


def test_keras3_file_with_a_lambda_is_refused(keras, tmp_path):
    model = keras.Sequential(
        [keras.Input((7, 3)), keras.layers.Lambda(lambda x: x * 2), keras.layers.LSTM(2)]
    )
    path = tmp_path / "lambda.keras"
    model.save(path)
    with pytest.raises(UnsafeModel, match="Lambda layer"):
        load_model(path)


def test_a_custom_layer_needs_its_class(keras, tmp_path):
    @keras.saving.register_keras_serializable(package="tests")
    class Twice(keras.layers.Layer):
        def call(self, x):
            return x * 2

    model = keras.Sequential([keras.Input((7, 3)), Twice(), keras.layers.LSTM(2)])
    path = tmp_path / "custom.keras"
    model.save(path)
    with pytest.raises(UnsafeModel, match="custom layer .* of class 'Twice'.*custom_objects"):
        load_model(path)
    loaded = load_model(path, custom_objects={"Twice": Twice})
    assert RNNModel(loaded).cell_kind == "lstm"


def test_keras_operations_of_a_functional_model_load_and_trace(keras, tmp_path):
    """Masking in a functional model adds NotEqual and Any nodes, x[:, -1] a GetItem: Keras'
    own operations, built from its modules (they were refused as custom layers)."""
    inputs = keras.Input((6, 2))
    masked = keras.layers.Masking(0.0)(inputs)
    sequences = keras.layers.Bidirectional(keras.layers.GRU(3, return_sequences=True))(masked)
    model = keras.Model(inputs, keras.layers.Dense(2)(sequences[:, -1]))
    path = tmp_path / "ops.keras"
    model.save(path)
    with zipfile.ZipFile(path) as archive:
        config = json.loads(archive.read("config.json"))
    nodes = {(n["module"], n["class_name"]) for n in config["config"]["layers"]}
    assert {"NotEqual", "Any", "GetItem"} <= {c for m, c in nodes if m.startswith("keras.src.ops.")}
    x = np.random.default_rng(0).normal(size=(4, 6, 2)).astype(np.float32)
    x[1, 4:] = 0.0  # masked steps
    loaded = load_model(path)
    np.testing.assert_allclose(loaded.predict(x, verbose=0), model.predict(x, verbose=0))
    assert RNNModel(loaded).trace(x).h.shape == (4, 6, 3)
    # a node claiming a Keras operations module but naming no operation stays refused, and
    # so does a class of Keras' tests beside them (importing those runs a conftest.py)
    for module, name in (
        ("keras.src.ops.numpy", "NotAnOperation"),
        ("keras.src.ops.node_test", "DummyLayer"),
    ):
        forged_config = json.loads(json.dumps(config))
        for layer in forged_config["config"]["layers"]:
            if layer["class_name"] == "NotEqual":
                layer["module"], layer["class_name"], layer["registered_name"] = module, name, name
        forged = tmp_path / "forged.keras"
        with zipfile.ZipFile(path) as source, zipfile.ZipFile(forged, "w") as target:
            for item in source.namelist():
                data = json.dumps(forged_config) if item == "config.json" else source.read(item)
                target.writestr(item, data)
        with pytest.raises(UnsafeModel, match=f"custom layer .* of class '{name}'"):
            load_model(forged)


def _forged(tmp_path, path, change) -> str:
    """A copy of the .keras file ``path`` whose config.json ``change`` edited in place."""
    with zipfile.ZipFile(path) as archive:
        config = json.loads(archive.read("config.json"))
    change(config)
    forged = tmp_path / "forged.keras"
    with zipfile.ZipFile(path) as source, zipfile.ZipFile(forged, "w") as target:
        for item in source.namelist():
            data = json.dumps(config) if item == "config.json" else source.read(item)
            target.writestr(item, data)
    return str(forged)


def _set(node, class_name: str, **fields) -> None:
    """Set ``fields`` in the config of every ``class_name`` layer nested in ``node``."""
    if isinstance(node, dict):
        if node.get("class_name") == class_name:
            node["config"].update(fields)
        for value in node.values():
            _set(value, class_name, **fields)
    elif isinstance(node, list):
        for value in node:
            _set(value, class_name, **fields)


def test_a_config_declaring_more_weights_than_its_file_holds_is_refused(keras, tmp_path):
    """A forged config.json (units=50000 where the file holds a 3-unit LSTM's weights) made
    Keras allocate 10^10 weights and run their orthogonal initialiser while building, before
    reading a weight; it is refused from the JSON, naming the layer."""
    model = keras.Sequential(
        [
            keras.Input((5,), dtype="int32"),
            keras.layers.Embedding(10, 2),
            keras.layers.RNN(keras.layers.LSTMCell(3, name="cell")),
            keras.layers.Dense(2),
        ]
    )
    path = tmp_path / "small.keras"
    model.save(path)
    with zipfile.ZipFile(path) as archive:
        held = archive.getinfo("model.weights.h5").file_size
    # the cell of an RNN wrapper: 4 gates * 50,000 ** 2 recurrent weights
    forged = _forged(tmp_path, path, lambda c: _set(c, "LSTMCell", units=50_000))
    with pytest.raises(
        ModelError,
        match=rf"declares at least 10,000,000,0\d\d weights \(layer 'cell', LSTMCell "
        rf"with units=50000: 10,000,000,000\), at least 1,250,000,00\d bytes, and its "
        rf"weights file holds {held:,} bytes",
    ):
        load_model(forged)
    forged = _forged(tmp_path, path, lambda c: _set(c, "Embedding", input_dim=10**9))
    with pytest.raises(ModelError, match="Embedding with input_dim=1000000000, output_dim=2"):
        load_model(forged)
    assert load_model(path).layers[1].cell.units == 3  # the file itself loads


def test_a_weights_member_padded_with_compressed_zeros_holds_what_it_stores(keras, tmp_path):
    """A 21 KB file: units=12000 and 20 MB of zeros deflated into the weights member, whose
    header then claims 20 MB; the check trusted that size and Keras took 10 GB building the
    model. What the archive stores counts (Keras writes the member uncompressed)."""
    model = keras.Sequential([keras.Input((5, 2)), keras.layers.LSTM(3, name="lstm")])
    path = tmp_path / "ok.keras"
    model.save(path)
    with zipfile.ZipFile(path) as archive:
        config = json.loads(archive.read("config.json"))
        members = {name: archive.read(name) for name in archive.namelist()}
    _set(config, "LSTM", units=12_000)  # 576,000,000 weights: 72 MB at one bit each
    members["config.json"] = json.dumps(config).encode()
    members["model.weights.h5"] += b"\0" * 20_000_000
    bomb = tmp_path / "bomb.keras"
    with zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    assert bomb.stat().st_size < 100_000
    with zipfile.ZipFile(bomb) as archive:
        stored = archive.getinfo("model.weights.h5").compress_size
    with pytest.raises(ModelError, match=f"its weights file holds {stored:,} bytes"):
        load_model(bomb)


def test_an_h5_dataset_stored_in_another_file_is_refused(keras, tmp_path):
    """A dataset with HDF5 external storage naming /etc/passwd loaded that file as the
    model's weights (a FIFO hung the load, /dev/zero took all memory)."""
    model = keras.Sequential([keras.Input((5, 2)), keras.layers.LSTM(3, name="lstm")])
    path = tmp_path / "m.h5"
    model.save(path)
    outside = tmp_path / "secret.bin"
    outside.write_bytes(b"\1" * 4096)
    with h5py.File(path, "r+") as handle:
        names = []
        handle.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
        name = next(n for n in names if n.endswith("recurrent_kernel"))
        shape, dtype = handle[name].shape, handle[name].dtype
        del handle[name]
        handle.create_dataset(name, shape=shape, dtype=dtype, external=[(str(outside), 0, 144)])
    with pytest.raises(UnsafeModel, match=f"stores dataset '{name}' in another file"):
        load_model(path)


def test_the_checks_and_the_loader_read_the_same_bytes(keras, tmp_path, monkeypatch):
    """The file was checked, then opened again by the loader: one renamed over it between
    the two (a Lambda model over a checked one) was loaded unchecked. Both read one copy."""
    from pytest_rnncov.adapters import loading

    checked = tmp_path / "m.keras"
    keras.Sequential([keras.Input((5, 2)), keras.layers.LSTM(3, name="lstm")]).save(checked)
    other = tmp_path / "other.keras"
    keras.Sequential([keras.Input((5, 2)), keras.layers.LSTM(5, name="lstm")]).save(other)
    check = loading._refuse_oversized

    def swapped_after_the_check(*args, **kwargs):
        check(*args, **kwargs)
        os.replace(other, checked)  # another process renames its file over the checked one

    monkeypatch.setattr(loading, "_refuse_oversized", swapped_after_the_check)
    assert load_model(checked).get_layer("lstm").units == 3  # what was checked


def test_a_config_larger_than_memory_is_refused(keras, tmp_path, monkeypatch):
    """Within what the file holds, a model larger than the machine's memory is refused too
    (a compressed weights file can hold more than its size); by hand, LSTM(3) then Dense(2)
    declare at least 4 * 3 * 3 + 2 = 38 weights, at one bit each (int4 packs two a byte)
    at least 4 bytes."""
    from pytest_rnncov.adapters import loading

    model = keras.Sequential(
        [keras.Input((5, 2)), keras.layers.LSTM(3, name="lstm"), keras.layers.Dense(2)]
    )
    for suffix in (".keras", ".h5"):
        path = tmp_path / f"m{suffix}"
        model.save(path)
        monkeypatch.setattr(loading, "physical_memory", lambda: 3)
        with pytest.raises(
            ModelError,
            match=r"declares at least 38 weights \(layer 'lstm', LSTM with units=3: 36\), at "
            "least 4 bytes, and this process may use 3 bytes of memory",
        ):
            load_model(path)
        monkeypatch.setattr(loading, "physical_memory", lambda: 4)
        assert load_model(path).layers[0].units == 3


def test_an_h5_config_declaring_more_weights_than_the_file_is_refused(keras, tmp_path):
    model = keras.Sequential([keras.Input((5, 2)), keras.layers.GRU(3)])
    path = tmp_path / "m.h5"
    model.save(path)
    with h5py.File(path, "r+") as handle:
        config = json.loads(handle.attrs["model_config"])
        _set(config, "GRU", units=10**7)
        handle.attrs["model_config"] = json.dumps(config)
    with pytest.raises(ModelError, match=r"GRU with units=10000000: 300,000,000,000,000\)"):
        load_model(path)


def test_a_forged_configuration_is_refused_by_name_however_odd(keras, tmp_path):
    """A class name that is a list made the size check raise a bare TypeError, and units of
    3,000 digits a ValueError from printing their product (over Python's 4,300 digits)."""
    model = keras.Sequential([keras.Input((5, 2)), keras.layers.LSTM(3, name="lstm")])
    path = tmp_path / "m.keras"
    model.save(path)
    forged = _forged(tmp_path, path, lambda c: _set(c, "LSTM", units=10**2999))
    with pytest.raises(ModelError, match=r"LSTM with units=about 10\^2999: about 10\^5998\)"):
        load_model(forged)

    def listed(config):
        for layer in config["config"]["layers"]:
            if layer["class_name"] == "LSTM":
                layer["class_name"] = ["LSTM"]

    with pytest.raises(UnsafeModel, match="of class \"\\['LSTM'\\]\""):
        load_model(_forged(tmp_path, path, listed))


def test_a_broken_keras_zip_is_a_model_error(tmp_path):
    path = tmp_path / "broken.keras"
    with zipfile.ZipFile(path, "w") as archive:
        archive.writestr("config.json", "{not json")
    with pytest.raises(ModelError, match="not a valid .keras file"):
        load_model(path)
    path.write_bytes(b"garbage")
    with pytest.raises(ModelError, match="not a valid .keras file"):
        load_model(path)
    h5 = tmp_path / "broken.h5"
    h5.write_bytes(b"garbage")
    with pytest.raises(ModelError, match="not a readable HDF5 file"):
        load_model(h5)


def test_load_model_arguments(tmp_path):
    with pytest.raises(InvalidArgument, match="safe_mode='no' must be True or False"):
        load_model(tmp_path / "x.keras", safe_mode="no")
    with pytest.raises(InvalidArgument, match="is a directory"):
        load_model(tmp_path)
    with pytest.raises(InvalidArgument, match="path=3"):
        load_model(3)
