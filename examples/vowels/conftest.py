"""Japanese Vowels example: a PyTorch GRU that tells nine speakers apart from 12-channel
LPC cepstrum series, tested with time warps and sensor noise.

The model and its profile are built by train.py and cached in artifacts/; if they are
missing, the first test session trains them (a few seconds).
"""

from __future__ import annotations

import pytest

from . import train
from .data import split


@pytest.fixture(scope="session")
def vowels():
    """(x_train, y_train), (x_test, y_test): 270 / 370 utterances of shape (20, 12)."""
    return split()


@pytest.fixture(scope="session")
def speakers(rnncov, vowels):
    """The trained GRU, tracked: every input fed through it counts toward coverage."""
    if not (train.ARTIFACTS / "model.pt").exists():
        train.train()
    (x_train, _), _ = vowels
    return rnncov.track(
        train.load(),
        layer=train.LAYER,
        profile=train.ARTIFACTS / "profile.json",  # loaded; refitted from x_train if missing
        x_train=x_train,
        window=train.WINDOW,
        name="vowels",
    )


@pytest.fixture(scope="session")
def oracle(speakers, vowels):
    """The oracle, its radius calibrated on the training utterances (through the untracked
    model, so they do not count as test inputs)."""
    from pytest_rnncov import Oracle

    (x_train, _), _ = vowels
    return Oracle.calibrate(x_train, speakers.rnn.predict(x_train))
