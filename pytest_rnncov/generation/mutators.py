"""Random mutation m_rnd (SPEC section 6): Gaussian noise, EDA text edits, SMILES
re-enumeration, and the protocol for your own mutator.

A mutator works on a batch of test cases and takes a ``numpy.random.Generator``, so every
result is reproducible from one seed. Cases are a numpy array (continuous inputs) or a
list of strings (text, SMILES); ``encode`` turns cases into model inputs and ``distance``
measures each case against its seed for the oracle.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import InvalidArgument, InvalidInput, MissingResource
from ..validation import check_float, check_int, check_range

Cases = Any  # np.ndarray of inputs, or list[str]


class Mutator(ABC):
    """Base class and protocol of a random mutation.

    Implement ``mutate(cases, rng)`` returning as many cases as it gets, of the same kind.
    Override ``encode`` when cases are not model inputs already, and ``distance`` when L2 is
    not the right measure. ``distance_name`` says in reports which distance was used.
    """

    distance_name = "L2"
    #: False for mutators whose cases are lists of strings.
    array_cases = True

    @abstractmethod
    def mutate(self, cases: Cases, rng: np.random.Generator) -> Cases:
        """One random mutation of every case in ``cases``."""

    def encode(self, cases: Cases) -> np.ndarray:
        """Model inputs for ``cases``."""
        return np.asarray(cases)

    def distance(self, seeds: Cases, cases: Cases) -> np.ndarray:
        """Distance of each case to its seed (row-aligned): L2 of the flattened difference."""
        seeds, cases = _numeric_pair(seeds, cases)
        return _row_norms(cases - seeds)

    def unchanged(self, before: Cases, after: Cases) -> np.ndarray:
        """Which mutants equal the case they came from (they are not new test cases)."""
        a, b = np.asarray(before), np.asarray(after)
        return (a.reshape(len(a), -1) == b.reshape(len(b), -1)).all(axis=1)

    def check_seeds(self, seeds: Any) -> Cases:
        """Validated seeds in this mutator's case form."""
        array = np.asarray(seeds)
        if array.ndim < 2 or len(array) == 0:
            raise InvalidInput(
                f"seeds have shape {array.shape}; pass a non-empty batch (seeds[None] for one)"
            )
        refuse_bool(array, "seeds", "pass seeds.astype(np.float32)")
        return array

    # helpers for both case kinds
    def take(self, cases: Cases, index: Any) -> Cases:
        if self.array_cases:
            return np.asarray(cases)[index]
        return [cases[int(i)] for i in index]

    def describe(self) -> str:
        """The mutation in a few words (shown in reports)."""
        return type(self).__name__

    def within(self, seeds: Cases, cases: Cases, radius: float) -> Cases:
        """``cases`` moved back within ``radius`` of their seeds where the mutator knows how
        (the failure search keeps its offspring inside the oracle's radius); by default
        unchanged."""
        return cases

    def concat(self, parts: Sequence[Cases]) -> Cases:
        if self.array_cases:
            return np.concatenate(parts)
        return [c for part in parts for c in part]


