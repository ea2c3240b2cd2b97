"""The HTML report's weight on a realistic page: two small Keras models (a 6-step x 2-feature
LSTM fed time series, an 8x8-image LSTM), each with a campaign, run by pytest as a user's
suite would (``--rnn-report=html:DIR``). It prints the page's size and what takes it: each
embedded PNG (its alt text, pixel size and bytes), grouped by kind.

    python bench/bench_html.py [--keep DIR] [--tree PATH]

``--keep`` leaves the run's folder (with ``report/index.html``) at DIR, to look at the page.
``--tree`` imports pytest-rnncov from another checkout (an older commit in a ``git
worktree``, or ``git archive COMMIT pytest_rnncov | tar -x -C PATH``) to weigh its page.
"""

from __future__ import annotations

import argparse
import base64
import collections
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import textwrap
from html.parser import HTMLParser
from pathlib import Path

CONFTEST = """
import os
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
import numpy as np
import pytest


@pytest.fixture(scope="session")
def tiny(rnncov):
    import keras

    keras.utils.set_random_seed(0)
    model = keras.Sequential(
        [keras.Input((6, 2)), keras.layers.LSTM(4, return_sequences=True, name="lstm"),
         keras.layers.Flatten(), keras.layers.Dense(2)],
        name="tiny",
    )
    x_train = np.random.default_rng(0).normal(size=(64, 6, 2)).astype("float32")
    return rnncov.track(model, x_train=x_train, window=(1, 5), name="tiny")


@pytest.fixture(scope="session")
def digits(rnncov):
    import keras

    keras.utils.set_random_seed(1)
    model = keras.Sequential(
        [keras.Input((8, 8)), keras.layers.LSTM(6, return_sequences=True, name="lstm"),
         keras.layers.Flatten(), keras.layers.Dense(3)],
        name="digits",
    )
    x_train = np.random.default_rng(1).uniform(size=(64, 8, 8)).astype("float32")
    return rnncov.track(model, x_train=x_train, window=(1, 7), name="digits")
"""

TESTS = """
import numpy as np
from pytest_rnncov import GaussianMutator, Oracle


def test_series(tiny, rnncov):
    tiny.predict(np.random.default_rng(1).normal(size=(32, 6, 2)).astype("float32"))
    seeds = rnncov.rng().normal(size=(8, 6, 2)).astype("float32")
    tiny.campaign(seeds, GaussianMutator(variance=(2.0, 4.0), clip=None),
                  Oracle(radius=None), budget=200, patience=1).run()


def test_images(digits, rnncov):
    digits.predict(np.random.default_rng(2).uniform(size=(32, 8, 8)).astype("float32"))
    seeds = rnncov.rng("images").uniform(size=(8, 8, 8)).astype("float32")
    digits.campaign(seeds, GaussianMutator(variance=(0.05, 0.1)),
                    Oracle(radius=None), budget=200, patience=1).run()
"""


class Images(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.images: list[dict[str, str | None]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "img":
            self.images.append(dict(attrs))


def png_size(data: bytes) -> tuple[int, int]:
    width, height = struct.unpack(">II", data[16:24])
    return width, height


def kind(alt: str) -> str:
    if alt.startswith("seed "):
        return "gallery"
    return alt.split(":")[0] if ":" in alt else alt


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--keep", help="leave the run's folder here")
    parser.add_argument("--tree", default=str(Path(__file__).resolve().parents[1]))
    args = parser.parse_args()
    root = Path(args.tree).resolve()
    folder = Path(tempfile.mkdtemp(prefix="rnncov-html-"))
    try:
        (folder / "conftest.py").write_text(textwrap.dedent(CONFTEST))
        (folder / "test_page.py").write_text(textwrap.dedent(TESTS))
        env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(root), str(folder)]))
        subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
             "--rnn-report=html:report", "--rnn-seed=0"],
            cwd=folder, env=env, check=True, stdout=subprocess.DEVNULL,
        )  # fmt: skip
        page = (folder / "report" / "index.html").read_text("utf-8")
        images = Images()
        images.feed(page)
        total = len(page.encode("utf-8"))
        by_kind: dict[str, list[int]] = collections.defaultdict(list)
        print(f"page: {total:,} bytes, {len(images.images)} images")
        for image in images.images:
            src = str(image.get("src") or "")
            data = base64.b64decode(src.split(",", 1)[1])
            alt = str(image.get("alt") or "")
            by_kind[kind(alt)].append(len(src))
            width, height = png_size(data)
            print(f"  {len(src):>8,} B in the page ({width}x{height} px)  {alt[:60]}")
        print("by kind (bytes in the page, base64):")
        for name, sizes in sorted(by_kind.items(), key=lambda kv: -sum(kv[1])):
            print(f"  {name:<28} {len(sizes):>3} images {sum(sizes):>10,} B")
        text = total - sum(sum(sizes) for sizes in by_kind.values())
        print(f"  {'text, tables, CSS':<28}     {text:>17,} B")
        if args.keep:
            shutil.copytree(folder, args.keep, dirs_exist_ok=True)
            print(f"page left at {Path(args.keep) / 'report' / 'index.html'}")
    finally:
        shutil.rmtree(folder, ignore_errors=True)


if __name__ == "__main__":
    main()
