"""BC, SC, TC and the neuron metrics on hand-worked traces, plus property tests."""

from __future__ import annotations

from statistics import NormalDist

import numpy as np
import pytest
from helpers import fit_profile, make_trace
from hypothesis import assume, example, given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from pytest_rnncov import (
    BC,
    KMNC,
    NBC,
    NC,
    SC,
    SNAC,
    TC,
    DegenerateProfile,
    InvalidArgument,
    InvalidInput,
    RNNCovWarning,
)
from pytest_rnncov.core import sax
from pytest_rnncov.core.metrics import Signals, make_metric


def update(metric, trace, window, start=0):
    return metric.update(Signals(trace, window), np.arange(start, start + trace.batch_size))


# -- BC -----------------------------------------------------------------------------------
# training f, 2 inputs x 3 steps x 2 units; f/avg per step: x0 = 0.25, 0.5, 0.75;
# x1 = 0.5, 0.5, 0.5  ->  min 0.25, max 0.75 over the window (0, 2)
F_TRAIN = [
    [[0.25, 0.25], [0.5, 0.5], [0.75, 0.75]],
    [[0.5, 0.5], [0.5, 0.5], [0.5, 0.5]],
]
# test input f/avg per step 0.75, 0.625, 0.5 -> N_m = (v - 0.25) / 0.5 = 1.0, 0.75, 0.5
F_TEST = [[[0.75, 0.75], [0.5, 0.75], [0.5, 0.5]]]


def test_bc_by_hand():
    profile = fit_profile(make_trace(f=F_TRAIN))
    assert (profile.stats("f", "avg").min, profile.stats("f", "avg").max) == (0.25, 0.75)
    bc = BC(alpha_max=0.8, alpha_min=0.5).bind(profile)
    assert bc.total == 6  # 3 steps x (max, min)
    fitness = bc.fitness(Signals(make_trace(f=F_TEST), (0, 2)))
    # max: 0.8 - N = -0.2, 0.05, 0.3 ; min: N - 0.5 = 0.5, 0.25, 0.0
    np.testing.assert_allclose(fitness, [[-0.2, 0.05, 0.3, 0.5, 0.25, 0.0]], atol=1e-12)
    assert update(bc, make_trace(f=F_TEST), (0, 2)) == 2
    assert bc.covered_ids() == [0, 5]  # t=0 N>=0.8 and t=2 N<=0.5 (on the bound counts)
    assert bc.rate == pytest.approx(2 / 6)
    assert [bc.label(i) for i in (0, 5)] == ["t=0 N>=0.8", "t=2 N<=0.5"]
    assert bc.best_input_[1] == 0 and bc.best_fitness_[1] == pytest.approx(0.05)


# -- SC -----------------------------------------------------------------------------------
# training h: x0 = [[0.5,-0.25],[0.25,-0.5],[0,0]] -> delta 0.75, 0.5, 0.75 ; net 0.25,0.25,0
#             x1 = [[1,0],[0,0],[0,0]]               -> delta 1, 1, 0          ; net 1, 0, 0
# delta: min 0, max 1.  delta_net: x0 0.25, 0, 0.25 ; x1 1, 1, 0 -> min 0, max 1
H_TRAIN = [[[0.5, -0.25], [0.25, -0.5], [0.0, 0.0]], [[1.0, 0.0], [0.0, 0.0], [0.0, 0.0]]]
# test h: pos 0.5, 0.75, 0 ; neg -0.25, -0.5, 0 -> delta 0.75, 0.5, 1.25 ; delta_net .25, 0, .25
H_TEST = [[[0.5, -0.25], [0.75, -0.5], [0.0, 0.0]]]


def test_sc_paper_and_testrnn_variants_by_hand():
    profile = fit_profile(make_trace(h=H_TRAIN))
    sc = SC(alpha_sc=0.6).bind(profile)
    np.testing.assert_allclose(
        sc.fitness(Signals(make_trace(h=H_TEST), (0, 2))), [[0.6 - 0.75, 0.6 - 0.5, 0.6 - 1.25]]
    )
    update(sc, make_trace(h=H_TEST), (0, 2))
    assert sc.covered_ids() == [0, 2]
    sc_tool = make_metric("SC", preset="testrnn").bind(profile)
    assert sc_tool.describe() == "SC(h/delta_net, alpha_sc=0.6)"
    update(sc_tool, make_trace(h=H_TEST), (0, 2))
    assert sc_tool.covered == 0  # N_m = 0.25, 0, 0.25 < 0.6


