"""TensorFlow and PyTorch in one process: how their thread pools treat each other.

The test suite and campaign benches load both frameworks. Each keeps its own pool of
threads, sized to the machine; when both compute at once (or one's threads still spin
after a call), each can starve the other. For each pool setting this prints medians of a
PyTorch LSTM's ``model(x)`` and a Keras (TensorFlow) LSTM's ``predict_on_batch`` on 1,000
MNIST-shaped inputs:

  alone     the call by itself, after a pause
  after     right after the other framework's call (spinning threads, if any)
  beside    while the other framework computes in another thread

Settings (each in a fresh process: pools are fixed once a framework has run):

  default   both frameworks' own sizes
  passive   OMP_WAIT_POLICY=PASSIVE: PyTorch's OpenMP threads sleep instead of spinning
  split     every pool of both frameworks at 1 thread (each framework one core of two)

    python bench/bench_threads.py [--repeats 7] [--settings default,passive,split]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import threading
import time

SETTINGS = ("default", "passive", "split")


def measure(setting: str, repeats: int) -> None:
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
    if setting == "split":
        import tensorflow as tf
        import torch

        torch.set_num_threads(1)
        torch.set_num_interop_threads(1)
        tf.config.threading.set_intra_op_parallelism_threads(1)
        tf.config.threading.set_inter_op_parallelism_threads(1)
    sys.path.insert(0, os.path.dirname(__file__))
    import numpy as np
    import torch
    from bench_core import keras_model, torch_model

    x = np.random.default_rng(0).random((1000, 28, 28), dtype=np.float32)
    keras_net, torch_net = keras_model("lstm"), torch_model("lstm")

    def torch_call() -> None:
        with torch.no_grad():
            torch_net(torch.from_numpy(x))

    def keras_call() -> None:
        keras_net.predict_on_batch(x)

    calls = {"torch": torch_call, "keras": keras_call}
    for call in calls.values():
        call()
    results: dict[str, dict[str, list[float]]] = {
        n: {"alone": [], "after": [], "beside": []} for n in calls
    }
    for _ in range(repeats):
        for name, call in calls.items():
            other = calls["keras" if name == "torch" else "torch"]
            time.sleep(0.3)
            start = time.perf_counter()
            call()
            results[name]["alone"].append(time.perf_counter() - start)
            time.sleep(0.3)
            other()
            start = time.perf_counter()
            call()
            results[name]["after"].append(time.perf_counter() - start)
            time.sleep(0.3)
            stop = threading.Event()

            def busy(other=other, stop=stop) -> None:
                while not stop.is_set():
                    other()

            thread = threading.Thread(target=busy)
            thread.start()
            time.sleep(0.05)
            start = time.perf_counter()
            call()
            results[name]["beside"].append(time.perf_counter() - start)
            stop.set()
            thread.join()
    for name, rows in results.items():
        cells = ", ".join(f"{k} {statistics.median(v) * 1e3:6.1f} ms" for k, v in rows.items())
        print(f"  {setting:<8} {name:<6} {cells}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--settings", default=",".join(SETTINGS))
    parser.add_argument("--one", choices=SETTINGS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        measure(args.one, args.repeats)
        return
    print(f"medians of {args.repeats}, 1,000 inputs, LSTM(128) -> LSTM(128), 28 x 28")
    for setting in args.settings.split(","):
        env = dict(os.environ)
        if setting == "passive":
            env["OMP_WAIT_POLICY"] = "PASSIVE"
        subprocess.run(
            [sys.executable, __file__, "--one", setting, "--repeats", str(args.repeats)],
            check=True,
            env=env,
        )


if __name__ == "__main__":
    main()
