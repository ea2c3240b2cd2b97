"""The three ways a test suite meets pytest-rnncov, on the Japanese Vowels GRU (PyTorch)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from hypothesis import given, settings

from pytest_rnncov import GAConfig, TimeSeriesMutator, model_settings, targeted_mutants

from . import train
from .data import split

# The oracle (conftest.py) is calibrated on the 270 training utterances: "radius 6.815 =
# 0.5 x the 5% quantile (13.63) of the L2 distances between 32400 pairs of seeds decided
# differently". Channels are standardised, so that is about 0.44 per value (20 x 12 values).


# Measured: BC 28% (5/18), SC 100% (18/18), TC 34% (83/243). BC is the rarest: few held-out
# utterances drive h to within 20% of its training maximum at a given step.
@pytest.mark.rnn_coverage(min="BC:0.2,SC:0.9,TC:0.3", metrics=["BC", "SC", "TC"])
def test_held_out_utterances_are_classified_and_cover_the_gru(speakers, vowels):
    """1. Measure the coverage of an existing test set: the 370 held-out utterances."""
    _, (x_test, y_test) = vowels
    accuracy = (speakers.predict(x_test).argmax(axis=1) == y_test).mean()
    recorded = json.loads((train.ARTIFACTS / "metrics.json").read_text())
    assert accuracy == pytest.approx(recorded["held_out_accuracy"], abs=1e-9)
    assert accuracy >= 0.9


# Measured: BC 100% (18/18), SC 100%, TC 98% (237/243); the seeds alone: 22%, 61%, 18%.
@pytest.mark.rnn_coverage(min=0.6, metrics=["BC", "SC", "TC"])
def test_campaign_raises_coverage(speakers, vowels, oracle, rnncov, tmp_path_factory):
    """2. A campaign (random time warps and noise, a failure sweep and GA turns, by their
    yield) from 100 seeds."""
    _, (x_test, _) = vowels
    seeds = x_test[rnncov.rng().choice(len(x_test), 100, replace=False)]
    campaign = speakers.campaign(
        seeds,
        TimeSeriesMutator.from_seeds(seeds),  # noise 0.25-0.5 of each channel's spread
        oracle,
        budget=5000,
        batch_size=200,
        ga=GAConfig(k=4, n=8, gamma=5),
        output_dir=tmp_path_factory.mktemp("vowels-adversarial"),
    )
    result = campaign.run()
    seeds_only = result.growth[0]
    assert result.rates["BC"] > seeds_only["BC"]
    assert result.rates["TC"] > seeds_only["TC"]
    assert "targeted" in {step["phase"] for step in result.growth}  # the GA had turns
    assert result.test_cases == 5000
    # The failure search, kept within the oracle's radius, finds utterances whose speaker
    # flips under gentle warps and noise (seed 0: 396 samples from 18 of the 100 seeds;
    # --rnn-seed 1 and 2: 34 and 21 seeds); most utterances keep their speaker.
    assert 5 <= result.unique <= 50


_, (X_TEST, _) = split()
#: 25 held-out utterances of all nine speakers (the set is sorted by speaker).
CANDIDATES = X_TEST[::15]
#: Seeds count as confident when their top logit beats the runner-up by more than this.
CONFIDENT_MARGIN = 5.0


def test_confident_speaker_is_stable_under_targeted_mutation(speakers, oracle):
    """3. Hypothesis: GA-bred gentle time warps and noise keep the speaker of utterances the
    model is confident about, at the calibrated radius.

    22 of the 25 candidates are confident. 264,000 random 1-3 generation mutants of them (L2
    up to 7.6, 151,029 within 3.0) flipped none. The filter matters: X_TEST[105] (margin 4.5)
    flips to speaker 8 at L2 1.4, well inside the radius, and with the campaign's stronger
    noise even confident utterances flip from L2 about 5.3. A gradient attack flips most
    seeds within L2 2: the property is about warps and noise, not the worst case.
    """
    outputs = speakers.predict(CANDIDATES)
    seeds = CANDIDATES[oracle.margin(outputs, outputs) > CONFIDENT_MARGIN]
    mutator = TimeSeriesMutator.from_seeds(CANDIDATES, spread=(0.1, 0.2), warp=0.1)

    @settings(model_settings, max_examples=30)
    @given(targeted_mutants(speakers, seeds, mutator, metric="TC", ga=GAConfig(k=2, n=4, gamma=3)))
    def speaker_is_stable(mutant):
        outputs = speakers.predict(np.stack([mutant.seed, mutant.case]))
        distance = float(mutator.distance(mutant.seed[None], mutant.case[None])[0])
        oracle.check(outputs[:1], outputs[1:], distance)

    speaker_is_stable()
