"""Profile: fitted statistics, the JSON file, stale and degenerate profiles."""

from __future__ import annotations

import json
import shlex
import warnings
from pathlib import Path

import numpy as np
import pytest

from pytest_rnncov import Profile, ProfileError, RNNCovWarning, RNNModel, StaleProfile
from pytest_rnncov.core.abstractions import ABSTRACTIONS
from pytest_rnncov.errors import InvalidArgument


@pytest.fixture(scope="module")
def rnn(stacked_model):
    return RNNModel(stacked_model, "lstm_b", batch_size=5)


def test_statistics_equal_direct_numpy(rnn, seq_inputs):
    profile = Profile(window=(2, -2)).fit(rnn, seq_inputs)  # three batches of 5, 5, 2
    assert profile.window_ == (2, 5) and profile.n_samples_ == 12 and profile.units_ == 5
    trace = rnn.trace(seq_inputs)
    f = trace.f[:, 2:6].astype(np.float64)
    avg = f.mean(axis=-1)
    stats = profile.stats("f", "avg")
    assert stats.min == pytest.approx(avg.min()) and stats.max == pytest.approx(avg.max())
    assert stats.mean == pytest.approx(avg.mean()) and stats.std == pytest.approx(avg.std())
    h = trace.h.astype(np.float64)
    pos, neg = np.where(h > 0, h, 0).sum(-1), np.where(h < 0, h, 0).sum(-1)
    delta = np.abs(np.diff(pos, axis=1)) + np.abs(np.diff(neg, axis=1))  # steps 1..6
    assert profile.stats("h", "delta").max == pytest.approx(delta[:, 1:5].max())
    np.testing.assert_allclose(profile.neuron_min_, trace.h[:, 2:6].min(axis=0), atol=1e-7)
    np.testing.assert_allclose(profile.neuron_max_, trace.h[:, 2:6].max(axis=0), atol=1e-7)


def test_save_load_round_trip_is_readable_json(rnn, seq_inputs, tmp_path):
    profile = Profile(window=(1, 5)).fit(rnn, seq_inputs)
    path = tmp_path / "profile.json"
    profile.save(path)
    data = json.loads(path.read_text())
    assert data["format"] == "pytest-rnncov-profile" and data["version"] == 2
    assert data["layer"] == {
        "name": "lstm_b",
        "cell": "lstm",
        "units": 5,
        "steps": 7,
        "fingerprint": rnn.fingerprint(),
    }
    assert set(data["signals"]) == {f"{c}/{a}" for c in "fioch" for a in ABSTRACTIONS}
    loaded = Profile.load(path)
    assert loaded.signals_ == profile.signals_
    np.testing.assert_array_equal(loaded.neuron_max_, profile.neuron_max_)
    assert loaded.window_ == (1, 5)
    loaded.check(rnn)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["signals"]["h/net"].update(std=5e-324), "signals.h/net has statistics"),
        (lambda d: d["signals"]["h/net"].update(max=1e300), "signals.h/net has statistics"),
        (  # min and max 1e-70 apart: min-max normalising would overflow
            lambda d: d["signals"]["h/net"].update(min=0.0, mean=0.0, max=1e-70),
            "signals.h/net has statistics",
        ),
        (lambda d: d["neurons"]["max"][0].__setitem__(0, 1e308), "within float32's range"),
    ],
)
def test_statistics_no_fit_gives_are_refused(rnn, seq_inputs, tmp_path, edit, message):
    """A hand-edited profile whose statistics would make normalising overflow (a subnormal
    std: TC's words turned NaN and NaN counted as word 0) is refused by name on load."""
    data = json.loads(Profile(window=(1, 5)).fit(rnn, seq_inputs).text())
    edit(data)
    (tmp_path / "p.json").write_text(json.dumps(data))
    with pytest.raises(ProfileError, match=message):
        Profile.load(tmp_path / "p.json")


def test_stale_profile_is_refused(keras, stacked_model, rnn, seq_inputs):
    profile = Profile().fit(rnn, seq_inputs)
    changed = keras.models.clone_model(stacked_model)
    changed.set_weights([w + 0.01 for w in stacked_model.get_weights()])
    with pytest.raises(StaleProfile, match="weights fingerprint .* refit it"):
        profile.check(RNNModel(changed, "lstm_b"))
    with pytest.raises(StaleProfile, match="layer 'lstm_b' != 'lstm_a'.*units 5 != 6"):
        profile.check(RNNModel(stacked_model, "lstm_a"))


