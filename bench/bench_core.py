"""Core engine speed on the paper's MNIST-shaped model (issue: core engine, performance).

Prints medians of (a) model.predict, (b) trace of the second LSTM, (c) BC + SC + TC update,
for a batch of 1000, measured side by side (interleaved) in one run, and the ratios.

    python bench/bench_core.py [--repeats 7] [--batch 1000]
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import keras  # noqa: E402
import numpy as np  # noqa: E402

from pytest_rnncov import Coverage, Profile, RNNModel  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--batch", type=int, default=1000)
    args = parser.parse_args()
    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [
            keras.Input((28, 28)),
            keras.layers.LSTM(128, return_sequences=True),
            keras.layers.LSTM(128),
            keras.layers.Dense(32, activation="relu"),
            keras.layers.Dense(10),
        ]
    )
    rng = np.random.default_rng(0)
    x = rng.random((args.batch, 28, 28), dtype=np.float32)
    rnn = RNNModel(model, layer=1, batch_size=args.batch)
    profile = Profile(window=(4, 24)).fit(rnn, x)
    timings: dict[str, list[float]] = {"a": [], "b": [], "c": [], "run": []}
    model.predict(x, batch_size=args.batch, verbose=0)  # warm up both paths
    trace = rnn.trace(x)
    for _ in range(args.repeats):
        start = time.perf_counter()
        model.predict(x, batch_size=args.batch, verbose=0)
        timings["a"].append(time.perf_counter() - start)
        start = time.perf_counter()
        trace = rnn.trace(x)
        timings["b"].append(time.perf_counter() - start)
        coverage = Coverage(rnn, profile, ("BC", "SC", "TC"))
        start = time.perf_counter()
        coverage.update_trace(trace, x)
        timings["c"].append(time.perf_counter() - start)
        start = time.perf_counter()
        rnn.run(x)
        timings["run"].append(time.perf_counter() - start)
    med = {k: statistics.median(v) for k, v in timings.items()}
    print(f"batch {args.batch}, {args.repeats} repeats, medians:")
    print(f"  (a) model.predict            {med['a'] * 1e3:8.1f} ms")
    print(f"  (b) trace of second LSTM     {med['b'] * 1e3:8.1f} ms")
    print(f"  (c) BC + SC + TC update      {med['c'] * 1e3:8.1f} ms")
    print(f"      run (predict + trace)    {med['run'] * 1e3:8.1f} ms")
    print(f"  b/a       = {med['b'] / med['a']:.2f}")
    print(f"  (b + c)/a = {(med['b'] + med['c']) / med['a']:.2f}   (target <= 1.5)")


if __name__ == "__main__":
    main()