class GaussianMutator(Mutator):
    """Gaussian noise with a variance drawn per batch from ``variance``, then clipped.

    The paper's MNIST setting: ``variance=(0.005, 0.02)`` on inputs in [0, 1].
    """

    def __init__(self, variance: float | tuple[float, float] = (0.005, 0.02),
                 clip: tuple[float, float] | None = (0.0, 1.0)) -> None:
        self.variance = fixed_or_range("variance", variance, example="(0.005, 0.02)")
        self.clip = None if clip is None else check_range("clip", clip, example="(0.0, 1.0)")

    @classmethod
    def from_seeds(cls, seeds: Any, spread: tuple[float, float] = (0.25, 0.5),
                   clip: Any = "auto") -> "GaussianMutator":
        """Noise scaled to the data: the standard deviation is drawn from ``spread`` times
        the seeds' mean per-feature standard deviation (the paper's MNIST setting is about
        0.25-0.5 of the pixels' spread). ``clip="auto"`` clips to the seeds' own range."""
        low, high = check_range("spread", spread, minimum=0.0, example="(0.25, 0.5)", strict=False)
        try:
            array = np.asarray(seeds, np.float64)
        except (TypeError, ValueError):
            raise InvalidInput("from_seeds needs numeric seeds of one shape (for text use "
                               "EDAMutator, for SMILES SmilesMutator)") from None
        if array.ndim < 2 or len(array) < 2 or not np.isfinite(array).all():
            raise InvalidInput("from_seeds needs at least two finite seeds")
        scale = float(array.reshape(len(array), -1).std(axis=0).mean())
        if not scale > 0:
            raise InvalidInput("the seeds do not vary, so they give no scale for the noise")
        bounds = (float(array.min()), float(array.max())) if clip == "auto" else clip
        return cls(variance=((low * scale) ** 2, (high * scale) ** 2), clip=bounds)

    def describe(self) -> str:
        low, high = self.variance
        clip = "no clip" if self.clip is None else f"clip [{self.clip[0]:g}, {self.clip[1]:g}]"
        return f"Gaussian noise, variance {low:.3g}-{high:.3g}, {clip}"

    def mutate(self, cases: Cases, rng: np.random.Generator) -> np.ndarray:
        check_rng(rng)
        cases = np.asarray(cases)
        if cases.dtype.kind not in "biuf":
            raise InvalidInput(f"cases have dtype {cases.dtype}; Gaussian noise needs numbers")
        sigma = np.sqrt(rng.uniform(*self.variance))
        mutated = cases + rng.normal(0.0, sigma, cases.shape)
        if self.clip is not None:
            mutated = np.clip(mutated, *self.clip)
        with np.errstate(over="ignore"):  # an overflow is refused by name after the call
            return mutated.astype(cases.dtype if cases.dtype.kind == "f" else np.float32)

    def encode(self, cases: Cases) -> np.ndarray:
        return np.asarray(cases, np.float32)

    def within(self, seeds: Cases, cases: Cases, radius: float) -> np.ndarray:
        """Cases farther than ``radius`` (L2) scaled back onto the sphere around their seed,
        then clipped (the clip box holds the seed, so clipping never moves them away)."""
        radius = check_float("radius", radius, minimum=0.0)
        dtype = np.asarray(cases).dtype
        seeds, cases = _numeric_pair(seeds, cases)
        diff = cases - seeds
        norms = _row_norms(diff)
        scale = np.where(norms > radius, radius / np.maximum(norms, 1e-300), 1.0)
        moved = seeds + diff * scale.reshape((-1,) + (1,) * (diff.ndim - 1))
        if self.clip is not None:
            moved = np.clip(moved, *self.clip)
        return moved.astype(dtype)

    def check_seeds(self, seeds: Any) -> np.ndarray:
        array = super().check_seeds(seeds)
        cast = finite_float32(array, "Gaussian noise")
        if self.clip is not None and (array.min() < self.clip[0] or array.max() > self.clip[1]):
            raise InvalidInput(
                f"seeds span [{array.min():g}, {array.max():g}], outside clip={self.clip}; "
                "scale the seeds or pass the right clip range"
            )
        return cast


def fixed_or_range(name: str, value: Any, example: str) -> tuple[float, float]:
    """A noise level: one number >= 0 (fixed, as ``(v, v)``) or a ``(low, high)`` range
    from which each batch draws."""
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value.item()
    if isinstance(value, (int, float, np.integer, np.floating)) and not isinstance(value, bool):
        fixed = check_float(name, value, minimum=0.0, example=example)
        return fixed, fixed
    return check_range(name, value, minimum=0.0, example=example, strict=False)


def check_rng(rng: Any) -> None:
    """Mutators draw only from a ``numpy.random.Generator`` (results follow the seed)."""
    if not isinstance(rng, np.random.Generator):
        raise InvalidArgument(f"rng={rng!r} is not a numpy.random.Generator; pass "
                              "numpy.random.default_rng(seed)")


def refuse_bool(array: np.ndarray, what: str, fix: str) -> None:
    """Refuse boolean cases: a mutation of True/False is cut back to True/False when stored
    in the cases' dtype, so it would never move."""
    if array.dtype.kind == "b":
        raise InvalidInput(f"{what} have dtype {array.dtype}; a mutation needs numbers (a "
                           f"boolean case cannot move); {fix}")


