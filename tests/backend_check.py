"""Run by test_backends.py under KERAS_BACKEND=jax / torch: the Keras path on a backend
without TensorFlow (importing it is made to fail, as on a machine without it). Exits
non-zero (with the failing check) when anything differs."""

from __future__ import annotations

import os
import sys

import numpy as np

# as on a machine without TensorFlow: importing it fails, find_spec finds nothing
sys.modules["tensorflow"] = None  # type: ignore[assignment]
sys.modules["tf_keras"] = None  # type: ignore[assignment]

backend = os.environ["KERAS_BACKEND"]
import keras  # noqa: E402

from pytest_rnncov import Coverage, InvalidInput, Profile, RNNModel  # noqa: E402
from pytest_rnncov.adapters.keras import _pairwise_two_sum  # noqa: E402
from pytest_rnncov.core.metrics import BC, SC, TC  # noqa: E402

assert keras.backend.backend() == backend, keras.backend.backend()
rng = np.random.default_rng(0)
x = rng.normal(size=(12, 7, 3)).astype(np.float32)
tokens = rng.integers(1, 30, size=(10, 8))
tokens[0, :3] = 0
tokens[1, 5:] = 0
checked = []
failed: list[str] = []


def close(actual, desired, atol: float, what: str) -> None:
    """Record (not stop at) a difference above ``atol``, with its size, so that one run on
    an accelerator shows every check."""
    actual, desired = np.asarray(actual, np.float64), np.asarray(desired, np.float64)
    worst = float(np.abs(actual - desired).max()) if actual.shape == desired.shape else np.inf
    if not worst <= atol:
        failed.append(f"{what}: largest difference {worst:.2e} > {atol:.0e}")


def seeded(model):
    """Fixed weights from numpy (keras.utils.set_random_seed would import TensorFlow)."""
    weights = np.random.default_rng(7)
    model.set_weights(
        [weights.normal(0, 0.5, w.shape).astype(np.float32) for w in model.get_weights()]
    )
    return model


for cell, options in [
    ("LSTM", {}),
    ("LSTM", {"recurrent_activation": "hard_sigmoid"}),
    ("GRU", {}),
    ("GRU", {"reset_after": False}),
    ("SimpleRNN", {}),
]:
    for backwards in (False, True):
        layer = getattr(keras.layers, cell)(
            5, return_sequences=True, go_backwards=backwards, name="rec", **options
        )
        model = seeded(keras.Sequential([keras.Input((7, 3)), layer, keras.layers.Dense(2)]))
        rnn = RNNModel(model)
        own = keras.ops.convert_to_numpy(
            keras.Model(model.inputs, model.get_layer("rec").output)(x)
        )
        trace = rnn.trace(x).to_host()
        close(trace.h, own, 1e-5, f"{cell} {options} h")
        # every component from the forward pass (gate tap) equals the reference kernel
        reference = RNNModel(model, recompute=True).trace(x).to_host()
        for name in reference.names:
            close(
                trace.components[name],
                reference.components[name],
                1e-5,
                f"{cell} {options} {name} (reference)",
            )
        outputs, _ = rnn.run(x)
        close(outputs, keras.ops.convert_to_numpy(model(x)), 1e-5, f"{cell} {options} outputs")
        checked.append(f"{cell}{options}{'/backwards' if backwards else ''}")
for cell in ("LSTM", "GRU"):  # masking through an Embedding, inside Bidirectional
    model = seeded(
        keras.Sequential(
            [
                keras.Input((8,), dtype="int32"),
                keras.layers.Embedding(30, 4, mask_zero=True),
                keras.layers.Bidirectional(
                    getattr(keras.layers, cell)(5, return_sequences=True), name="bi"
                ),
            ]
        )
    )
    own = keras.ops.convert_to_numpy(model(tokens))
    forward = RNNModel(model, "bi").trace(tokens).to_host()
    backward = RNNModel(model, "bi", direction="backward").trace(tokens).to_host()
    mask = tokens != 0
    np.testing.assert_array_equal(forward.mask, mask)
    close(forward.h[mask], own[..., :5][mask], 1e-5, f"Bidirectional({cell}) forward h")
    close(backward.h[:, ::-1][mask], own[..., 5:][mask], 1e-5, f"Bidirectional({cell}) backward")
    checked.append(f"Bidirectional({cell}) masked")
