"""Profile: fitted statistics, the JSON file, stale and degenerate profiles."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pytest_rnncov import Profile, ProfileError, RNNModel, StaleProfile
from pytest_rnncov.abstractions import ABSTRACTIONS
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
    assert data["format"] == "pytest-rnncov-profile" and data["version"] == 1
    assert data["layer"] == {
        "name": "lstm_b", "units": 5, "steps": 7, "fingerprint": rnn.fingerprint()
    }
    assert set(data["signals"]) == {f"{c}/{a}" for c in "fioch" for a in ABSTRACTIONS}
    loaded = Profile.load(path)
    assert loaded.signals_ == profile.signals_
    np.testing.assert_array_equal(loaded.neuron_max_, profile.neuron_max_)
    assert loaded.window_ == (1, 5)
    loaded.check(rnn)


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
    with pytest.raises(ProfileError, match="invalid JSON"):
        Profile.load(bad)
    bad.write_text('{"format": "pytest-rnncov-profile", "version": 99}')
    with pytest.raises(ProfileError, match="version 99"):
        Profile.load(bad)


def test_window_outside_the_sequence(rnn, seq_inputs):
    with pytest.raises(InvalidArgument, match="outside the layer's 7 steps"):
        Profile(window=(0, 7)).fit(rnn, seq_inputs)
