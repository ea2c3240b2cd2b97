"""MNIST example: how a team wires its LSTM into pytest-rnncov.

The model and its profile are built by train.py and cached in artifacts/; if they are
missing, the first test session trains them (about a minute on 2 cores).
"""

from __future__ import annotations

import pytest

from . import train
from .data import split


@pytest.fixture(scope="session")
def digits():
    """(x_train, y_train), (x_test, y_test): 4,000 / 1,000 real MNIST digits."""
    return split()


@pytest.fixture(scope="session")
def mnist(rnncov, digits):
    """The trained model, tracked: every input fed through it counts toward coverage."""
    from pytest_rnncov import load_model

    if not (train.ARTIFACTS / "model.keras").exists():
        train.train()
    model = load_model(train.ARTIFACTS / "model.keras")
    (x_train, _), _ = digits
    return rnncov.track(
        model,
        layer=train.LAYER,
        profile=train.ARTIFACTS / "profile.json",  # loaded; refitted from x_train if missing
        x_train=x_train,
        window=train.WINDOW,
        name="mnist",
    )
