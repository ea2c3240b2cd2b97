"""Memory of Coverage.update over many inputs: peak RSS must stay flat, not grow with the
number of inputs fed.

Feeds N MNIST-shaped inputs (28 x 28, random) through ``Coverage.update`` of the paper's
MNIST architecture (BC, SC, TC on the second LSTM, window [4, 24]) in calls of
``--chunk`` inputs, and prints the peak resident set size after each tenth of the run.

    python bench/bench_memory.py [--inputs 1000000] [--chunk 10000]

``--memmap N`` instead feeds N inputs of a float64 ``.npy`` file opened with
``np.load(mmap_mode="r")`` (in a temporary folder) in one ``Coverage.update`` call, and
prints the anonymous memory the process held at most during the call (sampled every 10 ms:
the file's own pages, which the kernel may drop, are not counted) beside the float32 copy
that casting the whole file at once would make.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).parent))

import numpy as np  # noqa: E402
from bench_core import keras_model  # noqa: E402


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: kilobytes


def status_mb(field: str) -> float:
    """A memory figure of this process now (``field`` of /proc/self/status: RssAnon,
    VmRSS), in MB."""
    with open("/proc/self/status") as status:
        for line in status:
            if line.startswith(f"{field}:"):
                return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} in /proc/self/status")


def anonymous_mb() -> float:
    """The process's anonymous resident memory now (RssAnon), in MB."""
    return status_mb("RssAnon")


def memmap_update(coverage, n: int) -> None:
    """One Coverage.update of ``n`` float64 inputs memory-mapped from a .npy file."""
    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "inputs.npy"
        out = np.lib.format.open_memmap(path, mode="w+", dtype=np.float64, shape=(n, 28, 28))
        for start in range(0, n, 10_000):
            out[start : start + 10_000] = rng.random((min(10_000, n - start), 28, 28))
        out.flush()
        del out
        x = np.load(path, mmap_mode="r")
        peak, done = [anonymous_mb()], threading.Event()

        def sample() -> None:
            while not done.wait(0.01):
                peak.append(anonymous_mb())

        sampler = threading.Thread(target=sample)
        before = peak[0]
        start = time.perf_counter()
        sampler.start()
        try:
            coverage.update(x)
        finally:
            done.set()
            sampler.join()
        print(
            f"{n:,} float64 inputs memory-mapped ({x.nbytes / 2**20:,.0f} MiB; cast whole, "
            f"{x.nbytes / 2 / 2**20:,.0f} MiB of float32): anonymous memory {before:,.0f} MB "
            f"before, at most {max(peak):,.0f} MB during the call "
            f"({time.perf_counter() - start:.0f} s)",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--inputs", type=int, default=1_000_000)
    parser.add_argument("--chunk", type=int, default=10_000)
    parser.add_argument("--memmap", type=int, default=None)
    args = parser.parse_args()

    from pytest_rnncov import Coverage, Profile, RNNModel

    rnn = RNNModel(keras_model("lstm"), "traced")
    rng = np.random.default_rng(0)
    profile = Profile(window=(4, 24)).fit(rnn, rng.random((2000, 28, 28), dtype=np.float32))
    coverage = Coverage(rnn, profile, ("BC", "SC", "TC"))
    if args.memmap is not None:
        memmap_update(coverage, args.memmap)
        return
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
