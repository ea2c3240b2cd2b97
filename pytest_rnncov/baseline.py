"""Coverage baselines: save a run's coverage to a committable JSON file and fail a later
run whose coverage falls below it (like pytest-benchmark's --benchmark-compare)."""

from __future__ import annotations

import datetime
import json
from pathlib import Path
from typing import Any

from .engine import ModelRecord
from .errors import InvalidArgument

FORMAT = "pytest-rnncov-baseline"
VERSION = 1


def baseline_path(name: str, directory: Path) -> Path:
    """``name`` as a path when it ends in .json, else ``directory/name.json``."""
    if name.endswith(".json"):
        return Path(name)
    if not name or "/" in name or "\\" in name:
        raise InvalidArgument(f"baseline name {name!r}: use a plain name or a path ending in .json")
    return directory / f"{name}.json"


def save_baseline(path: Path, records: dict[str, ModelRecord]) -> None:
    data = {
        "format": FORMAT,
        "version": VERSION,
        "created": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "models": {
            name: {
                "layer": r.layer,
                "window": list(r.window),
                "inputs": r.n_inputs,
                "metrics": {
                    key: {"describe": m.describe, "rate": m.rate, "covered": m.n_covered,
                          "total": m.total}
                    for key, m in r.metrics.items()
                },
            }
            for name, r in records.items()
        },
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data, indent=1) + "\n")


def load_baseline(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        raise InvalidArgument(
            f"no coverage baseline at {str(path)!r}; create it with --rnn-save"
        ) from None
    except json.JSONDecodeError as exc:
        raise InvalidArgument(f"{str(path)!r} is not a baseline file ({exc})") from None
    if data.get("format") != FORMAT or data.get("version") != VERSION:
        raise InvalidArgument(f"{str(path)!r} is not a pytest-rnncov baseline (version {VERSION})")
    return data


def regressions(baseline: dict[str, Any], records: dict[str, ModelRecord],
                tolerance: float) -> list[str]:
    """What fell below the baseline by more than ``tolerance`` (rates are fractions)."""
    found = []
    for name, model in baseline["models"].items():
        record = records.get(name)
        if record is None:
            found.append(f"{name}: not tracked in this run")
            continue
        for key, old in model["metrics"].items():
            metric = record.metrics.get(key)
            if metric is None:
                found.append(f"{name} {key}: not tracked in this run")
            elif metric.describe != old["describe"]:
                found.append(f"{name} {key}: configured as {metric.describe}, baseline has "
                             f"{old['describe']}")
            elif metric.rate < old["rate"] - tolerance:
                found.append(f"{name} {key} {metric.rate:.1%} < {old['rate']:.1%} "
                             f"({metric.n_covered}/{metric.total} vs {old['covered']}/{old['total']})")
    return found
