"""Whether a test's inputs come from examples Hypothesis draws anew on every run.

Read from what Hypothesis leaves on the functions it runs; Hypothesis is never imported
here (the hook module stays light)."""

from __future__ import annotations

import sys
from typing import Any


def draws_at_random(test: Any) -> bool:
    """Whether ``test``, a function ``@given`` wrapped, draws its examples at random: no
    ``derandomize`` in its settings, a generate phase (not explicit examples alone), no
    ``@seed`` and no ``@reproduce_failure``. ``--hypothesis-seed`` is the caller's to check."""
    if not getattr(test, "is_hypothesis_test", False):
        return False
    settings = getattr(test, "_hypothesis_internal_use_settings", None)
    if settings is None or getattr(settings, "derandomize", True):
        return False
    if not any(getattr(phase, "name", "") == "generate" for phase in settings.phases):
        return False  # explicit examples (and the database's) only: nothing drawn anew
    if getattr(test, "_hypothesis_internal_use_reproduce_failure", None) is not None:
        return False  # @reproduce_failure replays one example's draws
    return getattr(test, "_hypothesis_internal_use_seed", None) is None


def running_draws_at_random() -> bool:
    """Whether Hypothesis is running a test now (a ``@given`` function, ``find()``, a state
    machine) that draws at random with a seed it drew itself (not ``--hypothesis-seed``):
    the build context it runs the test in names the test, which keeps that seed."""
    control = sys.modules.get("hypothesis.control")
    variable = getattr(control, "_current_build_context", None)
    test = getattr(getattr(variable, "value", None), "wrapped_test", None)
    return (
        draws_at_random(test)
        and getattr(test, "_hypothesis_internal_use_generated_seed", None) is not None
    )