def finite_float32(seeds: np.ndarray, needs: str) -> np.ndarray:
    """Numeric seeds as float32, refusing NaN, inf and values beyond float32's range."""
    if seeds.dtype.kind not in "biuf":
        raise InvalidInput(f"seeds have dtype {seeds.dtype}; {needs} needs numbers")
    rows = nonfinite_rows(seeds)
    if len(rows):
        raise InvalidInput(f"seeds hold NaN or inf (or values beyond float32's range) in rows "
                           f"{rows[:5].tolist()}; clean or drop them")
    return seeds.astype(np.float32)


def nonfinite_rows(values: np.ndarray) -> np.ndarray:
    """The rows of ``values`` holding NaN, inf or values beyond float32's range."""
    with np.errstate(over="ignore", invalid="ignore"):
        finite = np.isfinite(values.astype(np.float32))
    return np.flatnonzero(~finite.reshape(len(values), -1).all(axis=1))


def _numeric_pair(seeds: Cases, cases: Cases) -> tuple[np.ndarray, np.ndarray]:
    """Seeds and cases as float64 arrays of one shape, finite (for distances)."""
    try:
        pair = np.asarray(seeds, np.float64), np.asarray(cases, np.float64)
    except (TypeError, ValueError):
        raise InvalidInput("seeds and cases must be numeric arrays of one shape") from None
    if pair[0].ndim == 0 or pair[0].shape != pair[1].shape:
        raise InvalidInput(f"seeds of shape {pair[0].shape} and cases of shape {pair[1].shape}: "
                           "distance pairs each case with the seed in the same row")
    if not (np.isfinite(pair[0]).all() and np.isfinite(pair[1]).all()):
        raise InvalidInput("seeds or cases hold NaN or inf; a distance needs finite values")
    return pair


def _row_norms(diff: np.ndarray) -> np.ndarray:
    """The L2 norm of each row of ``diff`` (every axis after the first flattened)."""
    flat = diff.reshape(len(diff), -1)
    return np.sqrt(np.einsum("ij,ij->i", flat, flat))


def _same_count(seeds: Cases, cases: Cases) -> None:
    if len(seeds) != len(cases):
        raise InvalidInput(f"{len(seeds)} seeds and {len(cases)} cases: distance pairs each case "
                           "with the seed in the same row")


def edit_shares(seeds: Sequence[Sequence[str]], cases: Sequence[Sequence[str]]) -> np.ndarray:
    """Levenshtein distance of each (seed, case) pair of token sequences over the longer
    length: the share of tokens changed, ``d[i][j] = min(d[i-1][j] + 1, d[i][j-1] + 1,
    d[i-1][j-1] + (a_i != b_j))``. All pairs in one call to RapidFuzz's C++ kernel
    (``bench/bench_levenshtein.py``: 6-30x the bit-parallel Python routine it replaced)."""
    from rapidfuzz.distance import Levenshtein
    from rapidfuzz.process import cpdist

    if not len(seeds):
        return np.zeros(0)
    distances = cpdist(seeds, cases, scorer=Levenshtein.distance, workers=1)
    longer = np.maximum([len(s) for s in seeds], [len(c) for c in cases])
    return np.divide(distances, longer, out=np.zeros(len(seeds)), where=longer > 0)


class _StringMutator(Mutator):
    array_cases = False

    def unchanged(self, before: Cases, after: Cases) -> np.ndarray:
        return np.array([a == b for a, b in zip(before, after)], bool)

    def __init__(self, encoder: Callable[[Sequence[str]], np.ndarray] | None) -> None:
        if encoder is not None and not callable(encoder):
            raise InvalidArgument(
                f"encoder={encoder!r} is not callable; pass e.g. a WordEncoder or CharEncoder")
        self.encoder = encoder

    def encode(self, cases: Cases) -> np.ndarray:
        if self.encoder is None:
            raise InvalidArgument(
                f"{type(self).__name__} needs encoder=... to turn strings into model inputs"
            )
        return np.asarray(self.encoder(list(cases)))

    def check_seeds(self, seeds: Any) -> list[str]:
        if isinstance(seeds, str) or not all(isinstance(s, str) for s in seeds):
            raise InvalidInput("seeds must be a list of strings")
        seeds = list(seeds)
        if not seeds:
            raise InvalidInput("seeds are empty; pass at least one string")
        return seeds


EDA_OPERATIONS = ("synonym", "insert", "swap", "delete")