def test_unfitted_and_broken_files(tmp_path):
    with pytest.raises(ProfileError, match="not fitted"):
        Profile().stats("h", "net")
    with pytest.raises(InvalidArgument, match="no profile file"):
        Profile.load(tmp_path / "none.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(ProfileError, match="is not valid JSON"):
        Profile.load(bad)
    bad.write_text('{"format": "pytest-rnncov-profile", "version": 99}')
    with pytest.raises(ProfileError, match="version 99, newer than .* upgrade pytest-rnncov") as e:
        Profile.load(bad)
    assert "refit" not in str(e.value)  # a pinned older runner would overwrite a newer file
    bad.write_text('{"format": "pytest-rnncov-profile", "version": 0}')
    with pytest.raises(ProfileError, match="version 0; .*: refit and save the profile"):
        Profile.load(bad)


def test_window_outside_the_sequence(rnn, seq_inputs):
    with pytest.raises(InvalidArgument, match="outside the layer's 7 steps"):
        Profile(window=(0, 7)).fit(rnn, seq_inputs)


@pytest.fixture(scope="module")
def saved(rnn, seq_inputs, tmp_path_factory):
    path = tmp_path_factory.mktemp("profile") / "profile.json"
    Profile(window=(1, 5)).fit(rnn, seq_inputs).save(path)
    return json.loads(path.read_text())


def edited(data, change):
    copy = json.loads(json.dumps(data))
    change(copy)
    return copy


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda d: d.pop("signals"), "missing key 'signals'"),
        (lambda d: d["layer"].pop("fingerprint"), "layer: missing key 'fingerprint'"),
        (lambda d: d["layer"].update(units="5"), r"layer: 'units' is '5' \(str\), not int"),
        (lambda d: d["layer"].update(cell="transformer"), "layer.cell 'transformer' is not one of"),
        (lambda d: d.update(window=[0, 5]), r"window \[0, 5\] does not match window_requested"),
        (
            lambda d: d.update(window=[1, 4], window_requested=[1, 4]),
            r"neurons.min must be numbers within float32.s range, of shape \(4, 5\) for "
            r"window \[1, 4\]",
        ),
        (
            lambda d: d["signals"]["h/net"].update(std=-1.0),
            "signals.h/net has min > max or a negative std",
        ),
        (lambda d: d["signals"].pop("f/avg"), "signals lack f/avg"),
        (lambda d: d["signals"]["h/net"].update(min="0"), r"signals.h/net: 'min' is '0'"),
        (
            lambda d: d["states"].update(intervals=0),
            r"has intervals=0, not an integer in \[1, 1048576\]",
        ),
        (lambda d: d["states"].update(low=d["states"]["high"]), "'high' must exceed 'low'"),
        (lambda d: d["states"].update(cells=[-1]), "'cells' holds ids outside"),
        (lambda d: d.update(n_samples=0), "n_samples=0"),
        (lambda d: d["neurons"].update(max=[[-9.0] * 5] * 5), "neurons.min exceeds neurons.max"),
    ],
)
def test_edited_profile_files_are_refused_by_name(saved, tmp_path, change, message):
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(edited(saved, change)))
    with pytest.raises(ProfileError, match=message):
        Profile.load(path)


def test_infinity_non_utf8_and_directories_are_refused(saved, tmp_path):
    path = tmp_path / "p.json"
    path.write_text(json.dumps(saved).replace('"max": ', '"max": Infinity, "x": ', 1))
    with pytest.raises(ProfileError, match="Infinity is not a number JSON allows"):
        Profile.load(path)
    path.write_bytes(b"\xff\xfe" + json.dumps(saved).encode("utf-16-le"))
    with pytest.raises(ProfileError, match="is not UTF-8 text"):
        Profile.load(path)
    with pytest.raises(ProfileError, match="is a directory"):
        Profile.load(tmp_path)


