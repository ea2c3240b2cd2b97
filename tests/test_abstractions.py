"""Abstractions (SPEC section 2) and windows (SPEC section 3) on hand-computed cases."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import make_trace

from pytest_rnncov import InvalidArgument
from pytest_rnncov.core import abstractions, arrays
from pytest_rnncov.core.abstractions import ABSTRACTIONS, resolve_window, signal
from pytest_rnncov.core.metrics import base as metrics_base
from pytest_rnncov.core.metrics.base import Signals
from pytest_rnncov.core.trace import Trace, concat_traces

# one input, 3 steps, 2 units:
#   step 0: [0.5, -0.25]  pos 0.5   neg -0.25  net |0.25| = 0.25  avg 0.125
#   step 1: [0.75, -0.5]  pos 0.75  neg -0.5   net 0.25           avg 0.125
#   step 2: [0, 0]        pos 0     neg 0      net 0              avg 0
H = [[[0.5, -0.25], [0.75, -0.5], [0.0, 0.0]]]


@pytest.mark.parametrize(
    ("abstraction", "expected"),
    [
        ("pos", [0.5, 0.75, 0.0]),
        ("neg", [-0.25, -0.5, 0.0]),
        ("net", [0.25, 0.25, 0.0]),
        ("avg", [0.125, 0.125, 0.0]),
        # delta_t = |pos_t - pos_t-1| + |neg_t - neg_t-1|, zeros before step 0:
        # t0: 0.5 + 0.25 = 0.75; t1: 0.25 + 0.25 = 0.5; t2: 0.75 + 0.5 = 1.25
        ("delta", [0.75, 0.5, 1.25]),
        # delta_net_t = |(pos+neg)_t - (pos+neg)_t-1|: t0 0.25, t1 0, t2 0.25
        ("delta_net", [0.25, 0.0, 0.25]),
    ],
)
def test_abstractions_by_hand(abstraction, expected):
    trace = make_trace(h=H)
    np.testing.assert_allclose(signal(trace, "h", abstraction, (0, 2)), [expected])


def test_delta_inside_a_window_uses_the_step_before_it():
    trace = make_trace(h=H)
    # window (1, 2): delta at step 1 still compares with step 0
    np.testing.assert_allclose(signal(trace, "h", "delta", (1, 2)), [[0.5, 1.25]])
    np.testing.assert_allclose(signal(trace, "h", "pos", (2, 2)), [[0.0]])


@pytest.mark.parametrize("window", [(0, 2), (1, 2), (2, 2)])
def test_signals_share_the_sums_of_a_component(monkeypatch, window):
    """A batch's signals of one component read its per-step sums over units, computed once
    (BC's h/net and SC's h/delta_net read the same sums); each equals ``signal``'s."""
    trace = make_trace(h=H)
    calls = []
    original = metrics_base.step_total
    monkeypatch.setattr(
        metrics_base, "step_total", lambda *args: calls.append(1) or original(*args)
    )
    signals = Signals(trace, window)
    for abstraction in ABSTRACTIONS:
        np.testing.assert_array_equal(
            signals.get("h", abstraction), signal(trace, "h", abstraction, window)
        )
    assert len(calls) == 1


# the same input as per-step sums over its 2 units: (sum, sum of the positive parts)
H_SUMS = [[[0.25, 0.5], [0.25, 0.75], [0.0, 0.0]]]


def summed_trace(**options) -> Trace:
    return Trace({}, cell="lstm", sums={"h": np.array(H_SUMS, np.float64)}, **options)


@pytest.mark.parametrize("window", [(0, 2), (1, 2), (2, 2)])
def test_a_trace_of_sums_gives_the_signals_of_its_states(window):
    """A trace holding only h's per-step sums (the forward pass summed it) gives every
    signal the trace of h's states gives, hand-checked above."""
    summed, states = summed_trace(sum_units=2), make_trace(h=H)
    signals = Signals(summed, window)
    for abstraction in ABSTRACTIONS:
        expected = signal(states, "h", abstraction, window)
        np.testing.assert_array_equal(signals.get("h", abstraction), expected)
        np.testing.assert_array_equal(signal(summed, "h", abstraction, window), expected)


