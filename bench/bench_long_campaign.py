"""A long campaign on a tiny model where failures are frequent: whether time per step and
memory stay flat as the cases and adversarial samples grow, and what finishing costs.

A PyTorch LSTM(4 -> 16) + Linear(3) on random 20 x 4 inputs, its output layer recentred so
that its three classes are balanced (more than half the mutants fail the oracle); 50 seeds,
batches of 100, Gaussian noise of variance 0.025-0.05. Prints the loop's time, the median
and mean time per step over the first and the last tenth of the steps, the time of
``finish()`` (shrinking and statistics), the adversarial samples and the resident memory at
the end and at its peak.

    python bench/bench_long_campaign.py [--budget 100000] [--no-shrink] [--writer]
        [--features 4] [--case-memory MIB]

``--writer`` gives the campaign a ``SampleWriter`` in a temporary folder (PNGs are written
for 2-D cases only: these are 20 x 4, so it writes a PNG per sample up to its cap).
``--features`` widens the inputs (20 x 64 float32 is 5 KiB a case); ``--case-memory`` sets
how many MiB of cases the campaign keeps in memory before the rest go to a temporary file
(``CASE_MEMORY``, 256 by default): run it with a bound the cases pass and one they do not,
one after the other, to see what spilling saves and costs.
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
os.environ.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
sys.path.insert(0, str(Path(__file__).parent))

import numpy as np  # noqa: E402
from bench_memory import peak_rss_mb, status_mb  # noqa: E402


def balanced_model(steps: int = 20, features: int = 4, units: int = 16):
    """The tiny LSTM classifier, its classes balanced on uniform random inputs."""
    import torch

    class Classifier(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.lstm = torch.nn.LSTM(features, units, batch_first=True)
            self.fc = torch.nn.Linear(units, 3)

        def forward(self, x):
            return self.fc(self.lstm(x)[0][:, -1])

    torch.manual_seed(0)
    model = Classifier().eval()
    with torch.no_grad():
        x = torch.tensor(np.random.default_rng(1).random((2000, steps, features), np.float32))
        last = model.lstm(x)[0][:, -1]
        model.fc.weight.div_(model.fc(last).std(0, keepdim=True).T)
        model.fc.bias.copy_(-(model.fc(last) - model.fc.bias).mean(0))
    return model


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=100_000)
    parser.add_argument("--no-shrink", action="store_true")
    parser.add_argument("--writer", action="store_true")
    parser.add_argument("--features", type=int, default=4)
    parser.add_argument("--case-memory", type=int, default=None, help="MiB")
    args = parser.parse_args()

    import pytest_rnncov.generation.cases as cases_module
    from pytest_rnncov import Campaign, GaussianMutator, Oracle, Profile, RNNModel, SampleWriter

    if args.case_memory is not None:
        cases_module.CASE_MEMORY = args.case_memory * 2**20
    rnn = RNNModel(balanced_model(features=args.features))
    x = np.random.default_rng(0).random((500, 20, args.features), np.float32)
    profile = Profile().fit(rnn, x)
    folder = tempfile.mkdtemp(prefix="bench-long-") if args.writer else None
    listeners = [SampleWriter(folder)] if folder else []
    campaign = Campaign(
        rnn,
        x[:50],
        GaussianMutator(variance=(0.025, 0.05), clip=(0.0, 1.0)),
        Oracle(radius=50.0),
        profile=profile,
        budget=args.budget,
        batch_size=100,
        seed=0,
        shrink=not args.no_shrink,
        listeners=listeners,
    )
    times = []
    start = last = time.perf_counter()
    for _ in campaign.iterate():
        now = time.perf_counter()
        times.append(now - last)
        last = now
    loop = time.perf_counter() - start
    after_loop = status_mb("RssAnon"), status_mb("RssFile")
    start = time.perf_counter()
    result = campaign.finish()
    finish = time.perf_counter() - start
    steps = np.array(times[1:]) * 1e3  # the seeds' step aside
    tenth = max(5, len(steps) // 10)
    print(
        f"budget {args.budget}, shrink {not args.no_shrink}, writer {args.writer}, "
        f"{args.features} features, cases in memory up to "
        f"{cases_module.CASE_MEMORY / 2**20:.0f} MiB ({campaign._cases._spilled} in the file): "
        f"{len(times)} steps, loop {loop:.1f} s, finish {finish:.1f} s"
    )
    print(
        f"ms per step, first {tenth}: median {np.median(steps[:tenth]):.1f}, mean "
        f"{steps[:tenth].mean():.1f}; last {tenth}: median {np.median(steps[-tenth:]):.1f}, "
        f"mean {steps[-tenth:].mean():.1f}"
    )
    print(
        f"adversarial {result.adversarial} from {result.unique} seeds; RSS "
        f"{status_mb('VmRSS'):.0f} MB at the end, {peak_rss_mb():.0f} MB at the peak; "
        f"after the loop {after_loop[0]:.0f} MB anonymous, {after_loop[1]:.0f} MB of mapped "
        "files (the page cache's, which the system reclaims under pressure)"
    )
    if folder is not None:  # the samples were written only to be timed
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
