"""Memory of an ONNX model whose extra output no one fetches: the tests' hand-built GRU
graph plus a ``ConstantOfShape`` output of ``--size`` x ``--size`` float32 values, traced
and predicted with ``RNNModel(output="out")``. Each variant runs in a fresh process and
prints its peak resident set size: the session pruned to the fetched outputs (as
pytest-rnncov builds it) and unpruned (``_prune`` replaced by a no-op: ONNX Runtime then
computes the constant at every call).

    python bench/bench_onnx_prune.py [--size 20000]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def measure(size: int, pruned: bool) -> None:
    """One variant in this process: print the peak RSS before and after the calls."""
    sys.path.insert(0, str(ROOT / "tests"))
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper
    from test_onnx import hand_model

    from pytest_rnncov import RNNModel
    from pytest_rnncov.adapters import onnx as onnx_adapter

    if not pruned:
        onnx_adapter._prune = lambda graph, wanted: None
    model = hand_model("GRU")
    graph = model.graph
    graph.initializer.append(numpy_helper.from_array(np.array([size, size], np.int64), "shape"))
    one = helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])
    graph.node.append(helper.make_node("ConstantOfShape", ["shape"], ["big"], value=one))
    graph.output.append(helper.make_tensor_value_info("big", TensorProto.FLOAT, [size, size]))
    x = np.random.default_rng(0).normal(size=(9, 6, 3)).astype(np.float32)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    rnn = RNNModel(model, output="out")
    rnn.predict(x)
    rnn.trace(x)
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024
    print(f"{'pruned' if pruned else 'unpruned'}: peak RSS {before} MB before, {after} MB after")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--size", type=int, default=20000)
    parser.add_argument("--variant", choices=("pruned", "unpruned"), default=None)
    args = parser.parse_args()
    if args.variant:
        measure(args.size, args.variant == "pruned")
        return
    print(f"extra output: {args.size} x {args.size} float32 ({args.size**2 * 4 / 1e9:.1f} GB)")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    for variant in ("pruned", "unpruned"):
        command = [sys.executable, __file__, "--size", str(args.size), "--variant", variant]
        subprocess.run(command, env=env, check=True)


if __name__ == "__main__":
    main()
