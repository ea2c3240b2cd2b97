"""What tracking costs against the model's own batch call, measured side by side.

The paper's MNIST shape (28 steps x 28 features, two recurrent layers of 128 units, the
second traced, window [4, 24]). For each batch size and metric set it prints medians of:

  predict     the model's own batched call, after a pause (so no thread of ours competes):
              Keras ``model.predict`` and ``predict_on_batch``, or PyTorch ``model(x)``
  tracked     what a test pays for ``predict`` under the plugin: outputs, trace and the
              metric update from Coverage.stream (the tracked model's one pipeline)
  update      Coverage.update(x): the trace and the update, no outputs
  reference   the same tracked predict with ``recompute=True`` (the layer run again in
              numpy from its weights: the kernel before traces came from the forward pass)
and where the tracked time goes: framework call (outputs and the layer's states: h, and
the gates and cell state a Keras LSTM/GRU emits, or the layer's input where gates are
computed after the call), gate extraction (Cell.from_states), metrics (the update), each
as a share of the fastest predict, measured one after the other in the tracked path's
batches; ``limit`` is one forward pass plus the metric update. Where the adapter computes a
batch's gates beside the next batch's call (PyTorch, ``overlaps_trace``), the tracked time
is less than the split's sum: the line says "gates overlap the next call"; ``--no-overlap``
computes them after each call instead, in batches of 2,048 (the path before), for a side by
side comparison.

Metric sets: ``h`` (BC h/net, SC h/delta_net, TC h/net: the testrnn preset, nothing but h),
``paper`` (the paper preset: an LSTM's BC reads the forget gate), ``cell`` (BC on the
LSTM's cell state c/avg or the GRU's update gate z/avg, SC and TC on h).

    python bench/bench_core.py [--framework keras|torch] [--backend tensorflow|jax|torch]
        [--cell lstm|gru|simple_rnn] [--sets h,paper,cell] [--batches 1000,10000]
        [--repeats 7] [--busy] [--trace-on auto|numpy|device] [--no-reference]
        [--no-overlap]

``--busy`` runs a process that keeps one core busy during the measurement. PyTorch's
OpenMP threads and numpy's OpenBLAS threads sleep when idle (``OMP_WAIT_POLICY=PASSIVE``,
``OPENBLAS_THREAD_TIMEOUT=4``, as the plugin sets them in a pytest run) unless set. ``--backend``
sets KERAS_BACKEND (Keras 3 on JAX or torch needs no TensorFlow). It runs as it is on a
CUDA machine with torch or JAX and no TensorFlow.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

CELLS = {"lstm": "LSTM", "gru": "GRU", "simple_rnn": "SimpleRNN"}


def keras_model(cell: str):
    import keras

    keras.utils.set_random_seed(0)
    layer = getattr(keras.layers, CELLS[cell])
    return keras.Sequential(
        [
            keras.Input((28, 28)),
            layer(128, return_sequences=True),
            layer(128, name="traced"),
            keras.layers.Dense(32, activation="relu"),
            keras.layers.Dense(10),
        ]
    )


def torch_model(cell: str):
    import torch
    from torch import nn

    torch.manual_seed(0)
    kind = {"lstm": nn.LSTM, "gru": nn.GRU, "simple_rnn": nn.RNN}[cell]

    class Net(nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.rnn = kind(28, 128, num_layers=2, batch_first=True)
            self.head = nn.Sequential(nn.Linear(128, 32), nn.ReLU(), nn.Linear(32, 10))

        def forward(self, x):
            out, _ = self.rnn(x)
            return self.head(out[:, -1])

    device = "cuda" if torch.cuda.is_available() else "cpu"
    return Net().to(device).eval()


def settle(*results) -> None:
    """Wait for the device to finish computing ``results`` (arrays, dicts of them, None)."""
    from pytest_rnncov.core.arrays import to_host

    for result in results:
        for value in result.values() if isinstance(result, dict) else [result]:
            if value is not None:
                to_host(value[:1, :1])


def timed(fn, pause: float = 0.0) -> float:
    if pause:
        time.sleep(pause)
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def metric_set(name: str, cell: str):
    from pytest_rnncov.core.metrics import BC, SC, TC

    if name == "h":
        return "h only", (BC("h", "net"), SC("h", "delta_net"), TC("h", "net"))
    if name == "paper":
        return "paper preset", ("BC", "SC", "TC")
    if name == "cell":  # a gate or cell-state metric: the LSTM's c, the GRU's update gate
        if cell == "simple_rnn":
            return None
        component = "c" if cell == "lstm" else "z"
        return f"{component} read", (BC(component, "avg"), SC("h", "delta_net"), TC("h", "net"))
    raise SystemExit(f"unknown metric set {name!r}: use h, paper or cell")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--framework", choices=["keras", "torch"], default="keras")
    parser.add_argument("--backend", choices=["tensorflow", "jax", "torch"], default=None)
    parser.add_argument("--cell", choices=sorted(CELLS), default="lstm")
    parser.add_argument("--sets", default="h,paper,cell")
    parser.add_argument("--batches", default="1000,10000")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--pause", type=float, default=0.3)
    parser.add_argument("--busy", action="store_true")
    parser.add_argument("--trace-on", choices=["auto", "numpy", "device"], default="auto")
    parser.add_argument("--no-reference", action="store_true")
    parser.add_argument(
        "--h-states",
        action="store_true",
        help="take h at every step from the pass even where it could give h's sums (the "
        "path before the pass summed h), for a side-by-side comparison",
    )
    parser.add_argument(
        "--no-overlap",
        action="store_true",
        help="compute each batch's gates after its call, not beside the next one",
    )
    parser.add_argument(
        "--chunk",
        type=int,
        default=None,
        help="inputs per framework call (batch_size; default: the adapter's own choice)",
    )
    args = parser.parse_args()
    if args.backend:
        os.environ["KERAS_BACKEND"] = args.backend
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    from pytest_rnncov.config.idle_threads import sleeping_idle_threads

    sleeping_idle_threads()  # as the plugin sets them for pytest, before numpy loads

    import numpy as np

    from pytest_rnncov import Coverage, ModelError, Profile, RNNModel
    from pytest_rnncov.core.arrays import to_host
    from pytest_rnncov.core.threads import numpy_work
    from pytest_rnncov.core.trace import Trace

    batches = [int(b) for b in args.batches.split(",")]
    largest = max(batches)
    rng = np.random.default_rng(0)
    x_all = rng.random((largest, 28, 28), dtype=np.float32)
    options = {"batch_size": args.chunk, "trace_on": args.trace_on}
    if args.framework == "keras":
        import keras

        model = keras_model(args.cell)
        layer = "traced"
        label = f"Keras {keras.__version__} on {keras.backend.backend()}"
    else:
        import torch

        model = torch_model(args.cell)
        layer = "rnn.l1"
        label = f"PyTorch {torch.__version__} on {next(model.parameters()).device}"
    try:
        rnn = RNNModel(model, layer, **options)
    except ModelError as exc:  # e.g. --trace-on device where the framework has no device path
        parser.exit(1, f"bench_core.py: {exc}\n")
    if args.h_states:
        rnn.gives_sums = lambda components: False
    if args.no_overlap:
        rnn.overlaps_trace = False
    reference = RNNModel(model, layer, recompute=True, **options)
    profile = Profile(window=(4, 24)).fit(rnn, x_all[:2000])
    busy = None
    if args.busy:
        busy = subprocess.Popen([sys.executable, "-c", "while True:\n    sum(range(10**6))"])
    try:
        print(
            f"{label}, {args.cell}, traced layer {rnn.layer_name}, trace on {rnn.trace_on}, "
            f"chunks of {args.chunk or 'the adapter default'}, busy={args.busy}"
        )
        for batch in batches:
            x = x_all[:batch]
            calls = {}
            if args.framework == "keras":
                calls["predict"] = lambda: model.predict(x, batch_size=batch, verbose=0)
                calls["predict_on_batch"] = lambda: model.predict_on_batch(x)
            else:
                import torch

                device = next(model.parameters()).device

                def forward():
                    with torch.no_grad():
                        model(torch.from_numpy(x).to(device)).cpu()

                calls["model(x)"] = forward
            for set_name in args.sets.split(","):
                chosen = metric_set(set_name, args.cell)
                if chosen is None:
                    continue
                title, metrics = chosen
                coverage = Coverage(rnn, profile, metrics, track_fitness=False)
                slow = Coverage(reference, profile, metrics, track_fitness=False)
                names = coverage.components_
                _, states, layer_input = rnn._plan(names)  # as iter_traces plans it
                summed = coverage.sums_only_ and rnn.gives_sums(names)
                if summed:  # as _summed_traces sizes them
                    size = rnn._summed_chunk_size(x, names)
                else:
                    size = rnn.chunk_size(x, len(names), layer_input)
                overlap = not summed and rnn._overlaps(layer_input) and len(x) > size

                def run(cov):
                    for chunk in cov.stream(x, keep_inputs=False):
                        to_host(chunk.outputs[:1])

                def parts():
                    """The tracked path split: framework call, gates, metrics (seconds)."""
                    spent = [0.0, 0.0, 0.0]
                    for start in range(0, len(x), size):
                        batch_x = x[start : start + size]
                        t0 = time.perf_counter()
                        if summed:  # the pass sums h: nothing is computed after it
                            _, sums = rnn._forward_sums(
                                batch_x, True, names, coverage.positive_parts_
                            )
                            trace = Trace(
                                {},
                                cell=rnn.cell_kind,
                                length=sums[names[0]].shape[1],
                                sums={n: a[:, : coverage.until] for n, a in sums.items()},
                                sum_units=rnn.units,
                            )
                            t1 = t2 = time.perf_counter()
                        else:
                            _, seq, mask, found = rnn._forward(batch_x, True, layer_input, states)
                            settle(seq, found)  # an accelerator's call is asynchronous: wait
                            t1 = time.perf_counter()
                            with numpy_work(batched=states is not None):
                                if states:
                                    trace = rnn.cell.from_states(
                                        seq, found, mask, coverage.until, names
                                    )
                                else:
                                    trace = rnn.cell.forward(seq, mask, coverage.until, names)
                                to_host(trace.components[names[-1]][:1, :1, :1])
                            t2 = time.perf_counter()
                        coverage.update_signals(coverage.signals(trace))
                        t3 = time.perf_counter()
                        spent[0] += t1 - t0
                        spent[1] += t2 - t1
                        spent[2] += t3 - t2
                    return spent

                for call in calls.values():  # warm up every path
                    call()
                run(coverage)
                coverage.update(x)
                parts()
                if not args.no_reference:
                    run(slow)
                times: dict[str, list[float]] = {
                    k: [] for k in [*calls, "tracked", "update", "reference"]
                }
                split: list[list[float]] = []
                for _ in range(args.repeats):
                    for name, call in calls.items():
                        times[name].append(timed(call, args.pause))
                    times["tracked"].append(timed(lambda: run(coverage), args.pause))
                    times["update"].append(timed(lambda: coverage.update(x), args.pause))
                    if not args.no_reference:
                        times["reference"].append(timed(lambda: run(slow), args.pause))
                    time.sleep(args.pause)
                    split.append(parts())
                med = {k: statistics.median(v) * 1e3 for k, v in times.items() if v}
                fastest = min(med[k] for k in calls)
                call_ms, gates_ms, metrics_ms = (
                    statistics.median(s[i] for s in split) * 1e3 for i in range(3)
                )
                print(
                    f"batch {batch}, {title} (trace holds {', '.join(names)}; chunks of "
                    f"{size}), medians of {args.repeats} (ms):"
                )
                for name, value in med.items():
                    print(f"  {name:<18}{value:10.1f}   {value / fastest:5.2f}x")
                print(
                    f"  split: framework call {call_ms / fastest:.2f}x, gates "
                    f"{gates_ms / fastest:.2f}x"
                    f"{' (gates overlap the next call)' if overlap else ''}, metrics "
                    f"{metrics_ms / fastest:.2f}x; limit "
                    f"(one pass + metrics) {(fastest + metrics_ms) / fastest:.2f}x; "
                    f"per 1,000 inputs tracked {med['tracked'] / batch * 1e3:.1f} ms"
                )
                print(f"  RATIO tracked/predict = {med['tracked'] / fastest:.2f}")
    finally:
        if busy is not None:
            busy.kill()


if __name__ == "__main__":
    main()
