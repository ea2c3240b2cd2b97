"""Sentiment example: an Embedding(mask_zero) -> LSTM -> Dense classifier of review
sentences, tested with EDA text mutation (WordNet synonyms; set NLTK_DATA offline)."""

from __future__ import annotations

import pytest

from . import train
from .data import split


@pytest.fixture(scope="session")
def texts():
    """(train texts, labels), (held-out texts, labels)."""
    return split()


@pytest.fixture(scope="session")
def encoder():
    if not (train.ARTIFACTS / "encoder.json").exists():
        train.train()
    return train.encoder_from(train.ARTIFACTS / "encoder.json")


@pytest.fixture(scope="session")
def sentiment(rnncov, encoder, texts):
    from pytest_rnncov import load_model

    (x_text, _), _ = texts
    return rnncov.track(
        load_model(train.ARTIFACTS / "model.keras"),
        profile=train.ARTIFACTS / "profile.json",
        x_train=encoder(x_text),
        window=train.WINDOW,
        name="sentiment",
    )
