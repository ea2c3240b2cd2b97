"""The adaptive schedule alone, under other settings, against the generation tables' bars.

A retuning round without rerunning every method: the other methods' medians do not change
when the adaptive schedule's constants do, so this runs only the default (Adaptive) over the
seeds, once as it is and once per ``--variant`` (constants of
``pytest_rnncov.generation.campaign`` set for that run), and checks its medians against the
best method of a table that ``bench/generation_unseen.py`` or ``bench/generation_table.py``
wrote (its "vs the best method" rows, as printed there: 3 decimals). Run it on the machine
that wrote the unseen table: its models are trained where it runs, and a model whose
weights differ from the table's (the weight digest each section gives) is refused, as
its bars belong to another model. An older table whose digests match serves as well
(``git show <commit>:docs/generation-unseen.md > table.md``).

    python bench/schedule_sweep.py --models basicmotions,mnist-gru [--seeds 0,...,9]
        [--table docs/generation-unseen.md] --variant "FAILING_SEED_WORTH=0.4"
        --variant "TURN_METRICS=BC FAILING_SEED_WORTH=0.4"
    python bench/schedule_sweep.py --models mnist,molecules --table docs/generation.md ...

A variant is NAME=VALUE pairs: NAME one of SETTINGS, VALUE a number, or for TURN_METRICS
and CREDIT_METRICS metric class names joined by commas (``none``: no metric).
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from pytest_rnncov.config.idle_threads import sleeping_idle_threads

sleeping_idle_threads()  # idle threads sleep, as the plugin sets them (before numpy loads)

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent))

import generation_table  # noqa: E402
import generation_unseen  # noqa: E402

import pytest_rnncov.generation.campaign as campaign  # noqa: E402
from pytest_rnncov.core import metrics  # noqa: E402

#: the constants a variant may set
SETTINGS = (
    "ADAPTIVE_EXPLORE",
    "ADAPTIVE_FLOOR",
    "ADAPTIVE_HALF_LIFE",
    "ADAPTIVE_REFRESH",
    "ADAPTIVE_SHARPNESS",
    "ADAPTIVE_TURN_STALL",
    "ADAPTIVE_WINDOW",
    "ADVERSARIAL_WORTH",
    "FAILING_SEED_WORTH",
    "BC_WORTH",
    "TURN_SHARE",
    "VARIANTS_PER_SEED",
    "VARIANTS_SHARPNESS",
    "TURN_METRICS",
    "CREDIT_METRICS",
)
#: the settings whose value is a tuple of metric classes
METRIC_SETTINGS = ("TURN_METRICS", "CREDIT_METRICS")
EXAMPLES = ("mnist", "sentiment", "molecules", "vowels")


def parse_variant(text: str) -> dict[str, object]:
    """``"NAME=VALUE NAME=VALUE"`` -> the constants' new values (SystemExit naming a bad pair)."""
    values: dict[str, object] = {}
    for pair in text.split():
        name, _, value = pair.partition("=")
        if name not in SETTINGS or not value:
            raise SystemExit(f"--variant {pair!r}: write NAME=VALUE, NAME one of {SETTINGS}")
        if name in METRIC_SETTINGS:
            names = [] if value == "none" else value.split(",")
            classes = [getattr(metrics, n, None) for n in names]
            if not all(isinstance(c, type) and issubclass(c, metrics.Metric) for c in classes):
                raise SystemExit(f"--variant {pair!r}: metric class names, e.g. BC,SC, or none")
            values[name] = tuple(classes)
            continue
        try:
            number = float(value)
        except ValueError:
            raise SystemExit(f"--variant {pair!r}: the value must be a number") from None
        if isinstance(getattr(campaign, name), int) and not number.is_integer():
            raise SystemExit(f"--variant {pair!r}: {name} is a whole number")
        values[name] = type(getattr(campaign, name))(number)
    return values


