"""Style is enforced, not hoped for: ruff's lint (pycodestyle, pyflakes, import order) and
its formatter, configured in pyproject.toml, pass on the whole repository."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUFF = [sys.executable, "-m", "ruff"]
PATHS = ["pytest_rnncov", "tests", "bench", "examples", "docs"]


def test_ruff_lint_passes():
    done = subprocess.run([*RUFF, "check", *PATHS], cwd=ROOT, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr


def test_ruff_format_is_applied():
    done = subprocess.run(
        [*RUFF, "format", "--check", *PATHS], cwd=ROOT, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stdout + done.stderr
