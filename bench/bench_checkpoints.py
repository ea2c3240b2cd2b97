"""What xdist workers' checkpoints cost a suite of many quick tests: the MNIST example's
model (two LSTM layers of 128, its profile: a data file of about 74 KB) fed 5 held-out
digits by each of ``--tests`` tests, under ``pytest -n 2``, with the checkpoints and
without them (a plugin that takes the checkpoint file out of each worker's input), the
two alternating ``--rounds`` times. Prints each run's seconds, the medians and the
difference per test.

    python bench/bench_checkpoints.py [--tests 300] [--rounds 3]

A worker rewrites its checkpoint after each test that fed inputs, unless the last write
took more than a tenth of the time since (``checkpoints.MAX_SHARE``): this is the case
where that bound matters most.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

TESTS = """
import pytest

from examples.mnist.conftest import digits, mnist  # noqa: F401


@pytest.mark.parametrize("i", range({tests}))
def test_five_digits(mnist, digits, i):
    _, (x_test, _) = digits
    mnist.predict(x_test[i * 5 % 995:][:5])
"""

NO_CHECKPOINTS = """
import pytest


@pytest.hookimpl(trylast=True)
def pytest_configure_node(node):
    node.workerinput.pop("rnncov_checkpoint", None)
"""


def run(folder: Path, checkpoints: bool) -> float:
    """Seconds one ``pytest -n 2`` run of the suite takes."""
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "2"]
    if not checkpoints:
        command += ["-p", "no_checkpoints"]
    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join([str(ROOT), str(folder)]),
        TF_CPP_MIN_LOG_LEVEL="3",
    )
    start = time.perf_counter()
    done = subprocess.run(
        [*command, "--rnn-coverage=0", "test_many.py"],
        cwd=folder, env=env, capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode != 0:  # the session's own words, not only its exit status
        sys.exit(f"the timed session failed (exit {done.returncode}):\n{done.stdout[-3000:]}")
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tests", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    seconds: dict[bool, list[float]] = {True: [], False: []}
    with tempfile.TemporaryDirectory() as name:
        folder = Path(name)
        (folder / "test_many.py").write_text(textwrap.dedent(TESTS.format(tests=args.tests)))
        (folder / "no_checkpoints.py").write_text(textwrap.dedent(NO_CHECKPOINTS))
        run(folder, True)  # untimed: the model's artifacts, caches warm
        for _ in range(args.rounds):
            for checkpoints in (False, True):
                seconds[checkpoints].append(run(folder, checkpoints))
                print(f"{'with' if checkpoints else 'without'} checkpoints: "
                      f"{seconds[checkpoints][-1]:.2f} s", flush=True)  # fmt: skip
    with_, without = statistics.median(seconds[True]), statistics.median(seconds[False])
    print(
        f"{args.tests} tests under -n 2, medians of {args.rounds}: without checkpoints "
        f"{without:.2f} s, with {with_:.2f} s ({with_ / without:.3f}x; "
        f"{(with_ - without) / args.tests * 1e3:+.2f} ms per test)"
    )


if __name__ == "__main__":
    main()
