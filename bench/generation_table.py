"""Paper-style "Experiments for Test Case Generation Methods" tables for the examples.

For each example, with the same budget, seeds and random seed: Seeds (200 seeds), Random
(random mutation only), Targeted (the paper: random mutation, then the coverage GA once
coverage stalls), and the GA given a turn after every random batch from the start, aimed at
coverage (Mixed), at failures (Failure) or at both in turn (Both), and Adaptive (the
default: one pull at a time shared among random mutation, the failure sweep, variants
of the adversarial samples and a coverage arm per metric, a sweep or for BC and SC a GA turn, by
their recent yield).
Columns: test cases,
adversarial samples, average perturbation as found and after shrinking toward the seed,
unique failing seeds, BC, SC, TC, and the campaign's test cases per second beside the
model's own predictions per second. Also a figure of coverage growth per method. With
``--seeds 0,1,2,3,4`` the methods also run under those seeds: medians per method, the
Adaptive schedule against each method (Mann-Whitney U p-value, Vargha-Delaney A12) and against the
best method per measure (coverage within 0.02, failures at least 0.8x).

    NLTK_DATA=../shared/data/nltk_data python bench/generation_table.py [--out docs/generation.md]
        [--examples mnist,sentiment,molecules,vowels] [--seed 0]
        [--seeds 0,1,2,3,4]
"""

from __future__ import annotations

import argparse
import importlib
import io
import math
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from pytest_rnncov.config.idle_threads import sleeping_idle_threads  # noqa: E402

# idle threads sleep, as the plugin sets them under pytest (before numpy and PyTorch load)
sleeping_idle_threads()

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
    TimeSeriesMutator,
    load_model,
)
from pytest_rnncov.files import write_atomic  # noqa: E402

#: method -> Campaign options
METHODS = {
    "Random": {"schedule": "stall", "patience": 10**9},
    "Targeted": {"schedule": "stall", "patience": 1, "objective": "coverage"},
    "Mixed": {"schedule": "mixed", "objective": "coverage"},
    "Failure": {"schedule": "mixed", "objective": "failure"},
    "Both": {"schedule": "mixed", "objective": "both"},
    "Adaptive": {"schedule": "adaptive"},
}
#: the measures compared over seeds, and the method the others are compared with
MEASURES = ("adversarial", "unique", "BC", "SC", "TC")
CANDIDATE = "Adaptive"


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
    if name == "vowels":
        (x_train, _), _ = data.split()
        rnn = RNNModel(train.load(), train.LAYER)
        seeds = x_train[rng.choice(len(x_train), 200, replace=False)]
        oracle = Oracle.calibrate(x_train, rnn.predict(x_train))
        return (
            rnn,
            seeds,
            TimeSeriesMutator.from_seeds(seeds),
            oracle,
            10_000,
            f"L2 radius {oracle.radius:.3f} (calibrated on the training utterances)",
        )
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