# -- TC -----------------------------------------------------------------------------------
def test_tc_by_hand():
    # training h/net is 1 at every step of x0 and 3 at every step of x1: mu 2, sigma 1
    train = make_trace(h=[[[1.0]] * 4, [[3.0]] * 4])
    profile = fit_profile(train)
    assert profile.zscore("h", "net") == (2.0, 1.0)
    tc = TC(w=2, a=3).bind(profile)
    assert tc.total == 9
    # test curve 2, 2, 4, 4 -> z 0, 0, 2, 2 -> PAA 0, 2 -> symbols b, c -> word "bc" = 1*3 + 2
    test = make_trace(h=[[[2.0], [2.0], [4.0], [4.0]]])
    signals = Signals(test, (0, 3))
    assert tc.words(signals).tolist() == [5]
    assert tc.label(5) == "bc"
    cut = NormalDist().inv_cdf(2 / 3)  # 0.4307
    fitness = tc.fitness(signals)[0]
    # to "aa": 0 is cut above a's upper end, 2 is 2 + cut above it
    assert fitness[0] == pytest.approx(cut + 2 + cut)
    # to "cb": 0 is cut below c's lower end; 2 is 2 - cut above b's upper end
    assert fitness[2 * 3 + 1] == pytest.approx(cut + (2 - cut))
    assert fitness[5] == 0
    update(tc, test, (0, 3))
    assert tc.covered_ids() == [5]


def test_tc_w_larger_than_the_window_by_hand():
    # training h/net over the window (1, 3): 0, 2, 0 and 2, 0, 2 -> mu 1, sigma 1
    train = [[[1.5, 1.5], [0, 0], [1, 1], [0, 0]], [[1.5, 1.5], [1, 1], [0, 0], [1, 1]]]
    profile = fit_profile(make_trace(h=train), window=(1, 3))
    with pytest.warns(RNNCovWarning, match=r"TC w=5 over a window of 3 steps: .* TC\(w=3\)") as w:
        tc = TC(w=5).bind(profile)  # 3 steps, 5 segments: each step spans 5/3 segments
    assert w[0].filename == __file__  # the warning names the user's call, not the package
    assert tc.total == 243
    # test h/net 0, 2, 2 -> z = -1, 1, 1; each repeated 5 times, blocks of 3:
    # (-1-1-1)/3, (-1-1+1)/3, 1, 1, 1 = -1, -1/3, 1, 1, 1 -> a b c c c
    test = make_trace(h=[[[5, 5], [0, 0], [1, 1], [1, 1]]])
    np.testing.assert_allclose(tc.paa(Signals(test, (1, 3))), [[-1, -1 / 3, 1, 1, 1]], atol=1e-12)
    update(tc, test, (1, 3))
    assert tc.covered_ids() == [0 * 81 + 1 * 27 + 2 * 9 + 2 * 3 + 2]
    assert tc.label(53) == "abccc"


def test_tc_segment_mean_equal_to_the_profile_mean_takes_the_upper_symbol():
    # training h/net (1 unit) 0, 1, 2 -> mu 1, sigma sqrt(2/3); the test curve 0, 0, 3 has
    # mean 1 = mu: with w=1 its PAA value is exactly 0, a breakpoint for a=2 and a=4, and a
    # value on a breakpoint takes the upper symbol (z-scores weighted by a rounded 1/3 had
    # summed to -8e-18: the lower one)
    profile = fit_profile(make_trace(h=[[[0.0], [1.0], [2.0]]]))
    signals = Signals(make_trace(h=[[[0.0], [0.0], [3.0]]]), profile.window_)
    for a, upper in ((2, 1), (4, 2)):
        tc = TC(w=1, a=a).bind(profile)
        assert tc.paa(signals).tolist() == [[0.0]]
        assert tc.words(signals).tolist() == [upper]


# -- neuron metrics -------------------------------------------------------------------------
def test_neuron_metrics_by_hand():
    # training h (2 inputs, 1 step, 2 units): unit 0 spans [0, 1], unit 1 is constant 0.5
    profile = fit_profile(make_trace(h=[[[0.0, 0.5]], [[1.0, 0.5]]]))
    test = make_trace(h=[[[0.95, -0.8]], [[0.05, 0.0]]])
    window = (0, 0)
    nc = NC().bind(profile)
    update(nc, test, window)
    assert nc.covered_ids() == [0]  # 0.95 > 0 ; unit 1 never > 0 (0.0 is not > 0)
    kmnc = KMNC(k=10).bind(profile)
    assert kmnc.total == 10  # unit 1 is constant: no sections
    update(kmnc, test, window)
    assert kmnc.covered_ids() == [0, 9]  # 0.05 -> section 0, 0.95 -> section 9
    nbc = NBC().bind(profile)  # conditions: lower (u0, u1), upper (u0, u1)
    update(nbc, test, window)
    assert nbc.covered_ids() == [1, 2]  # -0.8 < -0.7 on unit 1 ; 0.95 > 0.7 on unit 0
    snac = SNAC().bind(profile)
    update(snac, test, window)
    assert snac.covered_ids() == [0]
    nbc_profile = NBC(bounds="profile").bind(profile)
    update(nbc_profile, test, window)
    assert nbc_profile.covered_ids() == [1]  # only -0.8 leaves [0.5, 0.5]; 0.95 < 1


