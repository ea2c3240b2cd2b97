"""Train Embedding -> LSTM(64) -> Dropout -> Dense(1) regression of pIC50 from SMILES.

    python -m examples.molecules.train

SMILES are encoded character by character (the characters of every molecule and of
random re-spellings of them), left-padded with 0 (masked by the Embedding) to LENGTH steps;
the tested window is the last 40 steps, which holds masked steps for shorter SMILES (the
profile's fit warns of them; see docs/definitions.md, section 1).
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

ARTIFACTS = Path(__file__).parent / "artifacts"
LENGTH = 100
WINDOW = (-40, -1)


def encoder_from(path: Path):
    from pytest_rnncov import CharEncoder

    data = json.loads(path.read_text())
    return CharEncoder(data["vocabulary"], data["length"], pad="left")


def respell(smiles: list[str], seed: int, spellings: int) -> list[list[str]]:
    """``spellings`` random re-spellings of each molecule (RDKit, random atom orders)."""
    import numpy as np
    from rdkit import Chem

    rng = np.random.default_rng(seed)
    out = []
    for s in smiles:
        mol = Chem.MolFromSmiles(s)
        out.append(
            [
                Chem.MolToSmiles(
                    Chem.RenumberAtoms(mol, rng.permutation(mol.GetNumAtoms()).tolist()),
                    canonical=False,
                )
                for _ in range(spellings)
            ]
        )
    return out


def train(out: Path = ARTIFACTS, epochs: int = 12, seed: int = 0, spellings: int = 10) -> dict:
    import keras
    import numpy as np

    from pytest_rnncov import CharEncoder, Profile, RNNModel

    from .data import split

    keras.utils.set_random_seed(seed)
    (s_train, y_train), (s_test, y_test) = split()
    # the vocabulary holds the characters of every molecule and of re-spellings of them
    # (RDKit writes, e.g., "-" between aromatic atoms in non-canonical orders), so the
    # encoder can encode whatever SmilesMutator proposes; no labels are used here
    spelled = respell(s_train + s_test, seed, max(spellings, 5))
    encoder = CharEncoder(
        sorted(
            {c for group in spelled for s in group for c in s}
            | {c for s in s_train + s_test for c in s}
        ),
        LENGTH,
    )
    # SMILES enumeration as data augmentation: each training molecule also in `spellings`
    # other atom orders (with its own label), so the model learns the molecule, not a spelling
    extra = [
        (s, y)
        for group, y in zip(spelled[: len(s_train)], y_train)
        for s in group[:spellings]
        if encoder.can_encode(s)
    ]
    s_fit = s_train + [s for s, _ in extra]
    y_fit = np.concatenate([y_train, np.array([y for _, y in extra], np.float32)])
    x_train, x_test = encoder(s_fit), encoder(s_test)
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
    model.fit(x_train, y_fit, epochs=epochs, batch_size=32, verbose=2)
    seconds = time.perf_counter() - start
    rmse = float(np.sqrt(((model.predict(x_test, verbose=0)[:, 0] - y_test) ** 2).mean()))
    baseline = float(np.sqrt(((y_train.mean() - y_test) ** 2).mean()))
    out.mkdir(parents=True, exist_ok=True)
    model.save(out / "model.keras")
    (out / "encoder.json").write_text(
        json.dumps({"vocabulary": encoder.vocabulary, "length": LENGTH})
    )
    Profile(window=WINDOW).fit(RNNModel(model, "lstm"), x_train).save(out / "profile.json")
    metrics = {
        "held_out_rmse": rmse,
        "predict_mean_rmse": baseline,
        "train_seconds": round(seconds, 1),
        "train_size": len(s_train),
        "augmented_size": len(x_train),
        "held_out_size": len(x_test),
        "epochs": epochs,
    }
    (out / "metrics.json").write_text(json.dumps(metrics, indent=1) + "\n")
    print(
        f"held-out RMSE {rmse:.3f} pIC50 (predicting the mean: {baseline:.3f}), "
        f"trained in {seconds:.0f} s"
    )
    return metrics


if __name__ == "__main__":
    train()
