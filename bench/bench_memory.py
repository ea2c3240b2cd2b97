"""Memory of Coverage.update over many inputs: peak RSS must stay flat, not grow with the
number of inputs fed.

Feeds N MNIST-shaped inputs (28 x 28, random) through ``Coverage.update`` of the paper's
MNIST architecture (BC, SC, TC on the second LSTM, window [4, 24]) in calls of
``--chunk`` inputs, and prints the peak resident set size after each tenth of the run.

    python bench/bench_memory.py [--inputs 1000000] [--chunk 10000]
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).parent))

import numpy as np  # noqa: E402
from bench_core import keras_model  # noqa: E402


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kilobytes


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--inputs", type=int, default=1_000_000)
    parser.add_argument("--chunk", type=int, default=10_000)
    args = parser.parse_args()

    from pytest_rnncov import Coverage, Profile, RNNModel

    rnn = RNNModel(keras_model("lstm"), "traced")
    rng = np.random.default_rng(0)
    profile = Profile(window=(4, 24)).fit(rnn, rng.random((2000, 28, 28), dtype=np.float32))
    coverage = Coverage(rnn, profile, ("BC", "SC", "TC"))
    calls = args.inputs // args.chunk
    start = time.perf_counter()
    print(f"peak RSS before feeding: {peak_rss_mb():.0f} MB", flush=True)
    for call in range(1, calls + 1):
        coverage.update(rng.random((args.chunk, 28, 28), dtype=np.float32))
        if call % max(1, calls // 10) == 0 or call == calls:
            print(
                f"{call * args.chunk:>9,} inputs: peak RSS {peak_rss_mb():6.0f} MB, "
                f"{time.perf_counter() - start:6.0f} s, rates "
                + ", ".join(f"{k} {v:.3f}" for k, v in coverage.rates().items()),
                flush=True,
            )


if __name__ == "__main__":
    main()