class EDAMutator(_StringMutator):
    """Text mutation by EDA's four operations, one per mutant, chosen at random.

    ``alpha`` is EDA's share of words changed (at least one). Synonyms come from WordNet
    (``nltk.corpus.wordnet``); stop words (``nltk.corpus.stopwords``, English) are never
    replaced. ``encoder`` maps a list of texts to model inputs (e.g. ``WordEncoder``).
    Distance: the share of words changed (word-level edit distance over the longer text).
    """

    distance_name = "share of words changed"

    def __init__(self, encoder: Callable[[Sequence[str]], np.ndarray] | None = None,
                 alpha: float = 0.1, operations: Sequence[str] = EDA_OPERATIONS) -> None:
        super().__init__(encoder)
        alpha = check_float("alpha", alpha, minimum=0.0, exclusive_minimum=True, maximum=1.0,
                            example="0.1")
        if isinstance(operations, str) or not all(isinstance(o, str) for o in operations):
            raise InvalidArgument(
                f"operations={operations!r}; pass a list such as ['synonym', 'swap']")
        unknown = set(operations) - set(EDA_OPERATIONS)
        if unknown or not operations:
            raise InvalidArgument(
                f"operations={list(operations)!r}; choose from {', '.join(EDA_OPERATIONS)}"
            )
        self.alpha = float(alpha)
        self.operations = tuple(operations)
        self._synonyms: dict[str, list[str]] = {}
        self._wordnet: Any = None
        self._stopwords: frozenset[str] | None = None

    def describe(self) -> str:
        return f"EDA text edits (alpha {self.alpha:g}: {', '.join(self.operations)})"

    def _load(self) -> None:
        if self._wordnet is not None:
            return
        try:
            from nltk.corpus import stopwords, wordnet

            wordnet.ensure_loaded()
            self._stopwords = frozenset(stopwords.words("english"))
        except LookupError as exc:
            raise MissingResource(
                "EDAMutator needs NLTK's wordnet and stopwords data: run "
                "`python -m nltk.downloader wordnet stopwords` or point NLTK_DATA at a copy "
                f"({str(exc).strip().splitlines()[0] if str(exc).strip() else exc})"
            ) from None
        except ImportError:
            raise MissingResource("EDAMutator needs nltk: pip install nltk") from None
        self._wordnet = wordnet

    @property
    def stop_words(self) -> frozenset[str]:
        """English stop words (never replaced by synonyms)."""
        self._load()
        return self._stopwords or frozenset()

    def synonyms(self, word: str) -> list[str]:
        """WordNet synonyms of ``word`` (single alphabetic words, without ``word`` itself)."""
        self._load()
        if word not in self._synonyms:
            names = {
                lemma.name().replace("_", " ").replace("-", " ").lower()
                for synset in self._wordnet.synsets(word)
                for lemma in synset.lemmas()
            }
            self._synonyms[word] = sorted(
                n for n in names if n != word and all(p.isalpha() for p in n.split())
            )
        return self._synonyms[word]

    def mutate(self, cases: Cases, rng: np.random.Generator) -> list[str]:
        check_rng(rng)
        self._load()
        ops = rng.choice(len(self.operations), size=len(cases))
        return [self._one(text, self.operations[op], rng) for text, op in zip(cases, ops)]

    def _one(self, text: str, op: str, rng: np.random.Generator) -> str:
        words = text.split()
        if not words:
            return text
        n = max(1, int(self.alpha * len(words)))
        stop = self._stopwords or frozenset()
        if op == "synonym":
            candidates = [i for i, w in enumerate(words) if w.lower() not in stop and self.synonyms(w.lower())]
            for i in rng.permutation(candidates)[:n] if candidates else []:
                options = self.synonyms(words[i].lower())
                words[i] = options[rng.integers(len(options))]
        elif op == "insert":
            for _ in range(n):
                replaceable = [w for w in words if w.lower() not in stop and self.synonyms(w.lower())]
                if not replaceable:
                    break
                options = self.synonyms(replaceable[rng.integers(len(replaceable))].lower())
                words.insert(int(rng.integers(len(words) + 1)), options[rng.integers(len(options))])
        elif op == "swap":
            for _ in range(n):
                if len(words) < 2:
                    break
                i, j = rng.choice(len(words), size=2, replace=False)
                words[i], words[j] = words[j], words[i]
        else:  # delete: each word with probability alpha, keeping at least one
            keep = rng.random(len(words)) >= self.alpha
            words = [w for w, k in zip(words, keep) if k] or [words[rng.integers(len(words))]]
        return " ".join(words)

    def distance(self, seeds: Cases, cases: Cases) -> np.ndarray:
        _same_count(seeds, cases)
        return edit_shares([s.split() for s in seeds], [c.split() for c in cases])


