"""Paper-style "Experiments for Test Case Generation Methods" tables for the examples.

For each example, with the same budget, seeds and random seed: Seeds (200 seeds), Random
(random mutation only), Targeted (the paper: random mutation, then the coverage GA once
coverage stalls), and the GA given a turn after every random batch from the start, aimed at
coverage (Mixed), at failures (Failure) or at both in turn (Both). Columns: test cases,
adversarial samples, average perturbation as found and after shrinking toward the seed,
unique failing seeds, BC, SC, TC, and the campaign's test cases per second beside the
model's own predictions per second. Also a figure of coverage growth per method.

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
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from pytest_rnncov import (  # noqa: E402
    Campaign,
    Coverage,
    EDAMutator,
    GAConfig,
    GaussianMutator,
    Oracle,
    Profile,
    RNNModel,
    SmilesMutator,
    load_model,
)

#: method -> Campaign options
METHODS = {
    "Random": {"schedule": "stall", "patience": 10**9},
    "Targeted": {"schedule": "stall", "patience": 1, "objective": "coverage"},
    "Mixed": {"schedule": "mixed", "objective": "coverage"},
    "Failure": {"schedule": "mixed", "objective": "failure"},
    "Both": {"schedule": "mixed", "objective": "both"},
}


def example(name: str):
    """(rnn, seeds (200), mutator, oracle, budget, oracle text) for one example."""
    train = importlib.import_module(f"examples.{name}.train")
    data = importlib.import_module(f"examples.{name}.data")
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
        return (
            rnn,
            seeds,
            EDAMutator(encoder=encoder, alpha=0.1),
            Oracle(radius=0.15),
            10_000,
            "share of words changed <= 0.15",
        )
    return (
        rnn,
        seeds,
        SmilesMutator(encoder=encoder),
        Oracle(radius=None, task="regression", tolerance=0.5),
        2_000,
        "no radius, |delta pIC50| > 0.5",
    )


def predictions_per_second(rnn, x) -> float:
    batch = np.concatenate([x] * max(1, 1000 // len(x)))
    rnn.model.predict(batch, verbose=0)
    times = []
    for _ in range(3):
        time.sleep(0.3)
        start = time.perf_counter()
        rnn.model.predict(batch, verbose=0)
        times.append(time.perf_counter() - start)
    return len(batch) / float(np.median(times))


def table(name: str, seed: int):
    folder = ROOT / "examples" / name
    rnn, seeds, mutator, oracle, budget, oracle_text = example(name)
    profile = Profile.load(folder / "artifacts" / "profile.json")
    seed_coverage = Coverage(rnn, profile)
    seed_coverage.update(mutator.encode(seeds))
    rows = [
        f"| Seeds | {len(seeds)} | - | - | - | - | "
        + " | ".join(f"{seed_coverage[k].rate:.2f}" for k in ("BC", "SC", "TC"))
        + " | - |"
    ]
    growth, unchanged = {}, []
    predictions = predictions_per_second(rnn, mutator.encode(seeds))
    for method, options in METHODS.items():
        campaign = Campaign(
            rnn,
            seeds,
            mutator,
            oracle,
            profile=profile,
            budget=budget,
            batch_size=200,
            ga=GAConfig(k=4, n=8, gamma=20),
            seed=seed,
            **options,
        )
        start = time.perf_counter()
        result = campaign.run()
        seconds = time.perf_counter() - start
        found = (
            "-"
            if result.average_found_perturbation is None
            else f"{result.average_found_perturbation:.3f}"
        )
        shrunk = (
            "-" if result.average_perturbation is None else f"{result.average_perturbation:.3f}"
        )
        rows.append(
            f"| {method} | {result.test_cases} | {result.adversarial} | {found} | {shrunk} | "
            f"{result.unique} | "
            + " | ".join(f"{result.rates[k]:.2f}" for k in ("BC", "SC", "TC"))
            + f" | {result.test_cases / seconds / predictions:.2f} |"
        )
        growth[method] = result.growth
        unchanged.append(
            f"{method} {result.discarded / (result.discarded + result.test_cases):.1%}"
        )
        print(rows[-1], flush=True)
    note = (
        f"Oracle: {oracle_text}; distance: {mutator.distance_name}. Speed: test cases per "
        f"second over the model's own `predict` rate ({predictions:.0f} predictions/s, "
        "batch of 1,000, after a pause). Mutants equal to their parent, dropped before the "
        f"model call: {', '.join(unchanged)}."
    )
    return rows, note, growth


def figure(growths: dict[str, dict[str, list[dict]]], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    metrics = ("BC", "SC", "TC")
    fig, axes = plt.subplots(len(growths), 3, figsize=(13, 3.2 * len(growths)), squeeze=False)
    for row, (name, methods) in enumerate(growths.items()):
        for column, metric in enumerate(metrics):
            ax = axes[row][column]
            for method, growth in methods.items():
                ax.plot(
                    [g["test_cases"] for g in growth], [g[metric] for g in growth], label=method
                )
            ax.set_title(f"{name}: {metric}", fontsize=10)
            ax.set_xlabel("test cases")
            ax.set_ylim(0, 1.02)
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=80)
    plt.close(fig)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", default=str(ROOT / "docs" / "generation.md"))
    parser.add_argument("--examples", default="mnist,sentiment,molecules")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    out = Path(args.out)
    lines = [
        "# Test case generation: Seeds, Random, Targeted and the new objectives",
        "",
        f"Produced by `python bench/generation_table.py` (seed {args.seed}; GA k=4, n=8, "
        "gamma=20; 200 seeds from the training split; batches of 200). Random: random "
        "mutation only. Targeted: the paper's Alg. 1 (the coverage GA once coverage "
        "stalls). Mixed, Failure, Both: the GA gets a turn after every random batch from "
        "the start, aimed at coverage, failures, or both in turn. Found / shrunk: the "
        "average perturbation of the adversarial samples as found and after shrinking "
        "toward their seeds (every shrunk sample still fails the oracle).",
        "",
        f"![coverage growth]({out.stem}-growth.png)",
        "",
    ]
    growths = {}
    for name in args.examples.split(","):
        rows, note, growth = table(name, args.seed)
        growths[name] = growth
        block = [
            f"## {name}",
            "",
            "| method | test cases | adversarial | perturbation found | "
            "perturbation shrunk | unique failing seeds | BC | SC | TC | speed vs predict |",
            "|---|---|---|---|---|---|---|---|---|---|",
            *rows,
            "",
            note,
            "",
        ]
        print("\n".join(block), flush=True)
        lines += block
    out.parent.mkdir(parents=True, exist_ok=True)
    figure(growths, out.parent / f"{out.stem}-growth.png")
    out.write_text("\n".join(lines))
    print(f"written to {out}")


if __name__ == "__main__":
    main()
