"""Pang & Lee sentence polarity through nltk.corpus (offline copy: set NLTK_DATA)."""

from __future__ import annotations

import functools

import numpy as np


def sentences() -> tuple[list[str], np.ndarray]:
    """10,662 lower-cased movie-review sentences and labels (1 = positive)."""
    try:
        from nltk.corpus import sentence_polarity
    except ImportError:
        raise RuntimeError(
            "the sentiment example needs nltk: pip install 'pytest-rnncov[examples]'"
        ) from None
    try:
        pos = sentence_polarity.sents(categories="pos")
        neg = sentence_polarity.sents(categories="neg")
    except LookupError:
        raise RuntimeError(
            "NLTK's sentence_polarity corpus is missing: run `python -m nltk.downloader "
            "sentence_polarity wordnet stopwords` or set NLTK_DATA to a copy"
        ) from None
    texts = [" ".join(s).lower() for s in list(pos) + list(neg)]
    labels = np.array([1] * len(pos) + [0] * len(neg))
    return texts, labels


@functools.lru_cache(maxsize=4)
def split(seed: int = 0, held_out: int = 2000):
    texts, labels = sentences()
    order = np.random.default_rng(seed).permutation(len(texts))
    test, train = order[:held_out], order[held_out:]
    return ([texts[i] for i in train], labels[train]), ([texts[i] for i in test], labels[test])