def test_kmnc_top_of_range_is_in_the_last_section():
    profile = fit_profile(make_trace(h=[[[0.0]], [[1.0]]]))
    kmnc = KMNC(k=4).bind(profile)
    update(kmnc, make_trace(h=[[[1.0]], [[0.5]], [[1.5]]]), (0, 0))
    assert kmnc.covered_ids() == [2, 3]


def test_kmnc_maximum_is_in_the_last_section_whatever_the_rounding():
    # (max - min) * (10 / (max - min)) rounds to 10.000000000000002 for this range: the
    # training maximum itself was counted above the range, covering nothing
    lo, hi = np.float32(-0.2585725486278534), np.float32(0.3289696276187897)
    assert (np.float64(hi) - np.float64(lo)) * (10 / (np.float64(hi) - np.float64(lo))) > 10
    profile = fit_profile(make_trace(h=[[[lo]], [[hi]]]))
    for value, covered in [(hi, [9]), (np.nextafter(hi, np.float32(np.inf)), []), (lo, [0])]:
        kmnc = KMNC(k=10).bind(profile)
        update(kmnc, make_trace(h=[[[value]]]), (0, 0))
        assert kmnc.covered_ids() == covered, value
        assert (kmnc.fitness(Signals(make_trace(h=[[[value]]]), (0, 0)))[0] <= 0).sum() == len(
            covered
        )


@given(
    bounds=st.lists(
        st.floats(-1e3, 1e3, width=32, allow_subnormal=False), min_size=2, max_size=2, unique=True
    ),
    k=st.integers(1, 13),
)
def test_kmnc_covers_a_section_exactly_for_values_inside_the_range(bounds, k):
    lo, hi = np.float32(min(bounds)), np.float32(max(bounds))
    profile = fit_profile(make_trace(h=[[[lo]], [[hi]]]))
    inside = [lo, hi, np.nextafter(hi, lo), np.nextafter(lo, hi)]
    outside = [np.nextafter(hi, np.float32(np.inf)), np.nextafter(lo, np.float32(-np.inf))]
    kmnc = KMNC(k=k).bind(profile)
    fitness = kmnc.fitness(Signals(make_trace(h=[[[v]] for v in inside + outside]), (0, 0)))
    assert ((fitness <= 0).sum(axis=1) == [1, 1, 1, 1, 0, 0]).all()
    assert fitness[0, 0] <= 0 and fitness[1, k - 1] <= 0  # min: first section, max: last


# -- parameters and profiles ----------------------------------------------------------------
@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: BC(alpha_max=1.5), r"alpha_max=1\.5 must be a number in \[0, 1\]"),
        (lambda: BC(alpha_min=-0.1), "alpha_min=-0.1"),
        (lambda: SC(alpha_sc=90), "alpha_sc=90"),
        (lambda: TC(w=0), "w=0 must be an integer >= 1"),
        (lambda: TC(a=1), "a=1 must be an integer >= 2"),
        (lambda: TC(a=27), "a=27 must be an integer <= 26"),  # one letter a-z per symbol
        (lambda: BC(component="q"), "component='q' is not a recurrent-cell component"),
        (lambda: BC(alpha_max=float("nan")), "alpha_max=nan must be a number in"),
        (lambda: BC(alpha_max="0.8"), r"alpha_max='0.8' \(str\) must be a number"),
        (lambda: TC(w=2.0), r"w=2.0 \(float\) must be an integer"),
        (lambda: TC(w=15, a=3), "14,348,907 words, more than the 1,048,576 conditions"),
        (lambda: NC(threshold=float("nan")), "threshold=nan must be a finite number"),
        (lambda: KMNC(k="10"), r"k='10' \(str\) must be an integer"),
        (lambda: make_metric("XYZ"), "unknown metric 'XYZ'"),
        (lambda: make_metric("BC", preset="tool"), "preset='tool'"),
        (lambda: NBC(lower=1, upper=0), "must be below"),
        (lambda: NBC(bounds="wide"), "bounds='wide'"),
        # its lower side could never be covered (a rate capped at 50%, an inf fitness)
        (lambda: NBC(lower=-float("inf"), upper=-10), r"lower=-inf leaves half .*use SNAC\(upper"),
    ],
)
def test_bad_parameters(make, message):
    with pytest.raises(InvalidArgument, match=message):
        make()