for cell in ("LSTM", "GRU"):  # masking through an Embedding, one direction: the gate tap
    for return_state in (False, True):
        inputs = keras.Input((8,), dtype="int32")
        embedded = keras.layers.Embedding(30, 4, mask_zero=True)(inputs)
        result = getattr(keras.layers, cell)(
            5, return_sequences=True, return_state=return_state, name="rec"
        )(embedded)
        model = seeded(keras.Model(inputs, result))
        own = [keras.ops.convert_to_numpy(o) for o in keras.tree.flatten(model(tokens))]
        chosen = {"output": 0} if return_state else {}  # the sequence, not the states
        rnn = RNNModel(model, "rec", **chosen)
        trace = rnn.trace(tokens).to_host()
        reference = RNNModel(model, "rec", recompute=True, **chosen).trace(tokens).to_host()
        mask = tokens != 0
        np.testing.assert_array_equal(trace.mask, mask)
        what = f"masked {cell} return_state={return_state}"
        close(trace.h[mask], own[0][mask], 1e-5, f"{what} h")
        for name in reference.names:
            close(trace.components[name], reference.components[name], 1e-5, f"{what} {name}")
        outputs, _ = rnn.run(tokens)
        close(outputs, own[0], 1e-5, f"{what} outputs")
        checked.append(what)
model = seeded(
    keras.Sequential(
        [
            keras.Input((8,), dtype="int32"),
            keras.layers.Embedding(30, 4, mask_zero=True),
            keras.layers.Bidirectional(keras.layers.GRU(5, return_sequences=True), name="bi"),
        ]
    )
)
profile = Profile(window=(1, 6)).fit(RNNModel(model, "bi"), tokens)
coverage = Coverage(RNNModel(model, "bi"), profile)
coverage.update(tokens)
assert coverage.n_inputs_ == 10 and 0 < coverage.rates()["TC"] <= 1
# the pass sums h (and the gates they read) when the metrics read only signals and the
# layer's last state alone goes on: float64 sums (JAX without 64-bit mode: pairwise float32
# sums, each rounding error kept; hand-checked here as the backend compiles them), equal to
# the host's float64 sums of the states within float32's rounding of the states themselves
# (the sums tap's graph and the sequence or gate tap's are compiled apart)
hand = np.array([[2.0**24, 1, 1, 1, -(2.0**24), 0.5]], np.float32)
pairwise = _pairwise_two_sum
if backend == "jax":
    import jax

    pairwise = jax.jit(_pairwise_two_sum)
high, low = (np.float64(keras.ops.convert_to_numpy(a)[0]) for a in pairwise(hand))
if high + low != 3.5:
    failed.append(f"pairwise sums with their rounding errors: {high} + {low}, not 3.5")
