"""Core engine speed against the model's own batch call, measured side by side.

The paper's MNIST shape (28 steps x 28 features, two recurrent layers of 128 units, the
second traced, window [4, 24]). For each batch size it prints medians of:

  predict     the model's own batched call, after a pause (so no thread of ours competes):
              Keras ``model.predict`` and ``predict_on_batch``, or PyTorch ``model(x)``
  trace       the traced layer's input from the framework plus the numpy recurrence over
              the steps the window needs (what Coverage.update runs)
  update      BC + SC + TC update of the session coverage (no fitness: the plugin's path)
  update+fit  the same with best-fitness tracking (a campaign's path)
  tracked     a tracked model's predict: outputs and layer input from one framework call,
              the recurrence and the update (what a test pays for predict under the plugin)
  ratio       (trace + update) / the fastest predict   (target <= 1.2 quiet, <= 1.5 busy)

and, with --metrics, the update cost of every metric per 1,000 inputs.

    python bench/bench_core.py [--framework keras|torch] [--backend tensorflow|jax|torch]
        [--cell lstm|gru|simple_rnn] [--trace-on auto|numpy|device] [--batches 1000,10000]
        [--repeats 5] [--busy] [--blas-threads N] [--metrics]

``--busy`` runs a process that keeps one core busy during the measurement. ``--backend``
sets KERAS_BACKEND (Keras 3 on JAX or torch needs no TensorFlow). ``--trace-on`` picks
where the trace and the BC/SC/TC update run: "numpy" (the host), "device" (the framework's
own arrays where the model runs), or "auto" (device on an accelerator, else numpy). It
runs as it is on a CUDA machine with torch or JAX and no TensorFlow.
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


def timed(fn, pause: float = 0.0) -> float:
    if pause:
        time.sleep(pause)
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--framework", choices=["keras", "torch"], default="keras")
    parser.add_argument("--backend", choices=["tensorflow", "jax", "torch"], default=None)
    parser.add_argument("--cell", choices=sorted(CELLS), default="lstm")
    parser.add_argument("--batches", default="1000,10000")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--pause", type=float, default=0.3)
    parser.add_argument("--busy", action="store_true")
    parser.add_argument("--blas-threads", default=None)
    parser.add_argument("--metrics", action="store_true")
    parser.add_argument("--trace-on", choices=["auto", "numpy", "device"], default="auto")
    parser.add_argument(
        "--chunk",
        type=int,
        default=512,
        help="inputs per framework call of the trace (the adapter's batch_size)",
    )
    args = parser.parse_args()
    if args.backend:
        os.environ["KERAS_BACKEND"] = args.backend
    if args.blas_threads is not None:
        os.environ["RNNCOV_BLAS_THREADS"] = args.blas_threads
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

    import numpy as np

    from pytest_rnncov import Coverage, Profile, RNNModel
    from pytest_rnncov.core.arrays import to_host
    from pytest_rnncov.core.metrics import METRICS

    batches = [int(b) for b in args.batches.split(",")]
    largest = max(batches)
    rng = np.random.default_rng(0)
    x_all = rng.random((largest, 28, 28), dtype=np.float32)
    if args.framework == "keras":
        import keras

        model = keras_model(args.cell)
        rnn = RNNModel(model, "traced", batch_size=args.chunk, trace_on=args.trace_on)
        label = f"Keras {keras.__version__} on {keras.backend.backend()}"
    else:
        import torch

        model = torch_model(args.cell)
        rnn = RNNModel(model, "rnn.l1", batch_size=args.chunk, trace_on=args.trace_on)
        label = f"PyTorch {torch.__version__} on {next(model.parameters()).device}"
    profile = Profile(window=(4, 24)).fit(rnn, x_all[:2000])
    busy = None
    if args.busy:
        busy = subprocess.Popen([sys.executable, "-c", "while True:\n    sum(range(10**6))"])
    try:
        print(
            f"{label}, {args.cell}, traced layer {rnn.layer_name}, trace on {rnn.trace_on}, "
            "chunks of "
            f"{args.chunk}, BLAS threads "
            f"{os.environ.get('RNNCOV_BLAS_THREADS', '1')}, busy={args.busy}"
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
            for call in calls.values():  # warm up every path
                call()
            session = Coverage(rnn, profile, ("BC", "SC", "TC"), track_fitness=False)
            until = session.until

            def trace_window():  # streamed in chunks, as Coverage.update runs it
                traces = [t for _, t in rnn.iter_traces(x, outputs=False, until=until)]
                to_host(traces[-1].h[:1, :1, :1])  # waits for asynchronous devices (CUDA)
                return traces

            def tracked():
                for _, t in rnn.iter_traces(x, outputs=True, until=until):
                    session.update_trace(t)

            traces = trace_window()
            tracked()
            names = [*calls, "trace", "update", "update+fit", "tracked"]
            times: dict[str, list[float]] = {k: [] for k in names}
            for _ in range(args.repeats):
                for name, call in calls.items():
                    times[name].append(timed(call, args.pause))
                times["trace"].append(timed(trace_window))
                for name, fit in (("update", False), ("update+fit", True)):
                    coverage = Coverage(rnn, profile, ("BC", "SC", "TC"), track_fitness=fit)
                    times[name].append(timed(lambda: [coverage.update_trace(t) for t in traces]))
                times["tracked"].append(timed(tracked, args.pause))
            med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
            fastest = min(med[k] for k in calls)
            print(f"batch {batch}, medians of {args.repeats} (ms):")
            for name in names:
                print(f"  {name:<18}{med[name]:10.1f}")
            print(
                f"  ratio (trace + update) / fastest predict     = "
                f"{(med['trace'] + med['update']) / fastest:.2f}"
            )
            print(
                f"  ratio (trace + update+fit) / fastest predict = "
                f"{(med['trace'] + med['update+fit']) / fastest:.2f}"
            )
            print(
                f"  ratio tracked predict / fastest predict      = {med['tracked'] / fastest:.2f}"
            )
        if args.metrics:
            x = x_all[:1000]
            trace = [t for _, t in rnn.iter_traces(x, outputs=False, until=25)][0]
            print("update cost per 1,000 inputs, ms (median): metric  no-fitness  fitness")
            for name in METRICS:
                row = []
                for fit in (False, True):
                    samples = []
                    for _ in range(args.repeats):
                        coverage = Coverage(rnn, profile, (name,), track_fitness=fit)
                        samples.append(timed(lambda: coverage.update_trace(trace)))
                    row.append(statistics.median(samples) * 1e3)
                print(f"  {name:<6}{row[0]:10.1f}{row[1]:10.1f}")
    finally:
        if busy is not None:
            busy.kill()


if __name__ == "__main__":
    main()