def test_degenerate_signal_is_refused_by_name():
    profile = fit_profile(make_trace(f=F_TRAIN))  # h is all zeros
    with pytest.raises(DegenerateProfile, match=r"signal h/delta is constant \(0\.0\)"):
        SC().bind(profile)
    with pytest.raises(DegenerateProfile, match=r"signal h/net does not vary \(sigma = 0\.0\)"):
        TC(w=2).bind(profile)


# -- properties -------------------------------------------------------------------------------
RNG = np.random.default_rng(42)
TRAIN = make_trace(**{c: RNG.normal(size=(20, 6, 3)) for c in "fioch"})
PROFILE = fit_profile(TRAIN, window=(1, 5))
ALL = [BC(alpha_min=0.3), SC(), TC(w=3), NC(), KMNC(k=4), NBC(), SNAC()]
batches = hnp.arrays(
    np.float32,
    st.tuples(st.integers(1, 6), st.just(6), st.just(3)),
    elements=st.floats(-3, 3, width=32),
)


def as_trace(values):
    return make_trace(**{c: values * (1 + k) for k, c in enumerate("fioch")})


@given(st.lists(batches, min_size=1, max_size=3))
def test_rates_in_unit_interval_and_monotone(batch_list):
    metrics = [m.bind(PROFILE) for m in ALL]
    previous = {m.name: m.covered_.copy() for m in metrics}
    start = 0
    for values in batch_list:
        trace = as_trace(values)
        for m in metrics:
            update(m, trace, PROFILE.window_, start)
            assert 0 <= m.rate <= 1
            assert (m.covered_ >= previous[m.name]).all()  # nothing is ever uncovered
            previous[m.name] = m.covered_.copy()
        start += len(values)


@given(batches, batches)
def test_merge_equals_union(first, second):
    for spec in ALL:
        a, b, both = spec.bind(PROFILE), spec.bind(PROFILE), spec.bind(PROFILE)
        update(a, as_trace(first), PROFILE.window_)
        update(b, as_trace(second), PROFILE.window_)
        update(both, as_trace(first), PROFILE.window_)
        update(both, as_trace(second), PROFILE.window_, len(first))
        union = a.covered_ | b.covered_
        a.merge(b)
        np.testing.assert_array_equal(a.covered_, union)
        np.testing.assert_array_equal(a.covered_, both.covered_)
        np.testing.assert_array_equal(a.times_, both.times_)
        c = spec.bind(PROFILE)
        c.merge_state(both.state_)
        np.testing.assert_array_equal(c.covered_, both.covered_)


@given(batches)
def test_fitness_nonpositive_exactly_when_covered(values):
    trace = as_trace(values)
    signals = Signals(trace, PROFILE.window_)
    for spec in ALL:
        m = spec.bind(PROFILE)
        fitness = m.fitness(signals)
        if isinstance(m, (BC, SC)):
            n = m.normalised(signals)
            hit = n >= m.alpha_max if isinstance(m, BC) else n >= m.alpha_sc
            if isinstance(m, BC):
                hit = np.concatenate([hit, n <= m.alpha_min], axis=1)
            np.testing.assert_array_equal(fitness <= 0, hit)
        if isinstance(m, TC):
            onehot = np.zeros_like(fitness, bool)
            onehot[np.arange(len(values)), m.words(signals)] = True
            np.testing.assert_array_equal(fitness <= 0, onehot)
        if type(m) is NBC:
            v = signals.neurons().astype(np.float64)
            np.testing.assert_array_equal(fitness <= 0, np.concatenate([v < -0.7, v > 0.7], 1))
        if isinstance(m, NC):
            np.testing.assert_array_equal(fitness <= 0, signals.neurons() > 0)
        update(m, trace, PROFILE.window_)
        np.testing.assert_array_equal(m.covered_, (fitness <= 0).any(axis=0))
        np.testing.assert_array_equal(m.best_fitness_ <= 0, m.covered_)


@given(batches, st.integers(2, 5), st.integers(2, 4))
def test_tc_words_equal_independent_paa_sax(values, w, a):
    trace = as_trace(values)
    tc = TC(w=w, a=a).bind(PROFILE)
    signals = Signals(trace, PROFILE.window_)
    mu, sigma = PROFILE.zscore("h", "net")
    cuts = [NormalDist().inv_cdf(k / a) for k in range(1, a)]
    for row, word in zip(signals.get("h", "net"), tc.words(signals)):
        z = (row - mu) / sigma
        repeated = np.repeat(z, w)
        paa = repeated.reshape(w, len(z)).mean(axis=1)
        if np.min(np.abs(paa[:, None] - np.array(cuts)[None])) < 1e-9:
            continue  # on a breakpoint up to rounding
        letters = [sum(v >= c for c in cuts) for v in paa]
        assert word == sum(d * a ** (w - 1 - j) for j, d in enumerate(letters))
        assert tc.label(word) == sax.word_label(np.array(letters))