def test_a_trace_of_sums_is_a_trace():
    trace = summed_trace(sum_units=2)
    assert (trace.names, trace.batch_size, trace.n_steps, trace.units) == (("h",), 1, 3, 2)
    assert "summed=h" in repr(trace) and trace.step_sums("f") is None
    with pytest.raises(InvalidArgument, match="only the per-step sums of 'h'"):
        trace.component("h")
    with pytest.raises(AttributeError, match="only the per-step sums of 'h'"):
        trace.h  # noqa: B018
    assert not hasattr(trace, "h")
    both = concat_traces([trace, trace[0:1]])
    assert both.batch_size == 2 and both.units == 2
    np.testing.assert_array_equal(both.step_sums("h"), np.concatenate([H_SUMS, H_SUMS]))
    assert trace.to_host() is trace


def sums_alone() -> Trace:
    """The trace of H_SUMS holding the sums over units alone: (B, T, 1)."""
    return Trace({}, cell="lstm", sums={"h": np.array(H_SUMS)[..., :1]}, sum_units=2)


def test_a_trace_of_sums_alone_gives_the_signals_that_read_no_positive_parts():
    """h's per-step sums over units alone (no metric reads the positive parts) give avg,
    net and delta_net as the full sums do; pos, neg and delta, which derive from the
    positive parts, are refused by name."""
    alone, full, window = sums_alone(), summed_trace(sum_units=2), (1, 2)
    assert "summed=h (no positive parts)" in repr(alone)
    assert alone.sums_alone("h") and not full.sums_alone("h") and not alone.sums_alone("c")
    signals = Signals(alone, window)
    for abstraction in ("avg", "net", "delta_net"):
        expected = signal(full, "h", abstraction, window)
        np.testing.assert_array_equal(signals.get("h", abstraction), expected)
        np.testing.assert_array_equal(signal(alone, "h", abstraction, window), expected)
    # hand-checked from H_SUMS: sums 0.25 at step 1 and 0.0 at step 2, over 2 units
    np.testing.assert_array_equal(signals.get("h", "net"), [[0.25, 0.0]])
    np.testing.assert_array_equal(signals.get("h", "avg"), [[0.125, 0.0]])
    np.testing.assert_array_equal(signals.get("h", "delta_net"), [[0.0, 0.25]])
    for abstraction in ("pos", "neg", "delta"):
        message = rf"not the sums of its positive parts that h/{abstraction} derives from"
        with pytest.raises(InvalidArgument, match=message):
            signals.get("h", abstraction)
        with pytest.raises(InvalidArgument, match=message):
            signal(alone, "h", abstraction, window)
    both = concat_traces([alone, alone[0:1]])
    np.testing.assert_array_equal(both.step_sums("h")[..., 0], [[0.25, 0.25, 0.0]] * 2)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: summed_trace(sum_units=0), "sum_units=0"),
        (lambda: Trace({}, sums={"h": np.zeros((1, 3, 0))}, sum_units=2), r"\(1, 3, 0\)"),
        (lambda: concat_traces([summed_trace(sum_units=2), sums_alone()]), "cannot join"),
        (lambda: summed_trace(sum_units=True), "sum_units=True"),
        (
            lambda: Trace({}, sums={"h": np.zeros((1, 3, 2), np.float32)}, sum_units=2),
            "float64",
        ),
        (lambda: Trace({}, sums={"h": np.zeros((1, 3, 3))}, sum_units=2), r"\(1, 3, 3\)"),
        (
            lambda: Trace({"h": np.zeros((1, 3, 2))}, sums={"h": np.zeros((1, 3, 2))}),
            "each once",
        ),
        (
            lambda: Trace({"f": np.zeros((2, 3, 2))}, sums={"h": np.zeros((1, 3, 2))}, sum_units=2),
            "batch and steps",
        ),
        (lambda: Trace({}, sums={"q": np.zeros((1, 3, 2))}, sum_units=2), "'q'"),
        (lambda: Trace({}, sums=5, sum_units=2), "sums=5"),
        (lambda: concat_traces([summed_trace(sum_units=2), make_trace(h=H)]), "cannot join"),
        (
            lambda: concat_traces([summed_trace(sum_units=2), summed_trace(sum_units=3)]),
            "cannot join",
        ),
    ],
)
def test_bad_sums_are_refused(make, message):
    with pytest.raises(InvalidArgument, match=message):
        make()


