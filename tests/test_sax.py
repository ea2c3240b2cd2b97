"""PAA and SAX against independent, loop-based computations."""

from __future__ import annotations

from statistics import NormalDist

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from pytest_rnncov.core import sax


def naive_paa(curve, w):
    """Repeat every value w times, then average consecutive blocks of len(curve)."""
    repeated = [v for v in curve for _ in range(w)]
    v = len(curve)
    return [sum(repeated[j * v : (j + 1) * v]) / v for j in range(w)]


def naive_symbol(value, a):
    cuts = [NormalDist().inv_cdf(k / a) for k in range(1, a)]
    return sum(1 for c in cuts if value >= c)  # on a breakpoint: the upper symbol


def test_paa_by_hand():
    # v = 3, w = 2: [x0, x0, x1 | x1, x2, x2] -> (2*x0 + x1)/3, (x1 + 2*x2)/3
    curve = np.array([3.0, 6.0, 0.0])
    np.testing.assert_allclose(curve @ sax.paa_overlaps(3, 2).T / 3, [4.0, 2.0])
    # v = 4, w = 2: plain block means
    np.testing.assert_allclose(
        np.array([1.0, 3.0, 5.0, 7.0]) @ sax.paa_overlaps(4, 2).T / 4, [2, 6]
    )


def test_breakpoints_for_three_symbols():
    np.testing.assert_allclose(sax.breakpoints(3), [-0.4307273, 0.4307273], atol=1e-7)


@given(
    st.lists(st.floats(-5, 5), min_size=1, max_size=30),
    st.integers(1, 8),
    st.integers(2, 6),
)
def test_words_equal_independent_paa_and_sax(curve, w, a):
    w = min(w, len(curve))
    paa = np.asarray(curve) @ sax.paa_overlaps(len(curve), w).T / len(curve)
    np.testing.assert_allclose(paa, naive_paa(curve, w), atol=1e-9)
    expected = [naive_symbol(v, a) for v in naive_paa(curve, w)]
    got = sax.symbols(paa, sax.breakpoints(a))
    # values within 1e-9 of a breakpoint may round either way between the two computations
    near = np.min(np.abs(paa[:, None] - sax.breakpoints(a)[None]), axis=1) < 1e-9
    assert [g for g, n in zip(got, near) if not n] == [e for e, n in zip(expected, near) if not n]
    word = sax.word_ids(got[None], a)[0]
    assert sax.word_digits(np.array([word]), a, w)[0].tolist() == got.tolist()


def test_value_on_a_breakpoint_takes_the_upper_symbol():
    cuts = sax.breakpoints(3)
    assert sax.symbols(cuts, cuts).tolist() == [1, 2]
    dist = sax.interval_distance(cuts, cuts)
    assert dist[0, 1] == 0 and dist[0, 0] > 0  # on -0.43: inside b, not inside a


@pytest.mark.parametrize("a", [2, 3, 5])
def test_symbols_of_counts_the_breakpoints_reached_in_the_values_dtype(a):
    cuts = sax.breakpoints(a)
    on = cuts.astype(np.float32)  # each cut rounded to float32: reached in float32
    values = np.concatenate([on, np.nextafter(on, -np.inf), [-9, 0, 9]]).astype(np.float32)
    counted = (values[:, None] >= on[None, :]).sum(axis=1)
    assert sax.symbols_of(values, cuts).tolist() == counted.tolist()
    assert sax.symbols_of(values[None], cuts).shape == (1, len(values))
    import torch  # the array-API path (a device's arrays) agrees

    assert sax.symbols_of(torch.from_numpy(values), cuts).tolist() == counted.tolist()


def test_word_labels():
    assert sax.word_label(np.array([0, 2, 1, 0, 1])) == "acbab"
    assert sax.word_ids(np.array([[0, 2, 1, 0, 1]]), 3)[0] == 0 * 81 + 2 * 27 + 1 * 9 + 0 + 1
