"""Campaign output: adversarial samples written to disk as they are found, and the gallery
entries the JSON and HTML reports show. Both listen to a campaign; the search itself
writes nothing."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..errors import DataFileError
from ..generation.campaign import AdversarialSample, Campaign, CampaignResult
from .images import png_bytes, side_by_side
from .paths import check_output_dir, write_text

#: How many adversarial samples a report's gallery shows per campaign.
GALLERY = 8


def gallery_entries(samples: Sequence[AdversarialSample], clip: Any = None,
                    limit: int = GALLERY) -> list[dict[str, Any]]:
    """A few adversarial samples beside their seeds, JSON-ready (arrays rounded)."""
    out = []
    for sample in samples[:limit]:
        seed, case = sample.seed, sample.case
        if not isinstance(seed, str):
            seed = np.round(np.asarray(seed, np.float64), 4).tolist()
            case = np.round(np.asarray(case, np.float64), 4).tolist()
        out.append({
            "seed_index": sample.seed_index, "seed": seed, "case": case,
            "seed_decision": sample.seed_decision, "case_decision": sample.case_decision,
            "distance": sample.distance, "clip": list(clip or []),
        })
    return out


class SampleWriter:
    """Writes a campaign's adversarial samples into ``directory`` as they are found.

    Images (2-D cases): a PNG per sample (seed | case | difference), named
    ``adv_NNNNN_seed<i>_<from>to<to>.png``; text and SMILES: a line in ``adversarial.txt``.
    At the end: ``adversarial.npz`` (cases, seeds, seed indices, outputs, distances) for
    array cases, and ``summary.json``.
    """

    def __init__(self, directory: str | os.PathLike[str]) -> None:
        self.directory = check_output_dir(Path(directory), "campaign output folder")
        self._arrays: dict[str, list[Any]] = {k: [] for k in (
            "cases", "seeds", "seed_index", "case_outputs", "seed_outputs", "distances")}
        self.count = 0

    def _ready(self) -> Path:
        try:
            self.directory.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise DataFileError(f"cannot create {str(self.directory)!r}: {exc.strerror}") from None
        return self.directory

    def on_adversarial(self, campaign: Campaign, sample: AdversarialSample) -> None:
        folder = self._ready()
        self.count += 1
        if campaign.mutator.array_cases:
            case, seed = np.asarray(sample.case), np.asarray(sample.seed)
            for key, value in (("cases", case), ("seeds", seed), ("seed_index", sample.seed_index),
                               ("case_outputs", sample.case_output),
                               ("seed_outputs", sample.seed_output), ("distances", sample.distance)):
                self._arrays[key].append(value)
            image, seed_image = np.squeeze(case), np.squeeze(seed)
            if image.ndim == 2 and seed_image.shape == image.shape:
                clip = getattr(campaign.mutator, "clip", None) or (
                    float(min(image.min(), seed_image.min())),
                    float(max(image.max(), seed_image.max())) + 1e-9)
                name = (f"adv_{self.count:05d}_seed{sample.seed_index}_{sample.seed_decision}to"
                        f"{sample.case_decision}.png")
                (folder / _safe(name)).write_bytes(png_bytes(side_by_side(seed_image, image, clip)))
            return
        with open(folder / "adversarial.txt", "a", encoding="utf-8") as handle:
            if handle.tell() == 0:
                handle.write("# seed_index\tdistance\tseed_decision\tcase_decision\tseed\tcase\n")
            handle.write(f"{sample.seed_index}\t{sample.distance:.4g}\t{sample.seed_decision}\t"
                         f"{sample.case_decision}\t{sample.seed}\t{sample.case}\n")

    def on_finish(self, campaign: Campaign, result: CampaignResult) -> None:
        folder = self._ready()
        if campaign.mutator.array_cases and self._arrays["cases"]:
            arrays: dict[str, Any] = {k: np.stack([np.asarray(v) for v in values])
                                      for k, values in self._arrays.items()}
            np.savez_compressed(folder / "adversarial.npz", **arrays)
        summary = result.summary(campaign.name)
        write_text(folder / "summary.json", json.dumps(summary, indent=1) + "\n", "the summary")


def _safe(name: str) -> str:
    """A file name without path separators (decisions are model output text)."""
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in name)
