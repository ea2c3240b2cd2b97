"""TimeSeriesMutator: time warp and noise, checked against facts computed by hand."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

from pytest_rnncov import InvalidArgument, InvalidInput, RNNCovWarning
from pytest_rnncov.generation.mutators import checked_mutate
from pytest_rnncov.generation.series import TimeSeriesMutator


def series(cases: int = 40, steps: int = 20, channels: int = 3, dtype=np.float32) -> np.ndarray:
    return np.random.default_rng(0).normal(size=(cases, steps, channels)).astype(dtype)


def ramp(cases: int = 50, steps: int = 20) -> np.ndarray:
    """Every case and channel is 0, 1, ..., steps - 1 (two channels)."""
    return np.broadcast_to(
        np.arange(steps, dtype=np.float64)[None, :, None], (cases, steps, 2)
    ).copy()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_shape_and_dtype_are_kept(dtype):
    cases = series(dtype=dtype)
    out = checked_mutate(TimeSeriesMutator(noise=0.1, warp=0.3), cases, np.random.default_rng(1))
    assert out.shape == cases.shape and out.dtype == dtype


def test_integer_cases_become_float32():
    cases = np.arange(60).reshape(2, 10, 3)
    assert TimeSeriesMutator().mutate(cases, np.random.default_rng(0)).dtype == np.float32


def test_same_seed_same_output_other_seed_other_output():
    cases, mutator = series(), TimeSeriesMutator(noise=(0.05, 0.1), warp=0.2)
    a = mutator.mutate(cases, np.random.default_rng(7))
    b = mutator.mutate(cases, np.random.default_rng(7))
    c = mutator.mutate(cases, np.random.default_rng(8))
    np.testing.assert_array_equal(a, b)
    assert not np.allclose(a, c)


def test_no_warp_and_no_noise_is_the_identity():
    cases, mutator = series(), TimeSeriesMutator(noise=0.0, warp=0.0)
    out = mutator.mutate(cases, np.random.default_rng(0))
    np.testing.assert_array_equal(out, cases)
    assert mutator.unchanged(cases, out).all()
    np.testing.assert_array_equal(mutator.distance(cases, out), np.zeros(len(cases)))


def test_resample_interpolates_linearly_between_steps():
    cases = np.array([[[0.0], [10.0], [20.0]]])  # one case, three steps, one channel
    positions = np.array([[0.0, 0.5, 2.0]])
    np.testing.assert_array_equal(
        TimeSeriesMutator.resample(cases, positions)[0, :, 0], [0.0, 5.0, 20.0]
    )


def test_warp_keeps_the_endpoints_and_the_order_of_time():
    cases = ramp()
    out = TimeSeriesMutator(noise=0.0, warp=0.5).mutate(cases, np.random.default_rng(3))
    # a ramp sampled at the warped positions is the warp map itself: it starts at 0, ends
    # at 19 and rises step after step
    np.testing.assert_array_equal(out[:, 0], 0.0)
    np.testing.assert_array_equal(out[:, -1], 19.0)
    assert (np.diff(out, axis=1) > 0).all()
    np.testing.assert_array_equal(out[..., 0], out[..., 1])  # one map for all channels
    assert np.abs(out - cases).max() > 0.5  # and it does move the interior steps
    assert not np.allclose(out[0], out[1])  # a map per case


def test_warp_positions_span_the_series_without_going_back():
    positions = TimeSeriesMutator(warp=1.0, segments=5).warp_positions(
        200, 12, np.random.default_rng(0)
    )
    assert positions.shape == (200, 12)
    np.testing.assert_array_equal(positions[:, 0], 0.0)
    np.testing.assert_array_equal(positions[:, -1], 11.0)
    assert (np.diff(positions, axis=1) >= 0).all()


def test_warped_values_stay_within_each_case_and_channel_range():
    cases = series(steps=15)
    out = TimeSeriesMutator(noise=0.0, warp=1.0).mutate(cases, np.random.default_rng(2))
    assert (out >= cases.min(axis=1, keepdims=True)).all()
    assert (out <= cases.max(axis=1, keepdims=True)).all()


def test_noise_has_the_configured_scale_per_channel():
    cases = np.zeros((2000, 20, 3), np.float64)
    mutator = TimeSeriesMutator(noise=0.3, warp=0.0, channel_scale=[1.0, 2.0, 0.0])
    noise = mutator.mutate(cases, np.random.default_rng(0))
    std = noise.std(axis=(0, 1))
    assert std[0] == pytest.approx(0.3, rel=0.02)
    assert std[1] == pytest.approx(0.6, rel=0.02)
    assert std[2] == 0.0
    np.testing.assert_allclose(
        mutator.distance(cases, noise), np.linalg.norm(noise.reshape(2000, -1), axis=1)
    )


def test_noise_level_is_drawn_once_per_batch_from_the_range():
    mutator = TimeSeriesMutator(noise=(0.1, 0.5), warp=0.0)
    cases = np.zeros((200, 50, 4))
    levels = []
    for seed in range(5):
        per_case = mutator.mutate(cases, np.random.default_rng(seed)).std(axis=(1, 2))
        assert per_case.std() < 0.1 * per_case.mean()  # one level for the whole batch
        levels.append(per_case.mean())
    assert 0.1 * 0.9 < min(levels) and max(levels) < 0.5 * 1.1
    assert max(levels) - min(levels) > 0.05  # another batch, another level


def test_from_seeds_scales_the_noise_to_each_channels_spread():
    # two seeds: channel 0 is +1 / -1 and channel 1 is +3 / -3 at every step, so their
    # spread across seeds is 1 and 3 (mean 2)
    seeds = np.stack([np.tile([[1.0, 3.0]], (10, 1)), np.tile([[-1.0, -3.0]], (10, 1))])
    mutator = TimeSeriesMutator.from_seeds(seeds, spread=(0.25, 0.5), warp=0.1)
    assert mutator.noise == pytest.approx((0.5, 1.0))
    np.testing.assert_allclose(mutator.channel_scale, [0.5, 1.5])
    assert mutator.warp == 0.1
    assert mutator.describe() == (
        "time warp 0.1 over 4 segments, then Gaussian noise, std 0.5-1 (scaled per channel)"
    )


def test_describe_without_warp():
    assert TimeSeriesMutator(noise=0.2, warp=0).describe() == (
        "no time warp, then Gaussian noise, std 0.2-0.2"
    )


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: TimeSeriesMutator(noise=(0.5, 0.1)), r"noise=\(0\.5, 0\.1\) needs low <= high"),
        (lambda: TimeSeriesMutator(noise=-1), "noise=-1.0 must be >= 0"),
        (lambda: TimeSeriesMutator(noise=(0.0, float("nan"))), r"noise\[1\]=nan must be a finite"),
        (lambda: TimeSeriesMutator(warp=-0.2), "warp=-0.2 must be >= 0"),
        (lambda: TimeSeriesMutator(warp="0.2"), r"warp='0\.2' \(str\) must be a number"),
        (lambda: TimeSeriesMutator(segments=1), "segments=1 must be an integer >= 2"),
        (lambda: TimeSeriesMutator(segments=2.5), r"segments=2\.5 \(float\) must be an integer"),
        (lambda: TimeSeriesMutator(channel_scale=[1.0, -1.0]), r"channel_scale=\[1\.0, -1\.0\]"),
        (lambda: TimeSeriesMutator(channel_scale=[[1.0]]), r"channel_scale=\[\[1\.0\]\]"),
        (lambda: TimeSeriesMutator(channel_scale="wide"), "channel_scale='wide'"),
        (
            lambda: TimeSeriesMutator.from_seeds(series(), spread=(1, 0)),
            r"spread=\(1, 0\) needs low <= high",
        ),
        (lambda: TimeSeriesMutator(padding="0"), r"padding='0' \(str\) must be a number"),
        (lambda: TimeSeriesMutator(padding=float("nan")), "padding=nan must be a finite"),
        (lambda: TimeSeriesMutator.from_seeds(series(), padding=[0]), r"padding=\[0\]"),
    ],
)
def test_bad_arguments_name_the_value(make, message):
    with pytest.raises(InvalidArgument, match=message):
        make()


def test_cases_of_the_wrong_shape_are_refused():
    rng = np.random.default_rng(0)
    with pytest.raises(InvalidInput, match=r"shape \(4, 20\); TimeSeriesMutator takes"):
        TimeSeriesMutator().mutate(np.zeros((4, 20)), rng)
    with pytest.raises(InvalidInput, match="cases have 3 channels but channel_scale has 2"):
        TimeSeriesMutator(channel_scale=[1, 1]).mutate(np.zeros((4, 20, 3)), rng)
    with pytest.raises(InvalidInput, match="a time warp needs at least 2 time steps; cases have 1"):
        TimeSeriesMutator(warp=0.1).mutate(np.zeros((4, 1, 3)), rng)
    TimeSeriesMutator(warp=0.0).mutate(np.zeros((4, 1, 3)), rng)  # noise alone needs no time


def test_seeds_are_checked():
    with pytest.raises(InvalidInput, match=r"NaN or inf .* in rows \[1\]"):
        TimeSeriesMutator().check_seeds(np.array([[[0.0], [1.0]], [[np.nan], [1.0]]]))
    with pytest.raises(
        InvalidInput, match=r"seeds are texts \('a', \.\.\.\); TimeSeriesMutator mutates"
    ):
        TimeSeriesMutator().check_seeds(np.array([[["a"], ["b"]]]))
    with pytest.raises(InvalidInput, match="do not vary"):
        TimeSeriesMutator.from_seeds(np.ones((5, 10, 2)))
    with pytest.raises(InvalidInput, match=r"shape \(5, 10\)"):
        TimeSeriesMutator.from_seeds(np.zeros((5, 10)))
    huge = np.random.default_rng(0).random((5, 7, 3)) * 1e300  # finite, but no spread fits
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no numpy overflow warning before the message
        with pytest.raises(InvalidInput, match=r"the seeds' spread \(inf\) is too large for a"):
            TimeSeriesMutator.from_seeds(huge)  # was "noise[0]=inf must be a finite number"
        with pytest.raises(InvalidInput, match=r"spread \(inf\) is too large"):
            TimeSeriesMutator.from_seeds(huge, padding=0.0)
    assert TimeSeriesMutator().check_seeds(np.zeros((2, 5, 3), np.float64)).dtype == np.float32


def test_within_scales_cases_beyond_the_radius_back_onto_the_sphere():
    """Hand-checked: the case (3, 4) is 5 from the seed (0, 0); within radius 2.5 it is
    moved to (1.5, 2); the case (0.6, 0.8), 1 away, stays; the dtype is kept."""
    seeds = np.zeros((2, 2, 1), np.float32)
    cases = np.array([[[3.0], [4.0]], [[0.6], [0.8]]], np.float32)
    moved = TimeSeriesMutator().within(seeds, cases, 2.5)
    assert moved.dtype == np.float32
    np.testing.assert_allclose(moved[:, :, 0], [[1.5, 2.0], [0.6, 0.8]], rtol=1e-6)


def padded_ramps(lengths, steps: int = 10, padding: float = 0.0) -> np.ndarray:
    """Case i is 1, 2, ..., lengths[i] on both channels, then ``padding``."""
    t = np.arange(1, steps + 1, dtype=np.float64)[None, :]
    values = np.where(t <= np.asarray(lengths)[:, None], t, padding)
    return np.repeat(values[:, :, None], 2, axis=2)


@pytest.mark.parametrize("padding", [0.0, -1.0])
def test_padding_is_kept_and_each_case_is_warped_over_its_own_steps(padding):
    """Series of different lengths padded at the end: without ``padding`` they were warped
    over all steps, so a short one grew into its padding (a case of 5 real steps took
    values at steps 5-9) and noise fell on the padding."""
    lengths = np.array([5, 10, 2, 1, 0, 7] * 20)
    cases = padded_ramps(lengths, padding=padding)
    steps = np.arange(10)[None, :]
    out = TimeSeriesMutator(noise=0.0, warp=0.8, padding=padding).mutate(
        cases, np.random.default_rng(0)
    )
    real = steps < lengths[:, None]
    np.testing.assert_array_equal(out[~real], padding)  # every padding step as it was
    # a ramp 1..L sampled at the warped positions: starts at 1, ends at L, never goes back
    with_steps = lengths > 0
    np.testing.assert_array_equal(out[with_steps, 0, 0], 1.0)
    ends = out[np.flatnonzero(with_steps), lengths[with_steps] - 1, 0]
    np.testing.assert_array_equal(ends, lengths[with_steps])
    assert all((np.diff(o[:n, 0]) >= 0).all() for o, n in zip(out, lengths))
    assert np.abs(out - cases)[lengths == 7].max() > 0.3  # it does warp the real steps
    noisy = TimeSeriesMutator(noise=0.5, warp=0.0, padding=padding).mutate(
        cases, np.random.default_rng(1)
    )
    np.testing.assert_array_equal(noisy[~real], padding)
    assert (noisy[real] != cases[real]).all()
    # without padding= the same cases are warped over every step, padding and all
    plain = TimeSeriesMutator(noise=0.0, warp=0.8).mutate(cases, np.random.default_rng(0))
    assert (plain[lengths == 5][:, 5:] != padding).any()


def test_warp_positions_of_cases_of_one_step_stay_at_it():
    positions = TimeSeriesMutator(warp=1.0).warp_positions(
        2, 6, np.random.default_rng(0), lengths=np.array([1, 3])
    )
    np.testing.assert_array_equal(positions[0], 0.0)
    assert positions[1, 0] == 0.0 and (positions[1, 2:] == 2.0).all()
    assert 0.0 <= positions[1, 1] <= 2.0


def test_from_seeds_measures_the_spread_over_real_steps():
    """Step 0: 1, 3, 2 and step 1: 3, 5, 4 (each a population std of sqrt(2/3)); step 2
    is real in one seed only, so it gives no spread. Counting the padding, step 2 (0, 0, 6)
    would have had sqrt(8) and the mean spread 1.49 instead of 0.82."""
    seeds = np.array([[1.0, 3.0, 0.0], [3.0, 5.0, 0.0], [2.0, 4.0, 6.0]])[:, :, None]
    spread = np.sqrt(2 / 3)
    mutator = TimeSeriesMutator.from_seeds(seeds, spread=(0.25, 0.5), padding=0.0)
    np.testing.assert_allclose(mutator.noise, (0.25 * spread, 0.5 * spread))
    np.testing.assert_allclose(mutator.channel_scale, [1.0])
    unpadded = TimeSeriesMutator.from_seeds(seeds, spread=(0.25, 0.5))
    np.testing.assert_allclose(unpadded.noise[1], 0.5 * (2 * spread + np.sqrt(8)) / 3)
    assert mutator.padding == 0.0 and mutator.describe().endswith("; padding 0 kept")
    with pytest.raises(InvalidInput, match=r"no step is real in two seeds \(padding=0\)"):
        TimeSeriesMutator.from_seeds([[[1.0], [0.0]], [[0.0], [0.0]]], padding=0.0)


def test_padding_is_found_in_the_cases_own_precision():
    """0.1 in float32 is not 0.1 in float64: float32 series padded with 0.1 were taken as
    all real, and their padding warped and perturbed."""
    cases = np.full((3, 10, 2), 0.1, np.float32)
    cases[0, :4], cases[1, :7], cases[2] = 1.0, 2.0, 3.0
    out = TimeSeriesMutator(noise=0.5, warp=0.5, padding=0.1).mutate(
        cases, np.random.default_rng(0)
    )
    assert out.dtype == np.float32
    np.testing.assert_array_equal(out[0, 4:], np.float32(0.1))
    np.testing.assert_array_equal(out[1, 7:], np.float32(0.1))
    assert (out[0, :4] != 1.0).all() and (out[2] != 3.0).all()
    # from_seeds finds the same lengths: steps 0-3 hold 1, 3, 5 (a std of sqrt(8/3)), steps
    # 4-6 hold 3, 5 (a std of 1), steps 7-9 one seed only (no spread)
    seeds = cases + np.arange(3, dtype=np.float32)[:, None, None] * (cases != np.float32(0.1))
    spread = (4 * np.sqrt(8 / 3) + 3 * 1.0) / 7
    padded = TimeSeriesMutator.from_seeds(seeds, padding=0.1)
    np.testing.assert_allclose(padded.noise, (0.25 * spread, 0.5 * spread), rtol=1e-6)


@pytest.mark.parametrize("lengths", [[0, 6], [1, 7], [1.0, 2.0], [1], "12"])
def test_warp_positions_refuses_lengths_it_cannot_use(lengths):
    with pytest.raises(InvalidArgument, match="must be 2 integers from 1 to 6, one per case"):
        TimeSeriesMutator().warp_positions(2, 6, np.random.default_rng(0), lengths=lengths)


@pytest.mark.parametrize(("dtype", "padding"), [(np.float32, 1e39), (np.float16, 70000.0)])
def test_padding_beyond_the_cases_dtype_pads_nothing(dtype, padding):
    """Cast to float32, 1e39 overflowed: numpy's RuntimeWarning (an error under -W error)."""
    cases = series(cases=3, steps=5, dtype=dtype)
    mutator = TimeSeriesMutator(noise=0.0, warp=0.0, padding=padding)
    np.testing.assert_array_equal(mutator.mutate(cases, np.random.default_rng(0)), cases)
    TimeSeriesMutator.from_seeds(cases, padding=padding)  # every step real: no error


