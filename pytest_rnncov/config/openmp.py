"""OpenMP's wait policy, set before a framework loads its OpenMP runtime.

PyTorch's CPU kernels run on OpenMP threads, which by default keep spinning for a while
after each parallel region ends. A campaign alternates many small model calls with the
project's own numpy work, and a test session may alternate PyTorch with TensorFlow: on a
small machine the spinning threads take the cores that work needs. With
``OMP_WAIT_POLICY=PASSIVE`` idle threads sleep instead: measured on 2 cores, the vowels
example's campaign took 0.90 s instead of 1.74 s (``bench/bench_campaign_parts.py
--policies default,PASSIVE``) and PyTorch beside a busy TensorFlow 250 ms instead of 402
(``bench/bench_threads.py``; docs/performance.md). OpenMP reads
the variable once, when its runtime loads (with ``import torch``), so the pytest plugin sets
it before conftest files load and the command line before it loads a model. A value the
user set wins; ``--no-rnn`` leaves it alone. Numpy-free: the hook module calls it.
"""

from __future__ import annotations

import os
import sys

VARIABLE = "OMP_WAIT_POLICY"
POLICY = "PASSIVE"


def passive_openmp_waits() -> bool:
    """Set ``OMP_WAIT_POLICY=PASSIVE`` unless it is set (an empty value, which OpenMP
    refuses, counts as unset) or PyTorch (its OpenMP runtime) is already loaded, where it
    would have no effect; True when it was set here."""
    if os.environ.get(VARIABLE, "").strip() or "torch" in sys.modules:
        return False
    os.environ[VARIABLE] = POLICY
    return True
