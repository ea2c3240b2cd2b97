"""Shared fixtures: small Keras models built once per session with fixed seeds."""

from __future__ import annotations

import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
# TensorFlow and PyTorch share this process: the plugin has set OMP_WAIT_POLICY=PASSIVE
# and OPENBLAS_THREAD_TIMEOUT=4 before this file loads (pytest_rnncov/config/idle_threads.py),
# so PyTorch's idle OpenMP threads and numpy's idle OpenBLAS threads sleep instead of spinning

import importlib.util

import numpy as np
import pytest
from hypothesis import HealthCheck, settings

# PyPI's CUDA build of torch (what pip installs off the project's machines) brings triton,
# whose library crashed the process (SIGSEGV in libtriton.so) when TensorFlow had loaded
# first and a torch optimizer then loaded it (torch._dynamo looks for triton); loaded
# before TensorFlow, it does not
if importlib.util.find_spec("triton") is not None:
    import triton  # noqa: F401

# Model calls are slow: no deadline; under CI keep Hypothesis's derandomised "ci" profile.
settings.register_profile(
    "rnncov-tests",
    parent=settings.get_profile("ci" if os.environ.get("CI") else "default"),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("rnncov-tests")


@pytest.fixture(scope="session")
def keras():
    import keras as keras_module

    return keras_module


@pytest.fixture(scope="session")
def seq_inputs() -> np.ndarray:
    """A batch of 12 float sequences of 7 steps x 3 features."""
    return np.random.default_rng(0).normal(size=(12, 7, 3)).astype(np.float32)


@pytest.fixture(scope="session")
def token_inputs() -> np.ndarray:
    """Left- and right-padded token sequences (0 = padding), 8 steps."""
    rng = np.random.default_rng(1)
    x = rng.integers(1, 30, size=(10, 8))
    x[0, :3] = 0  # left padding
    x[1, 5:] = 0  # right padding
    x[2, :] = 0  # all padding
    x[3, ::2] = 0  # holes
    return x


@pytest.fixture(scope="session")
def stacked_model(keras):
    """Keras 3: LSTM(6, seq) -> LSTM(5, seq, sigmoid) -> Dense(3)."""
    keras.utils.set_random_seed(2)
    return keras.Sequential(
        [
            keras.Input((7, 3)),
            keras.layers.LSTM(6, return_sequences=True, name="lstm_a"),
            keras.layers.LSTM(5, return_sequences=True, name="lstm_b"),
            keras.layers.Flatten(),
            keras.layers.Dense(3, name="head"),
        ],
        name="stacked",
    )


pytest_plugins = ["pytester"]
