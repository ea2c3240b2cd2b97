"""Idle threads that sleep: set before the libraries that own them load.

Two thread pools keep spinning for a while after each call by default: PyTorch's OpenMP
threads, and the OpenBLAS threads behind numpy's matmuls. A tracked call alternates the
framework's forward pass with the project's numpy work (the gates of a PyTorch layer are
one batched matmul after the pass), a campaign alternates many small model calls with it,
and a test session may alternate PyTorch with TensorFlow: on a small machine the spinning
threads take the cores the next call needs. Measured on 2 cores:

- ``OMP_WAIT_POLICY=PASSIVE``: with one core kept busy, the vowels example's campaign took
  0.47 s instead of 1.29 s; on a quiet machine 0.68 s instead of 0.43 s (``bench/
  bench_campaign_parts.py --policies default,PASSIVE [--busy]``): the best worst case.
  PyTorch beside a busy TensorFlow 250 ms instead of 402 (``bench/bench_threads.py``);
- ``OPENBLAS_THREAD_TIMEOUT=4`` (OpenBLAS threads spin 2**4 cycles, not 2**28, before
  they sleep): a PyTorch LSTM's tracked predict with the paper preset, 10,000 inputs,
  1.50 and 1.50 -> 1.25 and 1.30 of the model's own call (``bench/bench_core.py``; the
  framework call after the gates 1.15-1.20x -> 0.92-0.95x).

Each runtime reads its variable once, when it loads (``import torch``, ``import numpy``),
so the pytest plugin sets them before conftest files load and the command line before it
loads a model; where the library is already loaded, setting it would do nothing and it is
left alone. A value the user set wins; ``--no-rnn`` leaves both alone. Numpy-free: the
hook module calls it.
"""

from __future__ import annotations

import os
import sys

#: (variable, the value set, the module whose runtime reads it when imported)
SETTINGS = (
    ("OMP_WAIT_POLICY", "PASSIVE", "torch"),
    ("OPENBLAS_THREAD_TIMEOUT", "4", "numpy"),
)


def sleeping_idle_threads() -> tuple[str, ...]:
    """Set each of ``SETTINGS`` unless it is set (an empty value, which the runtimes refuse,
    counts as unset) or its library is already loaded; the ``NAME=VALUE`` set here."""
    made = []
    for name, value, module in SETTINGS:
        if os.environ.get(name, "").strip() or module in sys.modules:
            continue
        os.environ[name] = value
        made.append(f"{name}={value}")
    return tuple(made)
