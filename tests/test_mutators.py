"""Mutators: validity of what they produce, reproducibility, and clear errors."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from pytest_rnncov import (
    CharEncoder,
    EDAMutator,
    GaussianMutator,
    InvalidArgument,
    InvalidInput,
    Mutator,
    SmilesMutator,
    WordEncoder,
)
from pytest_rnncov.generation.mutators import checked_mutate

SHARED_NLTK = Path(__file__).resolve().parents[2] / "shared" / "data" / "nltk_data"


@pytest.fixture(scope="module", autouse=True)
def nltk_data():
    """Use the offline NLTK corpora (CI sets NLTK_DATA; default: ../shared/data)."""
    if "NLTK_DATA" not in os.environ:
        os.environ["NLTK_DATA"] = str(SHARED_NLTK)
    import nltk

    nltk.data.path.insert(0, os.environ["NLTK_DATA"])


def test_gaussian_stays_in_range_and_is_reproducible():
    seeds = np.random.default_rng(0).random((50, 28, 28), dtype=np.float32)
    mutator = GaussianMutator(variance=(0.005, 0.02))
    a = mutator.mutate(seeds, np.random.default_rng(7))
    b = mutator.mutate(seeds, np.random.default_rng(7))
    assert a.shape == seeds.shape and a.dtype == np.float32
    assert a.min() >= 0 and a.max() <= 1
    np.testing.assert_array_equal(a, b)
    noise = (a - seeds)[(a > 0) & (a < 1)]
    assert 0.005**0.5 * 0.9 < noise.std() < 0.02**0.5 * 1.1  # one variance for the batch
    np.testing.assert_allclose(
        mutator.distance(seeds, a), np.linalg.norm((a - seeds).reshape(50, -1), axis=1), rtol=1e-6
    )


def test_gaussian_refuses_seeds_outside_the_clip_range():
    with pytest.raises(InvalidInput, match=r"outside clip=\(0\.0, 1\.0\)"):
        GaussianMutator().check_seeds(np.full((2, 3, 3), 255.0))
    with pytest.raises(InvalidInput, match="non-empty batch"):
        GaussianMutator().check_seeds(np.zeros((0, 3, 3)))
    with pytest.raises(InvalidArgument, match="variance"):
        GaussianMutator(variance=(0.2, 0.1))
    with pytest.raises(InvalidInput, match=r"beyond float32's range\) in rows \[1\]"):
        GaussianMutator(clip=None).check_seeds(np.array([[[0.0]], [[1e39]]]))


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: GaussianMutator(variance=(0.0, float("inf"))),
            r"variance\[1\]=inf must be a finite number",
        ),
        (lambda: GaussianMutator(variance=-0.1), "variance=-0.1 must be >= 0"),
        (lambda: GaussianMutator(clip=5), r"clip=5 must be a pair \(low, high\)"),
        (lambda: GaussianMutator(clip=(1, 0)), "needs low < high"),
        (lambda: EDAMutator(alpha=0), "alpha=0.0 must be > 0"),
        (lambda: EDAMutator(operations="swap"), "operations='swap'; pass a list"),
        (lambda: EDAMutator(encoder="words"), "encoder='words' is not callable"),
        (lambda: SmilesMutator(tries=-1), "tries=-1 must be an integer >= 1"),
        (lambda: CharEncoder("abc", length=0), "length=0 must be an integer >= 1"),
        (lambda: WordEncoder(["a"], length="4"), r"length='4' \(str\) must be an integer"),
    ],
)
def test_bad_mutator_and_encoder_arguments(make, message):
    with pytest.raises(InvalidArgument, match=message):
        make()


def test_a_fixed_variance_is_a_number():
    assert GaussianMutator(variance=np.float64(0.01)).variance == (0.01, 0.01)


TEXTS = [
    "the movie was a good and funny story about a brave dog",
    "an awful film with a boring plot and bad acting",
    "i really enjoyed the music",
]


def test_eda_keeps_text_in_the_seed_vocabulary_plus_synonyms():
    mutator = EDAMutator(alpha=0.2)
    rng = np.random.default_rng(1)
    allowed = {w for t in TEXTS for w in t.split()}
    for w in list(allowed):
        allowed |= {part for syn in mutator.synonyms(w) for part in syn.split()}
    changed = 0
    for _ in range(20):
        out = mutator.mutate(TEXTS, rng)
        assert len(out) == 3 and all(isinstance(t, str) and t for t in out)
        for seed, text in zip(TEXTS, out):
            assert set(text.split()) <= allowed
            changed += text != seed
    assert changed > 30
    assert EDAMutator(alpha=0.2).mutate(TEXTS, np.random.default_rng(5)) == EDAMutator(
        alpha=0.2
    ).mutate(TEXTS, np.random.default_rng(5))


def test_synonym_replacement_leaves_stop_words_alone():
    from collections import Counter

    mutator = EDAMutator(alpha=0.5, operations=["synonym"])
    stop = mutator.stop_words
    rng = np.random.default_rng(2)
    for _ in range(20):
        for seed, text in zip(TEXTS, mutator.mutate(TEXTS, rng)):
            before = Counter(w for w in seed.split() if w in stop)
            after = Counter(w for w in text.split() if w in stop)
            assert after >= before  # every stop word of the seed is still there


def test_eda_operations_by_hand():
    rng = np.random.default_rng(0)
    swap = EDAMutator(alpha=0.1, operations=["swap"]).mutate(["a b c d"], rng)[0]
    assert sorted(swap.split()) == ["a", "b", "c", "d"] and swap != "a b c d"
    deleted = EDAMutator(alpha=0.5, operations=["delete"]).mutate(["one two three four"], rng)[0]
    assert 1 <= len(deleted.split()) < 4
    synonym = EDAMutator(alpha=0.1, operations=["synonym"])
    for _ in range(5):
        out = synonym.mutate(["the film"], rng)[0]
        # "the" is a stop word; "film" has synonyms, so it is replaced by one of them
        assert out.split()[0] == "the" and out != "the film"
        assert " ".join(out.split()[1:]) in synonym.synonyms("film")
    # the word itself is left out in any case ("Movie" listed "movie")
    assert "movie" not in synonym.synonyms("Movie") and synonym.synonyms("Movie")
    assert synonym.synonyms("Movie") == synonym.synonyms("movie")


def test_eda_distance_is_the_share_of_words_changed():
    mutator = EDAMutator()
    # one substitution in four words; one deletion from four words
    np.testing.assert_allclose(
        mutator.distance(["a b c d", "a b c d"], ["a x c d", "a b d"]), [0.25, 0.25]
    )


def _textbook_levenshtein(a, b):
    """Wagner-Fischer with the full table, as in any textbook."""
    table = [[i + j if i * j == 0 else 0 for j in range(len(b) + 1)] for i in range(len(a) + 1)]
    for i in range(1, len(a) + 1):
        for j in range(1, len(b) + 1):
            table[i][j] = min(
                table[i - 1][j] + 1,
                table[i][j - 1] + 1,
                table[i - 1][j - 1] + (a[i - 1] != b[j - 1]),
            )
    return table[-1][-1]


@pytest.mark.parametrize(
    "a, b, changed",
    [
        ("kitten", "sitting", 3),  # the classic: k->s, e->i, +g
        ("flaw", "lawn", 2),  # delete f, add n
        ("abc", "abc", 0),
        ("", "abc", 3),
        ("abc", "", 3),
        ("abcab", "ab", 3),  # common ends overlap: trimming must not count twice
        ("CC(=O)O", "OC(C)=O", 4),
    ],
)
def test_char_edit_distance_hand_checked(a, b, changed):
    from pytest_rnncov.generation.text import edit_shares

    assert edit_shares([list(a)], [list(b)])[0] == pytest.approx(changed / max(len(a), len(b), 1))
    assert edit_shares([a], [b])[0] == pytest.approx(changed / max(len(a), len(b), 1))


def test_edit_distance_matches_the_textbook_table():
    from pytest_rnncov.generation.text import edit_shares

    rng = np.random.default_rng(0)
    pairs = [
        (
            list(rng.choice(list("abc"), rng.integers(0, 80))),  # past 64: several words
            list(rng.choice(list("abcd"), rng.integers(0, 80))),
        )
        for _ in range(200)
    ]
    expected = [_textbook_levenshtein(a, b) / max(len(a), len(b), 1) for a, b in pairs]
    got = edit_shares([a for a, _ in pairs], [b for _, b in pairs])
    np.testing.assert_allclose(got, expected)


def test_word_encoder_and_eda_encode():
    encoder = WordEncoder.fit(TEXTS, max_words=10, length=6)
    ids = EDAMutator(encoder=encoder).encode(["the movie", "zzz unknown"])
    assert ids.shape == (2, 6) and (ids[:, :4] == 0).all() and ids[1, -1] == 1


SMILES = ["CC(=O)Oc1ccccc1C(=O)O", "c1ccc2ccccc2c1", "CCN(CC)CCOC(=O)c1ccc(N)cc1"]


def test_smiles_reenumeration_is_the_same_molecule():
    from rdkit import Chem

    mutator = SmilesMutator()
    out = mutator.mutate(SMILES * 5, np.random.default_rng(3))
    assert len(set(out)) > len(SMILES)  # really other spellings
    for seed, smiles in zip(SMILES * 5, out):
        assert Chem.CanonSmiles(smiles) == Chem.CanonSmiles(seed)
    assert out == SmilesMutator().mutate(SMILES * 5, np.random.default_rng(3))


def test_smiles_encoder_errors_on_unknown_characters():
    encoder = CharEncoder.fit(["CCO", "c1ccccc1"], length=12)
    c, o = encoder.index["C"], encoder.index["O"]
    assert encoder(["CCO"]).tolist() == [[0] * 9 + [c, c, o]]  # left padding
    with pytest.raises(InvalidInput, match=r"characters the encoder does not know: 'N'"):
        encoder(["CCN"])
    with pytest.raises(InvalidInput, match="more than the encoder's 12"):
        encoder(["C" * 13])
    with pytest.raises(InvalidInput, match="does not know: 'N'"):
        SmilesMutator(encoder=encoder).check_seeds(["CCN"])
    with pytest.raises(InvalidInput, match="not a valid SMILES"):
        SmilesMutator().check_seeds(["C1CC"])


def test_smiles_mutator_respects_the_encoder():
    encoder = CharEncoder.fit(SMILES, length=40)
    out = SmilesMutator(encoder=encoder).mutate(SMILES * 3, np.random.default_rng(0))
    assert encoder(out).shape == (9, 40)


def test_smiles_redraws_are_counted_per_campaign():
    """The redraw count in the mutator's description added up over the campaigns that
    shared it: the same seed gave another report the second time."""
    encoder = CharEncoder.fit(["CCO", "OCCO"], length=6)  # some spellings do not fit
    mutator = SmilesMutator(encoder=encoder)
    texts = []
    for _ in range(2):
        mutator.reset_counts()  # what a campaign does as its steps begin
        mutator.mutate(["OCCO"] * 20, np.random.default_rng(1))
        texts.append(mutator.describe())
    assert texts[0] == texts[1] and "redrawn" in texts[0]


class WrongShape(Mutator):
    def mutate(self, cases, rng):
        return np.asarray(cases)[:, :-1]


def test_a_mutator_returning_the_wrong_shape_is_named():
    with pytest.raises(
        InvalidArgument,
        match=r"WrongShape\.mutate returned shape \(2, 2\) for cases of shape \(2, 3\)",
    ):
        checked_mutate(WrongShape(), np.zeros((2, 3)), np.random.default_rng(0))


class Complex(Mutator):
    def mutate(self, cases, rng):
        return np.asarray(cases) + 1j


class Objects(Mutator):
    def mutate(self, cases, rng):
        return np.asarray(cases).astype(object)


@pytest.mark.parametrize(("mutator", "dtype"), [(Complex(), "complex128"), (Objects(), "object")])
def test_a_mutator_returning_other_than_real_numbers_is_named(mutator, dtype):
    """The model's input check said "inputs have dtype complex128 ... encode text first",
    naming no mutator, after a ComplexWarning."""
    with pytest.raises(
        InvalidArgument,
        match=f"{type(mutator).__name__}.mutate returned mutants of dtype {dtype}; a mutator",
    ):
        checked_mutate(mutator, np.zeros((2, 3)), np.random.default_rng(0))


def test_noise_scaled_from_the_seeds():
    seeds = np.stack([np.full((4, 2), v) for v in (0.0, 2.0, 4.0)])  # per-feature std 1.633
    mutator = GaussianMutator.from_seeds(seeds, spread=(0.5, 1.0))
    std = np.std([0.0, 2.0, 4.0])
    np.testing.assert_allclose(mutator.variance, ((0.5 * std) ** 2, std**2))
    assert mutator.clip == (0.0, 4.0)
    assert mutator.describe() == "Gaussian noise, variance 0.667-2.67, clip [0, 4]"
    with pytest.raises(InvalidInput, match="the seeds do not vary"):
        GaussianMutator.from_seeds(np.ones((3, 2, 2)))
    for huge in (1e200, 1e160):  # the spread overflows, or only its square does
        with pytest.raises(InvalidInput, match=r"spread \(.*\) is too large .* scale the inputs"):
            GaussianMutator.from_seeds(seeds * huge)  # it once named variance[0]=inf


def test_a_batch_of_no_cases_gets_empty_distances_not_an_error():
    """mutate() takes a batch of no cases; distance, unchanged and within answer it too
    (reshape(0, -1) cannot tell a row's length: they raised a bare ValueError)."""
    from pytest_rnncov import Oracle, TimeSeriesMutator
    from pytest_rnncov.generation.shrinking import shrink

    none = np.zeros((0, 4, 3), np.float32)
    for mutator in (GaussianMutator(), TimeSeriesMutator()):
        assert mutator.distance(none, none).shape == (0,)
        assert mutator.unchanged(none, none).shape == (0,)
        assert mutator.within(none, none, 1.0).shape == (0, 4, 3)
    for mutator in (EDAMutator(), SmilesMutator()):
        assert mutator.distance([], []).shape == (0,)
    shrunk = shrink(
        GaussianMutator(),
        Oracle(radius=3.0),
        lambda x: pytest.fail("nothing to shrink, so no model call"),
        none,
        np.zeros((0, 2)),
        none,
        np.zeros((0, 2)),
    )
    assert shrunk.cases.shape == (0, 4, 3) and shrunk.model_calls == 0
    # the rows of a non-empty batch are unchanged by the fix: hand-checked L2 and equality
    seeds = np.zeros((3, 2, 2), np.float32)
    cases = seeds.copy()
    cases[1, 0, 0], cases[1, 1, 1] = 3.0, 4.0
    assert GaussianMutator(clip=None).distance(seeds, cases).tolist() == [0.0, 5.0, 0.0]
    assert GaussianMutator().unchanged(seeds, cases).tolist() == [True, False, True]


def test_within_follows_the_distance_a_mutator_measures():
    """A mutator measured by the default L2 distance (TimeSeriesMutator, a user's own) has
    its failure-search cases scaled back onto the radius's sphere: (3, 4) from (0, 0)
    becomes (1.5, 2) within 2.5; one with its own distance keeps them, as the base class
    cannot know how to move them."""
    from pytest_rnncov.generation.mutators import Mutator

    class Shift(Mutator):
        def mutate(self, cases, rng):
            return np.asarray(cases) + 1.0

    class Manhattan(Shift):
        def distance(self, seeds, cases):
            return np.abs(np.asarray(cases) - np.asarray(seeds)).reshape(len(cases), -1).sum(1)

    seeds = np.zeros((1, 2), np.float32)
    cases = np.array([[3.0, 4.0]], np.float32)
    np.testing.assert_allclose(Shift().within(seeds, cases, 2.5), [[1.5, 2.0]], rtol=1e-6)
    assert Manhattan().within(seeds, cases, 2.5) is cases


def test_within_leaves_no_case_outside_the_radius_after_rounding_to_its_dtype():
    """Scaled back in float64 to exactly the radius, about half the float32 rows measured
    just outside it once cast (the oracle then never counted them as failures). Every row
    now measures within it, in float16, float32 and float64; integer cases round toward
    their seed ((0) from (5) within 2.5 is (3), not (2))."""
    from pytest_rnncov.generation.mutators import within_l2

    rng = np.random.default_rng(0)
    for dtype in (np.float16, np.float32, np.float64):
        seeds = rng.normal(size=(2000, 20, 3)).astype(dtype)
        cases = (seeds + 3 * rng.normal(size=seeds.shape)).astype(dtype)
        moved = within_l2(seeds, cases, 2.5)
        distances = GaussianMutator(clip=None).distance(seeds, moved)
        assert moved.dtype == dtype and distances.max() <= 2.5
        assert np.median(distances) > 2.49  # on the sphere, not pulled in further
    assert within_l2(np.array([[5]]), np.array([[0]]), 2.5).tolist() == [[3]]


# -- unusual but legal inputs (a hostile pass) ---------------------------------------------
def test_string_mutators_take_lists_of_strings_only():
    """One string was split into one case per character (3 mutants of "abc"), a generator
    of seeds read empty by the check, and None or numbers gave bare errors (str.split,
    rdkit, rapidfuzz)."""
    rng = np.random.default_rng(0)
    eda, smiles = EDAMutator(), SmilesMutator()
    assert eda.check_seeds(s for s in ["good movie", "bad film"]) == ["good movie", "bad film"]
    for mutator, case in ((eda, "abc"), (smiles, "CCO")):
        with pytest.raises(InvalidInput, match="are one string; pass a list of strings"):
            mutator.mutate(case, rng)
        with pytest.raises(InvalidInput, match="one is None"):
            mutator.distance([case], [None])
        with pytest.raises(InvalidInput, match="must be strings; one is 5"):
            mutator.mutate([5], rng)
    for bad in (None, 5):
        with pytest.raises(InvalidInput, match="is not a list of strings"):
            eda.check_seeds(bad)


def test_eda_operations_from_a_generator_are_kept():
    """The check read a generator of operations to its end, leaving none: the first
    mutate failed in numpy."""
    rng = np.random.default_rng(0)
    mutator = EDAMutator(operations=(op for op in ["swap"]))
    assert mutator.operations == ("swap",)
    assert len(mutator.mutate(["good bad movie"], rng)) == 1
    with pytest.raises(InvalidArgument, match="operations=None"):
        EDAMutator(operations=None)


def test_char_encoder_refuses_one_text_as_a_corpus():
    """CharEncoder.fit("hello world") made an encoder of length 1 that refused the very
    text; None or a number as the vocabulary gave a bare TypeError."""
    with pytest.raises(InvalidArgument, match=r"wrap one text: \[text\]"):
        CharEncoder.fit("hello world")
    for vocabulary in (None, 5):
        with pytest.raises(InvalidArgument, match="vocabulary must be a non-empty iterable"):
            CharEncoder(vocabulary, 3)
    assert CharEncoder("ab", 3).vocabulary == ["a", "b"]  # a string is its characters


def test_smiles_with_a_name_or_spaces_is_refused():
    """RDKit reads what follows a space as the molecule's name: "C C" parsed as methane,
    and its mutants were another molecule than the seed as written; it stops at a line
    break, so "CCO\nc1ccccc1" was ethanol, the benzene dropped."""
    for smiles in ("C C", "CCO\nc1ccccc1", "CCO\n"):
        with pytest.raises(InvalidInput, match="has whitespace in it"):
            SmilesMutator().check_seeds([smiles])
    assert SmilesMutator().check_seeds(["CCO"]) == ["CCO"]
    with pytest.raises(InvalidInput) as error:  # a whole .smi file as one string
        SmilesMutator().check_seeds(["\n".join(["CCO c1ccccc1O"] * 20000)])
    assert len(str(error.value)) < 300


def test_smiles_of_a_stereo_molecule_stay_that_stereoisomer():
    """RDKit reads about half the random spellings of D-chiro-inositol back as its mirror
    image; they are redrawn and counted, so every mutant is the seed's molecule."""
    from rdkit import Chem

    seed = "O[C@@H]1[C@@H](O)[C@@H](O)[C@H](O)[C@H](O)[C@H]1O"
    mutator = SmilesMutator()
    out = mutator.mutate([seed] * 100, np.random.default_rng(0))
    assert {Chem.CanonSmiles(o) for o in out} == {Chem.CanonSmiles(seed)}
    assert len(set(out)) > 3 and mutator.misread > 0
    assert f"{mutator.misread} that read back as another stereoisomer redrawn" in (
        mutator.describe()
    )


def test_smiles_mutator_keeps_a_bounded_number_of_molecules():
    """Every distinct spelling a campaign mutated stayed parsed (about 45 KiB each)."""
    from pytest_rnncov.generation.text import MOLECULE_CACHE

    mutator = SmilesMutator()
    cases = ["C" * a + "N" + "C" * b + "O" for a in range(40) for b in range(40)]  # 1,600
    assert len(cases) > MOLECULE_CACHE
    mutator.mutate(mutator.check_seeds(cases), np.random.default_rng(0))
    assert len(mutator._mols) == MOLECULE_CACHE


def test_mutating_a_mutant_parses_no_molecule(monkeypatch):
    """A mutant is its parent's molecule: mutating it again (the GA's children, the
    campaign's random parents) reads the parent's parsed molecule, not the new spelling."""
    from rdkit import Chem

    canonical = [Chem.CanonSmiles(s) for s in SMILES]
    parsed = []
    parse = Chem.MolFromSmiles
    monkeypatch.setattr(Chem, "MolFromSmiles", lambda s, *a: parsed.append(s) or parse(s, *a))
    mutator = SmilesMutator()
    rng = np.random.default_rng(0)
    seeds = mutator.check_seeds(SMILES)
    read = list(parsed)  # each seed, then its canonical spelling (where that differs)
    assert set(read) == set(SMILES) | set(canonical)
    cases = seeds
    for _ in range(4):  # mutants of mutants of mutants
        cases = mutator.mutate(cases, rng)
    assert parsed == read and cases != seeds
    monkeypatch.undo()
    assert [Chem.CanonSmiles(c) for c in cases] == canonical


def test_a_spellings_mutants_do_not_depend_on_what_the_mutator_saw_before(monkeypatch):
    """The same case and generator give the same mutants from a fresh mutator, from one
    that bred the case, from one whose molecules were since evicted, and for another
    spelling of the molecule as the case."""
    from pytest_rnncov.generation import text

    seed = "CCN(CC)CCOC(=O)c1ccc(N)cc1"
    bred = SmilesMutator()
    mutant = bred.mutate([seed], np.random.default_rng(0))[0]
    assert mutant != seed

    def mutants(mutator, case):
        return mutator.mutate([case] * 5, np.random.default_rng(1))

    expected = mutants(SmilesMutator(), mutant)
    assert mutants(bred, mutant) == expected
    assert mutants(SmilesMutator(), seed) == expected  # another spelling, the same molecule
    monkeypatch.setattr(text, "MOLECULE_CACHE", 1)
    evicting = SmilesMutator()
    evicting.mutate([seed], np.random.default_rng(0))
    evicting.check_seeds(["c1ccccc1O"])  # the seed's molecule evicted
    assert mutants(evicting, mutant) == expected


def test_smiles_mutator_keeps_a_bounded_number_of_spellings(monkeypatch):
    """The spellings noted for their molecule are the latest SPELLING_CACHE; a mutant
    forgotten is read again and found to be the same molecule, kept as it was."""
    from rdkit import Chem

    from pytest_rnncov.generation import text

    monkeypatch.setattr(text, "SPELLING_CACHE", 5)
    mutator = SmilesMutator()
    seed = "CCN(CC)CCOC(=O)c1ccc(N)cc1"
    mutants = mutator.mutate([seed] * 40, np.random.default_rng(0))
    assert len(mutator._spellings) == 5 and len(mutator._mols) == 1
    forgotten = next(m for m in mutants if m not in mutator._spellings)
    parsed = []
    parse = Chem.MolFromSmiles
    monkeypatch.setattr(Chem, "MolFromSmiles", lambda s, *a: parsed.append(s) or parse(s, *a))
    again = mutator.mutate([forgotten], np.random.default_rng(1))
    assert parsed == [forgotten] and len(mutator._mols) == 1  # read again, the same molecule
    assert forgotten in mutator._spellings and len(mutator._spellings) == 5
    assert Chem.CanonSmiles(again[0]) == Chem.CanonSmiles(seed)


def test_eda_redraws_what_the_encoder_cannot_encode():
    """An insertion lengthens the longest seed past a CharEncoder's length: the campaign
    died on its first batch. Such mutants are redrawn (another operation) and counted."""
    texts = ["a good film", "a bad film"]
    encoder = CharEncoder(sorted(set("".join(texts)) | set("abcdefghijklmnopqrstuvwxyz ")), 11)
    mutator = EDAMutator(encoder=encoder, alpha=0.3, operations=["insert", "swap"])
    out = mutator.mutate(texts * 20, np.random.default_rng(0))
    assert encoder(out).shape == (40, 11)
    assert mutator.discarded > 0 and "cannot encode redrawn" in mutator.describe()
    mutator.reset_counts()
    assert mutator.describe() == "EDA text edits (alpha 0.3: insert, swap)"
    # with an encoder that can encode anything, the draws are those of no encoder
    plain = EDAMutator(alpha=0.3).mutate(texts * 20, np.random.default_rng(0))
    words = EDAMutator(encoder=WordEncoder.fit(texts), alpha=0.3)
    assert words.mutate(texts * 20, np.random.default_rng(0)) == plain


def test_eda_mutant_differing_in_whitespace_only_is_unchanged():
    mutator = EDAMutator(alpha=0.01, operations=["delete"])
    seeds = ["a  good\tfilm", "a good film"]
    out = mutator.mutate(seeds, np.random.default_rng(0))
    assert out == ["a good film", "a good film"]
    assert mutator.unchanged(seeds, out).tolist() == [True, True]
    assert mutator.unchanged(["a good film"], ["a film good"]).tolist() == [False]


def test_encoder_vocabularies_and_arguments_are_checked():
    """A set gave token ids that changed between processes (salted string hashes); an
    empty word list encoded every word as unknown; can_encode and synonyms raised bare
    TypeError / AttributeError on a number."""
    for build in (lambda: CharEncoder(set("abc"), 3), lambda: WordEncoder({"a", "b"}, 3)):
        with pytest.raises(InvalidArgument, match="changes between processes; pass a list"):
            build()
    for build in (lambda: WordEncoder([], 5), lambda: WordEncoder.fit(["", "  "])):
        with pytest.raises(InvalidArgument, match="words"):
            build()
    with pytest.raises(InvalidInput, match=r"text=5 \(int\) is not a string"):
        CharEncoder("ab", 3).can_encode(5)
    with pytest.raises(InvalidArgument, match="word=5 must be a non-empty string"):
        EDAMutator().synonyms(5)


def test_missing_nltk_data_names_the_resource(monkeypatch):
    """NLTK's message begins with a line of asterisks, which was all the error showed."""
    import nltk.corpus

    from pytest_rnncov import MissingResource

    def missing() -> None:
        raise LookupError("\n" + "*" * 70 + "\n  Resource wordnet not found.\n" + "*" * 70)

    monkeypatch.setattr(nltk.corpus.wordnet, "ensure_loaded", missing)
    with pytest.raises(MissingResource, match=r"a copy \(Resource wordnet not found.\)$"):
        EDAMutator().prepare()


def test_time_series_mutants_stay_in_range_and_refuse_overflow():
    """Warped positions went an ulp past the last step (a mutant above the series' own
    maximum); noise beyond float16's range came back as inf; ragged and complex seeds or
    cases gave bare numpy errors or dropped the imaginary part."""
    from pytest_rnncov.generation.series import TimeSeriesMutator

    warp = TimeSeriesMutator(warp=10, noise=0)
    positions = warp.warp_positions(2000, 30, np.random.default_rng(0))
    assert (
        positions.min() >= 0 and positions.max() <= 29 and (np.diff(positions, axis=1) >= 0).all()
    )
    ramp = np.broadcast_to(np.arange(30.0)[None, :, None], (50, 30, 1)).copy()
    assert warp.mutate(ramp, np.random.default_rng(0)).max() <= 29
    loud = np.full((1, 4, 1), 65500, np.float16)
    with pytest.raises(InvalidArgument, match="beyond float16's range .*lower noise="):
        TimeSeriesMutator(noise=100.0).mutate(loud, np.random.default_rng(0))
    with pytest.raises(InvalidInput, match="not one array"):
        TimeSeriesMutator().check_seeds([[[1.0], [2.0]], [[1.0]]])
    with pytest.raises(InvalidInput, match="not one array"):
        TimeSeriesMutator.from_seeds([[[1.0], [2.0]], [[1.0]]])
    with pytest.raises(InvalidInput, match="dtype complex"):
        TimeSeriesMutator().mutate(np.ones((1, 3, 1), complex), np.random.default_rng(0))
    with pytest.raises(InvalidInput, match="not one array"):
        GaussianMutator().check_seeds([[0.1, 0.2], [0.3]])


def test_distances_refuse_values_float64_cannot_hold():
    """A longdouble of 1e400 is finite, and float64 makes it inf: distances are measured in
    float64, so such cases are refused by name instead of giving inf (or NaN cases once
    moved within a radius)."""
    from pytest_rnncov.generation.mutators import within_l2

    seeds = np.zeros((1, 3), np.longdouble)
    cases = seeds.copy()
    cases[0, 0] = np.longdouble("1e400")
    if not np.isfinite(cases).all():  # a platform whose longdouble is float64
        pytest.skip("longdouble is float64 here: 1e400 is inf already")
    with pytest.raises(InvalidInput, match="hold NaN or inf; a distance needs finite values"):
        GaussianMutator().distance(seeds, cases)
    with pytest.raises(InvalidInput, match="hold NaN or inf"):
        within_l2(seeds, cases, 1.0)
    exact = np.array([[3.0, 4.0, 0.0]], np.longdouble)
    np.testing.assert_array_equal(GaussianMutator().distance(seeds, exact), [5.0])
