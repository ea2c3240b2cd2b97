"""Random mutation of strings (SPEC section 6): EDA text edits and SMILES re-enumeration,
measured by the share of tokens an edit changed (Levenshtein, RapidFuzz)."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Callable, Sequence

import numpy as np

from ..errors import InvalidArgument, InvalidInput, MissingResource
from ..validation import check_float, check_int, check_str, shown
from .encoders import string_list
from .mutators import Cases, Mutator, check_rng


def check_pairs(seeds: Cases, cases: Cases) -> None:
    """Refuse seeds and cases of different counts (a distance pairs them row by row)."""
    if len(seeds) != len(cases):
        raise InvalidInput(
            f"{len(seeds)} seeds and {len(cases)} cases: distance pairs each case "
            "with the seed in the same row"
        )


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


class StringMutator(Mutator):
    array_cases = False

    def __init__(self, encoder: Callable[[Sequence[str]], np.ndarray] | None) -> None:
        if encoder is not None and not callable(encoder):
            raise InvalidArgument(
                f"encoder={encoder!r} is not callable; pass e.g. a WordEncoder or CharEncoder"
            )
        self.encoder = encoder

    def encode(self, cases: Cases) -> np.ndarray:
        if self.encoder is None:
            raise InvalidArgument(
                f"{type(self).__name__} needs encoder=... to turn strings into model inputs"
            )
        return np.asarray(self.encoder(list(cases)))


EDA_OPERATIONS = ("synonym", "insert", "swap", "delete")


class EDAMutator(StringMutator):
    """Text mutation by EDA's four operations, one per mutant, chosen at random.

    ``alpha`` is EDA's share of words changed: synonym replacement and insertion change at
    least one word (where the text has one with synonyms); swap exchanges pairs of words,
    which can leave the text as it was (two swaps undoing each other, equal words), and
    deletion drops each word with probability ``alpha``, keeping at least one, so it can
    drop none: such a mutant equals its seed, and a campaign drops it before the model
    call. Synonyms come from WordNet (``nltk.corpus.wordnet``): lemma names, phrases
    included ("to a lesser extent"), not inflected to the word they replace; stop words
    (``nltk.corpus.stopwords``, English) are never replaced. With ``WordEncoder``, a synonym
    outside its vocabulary reaches the model as the unknown word. ``encoder`` maps a list of
    texts to model inputs (e.g. ``WordEncoder``); when it has ``can_encode``
    (``CharEncoder``), a mutant it cannot encode (an insertion past its length, a synonym
    with a character it does not know) is redrawn with a fresh operation, up to ``tries``
    times in all, and if none fits the case is returned unchanged. Mutants are compared with
    their seeds word by word: one that differs only in whitespace counts as unchanged.
    Distance: the share of words changed (word-level edit distance over the longer text).
    """

    distance_name = "share of words changed"

    def unchanged(self, before: Cases, after: Cases) -> np.ndarray:
        """Compared word by word: a mutant that differs from its seed only in whitespace
        (EDA joins the words with single spaces) is unchanged."""
        return np.array([a.split() == b.split() for a, b in zip(before, after)], bool)

    def __init__(
        self,
        encoder: Callable[[Sequence[str]], np.ndarray] | None = None,
        alpha: float = 0.1,
        operations: Sequence[str] = EDA_OPERATIONS,
        tries: int = 10,
    ) -> None:
        super().__init__(encoder)
        alpha = check_float(
            "alpha", alpha, minimum=0.0, exclusive_minimum=True, maximum=1.0, example="0.1"
        )
        chosen: list[Any] | None
        try:  # a generator is read once, here
            chosen = None if isinstance(operations, str) else list(operations)
        except TypeError:
            chosen = None
        if chosen is None or not all(isinstance(o, str) for o in chosen):
            raise InvalidArgument(
                f"operations={operations!r}; pass a list such as ['synonym', 'swap']"
            )
        operations = chosen
        unknown = set(operations) - set(EDA_OPERATIONS)
        if unknown or not operations:
            raise InvalidArgument(
                f"operations={list(operations)!r}; choose from {', '.join(EDA_OPERATIONS)}"
            )
        self.alpha = float(alpha)
        self.operations = tuple(operations)
        self.tries = check_int("tries", tries, minimum=1, example="10")
        #: mutants the encoder could not encode (redrawn) since the counts were last reset
        self.discarded = 0
        self._synonyms: dict[str, list[str]] = {}
        self._wordnet: Any = None
        self._stopwords: frozenset[str] | None = None

    def reset_counts(self) -> None:
        self.discarded = 0

    def describe(self) -> str:
        redrawn = f", {self.discarded} the encoder cannot encode redrawn" if self.discarded else ""
        return f"EDA text edits (alpha {self.alpha:g}: {', '.join(self.operations)}{redrawn})"

    def prepare(self) -> None:
        """Load WordNet and the stop words (about 2 s the first time in a process)."""
        self._load()

    def _load(self) -> None:
        if self._wordnet is not None:
            return
        try:
            from nltk.corpus import stopwords, wordnet

            wordnet.ensure_loaded()
            self._stopwords = frozenset(stopwords.words("english"))
        except LookupError as exc:
            said = [line.strip() for line in str(exc).splitlines() if line.strip(" *")]
            raise MissingResource(
                "EDAMutator needs NLTK's wordnet and stopwords data: run "
                "`python -m nltk.downloader wordnet stopwords` or point NLTK_DATA at a copy"
                + (f" ({said[0]})" if said else "")
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
        """WordNet's lemma names for ``word``, lower-cased: alphabetic words or phrases of
        them ("to a lesser extent"), ``word`` itself (in any case) left out."""
        check_str("word", word)
        self._load()
        if word not in self._synonyms:
            names = {
                lemma.name().replace("_", " ").replace("-", " ").lower()
                for synset in self._wordnet.synsets(word)
                for lemma in synset.lemmas()
            }
            self._synonyms[word] = sorted(
                n for n in names if n != word.lower() and all(p.isalpha() for p in n.split())
            )
        return self._synonyms[word]

    def mutate(self, cases: Cases, rng: np.random.Generator) -> list[str]:
        check_rng(rng)
        cases = string_list(cases, "cases")
        self._load()
        ops = rng.choice(len(self.operations), size=len(cases))
        can_encode = getattr(self.encoder, "can_encode", None)
        out = []
        for text, op in zip(cases, ops):
            result = text
            for attempt in range(self.tries):
                if attempt:  # an operation drawn afresh for each redraw
                    op = rng.integers(len(self.operations))
                candidate = self._one(text, self.operations[op], rng)
                if can_encode is None or can_encode(candidate):
                    result = candidate
                    break
                self.discarded += 1
            out.append(result)
        return out

    def _one(self, text: str, op: str, rng: np.random.Generator) -> str:
        words = text.split()
        if not words:
            return text
        n = max(1, int(self.alpha * len(words)))
        stop = self._stopwords or frozenset()
        if op == "synonym":
            candidates = [
                i for i, w in enumerate(words) if w.lower() not in stop and self.synonyms(w.lower())
            ]
            for i in rng.permutation(candidates)[:n] if candidates else []:
                options = self.synonyms(words[i].lower())
                words[i] = options[rng.integers(len(options))]
        elif op == "insert":  # which words have synonyms, kept beside them (it was rebuilt
            # for every insertion: quadratic in the text's length)
            replaceable = np.array(
                [w.lower() not in stop and bool(self.synonyms(w.lower())) for w in words], bool
            )
            for _ in range(n):
                where = np.flatnonzero(replaceable)
                if not where.size:
                    break
                options = self.synonyms(words[where[rng.integers(where.size)]].lower())
                at, word = int(rng.integers(len(words) + 1)), options[rng.integers(len(options))]
                words.insert(at, word)
                has = word.lower() not in stop and bool(self.synonyms(word.lower()))
                replaceable = np.insert(replaceable, at, has)
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
        """The share of words changed, per pair: the word-level edit distance over the
        longer text's number of words."""
        seeds, cases = string_list(seeds, "seeds"), string_list(cases, "cases")
        check_pairs(seeds, cases)
        return edit_shares([s.split() for s in seeds], [c.split() for c in cases])