def test_the_fingerprint_covers_the_layers_before_the_traced_one(keras, stacked_model, seq_inputs):
    """Same traced LSTM, other upstream weights: the profile no longer describes it."""
    profile = Profile().fit(RNNModel(stacked_model, "lstm_b"), seq_inputs)
    changed = keras.models.clone_model(stacked_model)
    changed.set_weights(stacked_model.get_weights())
    first = changed.get_layer("lstm_a")
    first.set_weights([w * 1.01 for w in first.get_weights()])
    with pytest.raises(
        StaleProfile,
        match="the model changed where the fingerprint looks: the weights and layers from the "
        "model input through the traced layer",
    ):
        profile.check(RNNModel(changed, "lstm_b"))
    # the head after the layer is not part of it
    head = changed.get_layer("head")
    changed.set_weights(stacked_model.get_weights())
    head.set_weights([w + 1 for w in head.get_weights()])
    profile.check(RNNModel(changed, "lstm_b"))


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Profile(window=(1.5, 3)), "not a pair of integer step indices"),
        (lambda: Profile(window="all"), "not a pair of step indices"),
        (lambda: Profile(state_components=0), "state_components=0 must be an integer >= 1"),
        (lambda: Profile(state_intervals=2.5), r"state_intervals=2.5 \(float\) must be an integer"),
    ],
)
def test_bad_profile_arguments(make, message):
    with pytest.raises(InvalidArgument, match=message):
        make()


def test_a_stale_profile_file_is_named_with_the_fix(
    keras, stacked_model, rnn, seq_inputs, tmp_path
):
    path = tmp_path / "profile.json"
    Profile().fit(rnn, seq_inputs).save(path)
    changed = keras.models.clone_model(stacked_model)
    changed.set_weights([w + 0.01 for w in stacked_model.get_weights()])
    with pytest.raises(
        StaleProfile,
        match=rf"profile '{path}' does not belong to this model .*"
        rf"delete '{path}' so that rnncov.track",
    ):
        Profile.load(path).check(RNNModel(changed, "lstm_b"))


@pytest.mark.filterwarnings("error")  # no numpy overflow warning leaks out either
@pytest.mark.parametrize("scale", [1e39, 1e154, 1e307])
def test_traces_beyond_float32_are_refused_before_their_statistics_overflow(scale, tmp_path):
    """Hand-made float64 traces beyond float32's range are refused by name: their
    statistics would overflow float64 from about 1e154 on (an eigenvalue LinAlgError and
    numpy's warnings before), and a profile file holds no such values. Just within the
    range a profile is fitted, saved and loaded."""
    from pytest_rnncov import Trace
    from pytest_rnncov.core.trace import CELL_COMPONENTS

    def trace(values):
        return Trace({n: values for n in CELL_COMPONENTS["gru"]}, cell="gru")

    values = np.random.default_rng(0).uniform(0.5, 1.0, (4, 5, 3))
    with pytest.raises(InvalidArgument, match=r"holds values beyond float32's range"):
        Profile().fit_traces([trace(values * scale)], layer="l", fingerprint="f")
    within = Profile().fit_traces([trace(values * 3e38)], layer="l", fingerprint="f")
    within.save(tmp_path / "p.json")
    assert Profile.load(tmp_path / "p.json").stats("h", "pos") == within.stats("h", "pos")


def test_values_beyond_float32_outside_the_window_are_not_read():
    """The check reads the steps the statistics read (the window and the step before it):
    a hand-made float64 trace with NaN or 1e39 elsewhere fits, as before the check."""
    from pytest_rnncov import Trace
    from pytest_rnncov.core.trace import CELL_COMPONENTS

    values = np.random.default_rng(0).uniform(0.5, 1.0, (4, 6, 3))
    values[:, 0], values[:, 5] = 1e39, np.nan
    trace = Trace({n: values for n in CELL_COMPONENTS["gru"]}, cell="gru")
    profile = Profile(window=(2, 4)).fit_traces([trace], layer="l", fingerprint="f")
    assert profile.window_ == (2, 4) and np.isfinite(profile.stats("h", "avg").mean)
    with pytest.raises(InvalidArgument, match="beyond float32's range"):
        Profile(window=(1, 4)).fit_traces([trace], layer="l", fingerprint="f")  # reads step 0