def test_numpy_scalars_are_accepted_as_parameters():
    assert BC(alpha_max=np.float32(0.75)).alpha_max == 0.75
    assert TC(w=np.int64(4), a=np.int32(3)).describe() == "TC(h/net, w=4, a=3)"


def assert_evaluate_equals_dense(metric, signals):
    """The fast evaluation equals the dense (rows x conditions) fitness, bit for bit."""
    result = metric.evaluate(signals, fitness=True)
    dense = metric.fitness(signals)
    np.testing.assert_array_equal(result.counts, (dense <= 0).sum(axis=0))
    rows, conditions = result.hits()
    expected_rows, expected_conditions = np.nonzero(dense <= 0)
    order = np.lexsort((conditions, rows))
    np.testing.assert_array_equal(rows[order], expected_rows)
    np.testing.assert_array_equal(conditions[order], expected_conditions)
    np.testing.assert_array_equal(result.best, dense.min(axis=0))
    # the best row gives the lowest fitness (the first such row, except for KMNC, whose
    # nearest-value search may pick another row of equal fitness after rounding)
    chosen = dense[result.best_row, np.arange(dense.shape[1])]
    np.testing.assert_array_equal(chosen, dense.min(axis=0))
    if not isinstance(metric, KMNC):
        np.testing.assert_array_equal(result.best_row, dense.argmin(axis=0))
    for condition in range(min(metric.total, 7)):
        np.testing.assert_array_equal(
            metric.condition_fitness(signals, condition), dense[:, condition]
        )
    counts_only = metric.evaluate(signals, fitness=False)  # BC, SC: one comparison per bound
    np.testing.assert_array_equal(counts_only.counts, (dense <= 0).sum(axis=0))
    rows, conditions = counts_only.hits()
    np.testing.assert_array_equal(
        np.sort(rows * dense.shape[1] + conditions), np.flatnonzero(dense <= 0)
    )


@given(batches)
def test_fast_evaluation_equals_the_dense_fitness(values):
    signals = Signals(as_trace(values), PROFILE.window_)
    for spec in ALL:
        assert_evaluate_equals_dense(spec.bind(PROFILE), signals)


def test_step_metric_bounds_by_hand():
    """f/avg over min 0, max 2: BC(alpha_max=0.5) is covered from v = 1 on (1 / 2 = 0.5
    exactly; any float below 1 halves exactly to below 0.5); alpha_min=0.25 up to v = 0.5,
    so the least value not covering it is the float64 after 0.5."""
    profile = fit_profile(make_trace(f=[[[0.0, 0.0]] * 3, [[2.0, 2.0]] * 3]))
    bc = BC(alpha_max=0.5, alpha_min=0.25).bind(profile, track_fitness=False)
    assert bc.bounds_ == [1.0, np.nextafter(0.5, np.inf)]
    below, above = np.nextafter(np.float32(1), 0), np.nextafter(np.float32(0.5), 1)  # traces
    f = [[[v, v]] * 3 for v in (1.0, below, 0.5, above, 2.0, 0.0)]
    assert update(bc, make_trace(f=f), (0, 2)) == 6
    # rows 0 and 4 reach the top at each of 3 steps, rows 2 and 5 the bottom
    np.testing.assert_array_equal(bc.times_, [2, 2, 2, 2, 2, 2])


def test_step_metrics_count_alike_where_the_profile_range_overflows():
    """A profile from -1e308 to 1e308 (built in memory: neither a fit nor a profile file
    gives one) has a range of inf: N is then 0 for finite
    values (NaN at +-inf), not monotone, so no bound is taken and the counts are the
    fitness path's (BC's alpha_min condition and SC at alpha_sc=0 hold for 0.5)."""
    from pytest_rnncov.core.profile import SignalStats
    from pytest_rnncov.core.trace import Trace

    def trace(values):
        return Trace({"h": np.array(values, np.float64).reshape(-1, 3, 1)}, cell="simple_rnn")

    profile = fit_profile(trace([[1.0] * 3, [-1.0] * 3]))
    profile.signals_["h/avg"] = SignalStats(-1e308, 1e308, 0.0, 1.0)
    tests = trace([[0.5] * 3] * 4)
    counts = {}
    for track in (True, False):
        bc = BC("h", "avg", alpha_max=0.8, alpha_min=0.2).bind(profile, track_fitness=track)
        sc = SC("h", "avg", alpha_sc=0.0).bind(profile, track_fitness=track)
        assert (bc.bounds_, sc.bounds_) == (None, None)
        for metric in (bc, sc):
            update(metric, tests, (0, 2))
        counts[track] = (bc.times_.tolist(), sc.times_.tolist())
    assert counts[True] == counts[False] == ([0, 0, 0, 4, 4, 4], [4, 4, 4])