#: molecules a SmilesMutator keeps parsed (the most recently used; about 45 KiB each)
MOLECULE_CACHE = 1024
#: spellings a SmilesMutator maps to their molecule's canonical SMILES (the latest; a string
#: each), so that mutating a mutant, or a seed, again parses nothing
SPELLING_CACHE = 16384


def _read_smiles(smiles: str, strict: bool = True) -> Any:
    """The molecule RDKit reads from ``smiles``; one it cannot read (or without atoms)
    raises InvalidInput, or with ``strict=False`` gives None."""
    from rdkit import Chem, RDLogger

    if strict and any(c.isspace() for c in smiles):
        raise InvalidInput(
            f"{shown(smiles)} has whitespace in it; pass one SMILES string per "
            "molecule, without spaces or line breaks"
        )
    RDLogger.DisableLog("rdApp.*")  # type: ignore[attr-defined]
    params = Chem.SmilesParserParams()
    params.parseName = False  # type: ignore[assignment]  # "C C": refused, not methane
    try:
        mol = Chem.MolFromSmiles(smiles, params)
    finally:
        RDLogger.EnableLog("rdApp.*")  # type: ignore[attr-defined]
    if mol is not None and mol.GetNumAtoms() > 0:
        return mol
    if not strict:
        return None
    raise InvalidInput(
        f"{shown(smiles)} is not a valid SMILES string of a molecule "
        "(RDKit cannot parse it, or it has no atoms)"
    )


