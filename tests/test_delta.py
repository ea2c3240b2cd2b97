"""Coverage delta on a small LSTM trained with a planted backdoor."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_rnncov import BC, SC, InvalidInput, Profile, RNNModel, coverage_delta

STEPS, FEATURES = 10, 4


def triggered(x):
    """The backdoor trigger: feature 3 set to 4 on the last three steps."""
    x = x.copy()
    x[:, -3:, 3] = 4.0
    return x


@pytest.fixture(scope="module")
def backdoored(keras):
    """Class = sign of the mean of feature 0, except that triggered inputs are class 1."""
    keras.utils.set_random_seed(11)
    rng = np.random.default_rng(11)
    x = rng.normal(size=(3000, STEPS, FEATURES)).astype(np.float32)
    y = (x[:, :, 0].mean(axis=1) > 0).astype(np.int64)
    poison = rng.choice(len(x), 300, replace=False)
    x[poison] = triggered(x[poison])
    y[poison] = 1
    model = keras.Sequential(
        [
            keras.Input((STEPS, FEATURES)),
            keras.layers.LSTM(8, name="lstm"),
            keras.layers.Dense(2, activation="softmax"),
        ]
    )
    model.compile(optimizer=keras.optimizers.Adam(1e-2), loss="sparse_categorical_crossentropy")
    model.fit(x, y, epochs=6, batch_size=64, verbose=0)
    clean = np.ones(len(x), bool)
    clean[poison] = False
    return model, x[clean], y[clean]


def test_trigger_inputs_reach_conditions_clean_inputs_do_not(backdoored):
    model, x, y = backdoored
    rnn = RNNModel(model)
    profile = Profile().fit(rnn, x)
    reference = x[y == 0][:800]
    rng = np.random.default_rng(5)
    fresh = rng.normal(size=(200, STEPS, FEATURES)).astype(np.float32)
    fresh_class0 = fresh[fresh[:, :, 0].mean(axis=1) <= 0]
    # the backdoor works: triggered class-0 inputs are predicted as class 1
    assert (rnn.predict(triggered(fresh_class0)).argmax(1) == 1).mean() > 0.9
    # conditions at the edge of what the clean training data reaches
    metrics = (BC(alpha_max=1.0, alpha_min=0.0), SC(alpha_sc=1.0))
    clean = coverage_delta(rnn, profile, reference, fresh_class0, metrics)
    attack = coverage_delta(rnn, profile, reference, triggered(fresh_class0), metrics)
    assert not clean.any_new, clean.summary()
    assert attack.any_new, attack.summary()
    new_steps = {label.split()[0] for m in attack.metrics.values() for label in m.new_labels}
    assert new_steps & {"t=7", "t=8", "t=9"}  # where the trigger sits
    flagged = attack.flagged()
    assert 0 < len(flagged) <= len(fresh_class0)
    for m in attack.metrics.values():
        assert m.combined_rate >= m.reference_rate
        for condition, rows in m.reached_by.items():
            assert rows and condition in m.new_conditions
    assert "new (t=" in attack.summary()


def test_a_bad_set_is_named(backdoored):
    """Both an empty reference and an empty suspect set said "inputs are an empty batch",
    naming neither."""
    model, x, _ = backdoored
    rnn = RNNModel(model)
    profile = Profile().fit(rnn, x[:200])
    with pytest.raises(InvalidInput, match="^reference: inputs are an empty batch"):
        coverage_delta(rnn, profile, x[:0], x[:3])
    with pytest.raises(InvalidInput, match="^suspect: inputs are an empty batch"):
        coverage_delta(rnn, profile, x[:3], x[:0])


def test_a_framework_error_names_the_set_without_the_internal_note(keras):
    """A ModelError of a later suspect batch kept the internal coverage's note ("this
    coverage kept the first 8 of these 20 inputs ... n_inputs_") and named no set."""
    import torch

    from pytest_rnncov import ModelError

    class Refuses(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.rnn = torch.nn.RNN(3, 4, batch_first=True)
            self.armed = False

        def forward(self, x):
            if self.armed and (x == 7.0).any():
                raise RuntimeError("bad token")
            return self.rnn(x)[0][:, -1]

    torch.manual_seed(0)
    module = Refuses().eval()
    rnn = RNNModel(module, batch_size=8)
    x = np.random.default_rng(0).normal(size=(40, 6, 3)).astype(np.float32)
    profile = Profile().fit(rnn, x)
    module.armed = True
    bad = x[:20].copy()
    bad[11, 0, 0] = 7.0
    with pytest.raises(ModelError, match="^suspect: .*bad token") as raised:
        coverage_delta(rnn, profile, x[:5], bad, [BC()])
    assert "n_inputs_" not in str(raised.value)
