"""Exceptions raised by pytest-rnncov.

Every error the project raises on bad input derives from :class:`RNNCovError`, and its
message says what was wrong and how to fix the call.
"""

from __future__ import annotations

__all__ = [
    "RNNCovError",
    "InvalidArgument",
    "InvalidInput",
    "ModelError",
    "ProfileError",
    "StaleProfile",
    "DegenerateProfile",
    "MissingResource",
]


class RNNCovError(Exception):
    """Base class of every error raised by pytest-rnncov."""


class InvalidArgument(RNNCovError, ValueError):
    """A function was called with an argument it cannot accept."""


class InvalidInput(InvalidArgument):
    """Inputs fed to a model have the wrong shape or dtype, or hold NaN or inf."""


class ModelError(RNNCovError):
    """The model cannot be traced: no LSTM layer, unknown layer, unsupported wiring."""


class ProfileError(RNNCovError):
    """A profile cannot be used."""


class StaleProfile(ProfileError):
    """The profile was fitted on another layer or on other weights."""


class DegenerateProfile(ProfileError):
    """A statistic of the profile cannot normalise (max == min or sigma == 0)."""


class MissingResource(RNNCovError):
    """Data a component needs (WordNet, stop words) is not installed."""