def test_empty_training_batches_add_nothing(monkeypatch):
    """An empty trace among the training traces adds nothing, on either pass of the state
    model (its second pass traces again when the states exceed KEEP_STATES); only empty
    ones are refused by name (a numpy "zero-size array" ValueError before)."""
    from pytest_rnncov import Trace
    from pytest_rnncov.core import profile as profile_module
    from pytest_rnncov.core.trace import CELL_COMPONENTS

    def trace(rows, seed=0):
        values = np.random.default_rng(seed).normal(size=(rows, 5, 3)).astype(np.float32)
        return Trace({n: values for n in CELL_COMPONENTS["gru"]}, cell="gru")

    full = Profile(state_components=2).fit_traces([trace(8)], layer="l", fingerprint="f")
    monkeypatch.setattr(profile_module, "KEEP_STATES", 0)  # the second pass traces again
    for traces in ([trace(0), trace(8)], [trace(8), trace(0)]):
        fitted = Profile(state_components=2).fit_traces(traces, layer="l", fingerprint="f")
        assert fitted.n_samples_ == 8 and fitted.signals_ == full.signals_
        np.testing.assert_array_equal(fitted.states_.cells, full.states_.cells)
    with pytest.raises(InvalidArgument, match="no training inputs"):
        Profile().fit_traces([trace(0)], layer="l", fingerprint="f")


def test_a_nan_weight_is_named_as_a_suspect_not_only_the_inputs():
    """The inputs are finite (checked before the pass), so a NaN signal comes from the
    model: the message once pointed at the training inputs alone."""
    import torch

    torch.manual_seed(0)
    model = torch.nn.LSTM(3, 4, batch_first=True)
    with torch.no_grad():
        model.weight_hh_l0[0, 0] = float("nan")
    x = np.random.default_rng(0).normal(size=(8, 5, 3)).astype(np.float32)
    with pytest.raises(InvalidArgument, match="holds NaN or inf; check the model's weights"):
        Profile().fit(RNNModel(model), x)


def test_a_stale_profile_file_says_the_whole_command_that_refits_it(
    keras, stacked_model, seq_inputs, tmp_path
):
    """The hint said `profile fit MODEL --out PATH`, which fails: --x-train is required,
    and the layer and window must be the profile's."""
    rnn = RNNModel(stacked_model, "lstm_b")
    Profile(window=(-3, -1)).fit(rnn, seq_inputs).save(tmp_path / "p.json")
    loaded = Profile.load(tmp_path / "p.json")
    loaded.fingerprint_ = "0" * 16
    with pytest.raises(StaleProfile) as refused:
        loaded.check(rnn)
    assert (
        "python -m pytest_rnncov profile fit MODEL --x-train X_TRAIN.npy --layer lstm_b "
        f"--window=-3,-1 --out {shlex.quote(str(tmp_path / 'p.json'))} (MODEL: the model's "
        "file, or module:function --weights STATE_DICT.pt for PyTorch)"
    ) in str(refused.value)


def test_the_refit_hint_names_a_halfs_direction_and_the_state_options(
    keras, stacked_model, seq_inputs, tmp_path
):
    """A backward half is named 'bi/backward', which --layer does not take; a profile
    fitted with state_components=3 was refitted at 5."""
    rnn = RNNModel(stacked_model, "lstm_b")
    Profile(state_components=3, state_intervals=4).fit(rnn, seq_inputs).save(tmp_path / "p.json")
    loaded = Profile.load(tmp_path / "p.json")
    loaded.layer_ = "encoder/bi gru/backward"
    hint = loaded.refit_hint()
    assert (
        "--layer 'encoder/bi gru' --direction backward --state-components 3 "
        "--state-intervals 4 --out"
    ) in hint
    loaded.layer_ = "lstm_b"
    assert "--layer lstm_b --state-components 3" in loaded.refit_hint()
    # a default fit on a layer of fewer units than 5 holds that many: no option, so a
    # refit after the layer widened fits 5 again, not the narrow count
    narrow = RNNModel(stacked_model, "lstm_b")
    Profile().fit(narrow, seq_inputs).save(tmp_path / "d.json")
    default = Profile.load(tmp_path / "d.json")
    default.units_ = default.state_components = min(default.units_, 3)
    assert "--state-components" not in default.refit_hint()