for cell in ("LSTM", "GRU", "SimpleRNN"):
    model = seeded(
        keras.Sequential(
            [keras.Input((7, 3)), getattr(keras.layers, cell)(6, name="rec"), keras.layers.Dense(2)]
        )
    )
    rnn = RNNModel(model, trace_on="numpy")
    profile = Profile(window=(1, 6)).fit(rnn, rng.normal(size=(80, 7, 3)).astype(np.float32))
    gate = {"LSTM": "f", "GRU": "z", "SimpleRNN": "h"}[cell]
    signal_metrics = [BC(gate, "avg"), SC("h", "delta"), TC("h", "net", w=3)]
    summed = Coverage(rnn, profile, signal_metrics)
    (chunk,) = summed.stream(x)
    if set(chunk.trace.sums) != {gate, "h"}:
        failed.append(f"{cell}: the pass did not sum {gate} and h")
        continue
    states = rnn.trace(x)
    for name in chunk.trace.sums:
        values = states.components[name].astype(np.float64)
        sums = chunk.trace.step_sums(name)
        close(sums[..., 0], values.sum(-1), 1e-6, f"{cell} sums of {name} from the pass")
        positive = np.maximum(values, 0).sum(-1)
        close(sums[..., 1], positive, 1e-6, f"{cell} positive sums of {name} from the pass")
    close(chunk.outputs, keras.ops.convert_to_numpy(model(x)), 1e-5, f"{cell} summed outputs")
    reference = Coverage(RNNModel(model, recompute=True), profile, signal_metrics)
    reference.update(x)
    for name in ("BC", "SC", "TC"):
        if not np.array_equal(summed[name].times_, reference[name].times_):
            failed.append(f"{cell} {name}: times_ differ between the pass's sums and the states")
        close(summed[name].best_fitness_, reference[name].best_fitness_, 1e-5, f"{cell} {name}")
    checked.append(f"{cell} sums from the pass")
    # metrics that read no sums of positive parts (the testrnn preset): the pass sums h
    # over units alone (under JAX without 64-bit mode, one row of pairwise sums)
    alone = Coverage(rnn, profile, preset="testrnn")
    (chunk,) = alone.stream(x)
    h = states.h[:, : chunk.trace.n_steps].astype(np.float64)
    if chunk.trace.step_sums("h") is None or chunk.trace.step_sums("h").shape[2] != 1:
        failed.append(f"{cell}: the testrnn preset's pass did not sum h alone: {chunk.trace}")
        continue
    close(chunk.trace.step_sums("h")[..., 0], h.sum(-1), 1e-6, f"{cell} sums of h alone")
    reference = Coverage(RNNModel(model, recompute=True), profile, preset="testrnn")
    reference.update(x)
    for name in ("BC", "SC", "TC"):
        if not np.array_equal(alone[name].times_, reference[name].times_):
            failed.append(f"{cell} {name}: times_ differ between the sums of h alone and states")
    checked.append(f"{cell} sums of h alone from the pass")
# the device path: traces and coverage computed on the backend's own arrays (on the CPU
# here) equal the numpy path's to 1e-6; on an accelerator the framework's own float32
# kernels order their sums differently, and the project's bound is 1e-5
on_cpu = str(keras.ops.convert_to_tensor(x).device).startswith("cpu")
trace_atol = 1e-6 if on_cpu else 1e-5
for cell in ("LSTM", "GRU", "SimpleRNN"):
    model = seeded(
        keras.Sequential(
            [
                keras.Input((7, 3)),
                getattr(keras.layers, cell)(6, return_sequences=True, name="rec"),
                keras.layers.Dense(2),
            ]
        )
    )
    host, device = RNNModel(model, trace_on="numpy"), RNNModel(model, trace_on="device")
    assert (host.trace_on, device.trace_on) == ("numpy", "device")
    trace = device.trace(x)
    assert not trace.on_host, type(trace.h)
    for name in trace.names:
        close(
            trace.to_host().components[name],
            host.trace(x).components[name],
            trace_atol,
            f"{cell} {name} device path",
        )
    wide = rng.normal(size=(80, 7, 3)).astype(np.float32)
    profile = Profile(window=(1, 6)).fit(host, wide)
    metrics = ("BC", "SC", "TC", "NC", "KMNC", "NBC", "SNAC")
    a, b = Coverage(host, profile, metrics), Coverage(device, profile, metrics)
    tests = rng.normal(size=(80, 7, 3)).astype(np.float32)  # not the profile's own inputs:
    a.update(tests)  # those sit exactly on its per-neuron extremes (float32 ties for KMNC)
    b.update(tests)
    for name in metrics:
        if not np.array_equal(a[name].times_, b[name].times_):
            failed.append(f"{cell} {name}: times_ differ between the host and device paths")
        close(a[name].best_fitness_, b[name].best_fitness_, 1e-5, f"{cell} {name} fitness")
    checked.append(f"{cell} device path")
