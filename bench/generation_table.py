"""Paper-style "Experiments for Test Case Generation Methods" tables for the examples.

For each example: Seeds (200 seeds), Random (random mutation only) and Targeted (random
mutation, then the GA once coverage stalls) with the same budget and seed; test cases,
adversarial samples, unique seeds, average perturbation, BC, SC, TC. Also the campaign's
test cases per second beside the model's own predictions per second.

    NLTK_DATA=../shared/data/nltk_data python bench/generation_table.py [--out docs/generation.md]
        [--examples mnist,sentiment,molecules] [--seed 0]
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
ROOT = Path(__file__).resolve().parents[1]

import numpy as np  # noqa: E402

from pytest_rnncov import (  # noqa: E402
    Campaign, Coverage, EDAMutator, GAConfig, GaussianMutator, Oracle, Profile, RNNModel,
    SmilesMutator, load_model,
)


def example(name: str):
    """(rnn, profile, seeds (200), mutator, oracle, budget, label) for one example."""
    folder = ROOT / "examples" / name
    sys.path.insert(0, str(folder))
    for module in ("train", "data"):
        sys.modules.pop(module, None)
    train = importlib.import_module("train")
    data = importlib.import_module("data")
    rng = np.random.default_rng(0)
    if name == "mnist":
        (x_train, _), _ = data.split()
        rnn = RNNModel(load_model(train.ARTIFACTS / "model.keras"), train.LAYER)
        seeds = x_train[rng.choice(len(x_train), 200, replace=False)]
        return rnn, seeds, GaussianMutator(), Oracle(radius=3.0), 10_000, "L2 radius 3.0"
    encoder = train.encoder_from(train.ARTIFACTS / "encoder.json")
    rnn = RNNModel(load_model(train.ARTIFACTS / "model.keras"), "lstm")
    (s_train, _), _ = data.split()
    seeds = [s_train[i] for i in rng.choice(len(s_train), 200, replace=False)]
    if name == "sentiment":
        return (rnn, seeds, EDAMutator(encoder=encoder, alpha=0.1), Oracle(radius=0.15),
                10_000, "share of words changed <= 0.15")
    return (rnn, seeds, SmilesMutator(encoder=encoder),
            Oracle(radius=None, task="regression", tolerance=0.5), 2_000,
            "no radius, |delta pIC50| > 0.5")


def table(name: str, seed: int) -> tuple[list[str], str]:
    folder = ROOT / "examples" / name
    rnn, seeds, mutator, oracle, budget, oracle_text = example(name)
    profile = Profile.load(folder / "artifacts" / "profile.json")
    seed_coverage = Coverage(rnn, profile)
    seed_coverage.update(mutator.encode(seeds))
    rows = [f"| Seeds | {len(seeds)} | - | - | - | "
            + " | ".join(f"{seed_coverage[k].rate:.2f}" for k in ("BC", "SC", "TC")) + " |"]
    speeds = []
    for method, patience in (("Random", 10**9), ("Targeted", 1)):
        campaign = Campaign(rnn, seeds, mutator, oracle, profile=profile, budget=budget,
                            batch_size=200, patience=patience, ga=GAConfig(k=4, n=8, gamma=20),
                            seed=seed)
        start = time.perf_counter()
        result = campaign.run()
        seconds = time.perf_counter() - start
        speeds.append(result.test_cases / seconds)
        avg = "-" if result.average_perturbation is None else f"{result.average_perturbation:.3f}"
        rows.append(
            f"| {method} | {result.test_cases} | {result.adversarial} | {avg} | {result.unique} | "
            + " | ".join(f"{result.rates[k]:.2f}" for k in ("BC", "SC", "TC")) + " |"
        )
    x = mutator.encode(seeds)
    batch = np.concatenate([x] * 5)  # 1000 inputs
    rnn.model.predict(batch, verbose=0)
    times = []
    for _ in range(3):
        start = time.perf_counter()
        rnn.model.predict(batch, verbose=0)
        times.append(time.perf_counter() - start)
    predictions = len(batch) / float(np.median(times))
    note = (f"oracle: {oracle_text}; distance: {mutator.distance_name}; campaign speed "
            f"{min(speeds):.0f}-{max(speeds):.0f} test cases/s vs model.predict "
            f"{predictions:.0f} predictions/s (ratio {min(speeds) / predictions:.2f}-"
            f"{max(speeds) / predictions:.2f})")
    return rows, note


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default=str(ROOT / "docs" / "generation.md"))
    parser.add_argument("--examples", default="mnist,sentiment,molecules")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    lines = ["# Test case generation: Seeds / Random / Targeted", "",
             "Produced by `python bench/generation_table.py` (seed "
             f"{args.seed}; GA k=4, n=8, gamma=20; 200 seeds from the training split).", ""]
    for name in args.examples.split(","):
        rows, note = table(name, args.seed)
        block = [f"## {name}", "", "| method | test cases | adversarial | avg. perturbation | "
                 "unique adversarial seeds | BC | SC | TC |", "|---|---|---|---|---|---|---|---|",
                 *rows, "", note, ""]
        print("\n".join(block), flush=True)
        lines += block
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text("\n".join(lines))
    print(f"written to {args.out}")


if __name__ == "__main__":
    main()