class SmilesMutator(_StringMutator):
    """SMILES re-enumeration: the same molecule written with a random atom order (RDKit).

    Every output parses to the seed's canonical molecule. When an ``encoder`` with
    ``can_encode`` is given, orderings it cannot encode are redrawn (up to ``tries``);
    if none fits, the case is returned unchanged. Distance: share of characters changed
    (informational; re-enumeration preserves the molecule, so use ``Oracle(radius=None)``).
    """

    distance_name = "share of characters changed"

    def __init__(self, encoder: Callable[[Sequence[str]], np.ndarray] | None = None,
                 tries: int = 10) -> None:
        super().__init__(encoder)
        self.tries = check_int("tries", tries, minimum=1, example="10")
        self._mols: dict[str, Any] = {}
        #: re-enumerations the encoder could not encode (redrawn), for reports
        self.discarded = 0

    def describe(self) -> str:
        redrawn = f", {self.discarded} spellings the encoder cannot encode redrawn" if self.discarded else ""
        return f"SMILES re-enumeration (random atom orders{redrawn})"

    def _mol(self, smiles: str) -> Any:
        if smiles not in self._mols:
            from rdkit import Chem, RDLogger

            RDLogger.DisableLog("rdApp.*")  # type: ignore[attr-defined]
            try:
                mol = Chem.MolFromSmiles(smiles)
            finally:
                RDLogger.EnableLog("rdApp.*")  # type: ignore[attr-defined]
            if mol is None or mol.GetNumAtoms() == 0:
                raise InvalidInput(f"{smiles!r} is not a valid SMILES string of a molecule "
                                   "(RDKit cannot parse it, or it has no atoms)")
            self._mols[smiles] = mol
        return self._mols[smiles]

    def check_seeds(self, seeds: Any) -> list[str]:
        seeds = super().check_seeds(seeds)
        for s in seeds:
            self._mol(s)
        if self.encoder is not None:
            self.encoder(seeds)  # unknown characters raise here, before any model call
        return seeds

    def mutate(self, cases: Cases, rng: np.random.Generator) -> list[str]:
        check_rng(rng)
        from rdkit import Chem

        can_encode = getattr(self.encoder, "can_encode", None)
        out = []
        for smiles in cases:
            mol = self._mol(smiles)
            result = smiles
            for _ in range(self.tries):
                order = rng.permutation(mol.GetNumAtoms()).tolist()
                candidate = Chem.MolToSmiles(Chem.RenumberAtoms(mol, order), canonical=False)
                if can_encode is None or can_encode(candidate):
                    result = candidate
                    break
                self.discarded += 1
            out.append(result)
        return out

    def distance(self, seeds: Cases, cases: Cases) -> np.ndarray:
        _same_count(seeds, cases)
        return edit_shares(list(seeds), list(cases))


def checked_mutate(mutator: Mutator, cases: Cases, rng: np.random.Generator) -> Cases:
    """Run ``mutator`` and check it kept the number and shape of the cases."""
    out = mutator.mutate(cases, rng)
    name = type(mutator).__name__
    if mutator.array_cases:
        out = np.asarray(out)
        expected = np.asarray(cases).shape
        if out.shape != expected:
            raise InvalidArgument(
                f"{name}.mutate returned shape {out.shape} for cases of shape {expected}; a "
                "mutator must return one mutant per case, of the same shape"
            )
        refuse_bool(out, f"{name}.mutate returned mutants that",
                    "return numbers, e.g. mutants.astype(np.float32)")
        rows = nonfinite_rows(out) if out.dtype.kind in "fc" else np.zeros(0, np.intp)
        if len(rows):
            raise InvalidArgument(
                f"{name}.mutate produced NaN, inf or values beyond float32's range in "
                f"mutants {rows[:5].tolist()} ({mutator.describe()}); lower its variance or "
                "set clip=")
    elif len(out) != len(cases) or not all(isinstance(c, str) for c in out):
        raise InvalidArgument(
            f"{name}.mutate returned {len(out)} items for {len(cases)} cases; a string mutator "
            "must return one string per case"
        )
    return out
