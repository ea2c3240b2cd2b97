"""The four example projects, run as a user runs them (README's main command included)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NLTK_DATA = os.environ.get("NLTK_DATA", str(ROOT.parent / "shared" / "data" / "nltk_data"))

#: The bars README gives for each example (the MNIST one is README's main command).
BARS = {"mnist": "0.6", "sentiment": "0.3", "pic50": "0.15", "vowels": "0.3"}


def run_example(name: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``pytest examples/NAME`` (all examples for an empty name) in a subprocess."""
    env = dict(os.environ, NLTK_DATA=NLTK_DATA)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            f"examples/{name}".rstrip("/"),
            "-p",
            "no:cacheprovider",
            *args,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=900,
    )


def test_all_examples_pass_their_bars_in_one_session():
    """`pytest examples`: four example projects, importable together, one per-model gate."""
    bars = ",".join(f"{model}:*:{bar}" for model, bar in BARS.items())
    done = run_example("", f"--rnn-coverage={bars}")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "12 passed" in done.stdout
    assert f"Required RNN coverage ({bars}) reached." in done.stdout
    for model in BARS:
        assert re.search(rf"^{model} .*\d+% \(\d+/243\)", done.stdout, re.M), model


def test_main_command_passes_its_gate():
    done = run_example("mnist", "--rnn-coverage=0.6")
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "3 passed" in done.stdout
    assert "Required RNN coverage of 60% reached." in done.stdout
    assert "RNN adversarial samples" in done.stdout


def test_main_command_fails_when_the_bar_is_above_what_it_reaches():
    done = run_example("mnist", "--rnn-coverage=1.0")
    assert done.returncode == 1, done.stdout[-3000:]
    assert "3 passed" in done.stdout  # every test passed: the gate alone fails the session
    assert re.search(
        r"FAIL Required RNN coverage of 100% not reached: .*TC \d+% \(\d+/243\)", done.stdout
    )


def test_readme_snippet_runs_as_written_on_the_mnist_model(tmp_path):
    """README's "Use it in your project" code, copied as a newcomer copies it, with only
    what it calls yours filled in (the data fixture, the model file: the MNIST example's):
    both tests pass (its bars once failed on this very model) and the gate line prints."""
    text = (ROOT / "README.md").read_text()
    section = text.split("## Use it in your project", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    conftest, tests = code.split("# test_model.py\n")
    data = (
        "\n\nimport sys\nsys.path.insert(0, {root!r})\n\n\n"
        '@pytest.fixture(scope="session")\ndef data():\n'
        "    from examples.mnist.data import split\n\n    return split()\n"
    ).format(root=str(ROOT))
    (tmp_path / "conftest.py").write_text(conftest + data)
    (tmp_path / "test_model.py").write_text(tests)
    (tmp_path / "model.keras").write_bytes(
        (ROOT / "examples" / "mnist" / "artifacts" / "model.keras").read_bytes()
    )
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--rnn-coverage=0.5"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "2 passed" in done.stdout
    # beside the conftest, wherever pytest runs from (it held a path from the current folder)
    written = f"RNN coverage profile fitted from x_train and written to {tmp_path}/rnn-profile"
    assert written in done.stdout
    assert (tmp_path / "rnn-profile.json").is_file()
    assert "Required RNN coverage of 50% reached." in done.stdout
