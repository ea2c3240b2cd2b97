"""Keras 3 on the JAX and torch backends, without TensorFlow: every cell traces exactly, on
the numpy path and on the backend's own arrays (the device path, on the CPU here)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

CHECK = Path(__file__).with_name("backend_check.py")


@pytest.mark.parametrize("backend", ["jax", "jax-x64", "torch"])
def test_keras3_backend_without_tensorflow(backend):
    """``jax-x64``: JAX in 64-bit mode, where the device path's sums are float64 sums."""
    x64 = backend == "jax-x64"
    backend = backend.removesuffix("-x64")
    env = dict(os.environ, KERAS_BACKEND=backend, JAX_ENABLE_X64="1" if x64 else "0")
    done = subprocess.run(
        [sys.executable, "-W", "ignore", str(CHECK)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    checks = {"jax": 29, "torch": 26}[backend]  # JAX: and the device path's sums, 3 cells
    mode = " (64-bit)" if x64 else ""
    assert f"OK {backend}{mode}: {checks} cells checked without TensorFlow" in done.stdout
