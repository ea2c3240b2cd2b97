"""Encoders from raw test cases (text, SMILES) to model inputs (token ids)."""

from __future__ import annotations

from typing import Any, Iterable, Sequence

import numpy as np

from ..errors import InvalidArgument, InvalidInput
from ..validation import check_bool, check_choice, check_int, shown

#: the most steps an encoder pads to (a million tokens per text)
MAX_LENGTH = 1_000_000


def _padded(rows: Sequence[Sequence[int]], length: int, pad: str) -> np.ndarray:
    """Token id rows (each at most ``length`` long) padded with 0 on the ``pad`` side."""
    out = np.zeros((len(rows), length), np.int32)
    for row, ids in enumerate(rows):
        if ids:
            if pad == "left":
                out[row, length - len(ids) :] = ids
            else:
                out[row, : len(ids)] = ids
    return out


def ordered(vocabulary: Any, what: str) -> None:
    """Refuse a vocabulary given as a set: its order, hence every token id, would change
    from one process to the next (string hashing is salted per process)."""
    if isinstance(vocabulary, (set, frozenset)):
        raise InvalidArgument(
            f"{what} is a {type(vocabulary).__name__}, whose order (and so every token id) "
            f"changes between processes; pass a list, e.g. sorted({what})"
        )


def string_list(values: Any, what: str) -> list[str]:
    """``values`` as a list of strings, or InvalidInput naming what was passed instead: one
    string (it would count as one item per character), something not iterable, an item
    that is not a string. A one-pass iterator is read once, here."""
    if isinstance(values, (str, bytes)):
        raise InvalidInput(
            f"{what} are one string; pass a list of strings, one per item (wrap one: [text])"
        )
    if not isinstance(values, Iterable):
        raise InvalidInput(
            f"{what}={shown(values)} ({type(values).__name__}) is not a list of strings; "
            "pass e.g. ['a text']"
        )
    items = list(values)
    wrong = [v for v in items if not isinstance(v, str)]
    if wrong:
        raise InvalidInput(
            f"{what} must be strings; one is {shown(wrong[0])} ({type(wrong[0]).__name__})"
        )
    return items


class CharEncoder:
    """Characters to token ids (0 = padding), padded or cut to ``length`` steps.

    ``pad="left"`` puts the padding before the text (the real characters then sit in the
    last steps, which suits windows counted from the end). A character outside the
    vocabulary raises :class:`InvalidInput` naming it; so does a string longer than
    ``length`` unless ``truncate=True``.
    """

    def __init__(
        self, vocabulary: Iterable[str], length: int, pad: str = "left", truncate: bool = False
    ) -> None:
        ordered(vocabulary, "vocabulary")
        try:  # a string is its characters
            chars = list(dict.fromkeys(vocabulary))
        except TypeError:
            chars = []
        if not chars or any(not isinstance(c, str) or len(c) != 1 for c in chars):
            raise InvalidArgument("vocabulary must be a non-empty iterable of single characters")
        self.vocabulary = chars
        self.index = {c: i + 1 for i, c in enumerate(chars)}
        self.length = check_int("length", length, minimum=1, maximum=MAX_LENGTH, example="80")
        self.pad = check_choice("pad", pad, ("left", "right"))
        self.truncate = check_bool("truncate", truncate)

    @classmethod
    def fit(
        cls, texts: Iterable[str], length: int | None = None, pad: str = "left"
    ) -> "CharEncoder":
        """Vocabulary (sorted) and, by default, length from a corpus."""
        if isinstance(texts, (str, bytes)) or not isinstance(texts, Iterable):
            raise InvalidArgument("CharEncoder.fit needs a list of texts (wrap one text: [text])")
        texts = list(texts)
        if not texts or not all(isinstance(t, str) for t in texts):
            raise InvalidArgument("CharEncoder.fit needs a non-empty list of strings")
        vocabulary = sorted({c for t in texts for c in t})
        return cls(vocabulary, length if length is not None else max(map(len, texts)), pad=pad)

    @property
    def n_tokens(self) -> int:
        """Size of the id range including padding (for ``Embedding(input_dim=...)``)."""
        return len(self.vocabulary) + 1

    def can_encode(self, text: str) -> bool:
        """Whether ``text`` encodes: every character known, and within ``length`` unless
        ``truncate``."""
        if not isinstance(text, str):
            raise InvalidInput(f"text={shown(text)} ({type(text).__name__}) is not a string")
        return (self.truncate or len(text) <= self.length) and all(c in self.index for c in text)

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        rows = []
        for text in string_list(texts, "texts"):
            unknown = sorted({c for c in text if c not in self.index})
            if unknown:
                raise InvalidInput(
                    f"{text!r} has characters the encoder does not know: "
                    f"{', '.join(map(repr, unknown))}; refit the encoder on data that holds "
                    "them or drop this input"
                )
            if len(text) > self.length:
                if not self.truncate:
                    raise InvalidInput(
                        f"{text!r} has {len(text)} characters, more than the encoder's "
                        f"{self.length}; use a longer encoder or truncate=True"
                    )
                text = text[: self.length]
            rows.append([self.index[c] for c in text])
        return _padded(rows, self.length, self.pad)


