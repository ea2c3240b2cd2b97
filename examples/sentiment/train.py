"""Train Embedding -> LSTM -> Dense on sentence polarity and fit the profile.

    NLTK_DATA=../shared/data/nltk_data python -m examples.sentiment.train

Sentences are encoded as word ids (5,000 most frequent words, 1 = unknown), left-padded to
40 steps with 0, which the Embedding masks: the LSTM carries its (zero) state over the
padding, so the words sit in the last steps. The tested window is the last 20 steps, which
holds masked steps for shorter sentences (the profile's fit warns of them; see
docs/definitions.md, section 1).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

ARTIFACTS = Path(__file__).parent / "artifacts"
LENGTH = 40
WINDOW = (-20, -1)


def encoder_from(path: Path):
    from pytest_rnncov import WordEncoder

    data = json.loads(path.read_text())
    return WordEncoder(data["words"], data["length"], pad="left")


def train(out: Path = ARTIFACTS, epochs: int = 4, seed: int = 0) -> dict:
    import keras

    from pytest_rnncov import Profile, RNNModel, WordEncoder

    from .data import split

    keras.utils.set_random_seed(seed)
    (x_text, y_train), (t_text, y_test) = split()
    encoder = WordEncoder.fit(x_text, max_words=5000, length=LENGTH)
    x_train, x_test = encoder(x_text), encoder(t_text)
    model = keras.Sequential(
        [
            keras.Input((LENGTH,), dtype="int32"),
            keras.layers.Embedding(encoder.n_tokens, 32, mask_zero=True),
            keras.layers.LSTM(64, name="lstm"),
            keras.layers.Dense(1, activation="sigmoid"),
        ],
        name="sentiment_lstm",
    )
    model.compile(optimizer="adam", loss="binary_crossentropy", metrics=["accuracy"])
    start = time.perf_counter()
    model.fit(x_train, y_train, epochs=epochs, batch_size=64, verbose=2)
    seconds = time.perf_counter() - start
    accuracy = float(((model.predict(x_test, verbose=0)[:, 0] > 0.5) == y_test).mean())
    out.mkdir(parents=True, exist_ok=True)
    model.save(out / "model.keras")
    (out / "encoder.json").write_text(json.dumps({"words": encoder.words, "length": LENGTH}))
    Profile(window=WINDOW).fit(RNNModel(model, "lstm"), x_train).save(out / "profile.json")
    metrics = {
        "held_out_accuracy": accuracy,
        "train_seconds": round(seconds, 1),
        "train_size": len(x_train),
        "held_out_size": len(x_test),
        "epochs": epochs,
    }
    (out / "metrics.json").write_text(json.dumps(metrics, indent=1) + "\n")
    print(f"held-out accuracy {accuracy:.3f} ({len(x_test)} sentences), trained in {seconds:.0f} s")
    return metrics


if __name__ == "__main__":
    train()
