"""Keras 3 on JAX, device path: the states path against per-step sums computed on the device.

For the paper's MNIST shape (``bench_core.keras_model``, 10,000 inputs), each metric set
traced two ways by two tracked models of one Keras model: ``states`` (the layer's states,
and the gates computed after the call, stay on the device; each component's sums are
brought to the host on their own) and ``sums`` (gates, cell state and h summed in one
compiled function after the model's call; one transfer). Prints tracked stream /
``predict_on_batch``, the paths alternating within each repeat (medians). Meant for an
accelerator (on the CPU the numpy path is the default and faster).

    KERAS_BACKEND=jax python bench/bench_device_sums.py [--cells gru,simple_rnn,lstm]
        [--repeats 7] [--inputs 10000]
"""

from __future__ import annotations

import argparse
import os
import statistics

from bench_core import CELLS, keras_model, metric_set, timed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cells", default="gru,simple_rnn,lstm")
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--inputs", type=int, default=10_000)
    args = parser.parse_args()
    unknown = sorted(set(args.cells.split(",")) - set(CELLS))
    if unknown or args.repeats < 1 or args.inputs < 1:
        parser.error(
            f"--cells {args.cells} --repeats {args.repeats} --inputs {args.inputs}: cells are "
            f"{', '.join(sorted(CELLS))}; pass 1 or more repeats and inputs"
        )
    os.environ.setdefault("KERAS_BACKEND", "jax")
    import numpy as np

    from pytest_rnncov import Coverage, Profile, RNNModel
    from pytest_rnncov.core.arrays import to_host

    x = np.random.default_rng(0).random((args.inputs, 28, 28), dtype=np.float32)
    for cell in args.cells.split(","):
        model = keras_model(cell)
        states = RNNModel(model, "traced", trace_on="device")
        states.gives_sums = lambda components: False  # the path before the sums
        sums = RNNModel(model, "traced", trace_on="device")
        profile = Profile(window=(4, 24)).fit(states, x[:2000])
        for set_name in ("h", "paper", "cell"):
            chosen = metric_set(set_name, cell)
            if chosen is None:
                continue
            title, metrics = chosen
            paths = {
                name: Coverage(rnn, profile, metrics, track_fitness=False)
                for name, rnn in (("states", states), ("sums", sums))
            }

            def tracked(coverage: Coverage) -> None:
                for chunk in coverage.stream(x, keep_inputs=False):
                    to_host(chunk.outputs[:1])

            calls = {"predict_on_batch": lambda: model.predict_on_batch(x)}
            calls.update({name: (lambda c=c: tracked(c)) for name, c in paths.items()})
            for call in calls.values():  # compile and warm every path
                call()
                call()
            times: dict[str, list[float]] = {name: [] for name in calls}
            for _ in range(args.repeats):
                for name, call in calls.items():
                    times[name].append(timed(call, 0.1))
            med = {name: statistics.median(v) * 1e3 for name, v in times.items()}
            base = med["predict_on_batch"]
            summed = sums.gives_sums(paths["sums"].components_)
            print(
                f"{cell} {title}: predict_on_batch {base:.1f} ms; states "
                f"{med['states'] / base:.2f}x, sums {med['sums'] / base:.2f}x"
                f"{'' if summed else ' (h alone: the sums path takes the states too)'}"
            )


if __name__ == "__main__":
    main()
