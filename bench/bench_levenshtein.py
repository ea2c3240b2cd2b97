"""The edit distance of text and SMILES campaigns: the hand-written bit-parallel routine
against RapidFuzz, side by side on the examples' real cases.

Pairs (seed, mutant) come from the examples' own data and mutators: 2,000 sentence
polarity reviews with an EDA edit (word tokens) and 1,000 ChEMBL molecules re-spelled by
RDKit (characters). Each method computes the same distances (checked equal), timed
alternately, median of ``--repeats``; the ratio is printed.

    NLTK_DATA=../shared/data/nltk_data python bench/bench_levenshtein.py [--repeats 7]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path
from typing import Callable, Sequence

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402
from rapidfuzz.distance import Levenshtein  # noqa: E402
from rapidfuzz.process import cpdist  # noqa: E402


def bit_parallel(a: Sequence[str], b: Sequence[str]) -> int:
    """The routine pytest-rnncov shipped before RapidFuzz (Hyyrö's bit-parallel
    Levenshtein after trimming common ends), kept here as the comparison."""
    shorter = min(len(a), len(b))
    start = 0
    while start < shorter and a[start] == b[start]:
        start += 1
    end = 0
    while end < shorter - start and a[len(a) - 1 - end] == b[len(b) - 1 - end]:
        end += 1
    a, b = a[start : len(a) - end], b[start : len(b) - end]
    if not a or not b:
        return max(len(a), len(b))
    positions: dict[str, int] = {}
    for i, token in enumerate(a):
        positions[token] = positions.get(token, 0) | (1 << i)
    full, top = (1 << len(a)) - 1, 1 << (len(a) - 1)
    positive, negative, distance = full, 0, len(a)
    for token in b:
        match = positions.get(token, 0)
        vertical = match | negative
        horizontal = ((((match & positive) + positive) & full) ^ positive) | match
        up = negative | (~(horizontal | positive) & full)
        down = positive & horizontal
        distance += bool(up & top) - bool(down & top)
        up = ((up << 1) | 1) & full
        down = (down << 1) & full
        positive = down | (~(vertical | up) & full)
        negative = up & vertical
    return distance


def pairs() -> dict[str, tuple[list[list[str]], list[list[str]]]]:
    from examples.molecules.data import chembl
    from examples.sentiment.data import sentences
    from pytest_rnncov import EDAMutator, SmilesMutator

    rng = np.random.default_rng(0)
    texts = sentences()[0][:2000]
    edited = EDAMutator(alpha=0.1).mutate(texts, rng)
    smiles = chembl()[0][:1000]
    spelled = SmilesMutator().mutate(smiles, rng)
    return {
        "words (sentiment, EDA)": ([t.split() for t in texts], [t.split() for t in edited]),
        "characters (molecules, re-spelled)": (
            [list(s) for s in smiles],
            [list(s) for s in spelled],
        ),
    }


def timed(run: Callable[[], np.ndarray]) -> tuple[float, np.ndarray]:
    start = time.perf_counter()
    out = run()
    return time.perf_counter() - start, out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    for name, (seeds, cases) in pairs().items():
        methods = {
            "bit-parallel (Python)": lambda: np.array(
                [bit_parallel(s, c) for s, c in zip(seeds, cases)]
            ),
            "RapidFuzz cpdist": lambda: cpdist(seeds, cases, scorer=Levenshtein.distance),
        }
        times: dict[str, list[float]] = {m: [] for m in methods}
        results = {}
        for _ in range(args.repeats):
            for method, run in methods.items():
                spent, results[method] = timed(run)
                times[method].append(spent)
        first, second = results.values()
        assert np.array_equal(np.asarray(first), np.asarray(second)), "the distances differ"
        medians = {m: statistics.median(t) for m, t in times.items()}
        print(f"{name}: {len(seeds)} pairs, equal distances")
        for method, median in medians.items():
            print(f"  {method:24s} {median * 1e3:8.2f} ms")
        slow, fast = medians.values()
        print(f"  RapidFuzz is {slow / fast:.1f}x faster")


if __name__ == "__main__":
    main()