@given(
    st.floats(-1e6, 1e6),
    st.floats(1e-6, 1e6),
    st.floats(0.0, 1.0),
    st.lists(st.floats(-2e6, 2e6), min_size=1, max_size=20),
)
def test_step_metric_bounds_split_covering_values_exactly(low, width, alpha, values):
    """Values at, just below and just above each bound are covered exactly as the dense
    fitness says (the bisection found the float where coverage starts)."""
    assume(np.float32(low + width) > np.float32(low))  # traces are float32
    profile = fit_profile(make_trace(f=[[[low, low]], [[low + width, low + width]]]))
    metrics = [
        BC("f", "avg", alpha_max=max(alpha, 1e-9)).bind(profile, track_fitness=False),
        BC("f", "avg", alpha_max=1.0, alpha_min=min(alpha, 0.99)).bind(
            profile, track_fitness=False
        ),
        SC("f", "avg", alpha_sc=alpha).bind(profile, track_fitness=False),
    ]
    for metric in metrics:
        near = [
            np.nextafter(b, d) for b in metric.bounds_ if np.isfinite(b) for d in (-np.inf, np.inf)
        ]
        near += [b for b in metric.bounds_ if np.isfinite(b)]
        v = np.array([*values, *near], np.float64)[:, None]
        np.testing.assert_array_equal(metric._hits(v), metric._block(v) <= 0)


def test_step_metric_float32_bounds_by_hand():
    """Float32 signals (Keras on JAX, the device path) are normalised in float32; their
    bounds are float32 values found the same way. Over min 0, max 2 they are those of
    float64 (halving is exact in either type). Over min 0.2, max 1.1 they are not: for
    alpha_max 0.5 the float32 0.65 (0.64999998 in float64) is covered in float32, where
    (0.65 - 0.2) / 0.9 rounds to 0.45 / 0.9 = 0.5, but lies below the float64 bound (in
    float64 0.65 - 0.2 = 0.45 and 1.1 - 0.2 = 0.9000000000000001 give 0.49999999999999994
    at 0.65 itself, so coverage starts one float64 later)."""
    from pytest_rnncov.core.profile import SignalStats

    profile = fit_profile(make_trace(f=[[[0.0, 0.0]] * 3, [[2.0, 2.0]] * 3]))
    bc = BC(alpha_max=0.5, alpha_min=0.25).bind(profile, track_fitness=False)
    half_up = np.nextafter(np.float32(0.5), np.float32(np.inf))
    assert bc.bounds32_ == [np.float32(1.0), half_up]
    assert all(type(b) is np.float32 for b in bc.bounds32_)
    profile.signals_["f/avg"] = SignalStats(0.2, 1.1, 0.5, 1.0)
    bc = BC(alpha_max=0.5).bind(profile, track_fitness=False)
    assert bc.bounds_ == [np.nextafter(0.65, 1.0)] and bc.bounds32_ == [np.float32(0.65)]
    v = np.array([[0.65], [np.nextafter(np.float32(0.65), np.float32(0))]], np.float32)
    np.testing.assert_array_equal(bc._block(v) <= 0, [[True], [False]])
    np.testing.assert_array_equal(bc._hits(v), [[True], [False]])
    assert not (v.astype(np.float64) >= bc.bounds_[0]).any()  # float64's bound misses 0.65