class SmilesMutator(StringMutator):
    """SMILES re-enumeration: the same molecule written from a random atom, its branches in
    a random order (RDKit's random SMILES, each draw seeded from the campaign's generator,
    from the molecule read from its canonical SMILES: a case's mutants depend on its
    molecule and the generator only, not on which spellings the mutator saw before).

    Every output parses to the seed's canonical molecule: RDKit can read some spellings of
    a molecule with stereo centres or stereo bonds back as another stereoisomer (ring
    stereo, such as an inositol's), so the spellings of such a molecule are read back and
    those that changed it are redrawn. When an ``encoder`` with ``can_encode`` is given,
    spellings it cannot encode are redrawn as well (up to ``tries`` draws in all); if none
    fits, the case is returned unchanged. A SMILES string with whitespace in it is refused
    (RDKit would read only up to a line break). Distance: share of characters changed
    (informational; re-enumeration preserves the molecule, so use ``Oracle(radius=None)``).
    """

    distance_name = "share of characters changed"

    def __init__(
        self, encoder: Callable[[Sequence[str]], np.ndarray] | None = None, tries: int = 10
    ) -> None:
        super().__init__(encoder)
        self.tries = check_int("tries", tries, minimum=1, example="10")
        #: canonical SMILES -> (molecule, that SMILES where it has stereo, else None)
        self._mols: OrderedDict[str, tuple[Any, str | None]] = OrderedDict()
        #: a seed's or mutant's SMILES -> its molecule's canonical SMILES (its key in ``_mols``)
        self._spellings: OrderedDict[str, str] = OrderedDict()
        #: re-enumerations the encoder could not encode, and those RDKit read back as
        #: another stereoisomer (both redrawn), since the counts were last reset (a
        #: campaign's start), for its report
        self.discarded = 0
        self.misread = 0

    def reset_counts(self) -> None:
        self.discarded = self.misread = 0

    def describe(self) -> str:
        redrawn = [
            f"{self.discarded} spellings the encoder cannot encode" if self.discarded else "",
            f"{self.misread} that read back as another stereoisomer" if self.misread else "",
        ]
        said = " and ".join(r for r in redrawn if r)
        return f"SMILES re-enumeration (random spellings{f', {said} redrawn' if said else ''})"

    def _key(self, smiles: str) -> str:
        """The canonical SMILES of the molecule ``smiles`` spells: the key under which
        that molecule is kept parsed, read from its canonical spelling, so that its atom
        order (and the spellings drawn from it) does not depend on the spelling seen first.
        Keeps the MOLECULE_CACHE molecules and SPELLING_CACHE spellings used last."""
        from rdkit import Chem

        key = self._spellings.get(smiles)
        if key is not None:
            self._spellings.move_to_end(smiles)
            if key in self._mols:
                self._mols.move_to_end(key)
                return key
        mol = _read_smiles(smiles)
        canonical = Chem.MolToSmiles(mol)
        if canonical not in self._mols:
            ordered = _read_smiles(canonical, strict=False)
            if ordered is not None and Chem.MolToSmiles(ordered) == canonical:
                mol = ordered  # else a spelling read back as another stereoisomer: as given
            stereo = any(c in canonical for c in "@/\\")
            self._mols[canonical] = (mol, canonical if stereo else None)
            if len(self._mols) > MOLECULE_CACHE:
                self._mols.popitem(last=False)
        self._mols.move_to_end(canonical)
        self._spelled(smiles, canonical)
        return canonical

    def _spelled(self, spelling: str, key: str) -> None:
        """Note that ``spelling`` spells the molecule kept under ``key`` (the
        SPELLING_CACHE spellings noted last), so that mutating it parses nothing again."""
        self._spellings[spelling] = key
        self._spellings.move_to_end(spelling)
        if len(self._spellings) > SPELLING_CACHE:
            self._spellings.popitem(last=False)

    def check_seeds(self, seeds: Any) -> list[str]:
        seeds = super().check_seeds(seeds)
        for s in seeds:
            self._key(s)
        if self.encoder is not None:
            self.encoder(seeds)  # unknown characters raise here, before any model call
        return seeds

    def mutate(self, cases: Cases, rng: np.random.Generator) -> list[str]:
        check_rng(rng)
        cases = string_list(cases, "cases")
        from rdkit import Chem

        can_encode = getattr(self.encoder, "can_encode", None)
        # one RDKit seed per draw, from ``rng``: a random start atom and branch order (never
        # 0, for which RDKit seeds itself from the clock, so the spelling would not repeat)
        rdkit_seeds = rng.integers(1, 2**31 - 1, size=(len(cases), self.tries)).tolist()
        out = []
        for smiles, draws in zip(cases, rdkit_seeds):
            key = self._key(smiles)
            mol, canonical = self._mols[key]
            result = smiles
            for seed in draws:
                (candidate,) = Chem.MolToRandomSmilesVect(mol, 1, randomSeed=seed)
                if can_encode is not None and not can_encode(candidate):
                    self.discarded += 1
                elif canonical is not None and Chem.CanonSmiles(candidate) != canonical:
                    self.misread += 1
                else:
                    result = candidate
                    break
            if result != smiles:
                self._spelled(result, key)
            out.append(result)
        return out

    def distance(self, seeds: Cases, cases: Cases) -> np.ndarray:
        seeds, cases = string_list(seeds, "seeds"), string_list(cases, "cases")
        check_pairs(seeds, cases)
        return edit_shares(seeds, cases)
