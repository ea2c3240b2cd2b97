"""The three ways a test suite meets pytest-rnncov, on a sentence-polarity LSTM."""

from __future__ import annotations

import pytest
from hypothesis import given, settings

from pytest_rnncov import EDAMutator, GAConfig, Oracle, model_settings, targeted_mutants

#: A sentence edited on at most this share of its words should keep its polarity.
RADIUS = 0.15


@pytest.mark.rnn_coverage(min=0.3, metrics=["BC", "SC", "TC"])
def test_held_out_sentences(sentiment, encoder, texts):
    """1. Coverage of an existing test set: 2,000 held-out sentences."""
    _, (t_text, y_test) = texts
    accuracy = ((sentiment.predict(encoder(t_text))[:, 0] > 0.5) == y_test).mean()
    assert accuracy >= 0.7


@pytest.mark.rnn_coverage(min=0.4, metrics=["BC", "SC", "TC"])
def test_campaign_with_eda(sentiment, encoder, texts, rnncov, tmp_path_factory):
    """2. A campaign of EDA edits (random, a failure sweep and GA turns, by their yield) from
    100 seed sentences."""
    _, (t_text, _) = texts
    pick = rnncov.rng(1).choice(len(t_text), 100, replace=False)
    campaign = sentiment.campaign(
        [t_text[i] for i in pick],
        EDAMutator(encoder=encoder, alpha=0.1),
        Oracle(radius=RADIUS),
        budget=2000,
        batch_size=200,
        ga=GAConfig(k=4, n=8, gamma=5),
        output_dir=tmp_path_factory.mktemp("sentiment-adversarial"),
    )
    result = campaign.run()
    assert result.rates["TC"] > result.growth[0]["TC"]
    # every adversarial sample is a real sentence edit within the radius of its seed
    for case, seed, _ in campaign.adversarial_cases():
        assert isinstance(case, str) and case != seed


def test_confident_polarity_is_stable_under_targeted_edits(sentiment, encoder, texts):
    """3. Hypothesis: GA-bred synonym edits within RADIUS keep the polarity of sentences
    the model is confident about (p < 0.05 or p > 0.95).

    For less confident sentences Hypothesis does find flips (e.g. "movie" -> "moving picture
    show"): drop the confidence filter to see one.
    """
    _, (t_text, _) = texts
    p = sentiment.predict(encoder(t_text[:200]))[:, 0]
    seeds = [t for t, q in zip(t_text[:200], p) if abs(q - 0.5) > 0.45][:30]
    mutator = EDAMutator(encoder=encoder, alpha=0.05, operations=["synonym"])
    oracle = Oracle(radius=RADIUS)

    @settings(model_settings, max_examples=20)
    @given(targeted_mutants(sentiment, seeds, mutator, metric="SC", ga=GAConfig(k=2, n=4, gamma=1)))
    def polarity_is_stable(mutant):
        outputs = sentiment.predict(encoder([mutant.seed, mutant.case]))
        distance = mutator.distance([mutant.seed], [mutant.case])[0]
        oracle.check(outputs[:1], outputs[1:], distance, seed=mutant.seed, case=mutant.case)

    polarity_is_stable()