@given(
    st.floats(-1e30, 1e30),
    st.floats(1e-300, 1e300),
    st.floats(0.0, 1.0),
    st.lists(st.floats(width=32, allow_nan=False, allow_infinity=False), min_size=1, max_size=20),
)
@example(low=0.0, span=1e-50, alpha=0.5, values=[0.0])  # the range is 0 in float32
@example(low=0.0, span=1e39, alpha=0.5, values=[1e38])  # and inf
@example(low=-1e38, span=3e38, alpha=0.9, values=[3e38])  # v - low overflows float32
def test_step_metric_float32_bounds_split_covering_values_exactly(low, span, alpha, values):
    """Float32 values at, just below and just above each float32 bound are covered
    exactly as their float32 fitness says, for any profile range; where that range is
    not a positive finite float32 there are no float32 bounds (the fitness path counts)."""
    from pytest_rnncov.core.profile import SignalStats

    assume(low + span > low)
    profile = fit_profile(make_trace(f=[[[0.0, 0.0]], [[1.0, 1.0]]]))
    profile.signals_["f/avg"] = SignalStats(low, low + span, 0.0, 1.0)
    metrics = [
        BC("f", "avg", alpha_max=max(alpha, 1e-9)).bind(profile, track_fitness=False),
        BC("f", "avg", alpha_max=1.0, alpha_min=min(alpha, 0.99)).bind(
            profile, track_fitness=False
        ),
        SC("f", "avg", alpha_sc=alpha).bind(profile, track_fitness=False),
    ]
    with np.errstate(over="ignore"):
        range32 = np.float32(low + span - low)
    for metric in metrics:
        if metric.bounds32_ is None:
            assert not (np.isfinite(range32) and range32 > 0)
            continue
        swapped = np.array(values, ">f4")[:, None]  # float32 of the other byte order
        with np.errstate(over="ignore", invalid="ignore"):
            np.testing.assert_array_equal(metric._hits(swapped), metric._block(swapped) <= 0)
        near = [
            np.nextafter(b, np.float32(d))
            for b in metric.bounds32_
            if np.isfinite(b)
            for d in (-np.inf, np.inf)
        ]
        near += [b for b in metric.bounds32_ if np.isfinite(b)]
        v = np.array([*values, *near], np.float32)[:, None]
        with np.errstate(over="ignore", invalid="ignore"):
            np.testing.assert_array_equal(metric._hits(v), metric._block(v) <= 0)


def test_float32_signals_count_by_their_bounds_as_the_fitness_says():
    """The signals of a JAX trace come to the host in float32: BC and SC count them with
    one comparison per bound (the fitness is not computed), as the dense fitness counts."""
    import jax.numpy as jnp

    from pytest_rnncov import Trace

    rng = np.random.default_rng(6)
    train = make_trace(cell="simple_rnn", h=np.tanh(rng.normal(size=(40, 6, 8))))
    profile = fit_profile(train, window=(1, 4))
    tests = np.tanh(rng.normal(size=(300, 6, 8)) * 1.5).astype(np.float32)
    signals = Signals(Trace({"h": jnp.asarray(tests)}, cell="simple_rnn"), profile.window_)
    assert signals.get("h", "net").dtype == np.float32
    for spec in (BC("h", "net", alpha_min=0.2), SC("h", "delta_net", alpha_sc=0.4)):
        metric = spec.bind(profile, track_fitness=False)
        assert metric.bounds32_ is not None
        assert_evaluate_equals_dense(metric, signals)
        fitness_blocks = []
        block = metric._block
        metric._block = lambda values: fitness_blocks.append(1) or block(values)
        counts = metric.evaluate(signals, fitness=False).counts
        assert fitness_blocks == [] and counts.sum() > 0


@given(
    hnp.arrays(
        bool,
        st.tuples(st.integers(0, 1100), st.integers(0, 12)),
        elements=st.booleans(),
    ),
    st.booleans(),
)
@example(np.ones((765, 3), bool), False)  # three whole blocks of 255 rows, every row true
@example(np.ones((300, 0), bool), False)  # no column
def test_column_counts_equal_count_nonzero(hit, transposed):
    from pytest_rnncov.core.metrics.base import column_counts

    hit = np.ascontiguousarray(hit.T).T if transposed else hit  # a strided view
    counts = column_counts(hit)
    assert counts.dtype == np.int64
    np.testing.assert_array_equal(counts, np.count_nonzero(hit, axis=0))


@pytest.mark.filterwarnings("error")
def test_neuron_bounds_at_the_float_limits_count_without_warnings():
    """Thresholds at float64's largest value, or beyond float32's range for a JAX trace's
    float32 states: the neighbour or the cast overflows to inf, which no value reaches, and
    numpy's overflow warning (an error under -W error) is not raised. h of 0.5 and 2.0
    exceeds none of these bounds: nothing is covered."""
    import jax.numpy as jnp

    from pytest_rnncov import Trace

    largest = float(np.finfo(np.float64).max)
    profile = fit_profile(make_trace(h=[[[0.0]], [[1.0]]]))
    host = make_trace(h=[[[0.5]], [[2.0]]])
    device = Trace({n: jnp.asarray(v) for n, v in host.components.items()}, cell="lstm")
    metrics = [
        NC(threshold=largest),
        SNAC(upper=largest),
        NBC(lower=-largest, upper=largest),
        SNAC(upper=1e39),
        SNAC(upper=3.4028235677973362e38),  # its neighbour above rounds to float32's inf
        NBC(lower=-1e39, upper=1e39),
    ]
    for spec in metrics:
        for trace in (host, device):
            metric = spec.bind(profile)
            metric.update(Signals(trace, profile.window_), np.arange(2))
            assert list(metric.covered_ids()) == [], spec.describe()
            assert (metric.best_fitness_ > 0).all()


