"""Where a campaign's time goes, on one example of the generation table.

Runs the default campaign of ``bench/generation_table.py`` (200 seeds, batches of 200, GA
k=4 n=8 gamma=20, the example's budget) with timers around its parts, after an untimed
warm-up campaign as the table runs, and prints each part's seconds and share of the
campaign:

  framework call  the adapter's one framework call per batch (outputs and the layer's states,
                  or the per-step sums the metrics read)
  shrinking calls the model calls that shrink the adversarial samples (outputs only, through
                  the adapter's predict; at most as many inputs as the search generated)
  trace           the trace from those states (gates, masks: the Cell)
  metrics         the coverage update (Coverage.update_signals)
  mutation        mutator.mutate
  distances       mutator.distance (the oracle's radius)
  oracle          the oracle's decisions and failure fitness
  statistics      the test-suite statistics (diversity, the minimal suite)
  rest            scheduling, GA selection, shrinking's own work (its model calls apart)

Beside it: the model's own predictions per second at a batch of 1,000 (the speed column's
reference), and the model alone called on batches of the sizes the campaign called it with,
the search's and shrinking's (no project code, on PyTorch's own threads: a tracked model
runs its small calls on one).

OpenMP reads ``OMP_WAIT_POLICY`` when PyTorch loads, so ``--policies default,PASSIVE`` runs
the measurement in fresh processes, alternating the policies (``default``: the variable
unset, PyTorch loaded before the generation table would set it), ``--rounds`` times each,
with ``OPENBLAS_THREAD_TIMEOUT=4`` unless set, and prints every run and each policy's
median speed. ``POLICY/N`` runs PyTorch on N threads (``torch.set_num_threads``, as a
conftest would set it; the predict rate is then measured on N threads too): ``--policies
PASSIVE,PASSIVE/1``. ``POLICY/own`` runs every model call on PyTorch's own setting, as
before small CPU calls ran on one thread (``SMALL_CALL_WORK``): ``--policies
PASSIVE,PASSIVE/own`` compares the two.

    NLTK_DATA=../shared/data/nltk_data python bench/bench_campaign_parts.py
        [--example vowels|mnist|sentiment|molecules] [--seed 0]
        [--policies default,PASSIVE,PASSIVE/1 --rounds 3] [--busy] [--torch-threads N]

``--busy`` runs a process that keeps one core busy during the measurement (a CI machine
running other jobs, or pytest-xdist's other worker).
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
sys.path.insert(0, str(Path(__file__).resolve().parent))
#: set by ``--policies`` for a run with OpenMP's own wait policy
UNSET_POLICY = "RNNCOV_BENCH_OMP_DEFAULT"
if os.environ.get(UNSET_POLICY):
    # PyTorch reads OMP_WAIT_POLICY when it loads: loaded here with it unset, it keeps
    # OpenMP's default (the generation table sets PASSIVE only for a PyTorch not yet loaded)
    import torch  # noqa: F401

import generation_table  # noqa: E402
import numpy as np  # noqa: E402

from pytest_rnncov import Coverage, Oracle  # noqa: E402
from pytest_rnncov.generation import statistics as suite_statistics  # noqa: E402


class Timers:
    """Seconds spent in wrapped callables, per label."""

    def __init__(self) -> None:
        self.spent: dict[str, float] = defaultdict(float)
        self.sizes: dict[str, list[int]] = defaultdict(list)

    def wrap(self, owner: Any, name: str, label: str, sizes: bool = False) -> None:
        original: Callable[..., Any] = getattr(owner, name)

        def timed(*args: Any, **kwargs: Any) -> Any:
            if sizes:
                self.sizes[label].append(len(args[1] if isinstance(owner, type) else args[0]))
            start = time.perf_counter()
            try:
                return original(*args, **kwargs)
            finally:
                self.spent[label] += time.perf_counter() - start

        setattr(owner, name, timed)


def model_alone(rnn: Any, x: np.ndarray, sizes: list[int]) -> float:
    """Seconds the model's own call takes over batches of ``sizes`` (rows of ``x``)."""
    rows = np.concatenate([x] * (max(sizes) // len(x) + 1))
    if hasattr(rnn.model, "predict_on_batch"):
        call = rnn.model.predict_on_batch
    else:
        import torch

        def call(batch: np.ndarray) -> None:
            with torch.no_grad():
                rnn.model(torch.as_tensor(np.asarray(batch, np.float32)))

    for size in sorted(set(sizes)):  # warm every shape (TensorFlow traces per shape)
        call(rows[:size])
    start = time.perf_counter()
    for size in sizes:
        call(rows[:size])
    return time.perf_counter() - start


def compare(args: argparse.Namespace) -> None:
    """The measurement in fresh processes, alternating OMP_WAIT_POLICY values."""
    speeds: dict[str, list[float]] = defaultdict(list)
    seconds: dict[str, list[float]] = defaultdict(list)
    for _ in range(args.rounds):
        for policy in args.policies.split(","):
            wait, _, threads = policy.partition("/")
            label = f"OMP_WAIT_POLICY={wait}" + (
                ", every call on PyTorch's threads"
                if threads == "own"
                else f", PyTorch threads {threads}"
                if threads
                else ""
            )
            env = {k: v for k, v in os.environ.items() if k != "OMP_WAIT_POLICY"}
            # numpy loads with PyTorch in a default run: OpenBLAS's setting alike in both
            env.setdefault("OPENBLAS_THREAD_TIMEOUT", "4")
            if wait == "default":
                env[UNSET_POLICY] = "1"
            else:
                env["OMP_WAIT_POLICY"] = wait
            command = [sys.executable, __file__, "--example", args.example]
            if args.busy:
                command.append("--busy")
            if threads == "own":
                command.append("--own-threads")
            elif threads:
                command += ["--torch-threads", threads]
            out = subprocess.run(
                [*command, "--seed", str(args.seed)], env=env, capture_output=True, text=True
            ).stdout
            print(f"--- {label}\n{out}", flush=True)
            seconds[label].append(float(re.search(r"cases in ([\d.]+) s", out).group(1)))
            speeds[label].append(float(re.search(r"ratio ([\d.]+)\)", out).group(1)))
    for label, values in speeds.items():
        print(
            f"{label}: campaign {statistics.median(seconds[label]):.2f} s "
            f"(runs: {', '.join(f'{v:.2f}' for v in seconds[label])}); campaign / predict "
            f"rate {statistics.median(values):.2f} (runs: {', '.join(f'{v:.2f}' for v in values)})"
        )


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--example", default="vowels")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--policies", default=None)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--busy", action="store_true")
    parser.add_argument("--torch-threads", type=int, default=None)
    parser.add_argument("--own-threads", action="store_true")
    args = parser.parse_args()
    if args.policies:
        compare(args)
        return
    busy = None
    if args.busy:
        busy = subprocess.Popen([sys.executable, "-c", "while True:\n    sum(range(10**6))"])
    try:
        measure(args)
    finally:
        if busy is not None:
            busy.kill()


def measure(args: argparse.Namespace) -> None:
    """One campaign with its parts timed, and the model alone on the same batch sizes."""
    if args.torch_threads is not None:
        import torch

        torch.set_num_threads(args.torch_threads)
    if args.own_threads:  # no call is small: every call as PyTorch is set
        from pytest_rnncov.adapters import torch as torch_adapter

        torch_adapter.SMALL_CALL_WORK = 0
    print(
        f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', '(unset)')}, "
        f"OPENBLAS_THREAD_TIMEOUT={os.environ.get('OPENBLAS_THREAD_TIMEOUT', '(unset)')}, "
        f"PyTorch threads {args.torch_threads or 'as PyTorch sets them'}"
        + (", every call on PyTorch's threads" if args.own_threads else "")
    )
    rnn, seeds, mutator, oracle, budget, _ = generation_table.example(args.example)
    profile = generation_table.example_profile(args.example)
    encoded = mutator.encode(seeds)
    # untimed, as in the table: what the first campaign of a process pays once (WordNet,
    # caches, TensorFlow's traces per batch shape)
    generation_table.table_campaign(
        rnn,
        seeds,
        mutator,
        oracle,
        profile,
        budget,
        args.seed,
        **generation_table.METHODS["Random"],
    ).run()
    predictions = generation_table.predictions_per_second(rnn, encoded)

    timers = Timers()
    timers.wrap(rnn, "_forward", "framework call", sizes=True)
    # where the metrics read only per-step sums (MNIST's Keras twin), the call that gives them
    timers.wrap(rnn, "_forward_sums", "framework call", sizes=True)
    timers.wrap(rnn, "_predict", "shrinking calls", sizes=True)
    timers.wrap(type(rnn.cell), "from_states", "trace")
    timers.wrap(Coverage, "update_signals", "metrics")
    timers.wrap(mutator, "mutate", "mutation")
    timers.wrap(mutator, "distance", "distances")
    for name in ("fails", "failure_fitness"):
        timers.wrap(Oracle, name, "oracle")
    timers.wrap(suite_statistics.DiversityAccumulator, "add", "statistics")
    timers.wrap(suite_statistics.MinimalSuite, "add", "statistics")
    campaign = generation_table.table_campaign(
        rnn, seeds, mutator, oracle, profile, budget, args.seed
    )
    time.sleep(0.3)
    start = time.perf_counter()
    result = campaign.run()
    total = time.perf_counter() - start
    search = timers.sizes["framework call"]
    shrinking = timers.sizes["shrinking calls"]
    alone = model_alone(rnn, encoded, search)
    alone_shrinking = model_alone(rnn, encoded, shrinking) if shrinking else 0.0

    cases = result.test_cases
    print(
        f"{args.example}, seed {args.seed}: {cases} test cases in {total:.2f} s "
        f"({cases / total:.0f}/s; the model's predict: {predictions:.0f}/s at a batch of "
        f"1,000; ratio {cases / total / predictions:.2f})"
    )
    for label, calls in (("search", search), ("shrinking", shrinking)):
        if calls:
            sizes = np.array(calls)
            print(
                f"{label}'s model calls: {len(sizes)}, {sizes.sum()} inputs (median batch "
                f"{np.median(sizes):.0f}, {(sizes < 50).sum()} of fewer than 50 inputs)"
            )
    parts = dict(timers.spent)
    parts["rest"] = total - sum(parts.values())
    for label, seconds in sorted(parts.items(), key=lambda item: -item[1]):
        print(f"  {label:<16}{seconds * 1e3:9.0f} ms  {seconds / total:6.1%}")
    both = alone + alone_shrinking
    print(
        f"the model alone at those batch sizes: {alone * 1e3:.0f} ms for the search's, "
        f"{alone_shrinking * 1e3:.0f} ms for shrinking's ({both / total:.1%} of the "
        f"campaign); the ratio if nothing else took time: {cases / both / predictions:.2f} "
        f"({cases / alone / predictions:.2f} without shrinking)"
    )


if __name__ == "__main__":
    main()
