"""pytest hooks of pytest-rnncov. Imports nothing heavy: TensorFlow loads only when a test
wraps a model."""

from __future__ import annotations

import pytest


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.getgroup("rnncov", "RNN coverage (pytest-rnncov)")
