"""1,017 real ChEMBL molecules with measured pIC50, shipped inside the rdkit wheel."""

from __future__ import annotations

import csv
import functools
import importlib.util
from pathlib import Path

import numpy as np


def chembl() -> tuple[list[str], np.ndarray]:
    """SMILES and pIC50 of CHEMBL2321810 (rdkit/Contrib/FreeWilson/data), joined on name."""
    spec = importlib.util.find_spec("rdkit")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError(
            "the molecules example needs rdkit: pip install 'pytest-rnncov[examples]'"
        )
    folder = Path(spec.submodule_search_locations[0]) / "Contrib" / "FreeWilson" / "data"
    with open(folder / "CHEMBL2321810_act.csv", newline="") as f:
        activity = {row["Name"]: float(row["Act"]) for row in csv.DictReader(f)}
    smiles, values = [], []
    for line in (folder / "CHEMBL2321810.smi").read_text().splitlines():
        if line.strip():
            s, name = line.split()
            if name in activity:
                smiles.append(s)
                values.append(activity[name])
    return smiles, np.array(values, np.float32)


@functools.lru_cache(maxsize=4)
def split(seed: int = 0, held_out: int = 200):
    smiles, values = chembl()
    order = np.random.default_rng(seed).permutation(len(smiles))
    test, train = order[:held_out], order[held_out:]
    return ([smiles[i] for i in train], values[train]), ([smiles[i] for i in test], values[test])
