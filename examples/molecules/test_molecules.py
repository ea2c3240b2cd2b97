"""The three ways a test suite meets pytest-rnncov, on a SMILES -> pIC50 LSTM."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings

from pytest_rnncov import GAConfig, Oracle, SmilesMutator, model_settings, targeted_mutants

from . import train

#: The campaign reports re-spellings of a molecule that move the prediction by more than
#: this (pIC50): although the model was trained with ten re-spellings per molecule, the
#: campaign finds spellings that move it this far for many seeds.
TOLERANCE = 0.5
#: The property test's contract: no re-spelling moves the prediction by more than 2 pIC50
#: (a 100-fold change of IC50). 3,000 random re-spellings of the first 30 held-out molecules
#: moved it by at most 1.8; at 1.0, Hypothesis finds spellings that break the property.
STABLE_TOLERANCE = 2.0


# TC is moderate on this small model: its h curves over the window vary less between
# molecules than between digits (the held-out set reaches about 20% of the 243 words).
@pytest.mark.rnn_coverage(min=0.1, metrics=["BC", "SC", "TC"])
def test_held_out_molecules(pic50, encoder, molecules):
    """1. Coverage of an existing test set: 200 held-out molecules, and their RMSE."""
    _, (s_test, y_test) = molecules
    rmse = np.sqrt(((pic50.predict(encoder(s_test))[:, 0] - y_test) ** 2).mean())
    recorded = json.loads((train.ARTIFACTS / "metrics.json").read_text())
    assert rmse == pytest.approx(recorded["held_out_rmse"], abs=1e-3)
    assert rmse < recorded["predict_mean_rmse"]  # better than predicting the mean


@pytest.mark.rnn_coverage(min=0.2, metrics=["BC", "SC", "TC"])
def test_campaign_with_smiles_reenumeration(pic50, encoder, molecules, rnncov, tmp_path_factory):
    """2. A campaign of re-enumerated SMILES (same molecules, other atom orders)."""
    from rdkit import Chem

    _, (s_test, _) = molecules
    seeds = [s_test[i] for i in rnncov.rng(2).choice(len(s_test), 100, replace=False)]
    campaign = pic50.campaign(
        seeds,
        SmilesMutator(encoder=encoder),
        Oracle(radius=None, task="regression", tolerance=TOLERANCE),
        budget=1500,
        batch_size=150,
        ga=GAConfig(k=4, n=8, gamma=5),
        output_dir=tmp_path_factory.mktemp("molecules-adversarial"),
    )
    result = campaign.run()
    assert result.rates["TC"] > result.growth[0]["TC"]
    for case, seed, _ in campaign.adversarial_cases():  # same molecule, other prediction
        assert Chem.CanonSmiles(case) == Chem.CanonSmiles(seed)


def test_prediction_is_stable_under_reenumeration(pic50, encoder, molecules):
    """3. Hypothesis: GA-bred spellings of a molecule keep its prediction within
    STABLE_TOLERANCE."""
    _, (s_test, _) = molecules
    mutator = SmilesMutator(encoder=encoder)
    oracle = Oracle(radius=None, task="regression", tolerance=STABLE_TOLERANCE)

    @settings(model_settings, max_examples=20)
    @given(
        targeted_mutants(pic50, s_test[:30], mutator, metric="TC", ga=GAConfig(k=2, n=4, gamma=2))
    )
    def prediction_is_stable(mutant):
        outputs = pic50.predict(encoder([mutant.seed, mutant.case]))
        oracle.check(outputs[:1], outputs[1:], 0.0, seed=mutant.seed, case=mutant.case)

    prediction_is_stable()
