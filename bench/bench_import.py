"""What a typed decoder would add to the import of the file readers: ``msgspec`` (the
candidate the project weighed) against the project's own reader toolkit
(``pytest_rnncov.files``), each timed as a fresh interpreter's import beyond ``json``,
alternated, median of ``--runs`` per round.

    python bench/bench_import.py [--runs 21] [--rounds 3]     # needs: pip install msgspec
"""

from __future__ import annotations

import argparse
import importlib.util
import statistics
import subprocess
import sys

from bench_core import timed


def median_ms(code: str, runs: int) -> float:
    run = [sys.executable, "-c", code]
    return (
        statistics.median(timed(lambda: subprocess.run(run, check=True)) for _ in range(runs)) * 1e3
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=21)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    if importlib.util.find_spec("msgspec") is None:
        parser.exit(1, "bench_import.py needs msgspec: pip install msgspec\n")
    for _ in range(args.rounds):
        base = median_ms("import json", args.runs)
        msgspec = median_ms("import json, msgspec", args.runs) - base
        ours = median_ms("import json, pytest_rnncov.files", args.runs) - base
        print(
            f"import json {base:.1f} ms; msgspec adds {msgspec:.1f} ms; "
            f"pytest_rnncov.files adds {ours:.1f} ms"
        )


if __name__ == "__main__":
    main()