def test_padding_at_the_front_or_both_ends_is_kept_as_at_the_end():
    """keras.utils.pad_sequences pads at the front by default: such series had their
    padding warped and perturbed while describe() said "padding 0 kept". Each case is now
    mutated as the same series padded at the end would be, with the same draws."""
    lengths = np.array([5, 10, 2, 1, 0, 7] * 5)
    at_end = padded_ramps(lengths) + np.linspace(0, 1, 2)[None, None, :]  # two channels
    at_end[np.arange(10)[None, :] >= lengths[:, None]] = 0.0
    fronts = np.array([5, 0, 3, 9, 0, 1] * 5)  # padding steps put before each series
    steps = np.arange(10)[None, :]
    moved = np.take_along_axis(at_end, ((steps - fronts[:, None]) % 10)[..., None], axis=1)
    assert (moved[0, :5] == 0).all() and moved[0, 5, 0] == 1.0  # 5 steps of padding first
    mutator = TimeSeriesMutator(noise=0.3, warp=0.8, padding=0.0)
    expected = mutator.mutate(at_end, np.random.default_rng(3))
    out = mutator.mutate(moved, np.random.default_rng(3))
    shifted = np.take_along_axis(expected, ((steps - fronts[:, None]) % 10)[..., None], axis=1)
    np.testing.assert_array_equal(out, shifted)
    real = (steps >= fronts[:, None]) & (steps < (fronts + lengths)[:, None])
    np.testing.assert_array_equal(out[~real], 0.0)
    assert (out[real] != moved[real]).all()