def table_campaign(rnn, seeds, mutator, oracle, profile, budget, seed, **options) -> Campaign:
    """A campaign with the table's settings: batches of 200, GA k=4 n=8 gamma=20."""
    return Campaign(
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


def predictions_per_second(rnn, x) -> float:
    """The model's own prediction rate: Keras ``predict``, a PyTorch module's forward."""
    batch = np.concatenate([x] * max(1, 1000 // len(x)))
    if hasattr(rnn.model, "predict"):

        def predict() -> None:
            rnn.model.predict(batch, verbose=0)
    else:
        import torch

        tensor = torch.as_tensor(np.asarray(batch, np.float32))

        def predict() -> None:
            with torch.no_grad():
                rnn.model(tensor)

    predict()
    times = []
    for _ in range(3):
        time.sleep(0.3)
        start = time.perf_counter()
        predict()
        times.append(time.perf_counter() - start)
    return len(batch) / float(np.median(times))


def example_profile(name: str) -> Profile:
    """The profile stored with an example's model."""
    return Profile.load(ROOT / "examples" / name / "artifacts" / "profile.json")


def measures(result) -> dict[str, float]:
    """A campaign result's MEASURES: its adversarial samples, failing seeds, BC, SC, TC."""
    return {
        "adversarial": result.adversarial,
        "unique": result.unique,
        **{k: result.rates[k] for k in ("BC", "SC", "TC")},
    }


def meets_bar(measure: str, ours: float, best: float) -> bool:
    """The issue's bar: failures at least 0.8x the best method's, coverage within 0.02."""
    if measure in ("adversarial", "unique"):
        return ours >= 0.8 * best
    return ours >= best - 0.02 - 1e-9


def table(name: str, seed: int, timed: bool = True):
    """One example's rows under one seed; with ``timed`` each method's speed against the
    model's own rate measured just before and just after its campaign (the machine's
    drift between methods then moves both alike; one measurement between two campaigns
    serves both), after an untimed warm-up campaign."""
    rnn, seeds, mutator, oracle, budget, oracle_text = example(name)
    profile = example_profile(name)
    seed_coverage = Coverage(rnn, profile)
    seed_coverage.update(mutator.encode(seeds))
    rows = [
        f"| Seeds | {len(seeds)} | - | - | - | - | "
        + " | ".join(f"{seed_coverage[k].rate:.2f}" for k in ("BC", "SC", "TC"))
        + " | - |"
    ]
    growth, unchanged, numbers, references = {}, [], {}, []
    inputs = mutator.encode(seeds)

    def rate() -> float:
        return predictions_per_second(rnn, inputs) if timed else math.nan

    if timed:  # untimed: what the first campaign of a process pays once (WordNet, caches)
        table_campaign(
            rnn, seeds, mutator, oracle, profile, budget, seed, **METHODS["Random"]
        ).run()
    before = rate()
    for method, options in METHODS.items():
        campaign = table_campaign(rnn, seeds, mutator, oracle, profile, budget, seed, **options)
        start = time.perf_counter()
        result = campaign.run()
        seconds = time.perf_counter() - start
        after = rate()
        references.append((before + after) / 2)
        before = after  # the next campaign's rate before it
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
            + f" | {result.test_cases / seconds / references[-1]:.2f} |"
        )
        growth[method] = result.growth
        numbers[method] = measures(result)
        unchanged.append(
            f"{method} {result.discarded / (result.discarded + result.test_cases):.1%}"
        )
        print(rows[-1], flush=True)
    note = (
        f"Oracle: {oracle_text}; distance: {mutator.distance_name}. Speed: test cases per "
        "second over the model's own `predict` rate (batch of 1,000, after a pause), the "
        "mean of its rate just before and just after each method's campaign "
        f"({min(references):.0f}-{max(references):.0f} predictions/s over the methods), "
        "after an untimed warm-up campaign. "
        f"Mutants equal to their parent, dropped before the model call: {', '.join(unchanged)}."
    )
    return rows, note, growth, numbers


def a12(x: list[float], y: list[float]) -> float:
    """Vargha-Delaney A12: the chance that a run of x beats a run of y (ties count half)."""
    wins = sum((a > b) + 0.5 * (a == b) for a in x for b in y)
    return wins / (len(x) * len(y))


def count_text(median: float) -> str:
    """A median of counts as a whole number, or with its half (an even number of seeds)."""
    return f"{median:.0f}" if median == int(median) else f"{median:.1f}"


def comparison(name: str, runs: dict[str, list[dict[str, float]]]) -> list[str]:
    """Medians over seeds per method and measure, and the candidate against each method:
    two-sided Mann-Whitney U p-value and Vargha-Delaney A12 (> 0.5: the candidate wins)."""
    from scipy.stats import mannwhitneyu

    n = len(next(iter(runs.values())))
    lines = [
        f"### {name}: medians over {n} seeds, and {CANDIDATE} against each method",
        "",
        "| method | " + " | ".join(MEASURES) + " |",
        "|---|" + "---|" * len(MEASURES),
    ]
    for method, values in runs.items():
        medians = [float(np.median([v[m] for v in values])) for m in MEASURES]
        lines.append(
            f"| {method} | "
            + " | ".join(
                count_text(x) if m in ("adversarial", "unique") else f"{x:.2f}"
                for m, x in zip(MEASURES, medians)
            )
            + " |"
        )
    lines += [
        "",
        f"| {CANDIDATE} vs | " + " | ".join(MEASURES) + " |",
        "|---|" + "---|" * len(MEASURES),
    ]
    ours = runs[CANDIDATE]
    for method, values in runs.items():
        if method == CANDIDATE:
            continue
        cells = []
        for m in MEASURES:
            x, y = [v[m] for v in ours], [v[m] for v in values]
            p = 1.0 if x == y else float(mannwhitneyu(x, y, alternative="two-sided").pvalue)
            cells.append(f"p={p:.2f}, A12={a12(x, y):.2f}")
        lines.append(f"| {method} | " + " | ".join(cells) + " |")
    lines += [
        "",
        f"| {CANDIDATE} vs the best method | median | best (method) | met |",
        "|---|---|---|---|",
    ]
    for m in MEASURES:
        medians = {
            method: float(np.median([v[m] for v in values])) for method, values in runs.items()
        }
        ours = medians.pop(CANDIDATE)
        best = max(medians, key=medians.__getitem__)
        counts = m in ("adversarial", "unique")
        met = meets_bar(m, ours, medians[best])
        bar = "0.8x" if counts else "-0.02"
        text = count_text if counts else "{:.3f}".format
        lines.append(
            f"| {m} | {text(ours)} | {text(medians[best])} ({best}) | "
            f"{'yes' if met else 'no'} (bar: best {bar}) |"
        )
    return lines + [""]


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
    image = io.BytesIO()
    fig.savefig(image, format="png", dpi=80)
    plt.close(fig)
    write_atomic(path, image.getvalue(), "the growth figure")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--out", default=str(ROOT / "docs" / "generation.md"))
    parser.add_argument("--examples", default="mnist,sentiment,molecules,vowels")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--seeds", default=None, help="e.g. 0,1,2,3,4: also compare the methods over these"
    )
    args = parser.parse_args()
    seeds = [args.seed] if args.seeds is None else [int(x) for x in args.seeds.split(",")]
    out = Path(args.out)
    command = f" --seeds {args.seeds}" if args.seeds else ""
    lines = [
        "# Test case generation: the schedules and objectives compared",
        "",
        f"Produced by `python bench/generation_table.py{command}` "
        f"(tables: seed {seeds[0]}; GA k=4, n=8, "
        "gamma=20; 200 seeds from the training split; batches of 200). Random: random "
        "mutation only. Targeted: the paper's Alg. 1 (the coverage GA once coverage "
        "stalls). Mixed, Failure, Both: the GA gets a turn after every random batch from "
        "the start, aimed at coverage, failures, or both in turn. Adaptive (the default, "
        '`schedule="adaptive"`): one pull at a time shared among random mutation of the '
        "seeds and each condition's best case, the failure sweep, variants of the "
        "adversarial samples found and a coverage arm per metric (a sweep; for BC and SC "
        "a GA turn at the closest condition) by their recent yield (see "
        "docs/test-generation.md). Every GA turn is "
        "bounded (a quarter of the budget; it ends after 3 generations that get no "
        "closer, 5 in the adaptive schedule). Adversarial: failing cases, a case "
        "repeated for the same seed counted once. Found / shrunk: the "
        "average perturbation of the adversarial samples as found and after shrinking "
        "toward their seeds (every shrunk sample still fails the oracle; shrinking takes "
        "at most as many model inputs as the search, so with many samples some are only "
        "bisected or left as found).",
        "",
        f"![coverage growth]({out.stem}-growth.png)",
        "",
    ]
    growths = {}
    for name in args.examples.split(","):
        rows, note, growth, numbers = table(name, seeds[0])
        growths[name] = growth
        runs = {method: [values] for method, values in numbers.items()}
        for seed in seeds[1:]:
            for method, values in table(name, seed, timed=False)[3].items():
                runs[method].append(values)
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
            *(comparison(name, runs) if len(seeds) > 1 else []),
        ]
        print("\n".join(block), flush=True)
        lines += block
    out.parent.mkdir(parents=True, exist_ok=True)
    figure(growths, out.parent / f"{out.stem}-growth.png")
    write_atomic(out, "\n".join(lines), "the generation table")
    print(f"written to {out}")


if __name__ == "__main__":
    main()
