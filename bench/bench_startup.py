"""What the installed plugin costs a pytest run that does not use it.

Runs ``pytest --collect-only`` in an empty project with the plugin loaded and with
``-p no:rnncov``, alternating, and prints the medians and their difference; also whether
loading the plugin imported numpy or a deep-learning framework.

    python bench/bench_startup.py [--runs 21]
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

PROBE = (
    "import sys, pytest; code = pytest.main(['--collect-only', '-q', '-p', "
    "'no:cacheprovider'{extra}]); heavy = [m for m in ('numpy', 'tensorflow', 'torch', "
    "'jax', 'keras') if m in sys.modules]; print('HEAVY', heavy)"
)


def run(folder: Path, extra: str) -> float:
    start = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", PROBE.format(extra=extra)],
        cwd=folder,
        capture_output=True,
        text=True,
        check=False,
    )
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--runs", type=int, default=21)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder)
        (path / "test_nothing.py").write_text("def test_nothing():\n    pass\n")
        heavy = (
            subprocess.run(
                [sys.executable, "-c", PROBE.format(extra="")],
                cwd=path,
                capture_output=True,
                text=True,
            )
            .stdout.strip()
            .splitlines()[-1]
        )
        with_plugin, without = [], []
        for _ in range(args.runs):
            with_plugin.append(run(path, ""))
            without.append(run(path, ", '-p', 'no:rnncov'"))
    a, b = statistics.median(with_plugin) * 1e3, statistics.median(without) * 1e3
    print(f"pytest --collect-only in an empty project, medians of {args.runs}:")
    print(f"  with the plugin     {a:7.1f} ms")
    print(f"  with -p no:rnncov   {b:7.1f} ms")
    print(f"  the plugin adds     {a - b:7.1f} ms   (target <= 10)")
    print(f"  modules loaded with the plugin: {heavy}")


if __name__ == "__main__":
    main()