@pytest.mark.parametrize(
    ("window", "steps", "expected"),
    [
        (None, 28, (0, 27)),
        ((4, 24), 28, (4, 24)),
        ((-20, -1), 28, (8, 27)),
        ((0, -1), 5, (0, 4)),
        ((3, 3), 5, (3, 3)),
    ],
)
def test_resolve_window(window, steps, expected):
    assert resolve_window(window, steps) == expected


@pytest.mark.parametrize(
    ("window", "message"),
    [
        ((4, 28), r"outside the layer's 28 steps; steps are 0\.\.27 \(or -28\.\.-1"),
        ((-29, 3), "outside"),
        ((10, 4), "starts after it ends"),
        ((1, 2, 3), "not a pair"),
        ("ab", "not a pair"),
        ((1.5, 4), "not a pair of integer step indices"),
        ((1, "4"), "not a pair of integer step indices"),
    ],
)
def test_bad_windows(window, message):
    with pytest.raises(InvalidArgument, match=message):
        resolve_window(window, 28)


def test_numpy_integers_are_step_indices():
    assert resolve_window((np.int64(4), np.int32(24)), 28) == (4, 24)


def test_a_component_the_cell_lacks_is_refused_listing_what_it_has():
    gru = make_trace(cell="gru", h=H)
    with pytest.raises(
        InvalidArgument, match=r"'f' is not recorded by a gru cell; it has z \(update gate\), r"
    ):
        signal(gru, "f", "avg", (0, 2))


def test_unknown_component_or_abstraction():
    trace = make_trace(h=H)
    with pytest.raises(InvalidArgument, match="component='x' is not a recurrent-cell component"):
        signal(trace, "x", "avg", (0, 2))
    with pytest.raises(InvalidArgument, match="abstraction='mean'; use one of .*avg"):
        signal(trace, "h", "mean", (0, 2))


@pytest.mark.parametrize("rows", [1, 7, 300, 5000])
def test_host_step_sums_in_parts_equal_the_plain_sums(rows, monkeypatch):
    """The host's per-step sums run in row parts on several threads, positive parts a few
    rows at a time; every row's sum is the same float64 sum as the plain reduction's (3
    threads and 64-row chunks here, so parts and chunks split unevenly)."""
    monkeypatch.setattr(arrays, "SCAN_THREADS", 3)
    monkeypatch.setattr(arrays, "PARALLEL_SCAN", 1000)
    monkeypatch.setattr(abstractions, "HOST_ROWS", 64)
    values = np.random.default_rng(rows).normal(size=(rows, 9, 5)).astype(np.float32)
    values[0, 4, :] = -1  # a step with no positive part
    window = (2, 6)
    plain = values[:, 1:7]
    np.testing.assert_array_equal(
        abstractions.step_total(values, window), np.sum(plain, axis=-1, dtype=np.float64)
    )
    np.testing.assert_array_equal(
        abstractions.step_positive(values, window),
        np.sum(np.clip(plain, 0, None), axis=-1, dtype=np.float64),
    )
    assert abstractions.step_positive(values, window)[0, 3] == 0


def test_a_profile_is_not_fitted_on_sums():
    from pytest_rnncov import Profile

    with pytest.raises(InvalidArgument, match="fitted on states"):
        Profile().fit_traces([summed_trace(sum_units=2)], layer="l", fingerprint="f")
