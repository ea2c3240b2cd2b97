"""The paper's figure of internal signals, as data: a few inputs' normalised signals."""

from __future__ import annotations

import warnings
from typing import Any

import numpy as np

from ..core.abstractions import NEEDS_POSITIVE, signal
from ..core.profile import Profile
from ..core.trace import Trace
from ..errors import DegenerateProfile, RNNCovWarning

#: How many inputs the HTML report plots the internal signals of.
SIGNAL_SAMPLES = 4

_PANELS = (
    ("h_net_z", "h", "net", "z"),
    ("f_avg_minmax", "f", "avg", "m"),
    ("h_delta_minmax", "h", "delta", "m"),
)


def sample_signals(trace: Trace, profile: Profile) -> dict[str, Any]:
    """z-normalised h/net, min-max normalised f/avg (LSTM) and h/delta over the window for
    the first inputs of ``trace``; a signal the profile cannot normalise is left out with
    a warning."""
    rows = trace[:SIGNAL_SAMPLES].to_host()
    window = profile.window_
    out: dict[str, Any] = {"steps": list(range(window[0], window[1] + 1))}
    for key, component, abstraction, kind in _PANELS:
        if component not in trace.names:
            continue
        if abstraction in NEEDS_POSITIVE and rows.sums_alone(component):
            warnings.warn(
                f"the HTML signal figure leaves out {component}/{abstraction}: the plotted "
                f"inputs' trace holds the sums of {component} over units alone (what the "
                "metrics read); tracked.plot_signals(x) plots the signals of inputs x",
                RNNCovWarning,
                stacklevel=2,
            )
            continue
        try:
            values = signal(rows, component, abstraction, window)
            if kind == "z":
                mu, sigma = profile.zscore(component, abstraction)
                values = (values - mu) / sigma
            else:
                low, high = profile.minmax(component, abstraction)
                values = (values - low) / (high - low)
        except DegenerateProfile as exc:
            warnings.warn(
                f"the HTML signal figure leaves out {component}/{abstraction}: {exc}",
                RNNCovWarning,
                stacklevel=2,
            )
            continue
        if not np.isfinite(values).all():
            continue
        out[key] = np.round(values, 5).tolist()
    return out