def test_the_other_halfs_profile_is_kept_and_the_tracked_half_is_named():
    """A backward half given the forward half's profile: the hint refitted the forward
    half (--layer bi, no --direction) over the other profile's file."""

    profile = Profile(window=(-20, -1))
    profile.layer_, profile.cell_, profile.units_, profile.n_steps_ = "bi/forward", "lstm", 4, 30
    profile.fingerprint_, profile.path_ = "f" * 16, Path("profiles/fwd.json")
    profile.signals_ = {}  # fitted enough for check()

    class Backward:
        name, layer_name, units, cell_kind, n_steps = "m", "bi/backward", 4, "lstm", 30

        def fingerprint(self):
            return "b" * 16

        def check_input(self, x):
            return x

        def iter_traces(self, x, **options):
            return iter(())

    with pytest.raises(StaleProfile) as raised:
        profile.check(Backward())
    message = str(raised.value)
    assert "--layer bi --direction backward --window=-20,-1 --out OTHER.json" in message
    assert "keep it" in message and "the model changed where" not in message
    # the same layer of other units: another model's, or this one changed (not "another
    # layer's", nor "keep it")
    Backward.layer_name, Backward.units = "bi/forward", 8
    with pytest.raises(StaleProfile) as raised:
        profile.check(Backward())
    message = str(raised.value)
    assert "units 4 != 8; weights fingerprint" in message
    assert "(another model's, or the model changed)" in message and "keep it" not in message
    assert "if it belongs to another model, give this model its own profile path" in message


def test_masked_steps_inside_the_window_are_announced_with_the_steps_real_in_every_input():
    """Left-padded text shorter than the window: the padding's zeros (a forget gate never
    computed there) entered the profile's ranges, and BC of f/avg read 100% for any input.
    Three inputs of 6 steps, real from step 1, 3 and 0 (masks by hand): inputs 0 and 1
    have masked steps in the window (0, 5); steps 3-5 are real in all three."""
    from pytest_rnncov.core.trace import Trace

    rng = np.random.default_rng(0)
    mask = np.arange(6)[None, :] >= np.array([1, 3, 0])[:, None]
    arrays = {n: rng.normal(size=(3, 6, 2)).astype(np.float32) for n in "fioch"}
    trace = Trace(arrays, cell="lstm", mask=mask)
    with pytest.warns(RNNCovWarning) as warned:
        Profile().fit_traces([trace], layer="hand", fingerprint="hand")
    (message,) = [str(w.message) for w in warned if "masked steps" in str(w.message)]
    assert message.startswith(
        "2 of 3 training inputs (67%) have masked steps (padding) inside the window (steps 0 to 5)"
    )
    assert "steps 3 to 5 are real in every training input, so a window within them" in message
    with warnings.catch_warnings():
        warnings.simplefilter("error", RNNCovWarning)  # the window (3, 5): nothing to say
        try:
            Profile(window=(3, 5)).fit_traces([trace], layer="hand", fingerprint="hand")
        except RNNCovWarning as other:
            assert "masked steps" not in str(other)


def test_the_masked_steps_warning_reads_integer_masks_and_names_the_window_as_given():
    """A 0/1 mask was negated bitwise (every input 'padded'); a share under 1% read '0%';
    a window given from the end was shown resolved only."""
    from pytest_rnncov.core.trace import Trace

    rng = np.random.default_rng(1)
    arrays = {n: rng.normal(size=(200, 6, 2)).astype(np.float32) for n in "fioch"}
    ones = np.ones((200, 6), np.int8)
    with warnings.catch_warnings():
        warnings.simplefilter("error", RNNCovWarning)
        try:  # all real: nothing to say about masked steps
            Profile().fit_traces(
                [Trace(arrays, cell="lstm", mask=ones)], layer="h", fingerprint="h"
            )
        except RNNCovWarning as other:
            assert "masked steps" not in str(other)
    mask = ones.astype(bool)
    mask[0, :2] = False  # one input of 200 starts at step 2
    with pytest.warns(
        RNNCovWarning,
        match=r"1 of 200 training inputs \(<1%\) have masked steps "
        r"\(padding\) inside the window \(-6, -1\) \(steps 0 to 5\)",
    ):
        Profile(window=(-6, -1)).fit_traces(
            [Trace(arrays, cell="lstm", mask=mask)], layer="h", fingerprint="h"
        )
