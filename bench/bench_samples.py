"""What saving a campaign's adversarial samples costs: PNGs forced to disk or not, and
their zlib level.

Runs the MNIST example's default campaign of ``bench/generation_table.py`` (200 seeds,
batches of 200, GA k=4 n=8 gamma=20, 10,000 cases, one seed) four ways, alternating, in
one process: without a ``SampleWriter``; with one as in the release before (each PNG
forced to disk, ``fsync``, and compressed at zlib level 9); with PNGs forced, at level 6;
and as it is now (level 6, PNGs not forced; the summary, arrays and text file are).
Prints each way's median seconds over ``--rounds``, the PNGs written, and the ratios to the
campaign without a writer. The disk decides what fsync costs: run it where your CI writes
(``--folder``).

    python bench/bench_samples.py [--rounds 3] [--seed 0] [--folder DIR]
"""

from __future__ import annotations

import argparse
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

from pytest_rnncov.config.idle_threads import sleeping_idle_threads

sleeping_idle_threads()  # idle threads sleep, as the plugin sets them (before numpy loads)

import numpy as np  # noqa: E402

sys.path.insert(0, str(Path(__file__).parent))
sys.path.insert(0, str(Path(__file__).parent.parent))

import generation_table  # noqa: E402

from pytest_rnncov import Profile, SampleWriter  # noqa: E402
from pytest_rnncov.reporting import samples  # noqa: E402


def forced(write: Any) -> Any:
    """``write_atomic`` with every file forced to disk (the release before)."""

    def write_durably(*args: Any, **kwargs: Any) -> Any:
        kwargs["durable"] = True
        return write(*args, **kwargs)

    return write_durably


def level_9(encode: Any) -> Any:
    """``png_bytes`` at zlib level 9 (the release before)."""

    def encode_9(*args: Any, **kwargs: Any) -> Any:
        kwargs["level"] = 9
        return encode(*args, **kwargs)

    return encode_9


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--folder", default=None, help="where the samples go (a temp folder)")
    args = parser.parse_args()

    rnn, seeds, mutator, oracle, budget, _ = generation_table.example("mnist")
    profile = Profile.load(generation_table.ROOT / "examples/mnist/artifacts/profile.json")
    plain_write, plain_png = samples.write_atomic, samples.png_bytes
    ways = ("no writer", "forced, level 9", "forced, level 6", "now: level 6")
    times: dict[str, list[float]] = {way: [] for way in ways}
    images = 0

    def run(way: str) -> None:
        nonlocal images
        folder = Path(tempfile.mkdtemp(dir=args.folder))
        listeners = [] if way == "no writer" else [SampleWriter(folder / "samples")]
        samples.write_atomic = forced(plain_write) if "forced" in way else plain_write
        samples.png_bytes = level_9(plain_png) if "level 9" in way else plain_png
        campaign = generation_table.table_campaign(
            rnn, seeds, mutator, oracle, profile, budget, args.seed, listeners=listeners
        )
        time.sleep(0.3)
        start = time.perf_counter()
        campaign.run()
        times[way].append(time.perf_counter() - start)
        if listeners:
            images = len(list((folder / "samples").glob("*.png")))
        shutil.rmtree(folder)

    run("no writer")  # untimed warm-up
    times["no writer"].clear()
    for _ in range(args.rounds):
        for way in times:
            run(way)
    samples.write_atomic, samples.png_bytes = plain_write, plain_png
    base = float(np.median(times["no writer"]))
    print(f"MNIST, seed {args.seed}, medians of {args.rounds}; {images} PNGs per campaign")
    for way, seconds in times.items():
        median = float(np.median(seconds))
        print(f"  {way:<18}{median:7.2f} s  {median / base:5.2f}x the campaign without a writer")


if __name__ == "__main__":
    main()