def read_table(table: Path) -> tuple[dict[str, dict[str, float]], dict[str, str]]:
    """From a table: model -> measure -> the best method's median (its "vs the best" rows),
    and model -> the weight digest (12 hex digits) a generation_unseen table gives."""
    best: dict[str, dict[str, float]] = {}
    digests: dict[str, str] = {}
    model = ""
    for line in table.read_text().splitlines():
        if heading := re.match(r"## (\S+)$", line):
            model = heading.group(1)
        elif row := re.match(r"\| (\w+) \| [\d.]+ \| ([\d.]+) \(\w+\) \|", line):
            best.setdefault(model, {})[row.group(1)] = float(row.group(2))
        elif found := re.search(r"Trained weights: sha256 ([0-9a-f]{12})", line):
            digests[model] = found.group(1)
    return best, digests


def check_weights(name: str, rnn, digests: dict[str, str], table: str) -> None:
    """SystemExit when ``name``'s weights trained here are not those of the table's model."""
    if name not in digests:
        return
    here = generation_unseen.weights_digest(rnn)
    if here != digests[name]:
        raise SystemExit(
            f"{name}: the weights trained here (sha256 {here}...) are not those of {table} "
            f"({digests[name]}...), so its bars belong to another model; run on the machine "
            "that wrote the table, or give --table one whose digests match (written here, "
            "or an older one from git)"
        )


def setup(name: str):
    """(rnn, seeds, mutator, oracle, profile, budget) for an example or an unseen model."""
    if name in EXAMPLES:
        rnn, seeds, mutator, oracle, budget, _ = generation_table.example(name)
        return rnn, seeds, mutator, oracle, generation_table.example_profile(name), budget
    return (*generation_unseen.model_for(name), 5000)


def medians(subject: tuple, seeds: list[int], settings: dict[str, object]) -> dict[str, float]:
    """Adaptive's medians over ``seeds`` on ``subject`` (``setup``'s) with the campaign
    module's constants set."""
    rnn, case_seeds, mutator, oracle, profile, budget = subject
    saved = {key: getattr(campaign, key) for key in settings}
    try:
        for key, value in settings.items():
            setattr(campaign, key, value)
        runs = []
        for seed in seeds:
            result = generation_table.table_campaign(
                rnn, case_seeds, mutator, oracle, profile, budget, seed, schedule="adaptive"
            ).run()
            runs.append(generation_table.measures(result))
    finally:
        for key, value in saved.items():
            setattr(campaign, key, value)
    return {m: float(np.median([run[m] for run in runs])) for m in generation_table.MEASURES}


def misses(found: dict[str, float], best: dict[str, float]) -> list[str]:
    """The bars (``generation_table.meets_bar``) that ``found`` misses."""
    return [
        f"{measure} {value:.3f} (best {best[measure]:.3f})"
        for measure, value in found.items()
        if not generation_table.meets_bar(measure, value, best[measure])
    ]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--models", required=True)
    parser.add_argument("--seeds", default="0,1,2,3,4,5,6,7,8,9")
    parser.add_argument(
        "--table", default=str(generation_table.ROOT / "docs" / "generation-unseen.md")
    )
    parser.add_argument("--variant", action="append", default=[])
    args = parser.parse_args()
    try:
        seeds = [int(s) for s in args.seeds.split(",")]
    except ValueError:
        raise SystemExit(f"--seeds {args.seeds!r}: whole numbers joined by commas") from None
    variants = {"default": {}, **{text: parse_variant(text) for text in args.variant}}
    if not Path(args.table).is_file():
        raise SystemExit(f"--table {args.table!r}: no such file; give a generated table")
    best, digests = read_table(Path(args.table))
    names = args.models.split(",")
    if unknown := [name for name in names if name not in best]:
        raise SystemExit(f"--models {unknown}: not in {args.table} (it has {sorted(best)})")
    met = dict.fromkeys(variants, 0)
    for name in names:
        subject = setup(name)
        check_weights(name, subject[0], digests, args.table)
        for label, settings in variants.items():
            found = medians(subject, seeds, settings)
            missed = misses(found, best[name])
            met[label] += len(found) - len(missed)
            shown = ", ".join(f"{k} {v:g}" for k, v in found.items())
            print(
                f"{name} [{label}]: {shown}; " + (f"misses {missed}" if missed else "all met"),
                flush=True,
            )
    for label, count in met.items():
        print(f"{label}: {count} of {len(generation_table.MEASURES) * len(names)} bars met")


if __name__ == "__main__":
    main()
