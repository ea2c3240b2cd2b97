"""The Japanese Vowels utterances (UCR/UEA) shipped inside the sktime wheel, resampled to a
fixed number of steps and standardised per channel with training statistics."""

from __future__ import annotations

import functools

import numpy as np

#: how to install what the example needs beyond the examples extra
INSTALL = "pip install -e '.[examples,timeseries]' (or 'pytest-rnncov[timeseries]')"
#: Every utterance (7-29 frames) is resampled to this many steps.
STEPS = 20
CHANNELS = 12


def japanese_vowels(split: str) -> tuple[list[np.ndarray], np.ndarray]:
    """Utterances of ``split`` ("train": 270, "test": 370) as (frames, 12) float64 arrays of
    LPC cepstrum coefficients, and the speaker (0-8) of each."""
    try:
        from sktime.datasets import load_japanese_vowels
    except ImportError:
        raise RuntimeError(f"the vowels example needs sktime and torch: {INSTALL}") from None
    frame, labels = load_japanese_vowels(split=split, return_X_y=True)
    series = [
        np.stack([frame.iloc[row, col].to_numpy(np.float64) for col in range(CHANNELS)], axis=1)
        for row in range(len(frame))
    ]
    return series, labels.astype(np.int64) - 1


def resample(series: np.ndarray, steps: int = STEPS) -> np.ndarray:
    """``series`` (frames, channels) linearly interpolated per channel to ``steps`` frames
    spanning the same time."""
    old = np.linspace(0.0, 1.0, len(series))
    new = np.linspace(0.0, 1.0, steps)
    return np.stack([np.interp(new, old, channel) for channel in series.T], axis=1)


@functools.lru_cache(maxsize=4)
def split(steps: int = STEPS):
    """The data set's own split, (x_train, y_train), (x_test, y_test): 270 / 370 utterances
    of shape (steps, 12), float32, standardised with the training channels' mean and std."""
    train_series, y_train = japanese_vowels("train")
    test_series, y_test = japanese_vowels("test")
    x_train = np.stack([resample(s, steps) for s in train_series])
    x_test = np.stack([resample(s, steps) for s in test_series])
    mean, std = x_train.mean(axis=(0, 1)), x_train.std(axis=(0, 1))
    x_train = ((x_train - mean) / std).astype(np.float32)
    x_test = ((x_test - mean) / std).astype(np.float32)
    return (x_train, y_train), (x_test, y_test)
