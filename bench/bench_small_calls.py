"""Small PyTorch calls on PyTorch's threads and on one: where ``SMALL_CALL_WORK`` sits.

With PyTorch's OpenMP threads asleep between calls (``OMP_WAIT_POLICY=PASSIVE``, as the
plugin sets it), each parallel region of a call wakes a sleeping thread. For a few
recurrent models this prints, per batch size, the medians of the model's own call
(``torch.no_grad``) on PyTorch's threads and on one thread, timed alternately, their
ratio, and the call's work per step as the adapter counts it (rows x the model's
parameters) against ``SMALL_CALL_WORK``, below which a tracked model's CPU calls run on
one thread:

    python bench/bench_small_calls.py [--repeats 15] [--batches 32,200,1000]

It sets ``OMP_WAIT_POLICY=PASSIVE`` unless the variable is set (``default`` keeps
OpenMP's own policy: ``OMP_WAIT_POLICY=default python bench/bench_small_calls.py``).
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

if os.environ.get("OMP_WAIT_POLICY") == "default":
    del os.environ["OMP_WAIT_POLICY"]
else:
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # read when torch loads

import torch  # noqa: E402
from torch import nn  # noqa: E402

from pytest_rnncov.adapters.torch import SMALL_CALL_WORK  # noqa: E402

#: (label, module, steps, features): the vowels example's GRU, a mid-size GRU, and
#: bench_core's model (two LSTM layers of 128 units)
MODELS = (
    ("GRU 32 units, 29 x 12", nn.GRU(12, 32, batch_first=True), 29, 12),
    ("GRU 64 units, 28 x 28", nn.GRU(28, 64, batch_first=True), 28, 28),
    ("2 LSTM of 128, 28 x 28", nn.LSTM(28, 128, num_layers=2, batch_first=True), 28, 28),
)


def call_ms(module: nn.Module, x: torch.Tensor, threads: int) -> float:
    own = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        with torch.no_grad():
            start = time.perf_counter()
            module(x)
            return (time.perf_counter() - start) * 1e3
    finally:
        torch.set_num_threads(own)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=15)
    parser.add_argument("--batches", default="32,200,1000")
    args = parser.parse_args()
    batches = [int(b) for b in args.batches.split(",")]
    if args.repeats < 1 or any(b < 1 for b in batches):
        raise SystemExit("--repeats and every batch must be positive")
    own = torch.get_num_threads()
    print(
        f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(unset)')}, PyTorch threads "
        f"{own}, SMALL_CALL_WORK {SMALL_CALL_WORK:,}; medians of {args.repeats}, alternating"
    )
    torch.manual_seed(0)
    for label, module, steps, features in MODELS:
        module.eval()
        weights = sum(p.numel() for p in module.parameters())
        for batch in batches:
            x = torch.randn(batch, steps, features)
            times: dict[int, list[float]] = {own: [], 1: []}
            for threads in (own, 1, own, 1):  # warm both
                call_ms(module, x, threads)
            for _ in range(args.repeats):
                for threads in (own, 1):
                    times[threads].append(call_ms(module, x, threads))
            many, one = (statistics.median(times[n]) for n in (own, 1))
            work = batch * weights
            side = "one thread" if work < SMALL_CALL_WORK else "PyTorch's threads"
            print(
                f"{label:<24} batch {batch:>5}: {own} threads {many:7.2f} ms, one {one:7.2f} "
                f"ms, one / {own} = {one / many:4.2f}; work {work:>12,} -> {side}"
            )


if __name__ == "__main__":
    main()