def test_kmnc_evaluation_on_section_boundaries_equals_the_dense_fitness():
    profile = fit_profile(make_trace(h=[[[0.0, 0.0]], [[1.0, 2.0]]]))
    values = [0.0, 0.25, 0.5, 0.75, 1.0, -0.5, 1.5, 0.3, 0.25, 2.0]
    test = make_trace(h=[[[v, 2 * v]] for v in values])
    assert_evaluate_equals_dense(KMNC(k=4).bind(profile), Signals(test, (0, 0)))
    assert_evaluate_equals_dense(KMNC(k=1).bind(profile), Signals(test, (0, 0)))


def test_a_non_finite_signal_is_refused_not_counted():
    profile = fit_profile(make_trace(h=[[[1.0]] * 4, [[3.0]] * 4]))
    tc = TC(w=2).bind(profile)
    poisoned = make_trace(h=[[[2.0], [np.nan], [4.0], [4.0]], [[1.0]] * 4])
    with pytest.raises(InvalidInput, match=r"h/net signal holds NaN or inf for inputs \[0\]"):
        update(tc, poisoned, (0, 3))
    assert tc.covered == 0


@pytest.mark.filterwarnings("error")  # as a project running pytest -W error
def test_an_infinite_state_is_refused_by_name_under_warnings_as_errors():
    # inf - inf in the negative parts' sums raised numpy's RuntimeWarning first, which
    # -W error turned into the error instead of the project's
    good = make_trace(h=[[[1.0, -1.0]] * 3, [[3.0, -2.0]] * 3])
    infinite = make_trace(h=[[[2.0, -1.0], [np.inf, -1.0], [4.0, -1.0]], [[1.0, -1.0]] * 3])
    sc = SC().bind(fit_profile(good))  # SC reads h/delta: the positive and negative parts
    with pytest.raises(InvalidInput, match=r"h/delta signal holds NaN or inf for inputs \[0\]"):
        update(sc, infinite, (0, 2))
    with pytest.raises(InvalidArgument, match=r"signal of the training inputs holds NaN or inf"):
        fit_profile(good, infinite)


@given(
    st.floats(allow_nan=False, width=64), st.lists(st.floats(allow_nan=False, width=32), min_size=1)
)
@example(threshold=float("inf"), values=[float("inf")])  # nothing is above +inf, not even inf
@example(threshold=float("-inf"), values=[float("-inf"), 0.0])
# within float32's range, rounding to its largest (lowest) value, whose neighbour beyond
# overflowed: numpy's RuntimeWarning, an error under -W error
@example(threshold=3.402823364973241e38, values=[0.0])
@example(threshold=-3.402823364973241e38, values=[0.0])
def test_float32_thresholds_compare_exactly_like_float64(threshold, values):
    from pytest_rnncov.core.metrics.neuron import float32_at_least, float32_at_most

    v = np.array(values, np.float32)
    np.testing.assert_array_equal(v.astype(np.float64) > threshold, v > float32_at_most(threshold))
    np.testing.assert_array_equal(v.astype(np.float64) < threshold, v < float32_at_least(threshold))


def test_neuron_bounds_at_zero_hold_on_jax_arrays():
    """NC tested h > 0 as h >= the smallest float32 above 0, a subnormal that XLA on the
    CPU flushes to 0: on the Keras-on-JAX device path every h of exactly 0 (a masked step,
    a dead ReLU unit) counted as above 0, and so for NBC/SNAC with a profile bound of 0.
    The device path's covered conditions equal the host path's."""
    import jax.numpy as jnp

    from pytest_rnncov import Trace

    train = make_trace(h=[[[0.0, 1.0], [0.0, 1.0]], [[0.0, -1.0], [0.0, -1.0]]])
    profile = fit_profile(train)  # unit 0: always 0 (its max and min are 0)
    h = np.array([[[0.0, 0.5], [0.0, -0.2]], [[0.0, 2.0], [0.0, 0.0]]], np.float32)
    host = make_trace(h=h)
    device = Trace({n: jnp.asarray(v) for n, v in host.components.items()}, cell="lstm")
    for metric in (NC(), NC(threshold=0.3), SNAC(bounds="profile"), NBC(bounds="profile")):
        covered = []
        for trace in (host, device):
            bound = metric.bind(profile)
            bound.update(Signals(trace, profile.window_), np.arange(2))
            covered.append(list(bound.covered_ids()))
        assert covered[0] == covered[1], (metric.describe(), covered)
    nc = NC().bind(profile)  # by hand: unit 1 above 0 at step 0 only (0.5, 2.0; -0.2, 0.0)
    nc.update(Signals(device, profile.window_), np.arange(2))
    assert list(nc.covered_ids()) == [1]
