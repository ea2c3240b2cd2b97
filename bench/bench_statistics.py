"""Where an all-metrics campaign spends its time: statistics against the whole run.

The MNIST example's model and seeds, all 11 metrics tracked, a campaign of 10,000 test
cases. The statistics (the incremental minimal suite and the diversity accumulator) are
timed by wrapping their ``add``/``members``/``mean`` methods; the share they take of the
campaign's wall time is printed, with the per-metric update cost of the same run.

The statistics (the incremental minimal suite and the diversity accumulator) are
printed apart. ``--tree`` runs another checkout of this project (an older commit in a
``git worktree``), with its package and the MNIST example's artifacts, so two versions are
measured side by side: run it once per tree, alternating.

    python bench/bench_statistics.py [--budget 10000] [--tree PATH]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
ROOT = Path(__file__).resolve().parents[1]

SPENT: dict[str, float] = {}


def timed(owner: type, name: str, label: str, original=None) -> None:
    original = original or getattr(owner, name)

    def wrapper(*args, **kwargs):
        start = time.perf_counter()
        try:
            return original(*args, **kwargs)
        finally:
            SPENT[label] = SPENT.get(label, 0.0) + time.perf_counter() - start

    setattr(owner, name, wrapper)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--budget", type=int, default=10_000)
    parser.add_argument("--tree", default=str(ROOT))
    args = parser.parse_args()
    tree = Path(args.tree).resolve()
    sys.path.insert(0, str(tree))
    import numpy as np

    import pytest_rnncov
    from examples.mnist import data, train
    from pytest_rnncov import (
        Campaign,
        GAConfig,
        GaussianMutator,
        Oracle,
        Profile,
        RNNModel,
        load_model,
    )
    from pytest_rnncov.core.metrics import METRICS
    from pytest_rnncov.core.names import METRIC_NAMES
    from pytest_rnncov.generation import statistics

    assert Path(pytest_rnncov.__file__).resolve().is_relative_to(tree), pytest_rnncov.__file__

    (x_train, _), _ = data.split()
    rnn = RNNModel(load_model(train.ARTIFACTS / "model.keras"), train.LAYER)
    profile = Profile.load(train.ARTIFACTS / "profile.json")
    seeds = x_train[np.random.default_rng(0).choice(len(x_train), 200, replace=False)]
    for owner, names, label in (
        (statistics.MinimalSuite, ("add", "members"), "statistics: suite"),
        (statistics.DiversityAccumulator, ("add", "per_seed", "mean"), "statistics: diversity"),
    ):
        for name in names:
            timed(owner, name, label)
    originals = {name: cls.evaluate for name, cls in METRICS.items()}  # before any wrapping
    for name, cls in METRICS.items():
        timed(cls, "evaluate", f"update {name}", originals[name])
    campaign = Campaign(
        rnn,
        seeds,
        GaussianMutator(),
        Oracle(radius=3.0),
        profile=profile,
        metrics=METRIC_NAMES,
        budget=args.budget,
        batch_size=200,
        ga=GAConfig(k=4, n=8, gamma=20),
        seed=0,
    )
    start = time.perf_counter()
    result = campaign.run()
    total = time.perf_counter() - start
    print(
        f"{tree.name}: all-metrics campaign: {result.test_cases} test cases in {total:.1f} s "
        f"({result.test_cases / total:.0f}/s), minimal suite {len(result.minimal_suite)} cases"
    )
    for label, seconds in sorted(SPENT.items(), key=lambda kv: -kv[1]):
        print(f"  {label:<22}{seconds:8.2f} s  {seconds / total:6.1%}")


if __name__ == "__main__":
    main()
