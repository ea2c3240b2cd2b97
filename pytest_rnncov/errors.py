"""Exceptions and warnings raised by pytest-rnncov.

Every error the project raises on bad input derives from :class:`RNNCovError`, and its
message names the value that was wrong and says how to fix the call. Every fallback that
changes what is computed (a signal left out of a plot, a metric the profile cannot serve)
is announced with an :class:`RNNCovWarning`.
"""

from __future__ import annotations

import os
from typing import Iterable

__all__ = [
    "RNNCovError",
    "InvalidArgument",
    "InvalidInput",
    "ModelError",
    "UnsafeModel",
    "UnknownLayer",
    "ProfileError",
    "StaleProfile",
    "DegenerateProfile",
    "DataFileError",
    "OutputConflict",
    "MissingResource",
    "AdversarialFailure",
    "RNNCovWarning",
]


class RNNCovError(Exception):
    """Base class of every error raised by pytest-rnncov."""


class InvalidArgument(RNNCovError, ValueError):
    """A function was called with an argument it cannot accept."""


class InvalidInput(InvalidArgument):
    """Inputs fed to a model have the wrong shape or dtype, or hold NaN or inf."""

    #: the rows of the batch the error is about (the first few), when it names rows
    rows: tuple[int, ...] = ()

    def about_rows(self, rows: Iterable[int]) -> "InvalidInput":
        """This error, noting the batch rows it is about."""
        self.rows = tuple(int(r) for r in rows)
        return self


class ModelError(RNNCovError):
    """The model cannot be traced exactly: no recurrent layer, unsupported wiring."""


class UnsafeModel(ModelError):
    """A model file would run code from the file when loaded (Lambda or custom layers)."""


class UnknownLayer(ModelError, LookupError):
    """No recurrent layer of the model has the name or index given; the message lists the
    recurrent layers there are."""


class ProfileError(RNNCovError):
    """A profile cannot be used."""


class StaleProfile(ProfileError):
    """The profile was fitted on another layer, window or on other weights."""


class DegenerateProfile(ProfileError):
    """A statistic of the profile cannot normalise (max == min or sigma == 0)."""


class DataFileError(RNNCovError):
    """A coverage data, baseline or report file cannot be read or written."""


class OutputConflict(DataFileError):
    """Another process wrote an output file while this run went on; this run's output was
    kept beside it instead of replacing the other's."""


class MissingResource(RNNCovError):
    """Data or a package a component needs (WordNet, matplotlib, torch) is not installed."""


class AdversarialFailure(AssertionError):
    """A generated case failed the oracle (raised by ``Oracle.check`` in property tests)."""


class RNNCovWarning(UserWarning):
    """pytest-rnncov fell back to something other than what was asked for."""


_PACKAGE = os.path.dirname(os.path.abspath(__file__))


def user_stacklevel() -> int:
    """The ``warnings.warn`` stacklevel, for the function calling this one, that names the
    first frame outside pytest-rnncov: the user's call, however deep inside the package
    the warning arises (``TC().bind(profile)``, ``Coverage(...)``, ``rnncov.track(...)``)."""
    import inspect

    here = inspect.currentframe()
    frame, level = (here.f_back if here is not None else None), 1
    while (
        frame is not None
        and frame.f_back is not None
        and frame.f_code.co_filename.startswith(_PACKAGE)
    ):
        frame, level = frame.f_back, level + 1
    return level