class WordEncoder:
    """Words (lower-cased, split on spaces) to ids: 0 = padding, 1 = unknown word.

    Keeps the ``max_words`` most frequent words of the corpus it is fitted on. A text of
    more than ``length`` words keeps its last ``length`` words, whichever side is padded
    (``CharEncoder`` refuses such a text unless ``truncate=True``). A word outside the
    vocabulary, such as a WordNet synonym ``EDAMutator`` put in, reaches the model as 1.
    """

    def __init__(self, words: Sequence[str], length: int, pad: str = "left") -> None:
        self.pad = check_choice("pad", pad, ("left", "right"))
        if isinstance(words, (str, bytes)) or not isinstance(words, Iterable):
            raise InvalidArgument(f"words={words!r}: pass the vocabulary as a list of words")
        ordered(words, "words")
        words = list(words)
        if not words:
            raise InvalidArgument(
                "words is empty: every word would encode as unknown (1); pass the "
                "vocabulary, or fit the encoder on texts that have words"
            )
        bad = [w for w in words if not isinstance(w, str) or not w or w != "".join(w.split())]
        if bad:
            raise InvalidArgument(
                f"vocabulary entry {bad[0]!r} is not one word (a non-empty "
                "string without spaces); the encoder splits texts on spaces"
            )
        self.words = list(dict.fromkeys(w.lower() for w in words))  # texts are lower-cased
        self.index = {w: i + 2 for i, w in enumerate(self.words)}
        self.length = check_int("length", length, minimum=1, maximum=MAX_LENGTH, example="40")

    @classmethod
    def fit(
        cls, texts: Iterable[str], max_words: int = 5000, length: int = 40, pad: str = "left"
    ) -> "WordEncoder":
        from collections import Counter

        check_int("max_words", max_words, minimum=1, example="5000")
        if isinstance(texts, (str, bytes)) or not isinstance(texts, Iterable):
            raise InvalidArgument("WordEncoder.fit needs a list of texts (wrap one text: [text])")
        texts = list(texts)
        if not all(isinstance(t, str) for t in texts):
            raise InvalidArgument("WordEncoder.fit needs texts that are all strings")
        counts = Counter(w for t in texts for w in t.lower().split())
        if not counts:
            raise InvalidArgument(
                f"WordEncoder.fit found no words in {len(texts)} texts; pass a corpus with words"
            )
        return cls([w for w, _ in counts.most_common(max_words)], length, pad=pad)

    @property
    def n_tokens(self) -> int:
        return len(self.words) + 2

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        rows = [
            [self.index.get(w, 1) for w in text.lower().split()][-self.length :]
            for text in string_list(texts, "texts")
        ]
        return _padded(rows, self.length, self.pad)