# JAX's device path sums the gates and cell state it computes from h, and h, in a compiled
# function: only the sums come to the host, equal to sums of the numpy path's states. Where
# the metrics read h alone (the SimpleRNN here), h's states come back as before.
summed_updates = []  # coverages whose gates are summed on the device, for the input check
jax_x64 = backend == "jax" and bool(__import__("jax").config.read("jax_enable_x64"))
for cell, gates in (("LSTM", ("f", "c")), ("GRU", ("z", "n")), ("SimpleRNN", ("h", "h"))):
    model = seeded(
        keras.Sequential(
            [keras.Input((7, 3)), getattr(keras.layers, cell)(6, name="rec"), keras.layers.Dense(2)]
        )
    )
    reference, device = RNNModel(model, trace_on="numpy"), RNNModel(model, trace_on="device")
    if backend != "jax":  # Keras on torch: the states come back, as before
        if device.gives_sums((*gates, "h")):
            failed.append(f"{cell}: the torch backend's device path claims to sum in the pass")
        continue
    wide = rng.normal(size=(80, 7, 3)).astype(np.float32)
    profile = Profile(window=(1, 5)).fit(reference, wide)
    metrics = (BC(gates[0], "avg"), SC(gates[1], "delta"), TC("h", "net", w=3))
    summed, states = Coverage(device, profile, metrics), Coverage(reference, profile, metrics)
    tests = rng.normal(size=(80, 7, 3)).astype(np.float32)
    (chunk,) = summed.stream(tests)
    expected = reference.trace(tests)
    if chunk.trace.sums and jax_x64:  # sums of the device path's own h, both in float64
        h = device.trace(tests).to_host().h[:, :6].astype(np.float64)
        close(chunk.trace.step_sums("h")[..., 0], h.sum(-1), 1e-12, f"{cell} x64 sums of h")
    if gates == ("h", "h"):
        if chunk.trace.sums or "h" not in chunk.trace.components:
            failed.append(f"{cell} device path: h alone came back summed: {chunk.trace}")
    elif set(chunk.trace.sums) != {*gates, "h"} or chunk.trace.components:
        failed.append(f"{cell} device path: {chunk.trace} holds states, not the sums")
        continue
    for name in {*gates, "h"} if chunk.trace.sums else ():
        values = expected.components[name][:, :6].astype(np.float64)
        sums = chunk.trace.step_sums(name)
        close(sums[..., 0], values.sum(-1), trace_atol, f"{cell} device sums of {name}")
        positive = np.maximum(values, 0).sum(-1)
        close(sums[..., 1], positive, trace_atol, f"{cell} device positive sums of {name}")
    close(chunk.outputs, keras.ops.convert_to_numpy(model(tests)), 1e-5, f"{cell} outputs")
    states.update(tests)
    for name in ("BC", "SC", "TC"):
        if not np.array_equal(summed[name].times_, states[name].times_):
            failed.append(f"{cell} {name}: times_ differ between the device sums and the states")
    checked.append(f"{cell} device path sums")
    if cell == "LSTM":  # one call, and several (a NaN in any refuses all of them first)
        summed_updates += [
            ("update, gates summed", Coverage(device, profile, metrics)),
            (
                "update, gates summed in calls of 4",
                Coverage(RNNModel(model, trace_on="device", batch_size=4), profile, metrics),
            ),
        ]
# the device path checks the inputs for NaN/inf on the device, in the forward pass
bad = x.copy()
bad[3, 2, 1] = np.nan
bad[5, 0, 0] = np.inf
for what, call in (
    ("trace", device.trace),
    ("predict", device.predict),
    ("update", Coverage(device, profile).update),
    *((what, coverage.update) for what, coverage in summed_updates),
):
    try:
        call(bad)
        failed.append(f"device path {what}: NaN/inf inputs were accepted")
    except InvalidInput as exc:
        if "rows [3, 5]" not in str(exc):
            failed.append(f"device path {what}: the error does not name rows 3 and 5: {exc}")
for what, coverage in summed_updates:
    if coverage.n_inputs_:
        failed.append(
            f"device path {what}: {coverage.n_inputs_} inputs counted from a refused call"
        )
checked.append("device path input check")
if failed:
    sys.exit(f"{backend}: {len(failed)} checks differ:\n" + "\n".join(failed))
print(
    f"OK {backend}{' (64-bit)' if jax_x64 else ''}: {len(checked)} cells checked without TensorFlow"
)
