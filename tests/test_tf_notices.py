"""TensorFlow's native start-up notices stay out of test output and the command line;
every other line written to stderr during the import comes through."""

from __future__ import annotations

import os
import subprocess
import sys

from pytest_rnncov.config.tf_notices import is_notice, without_notices

# lines TensorFlow 2.21 wrote on this project's machine (a CPU host with CUDA libraries)
NOTICES = [
    "WARNING: All log messages before absl::InitializeLog() is called are written to STDERR",
    "I0000 00:00:1795710948.048165   22265 port.cc:153] oneDNN custom operations are on. You "
    "may see slightly different numerical results",
    "I0000 00:00:1795710948.048731   22265 cudart_stub.cc:31] Could not find cuda drivers on "
    "your machine, GPU will not be used.",
    "I0000 00:00:1795710948.149413   22265 cpu_feature_guard.cc:227] This TensorFlow binary is "
    "optimized to use available CPU instructions in performance-critical operations.",
    "To enable the following instructions: AVX2 FMA, in other operations, rebuild TensorFlow "
    "with the appropriate compiler flags.",
    "E0000 00:00:1795710950.1   22265 cuda_platform.cc:52] failed call to cuInit: INTERNAL: "
    "CUDA error: Failed call to cuInit: UNKNOWN ERROR (303)",
]


def test_only_the_known_notices_are_recognised():
    assert all(is_notice(line) for line in NOTICES)
    for kept in [
        "E0000 00:00:1795710950.1   22265 cuda_platform.cc:52] failed call to cuInit: "
        "CUDA_ERROR_OUT_OF_MEMORY",
        "E0000 00:00:1.0   1 other.cc:1] a real error",
        "Traceback (most recent call last):",
        "oneDNN custom operations are on",  # not as TensorFlow writes it
    ]:
        assert not is_notice(kept), kept


def test_the_notices_are_dropped_and_every_other_line_written_back_in_order(capfd):
    with without_notices():
        for line in [NOTICES[0], "mine: one", NOTICES[1], "mine: two"]:
            os.write(2, (line + "\n").encode())
    assert capfd.readouterr().err == "mine: one\nmine: two\n"


CONFTEST = """
import tensorflow  # a project's conftest importing TensorFlow before any test runs
"""
TEST = """
def test_fails():
    assert False
"""


def test_a_conftest_importing_tensorflow_prints_no_notice(tmp_path):
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_x.py").write_text(TEST)
    env = {k: v for k, v in os.environ.items() if k != "TF_CPP_MIN_LOG_LEVEL"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-s"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
    )
    assert done.returncode == 1, done.stdout[-2000:]
    output = done.stdout + done.stderr
    assert "test_x.py::test_fails" in output or "1 failed" in output
    for marker in ("absl::InitializeLog", "port.cc", "cudart_stub.cc", "cpu_feature_guard.cc"):
        assert marker not in output, output[-3000:]
    # without the plugin (the cause, not some other setting): the notices are there
    bare = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:rnncov", "-s"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env=env,
    )
    assert "absl::InitializeLog" in bare.stdout + bare.stderr
