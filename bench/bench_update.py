"""What each metric's update costs on the host, once a batch's signals are there.

On an accelerator the model's own call for 10,000 inputs takes about 10 ms, so the host
work of a tracked call (deriving the signals and updating the metrics) is a visible share
of it (``bench/bench_core.py``'s split, "metrics"). This bench times that work alone, on
the host, for the paper's MNIST shape (a PyTorch GRU of 128 units, window [4, 24]): per
metric, the median over ``--repeats`` of ``evaluate`` + ``absorb`` on signals already
computed, without and with the best-fitness tracking a campaign needs (ms per 1,000
inputs); then ``Coverage.observe`` of the testrnn metrics (BC h/net, SC h/delta_net, TC
h/net) together, the signals themselves from the trace, and the testrnn metrics again from
float32 per-step sums, as the device path of Keras on JAX brings them to the host (the
signals derived from those sums, then the update).

    python bench/bench_update.py [--inputs 10000] [--repeats 15] [--metrics BC,SC,TC,...]

Run it twice with ``PYTHONPATH`` pointing at two checkouts to compare them side by side.
"""

from __future__ import annotations

import argparse
import statistics
from typing import Callable

import numpy as np
from bench_core import timed


def median_ms(call: Callable[[], object], repeats: int) -> float:
    """Median wall time of ``call`` in milliseconds (after one warm-up call)."""
    call()
    return statistics.median(timed(call) for _ in range(repeats)) * 1e3


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--inputs", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--metrics", default="BC,SC,TC,NC,KMNC,NBC,SNAC,BS,SBC,BT,WT")
    args = parser.parse_args()
    if args.inputs < 1 or args.repeats < 1:
        parser.error(f"--inputs {args.inputs} --repeats {args.repeats}: pass 1 or more of each")

    from bench_core import torch_model

    import pytest_rnncov
    from pytest_rnncov import Coverage, Profile, RNNModel
    from pytest_rnncov.core.abstractions import step_positive, step_total
    from pytest_rnncov.core.metrics import BC, SC, TC

    rnn = RNNModel(torch_model("gru"), "rnn.l1", trace_on="numpy")
    x = np.random.default_rng(0).random((args.inputs, 28, 28), dtype=np.float32)
    profile = Profile(window=(4, 24)).fit(rnn, x[:2000])
    trace = rnn.trace(x)
    ids = np.arange(args.inputs)
    per_1000 = 1000 / args.inputs
    print(f"pytest_rnncov from {pytest_rnncov.__file__}")
    print(f"{args.inputs} inputs, medians of {args.repeats}, ms per 1,000 inputs:")
    print(f"  {'metric':<24} {'update':>7} {'+fitness':>9}")
    everything = Coverage(rnn, profile, tuple(args.metrics.split(",")))
    signals = everything.signals(trace)
    for key, metric in everything.metrics.items():
        row = []
        for fitness in (False, True):
            metric.evaluate(signals, fitness=fitness)  # the signals computed once, then cached
            row.append(
                median_ms(
                    lambda: metric.absorb(metric.evaluate(signals, fitness=fitness), ids),
                    args.repeats,
                )
                * per_1000
            )
        print(f"  {key:<24} {row[0]:7.2f} {row[1]:9.2f}")
    testrnn = Coverage(
        rnn, profile, (BC("h", "net"), SC("h", "delta_net"), TC("h", "net")), track_fitness=False
    )
    signals = testrnn.signals(trace)
    testrnn.observe(signals)
    total = median_ms(lambda: testrnn.observe(signals), args.repeats) * per_1000
    print(f"  {'BC, SC, TC (testrnn)':<24} {total:7.2f}")
    fresh = median_ms(lambda: testrnn.signals(trace).get("h", "net"), args.repeats) * per_1000
    print(f"  {'signals from the trace':<24} {fresh:7.2f}")
    # as on the device path of Keras on JAX: h's per-step sums come to the host in float32,
    # and the signals are derived from them there, then the metrics update
    window = signals.window
    sums32 = {
        ("h", "total"): step_total(trace.h, window).astype(np.float32),
        ("h", "positive"): step_positive(trace.h, window).astype(np.float32),
    }

    def from_float32_sums() -> None:
        given = testrnn.signals(trace)
        given._sums.update(sums32)
        testrnn.observe(given)

    jax_like = median_ms(from_float32_sums, args.repeats) * per_1000
    print(f"  {'the same, float32 sums':<24} {jax_like:7.2f}")


if __name__ == "__main__":
    main()