def test_from_seeds_reads_padding_at_the_front():
    """Seeds 0 1 3 / 0 3 5 / 2 4 6 padded with 0 at the front: step 0 is real in the third
    seed only (no spread); steps 1 and 2 hold 1 3 4 and 3 5 6, each a population std of
    sqrt(14/9) (squares about the means 8/3 and 14/3 sum to 42/9, over 3)."""
    seeds = np.array([[0.0, 1.0, 3.0], [0.0, 3.0, 5.0], [2.0, 4.0, 6.0]])[:, :, None]
    mutator = TimeSeriesMutator.from_seeds(seeds, spread=(0.25, 0.5), padding=0.0)
    np.testing.assert_allclose(mutator.noise, np.multiply((0.25, 0.5), np.sqrt(14 / 9)))


def test_from_seeds_warns_when_seeds_look_zero_padded_and_no_padding_is_given():
    lengths = np.array([5, 10, 8, 0])  # 5 and 8 end in 2+ zero steps; 0 is all padding
    seeds = padded_ramps(lengths) * np.arange(1, 5)[:, None, None]  # seeds that vary
    with pytest.warns(
        RNNCovWarning,
        match=r"2 of 4 seeds begin or end with steps that are 0 "
        r"in every channel.*pass padding=0.0",
    ):
        TimeSeriesMutator.from_seeds(seeds)
    front = seeds[:, ::-1]  # the same, padded at the front
    with pytest.warns(RNNCovWarning, match="2 of 4 seeds"):
        TimeSeriesMutator.from_seeds(front)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        TimeSeriesMutator.from_seeds(seeds, padding=0.0)
        TimeSeriesMutator.from_seeds(padded_ramps(np.array([9, 10, 9])) * [[[1]], [[2]], [[3]]])
        counts = np.random.default_rng(0).poisson(0.3, (10, 30, 1)).astype(float)
        TimeSeriesMutator.from_seeds(counts)  # one channel of counts ends in zeros: real
