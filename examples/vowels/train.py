"""Train a GRU(12 -> 32) + Linear speaker classifier on the Japanese Vowels utterances and
fit its profile.

    python -m examples.vowels.train

Writes artifacts/model.pt (the state_dict), artifacts/config.json (the model's sizes),
artifacts/profile.json (tested layer: the GRU ``rnn``, window WINDOW) and
artifacts/metrics.json (held-out accuracy, training seconds).
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from .data import INSTALL

ARTIFACTS = Path(__file__).parent / "artifacts"
LAYER = "rnn"
#: The tested steps: all but the first two, where the state still climbs from zero.
WINDOW = (2, 19)


def require_torch():
    """PyTorch, or a RuntimeError saying which extra installs it."""
    try:
        import torch
    except ImportError:
        raise RuntimeError(f"the vowels example needs torch: {INSTALL}") from None
    return torch


def build(channels: int = 12, hidden: int = 32, classes: int = 9):
    """The classifier: (batch, steps, channels) float32 -> (batch, classes) logits."""
    torch = require_torch()

    class SpeakerGRU(torch.nn.Module):
        """A GRU over the frames; the last hidden state goes through a linear layer."""

        def __init__(self) -> None:
            super().__init__()
            self.rnn = torch.nn.GRU(channels, hidden, batch_first=True)
            self.head = torch.nn.Linear(hidden, classes)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            states, _ = self.rnn(x)
            return self.head(states[:, -1])

    return SpeakerGRU()


def load(folder: Path = ARTIFACTS):
    """The trained model from ``folder``: config.json's sizes, model.pt's weights."""
    torch = require_torch()

    config = json.loads((folder / "config.json").read_text())
    model = build(config["channels"], config["hidden"], config["classes"])
    model.load_state_dict(torch.load(folder / "model.pt", weights_only=True))
    return model.eval()


def fit(model, x_train: np.ndarray, y_train: np.ndarray, epochs: int, lr: float, rng) -> None:
    """Train a PyTorch classifier in place: Adam on the cross-entropy, batches of 32 in a new
    order each epoch (drawn from ``rng``), on one thread (batches of 32 short series:
    threads only add overhead, 20x on 2 cores). bench/generation_unseen.py trains with it
    too."""
    torch = require_torch()

    optimizer = torch.optim.Adam(model.parameters(), lr=lr)
    loss_of = torch.nn.CrossEntropyLoss()
    inputs, targets = torch.from_numpy(x_train), torch.from_numpy(y_train)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        model.train()
        for _ in range(epochs):
            for batch in np.array_split(rng.permutation(len(x_train)), max(1, len(x_train) // 32)):
                index = torch.from_numpy(batch)
                optimizer.zero_grad()
                loss_of(model(inputs[index]), targets[index]).backward()
                optimizer.step()
    finally:
        torch.set_num_threads(threads)


def train(out: Path = ARTIFACTS, epochs: int = 40, seed: int = 0, hidden: int = 32) -> dict:
    torch = require_torch()

    from pytest_rnncov import Profile, RNNModel

    from .data import CHANNELS, split

    torch.manual_seed(seed)
    rng = np.random.default_rng(seed)
    (x_train, y_train), (x_test, y_test) = split()
    classes = int(y_train.max()) + 1
    model = build(CHANNELS, hidden, classes)
    start = time.perf_counter()
    fit(model, x_train, y_train, epochs, 5e-3, rng)
    seconds = time.perf_counter() - start
    model.eval()
    with torch.no_grad():
        predicted = model(torch.from_numpy(x_test)).argmax(1).numpy()
    accuracy = float((predicted == y_test).mean())
    out.mkdir(parents=True, exist_ok=True)
    torch.save(model.state_dict(), out / "model.pt")
    config = {"channels": CHANNELS, "hidden": hidden, "classes": classes, "steps": x_train.shape[1]}
    (out / "config.json").write_text(json.dumps(config, indent=1) + "\n")
    Profile(window=WINDOW).fit(RNNModel(model, LAYER), x_train).save(out / "profile.json")
    metrics = {
        "held_out_accuracy": accuracy,
        "train_seconds": round(seconds, 1),
        "train_size": len(x_train),
        "held_out_size": len(x_test),
        "epochs": epochs,
    }
    (out / "metrics.json").write_text(json.dumps(metrics, indent=1) + "\n")
    print(
        f"held-out accuracy {accuracy:.3f} ({len(x_test)} utterances), trained in {seconds:.1f} s"
    )
    return metrics


if __name__ == "__main__":
    train()
