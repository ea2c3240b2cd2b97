"""EDA's random insertion on long texts: the mutator's kept list of words with synonyms
against rebuilding that list for every insertion (the routine before 2026-11-30), side by
side on real sentence-polarity text.

Each text is sentence-polarity reviews joined to N words; both routines insert
``alpha * N`` synonyms with the same generator seed, and their outputs are checked equal.
Prints the median time of each (``--repeats``) and the ratio per length: the rebuild grows
with the square of the length, the kept list about linearly.

    NLTK_DATA=../shared/data/nltk_data python bench/bench_eda_insert.py [--words 500,2000,8000]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from pytest_rnncov.generation.text import EDAMutator  # noqa: E402


def rebuilt_insert(mutator: EDAMutator, text: str, rng: np.random.Generator) -> str:
    """The insertion as it was: the list of replaceable words rebuilt for each insertion."""
    words = text.split()
    stop = mutator._stopwords or frozenset()
    for _ in range(max(1, int(mutator.alpha * len(words)))):
        replaceable = [w for w in words if w.lower() not in stop and mutator.synonyms(w.lower())]
        if not replaceable:
            break
        options = mutator.synonyms(replaceable[rng.integers(len(replaceable))].lower())
        words.insert(int(rng.integers(len(words) + 1)), options[rng.integers(len(options))])
    return " ".join(words)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--words", default="500,2000,8000")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    from nltk.corpus import sentence_polarity

    corpus = [w for sentence in sentence_polarity.sents()[:3000] for w in sentence]
    mutator = EDAMutator()
    mutator._one(" ".join(corpus[:50]), "insert", np.random.default_rng(0))  # loads WordNet
    print(f"EDA insertion, alpha {mutator.alpha}, medians of {args.repeats} (s):")
    for n in (int(w) for w in args.words.split(",")):
        text = " ".join((corpus * (n // len(corpus) + 1))[:n])
        times: dict[str, list[float]] = {"kept": [], "rebuilt": []}
        outputs = {}
        for _ in range(args.repeats):
            for name, run in (
                ("kept", lambda rng: mutator._one(text, "insert", rng)),
                ("rebuilt", lambda rng: rebuilt_insert(mutator, text, rng)),
            ):
                start = time.perf_counter()
                outputs[name] = run(np.random.default_rng(n))
                times[name].append(time.perf_counter() - start)
        assert outputs["kept"] == outputs["rebuilt"], "the two routines disagree"
        kept, rebuilt = (statistics.median(times[k]) for k in ("kept", "rebuilt"))
        print(
            f"  {n:6,} words  kept {kept:8.3f}  rebuilt {rebuilt:8.3f}  "
            f"ratio {rebuilt / kept:6.1f}x"
        )


if __name__ == "__main__":
    main()
