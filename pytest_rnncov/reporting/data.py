"""``CoverageData``: everything a run measured, as one serialisable object.

The same object crosses pytest-xdist (workers to the controller), is written with
``--rnn-data`` and read back by ``python -m pytest_rnncov combine`` / ``report``, and is
what every reporter renders. It holds the coverage state of each tracked model, the
campaigns' figures and galleries, what went wrong while tracking, and the workers whose
data never arrived. Reading a data file checks every field: a malformed file is refused by
name, never half-read.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from ..core.state import ModelState, merge_models
from ..errors import DataFileError

FORMAT = "pytest-rnncov-data"
VERSION = 1

#: The largest data file read (bytes); bigger files are refused, not loaded.
MAX_FILE = 512 * 1024 * 1024


@dataclass
class CoverageData:
    """What one run (or a combination of runs) measured."""

    models: dict[str, ModelState] = field(default_factory=dict)
    #: per model, normalised signals of a few inputs for the HTML report's signal figure
    signals: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: per campaign: its summary figures plus "gallery" (a few adversarial samples)
    campaigns: list[dict[str, Any]] = field(default_factory=list)
    #: what went wrong in rnncov.track() calls ("test_x: ModelError: ...")
    track_errors: list[str] = field(default_factory=list)
    #: xdist workers that finished without sending data (crashed)
    missing_workers: list[str] = field(default_factory=list)
    #: where the data came from (data files combined), for reports
    sources: list[str] = field(default_factory=list)

    def merge(self, other: "CoverageData") -> None:
        """Union: coverage of the same model combines exactly; lists are concatenated."""
        merge_models(self.models, other.models.values())
        for name, sample in other.signals.items():
            self.signals.setdefault(name, sample)
        self.campaigns.extend(other.campaigns)
        self.track_errors.extend(e for e in other.track_errors if e not in self.track_errors)
        self.missing_workers.extend(other.missing_workers)
        self.sources.extend(other.sources)

    @property
    def complete(self) -> bool:
        return not self.missing_workers

    # -- JSON ----------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "models": {name: state.to_json() for name, state in self.models.items()},
            "signals": self.signals,
            "campaigns": self.campaigns,
            "track_errors": self.track_errors,
            "missing_workers": self.missing_workers,
            "sources": self.sources,
        }

    def dumps(self) -> str:
        return json.dumps(self.to_json(), allow_nan=False, separators=(",", ":"))

    @classmethod
    def loads(cls, text: str | bytes, where: str = "coverage data") -> "CoverageData":
        """Read ``dumps`` output; anything malformed raises DataFileError naming it."""
        if isinstance(text, bytes):
            try:
                text = text.decode("utf-8")
            except UnicodeDecodeError:
                raise DataFileError(f"{where} is not UTF-8 text") from None
        try:
            data = json.loads(text, parse_constant=_refuse_constant)
        except (json.JSONDecodeError, ValueError) as exc:
            raise DataFileError(f"{where} is not valid JSON ({exc})") from None
        return cls.from_json(data, where)

    @classmethod
    def from_json(cls, data: Any, where: str) -> "CoverageData":
        if not isinstance(data, Mapping) or data.get("format") != FORMAT:
            raise DataFileError(f"{where} is not a pytest-rnncov data file "
                                f"(format {FORMAT!r})")
        if data.get("version") != VERSION:
            raise DataFileError(f"{where} has data format version {data.get('version')!r}; "
                                f"this pytest-rnncov reads version {VERSION}")
        models_raw = _field(data, "models", dict, where)
        models = {}
        for name, raw in models_raw.items():
            state = ModelState.from_json(raw, f"{where}, model {name!r}")
            if state.name != name:
                raise DataFileError(f"{where}: model {name!r} holds the state of {state.name!r}")
            models[name] = state
        signals = _field(data, "signals", dict, where)
        campaigns = _field(data, "campaigns", list, where)
        for index, campaign in enumerate(campaigns):
            _check_campaign(campaign, f"{where}, campaign {index}")
        return cls(models, dict(signals), list(campaigns),
                   _strings(data, "track_errors", where), _strings(data, "missing_workers", where),
                   _strings(data, "sources", where))

    def save(self, path: str | os.PathLike[str]) -> Path:
        target = Path(path)
        try:
            target.write_text(self.dumps() + "\n", encoding="utf-8")
        except OSError as exc:
            raise DataFileError(f"cannot write coverage data to {str(target)!r}: "
                                f"{exc.strerror}") from None
        return target

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> "CoverageData":
        source = Path(path)
        where = f"data file {str(source)!r}"
        text = read_bounded(source, where)
        data = cls.loads(text, where)
        data.sources = data.sources or [str(source)]
        return data


def read_bounded(path: Path, where: str) -> bytes:
    """A file's bytes, refusing directories, missing files and files over MAX_FILE."""
    if path.is_dir():
        raise DataFileError(f"{where} is a directory; pass a file")
    try:
        size = path.stat().st_size
        if size > MAX_FILE:
            raise DataFileError(f"{where} has {size:,} bytes, more than the {MAX_FILE:,} read")
        return path.read_bytes()
    except FileNotFoundError:
        raise DataFileError(f"no file at {str(path)!r}") from None
    except OSError as exc:
        raise DataFileError(f"cannot read {where}: {exc.strerror}") from None


def _refuse_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


def _field(data: Mapping[str, Any], key: str, kind: type, where: str) -> Any:
    if key not in data:
        raise DataFileError(f"{where}: missing key {key!r}")
    value = data[key]
    if not isinstance(value, kind):
        raise DataFileError(f"{where}: {key!r} is {type(value).__name__}, not {kind.__name__}")
    return value


def _strings(data: Mapping[str, Any], key: str, where: str) -> list[str]:
    values = _field(data, key, list, where)
    if not all(isinstance(v, str) for v in values):
        raise DataFileError(f"{where}: {key!r} must be a list of strings")
    return list(values)


_CAMPAIGN_NUMBERS = ("test_cases", "adversarial", "unique")


def _check_campaign(campaign: Any, where: str) -> None:
    if not isinstance(campaign, Mapping):
        raise DataFileError(f"{where} is not an object")
    for key in _CAMPAIGN_NUMBERS:
        value = campaign.get(key)
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise DataFileError(f"{where}: {key!r} is {value!r}, not a count")
    rate = campaign.get("adversary_rate")
    if isinstance(rate, bool) or not isinstance(rate, (int, float)) or not math.isfinite(rate):
        raise DataFileError(f"{where}: 'adversary_rate' is {rate!r}")
    if not isinstance(campaign.get("model"), str):
        raise DataFileError(f"{where}: 'model' must be a string")
    gallery = campaign.get("gallery", [])
    if not isinstance(gallery, list):
        raise DataFileError(f"{where}: 'gallery' must be a list")


def combine(parts: Iterable[CoverageData]) -> CoverageData:
    """The exact union of several runs' data."""
    out = CoverageData()
    for part in parts:
        out.merge(part)
    return out
