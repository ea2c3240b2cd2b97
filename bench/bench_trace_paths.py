"""Where a PyTorch model's trace is cheaper to compute: the numpy path or the device path.

The traced forward pass alone (the framework call and the components computed after it,
``RNNModel.iter_traces``, no metric update) on the numpy path (``trace_on="numpy"``: the
in-place float32 kernel) and on the device path (``trace_on="device"``: torch's own
operations where the model runs) of the same model, beside the model's own call. The
three run one after the other within each repeat, after a pause each, so the machine's
drift over minutes hits all of them alike; medians over the repeats. The model is
``bench_core``'s (the paper's MNIST shape, the second of two layers of 128 units traced),
on the GPU when torch sees one; both paths get batches of ``--batch`` inputs. ``gates``
times the components computed after the call alone (``Cell.from_states`` on the layer's
input and states the pass gave), per path: to compare two trees' kernels, run the script
with ``PYTHONPATH=<tree>`` for each, alternating.

    python bench/bench_trace_paths.py [--batch 2048] [--repeats 9]
        [--cases lstm:h,lstm:f,lstm:c,gru:z]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

from pytest_rnncov.config.idle_threads import sleeping_idle_threads

sleeping_idle_threads()  # idle threads sleep, as the plugin sets them (before numpy loads)

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent))

import bench_core  # noqa: E402

from pytest_rnncov import RNNModel  # noqa: E402
from pytest_rnncov.core.threads import numpy_work  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--batch", type=int, default=2048)
    parser.add_argument("--repeats", type=int, default=9)
    parser.add_argument("--pause", type=float, default=0.2)
    parser.add_argument("--cases", default="lstm:h,lstm:f,lstm:c,gru:z")
    args = parser.parse_args()
    import torch

    x = np.random.default_rng(0).normal(size=(args.batch, 28, 28)).astype(np.float32)
    for case in args.cases.split(","):
        cell, component = case.split(":")
        names = tuple(dict.fromkeys((component, "h")))
        model = bench_core.torch_model(cell)
        device = next(model.parameters()).device
        paths = {
            path: RNNModel(model, "rnn.l1", trace_on=path, batch_size=args.batch)
            for path in ("numpy", "device")
        }
        inputs = torch.from_numpy(x).to(device)

        def own_call() -> None:
            with torch.no_grad():
                bench_core.settle(model(inputs))

        def traced(rnn: RNNModel) -> None:
            for _, trace in rnn.iter_traces(x, outputs=True, components=names):
                bench_core.settle(trace.components)

        def gates(rnn: RNNModel, passed: tuple) -> None:
            _, sequence, mask, states = passed
            with numpy_work(batched=True):  # as iter_traces runs it
                trace = rnn.cell.from_states(sequence, states, mask, None, names)
            bench_core.settle(trace.components)

        times: dict[str, list[float]] = {"model": [], **{path: [] for path in paths}}
        times.update({f"gates {path}": [] for path in paths})
        passes = {path: rnn._forward(x, False, True, names) for path, rnn in paths.items()}
        for rnn in paths.values():
            traced(rnn)  # warm-up: weights selected, kernels loaded
        for _ in range(args.repeats):
            times["model"].append(bench_core.timed(own_call, args.pause))
            for path, rnn in paths.items():
                times[path].append(bench_core.timed(lambda: traced(rnn), args.pause))
                times[f"gates {path}"].append(
                    bench_core.timed(lambda: gates(rnn, passes[path]), args.pause)
                )
        median = {key: 1000 * statistics.median(values) for key, values in times.items()}
        shown = ", ".join(
            f"{key} {ms:.1f} ms ({ms / median['model']:.2f}x)" for key, ms in median.items()
        )
        print(f"{cell} {'+'.join(names)}, {args.batch} inputs on {device.type}: {shown}")
        print(f"  RATIO device/numpy = {median['device'] / median['numpy']:.2f}")


if __name__ == "__main__":
    main()
