"""Molecules example: pIC50 regression from SMILES, tested with SMILES re-enumeration."""

from __future__ import annotations

import pytest

from . import train
from .data import split


@pytest.fixture(scope="session")
def molecules():
    """(train SMILES, pIC50), (held-out SMILES, pIC50)."""
    return split()


@pytest.fixture(scope="session")
def encoder():
    if not (train.ARTIFACTS / "encoder.json").exists():
        train.train()
    return train.encoder_from(train.ARTIFACTS / "encoder.json")


@pytest.fixture(scope="session")
def pic50(rnncov, encoder, molecules):
    from pytest_rnncov import load_model

    (s_train, _), _ = molecules
    return rnncov.track(
        load_model(train.ARTIFACTS / "model.keras"),
        profile=train.ARTIFACTS / "profile.json",
        x_train=encoder(s_train),
        window=train.WINDOW,
        name="pic50",
    )
