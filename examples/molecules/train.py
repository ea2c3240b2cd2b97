"""Train Embedding -> LSTM(64) -> Dropout -> Dense(1) regression of pIC50 from SMILES.

    python examples/molecules/train.py

SMILES are encoded character by character (vocabulary of the training set), left-padded
with 0 (masked by the Embedding) to LENGTH steps; the tested window is the last 40 steps.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).parent))

ARTIFACTS = Path(__file__).parent / "artifacts"
LENGTH = 100
WINDOW = (-40, -1)


def encoder_from(path: Path):
    from pytest_rnncov import CharEncoder

    data = json.loads(path.read_text())
    return CharEncoder(data["vocabulary"], data["length"], pad="left")


def train(out: Path = ARTIFACTS, epochs: int = 40, seed: int = 0) -> dict:
    import keras
    import numpy as np

    from data import split
    from pytest_rnncov import CharEncoder, Profile, RNNModel

    keras.utils.set_random_seed(seed)
    (s_train, y_train), (s_test, y_test) = split()
    encoder = CharEncoder.fit(s_train + s_test, length=LENGTH)  # characters only, no labels
    x_train, x_test = encoder(s_train), encoder(s_test)
    model = keras.Sequential(
        [
            keras.Input((LENGTH,), dtype="int32"),
            keras.layers.Embedding(encoder.n_tokens, 32, mask_zero=True),
            keras.layers.LSTM(64, name="lstm"),
            keras.layers.Dropout(0.2),
            keras.layers.Dense(1),
        ],
        name="pic50_lstm",
    )
    model.compile(optimizer=keras.optimizers.Adam(3e-3), loss="mse")
    start = time.perf_counter()
    model.fit(x_train, y_train, epochs=epochs, batch_size=32, verbose=2)
    seconds = time.perf_counter() - start
    rmse = float(np.sqrt(((model.predict(x_test, verbose=0)[:, 0] - y_test) ** 2).mean()))
    baseline = float(np.sqrt(((y_train.mean() - y_test) ** 2).mean()))
    out.mkdir(parents=True, exist_ok=True)
    model.save(out / "model.keras")
    (out / "encoder.json").write_text(json.dumps({"vocabulary": encoder.vocabulary, "length": LENGTH}))
    Profile(window=WINDOW).fit(RNNModel(model, "lstm"), x_train).save(out / "profile.json")
    metrics = {"held_out_rmse": rmse, "predict_mean_rmse": baseline, "train_seconds": round(seconds, 1),
               "train_size": len(x_train), "held_out_size": len(x_test), "epochs": epochs}
    (out / "metrics.json").write_text(json.dumps(metrics, indent=1) + "\n")
    print(f"held-out RMSE {rmse:.3f} pIC50 (predicting the mean: {baseline:.3f}), trained in {seconds:.0f} s")
    return metrics


def refit_profile(out: Path = ARTIFACTS) -> None:
    """Refit only the profile of the saved model (no training)."""
    from data import split
    from pytest_rnncov import Profile, RNNModel, load_model

    (s_train, _), _ = split()
    rnn = RNNModel(load_model(out / "model.keras"), "lstm")
    Profile(window=WINDOW).fit(rnn, encoder_from(out / "encoder.json")(s_train)).save(out / "profile.json")


if __name__ == "__main__":
    import argparse

    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--profile-only", action="store_true",
                        help="refit artifacts/profile.json for the saved model, no training")
    if parser.parse_args().profile_only:
        refit_profile()
    else:
        train()
