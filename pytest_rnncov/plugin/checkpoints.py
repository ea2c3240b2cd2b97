"""Worker checkpoints: what an xdist worker measured in the tests it finished, kept where
the controller can read it when the worker never sends its data (it crashed, was killed,
or was still running when the session stopped).

The controller gives each worker a file in one private temporary folder
(``CheckpointFolder``, removed at the end of the session); the worker rewrites it
atomically after each test that fed inputs (``CheckpointWriter``). Only a worker that sent
nothing is read from its checkpoint, and it is still named as missing: the inputs of the
test it was running are not in the checkpoint. Loads nothing heavy until a checkpoint is
written or read.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..reporting.data import CoverageData
    from .session import RNNCovSession

#: the key of a worker's ``workerinput`` naming its checkpoint file
CHECKPOINT_KEY = "rnncov_checkpoint"
#: the most of a worker's time its checkpoints may take: a checkpoint is left out while the
#: last one took more than this share of the time since (a large state, very quick tests)
MAX_SHARE = 0.1
#: what a worker's name says where its checkpoint was merged, or it was still running
RECOVERED = "recovered up to its last finished test"
RUNNING = "still running when the session stopped"


class CheckpointFolder:
    """The controller's side: one file per worker in a private temporary folder."""

    def __init__(self) -> None:
        self._folder: Path | None = None
        self._files: dict[str, Path] = {}

    def assign(self, worker: str) -> str:
        """The checkpoint file of ``worker`` (the folder is made on the first call)."""
        if self._folder is None:
            self._folder = Path(tempfile.mkdtemp(prefix="pytest-rnncov-workers-"))
        stem = re.sub(r"[^A-Za-z0-9_-]", "_", worker)[:50]
        path = self._folder / f"{len(self._files)}-{stem}.json"
        self._files[worker] = path
        return str(path)

    def recover(self, worker: str) -> tuple[CoverageData | None, str]:
        """The data of ``worker``'s checkpoint (None: it wrote none, or it cannot be read)
        and what to add to the worker's name where it is reported as missing."""
        path = self._files.get(worker)
        if path is None or not path.is_file():
            return None, ""
        from ..errors import RNNCovError
        from ..files import read_bounded
        from ..reporting.data import CoverageData

        where = f"the checkpoint of worker {worker}"
        try:
            return CoverageData.loads(read_bounded(path, where), where), RECOVERED
        except RNNCovError as exc:
            return None, f"its checkpoint unreadable: {exc}"

    def remove(self) -> None:
        """Delete the folder and every checkpoint in it."""
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None


class CheckpointWriter:
    """A worker's side: rewrites its checkpoint after each test that changed its data."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self._written: Any = None
        self._cost = 0.0
        self._since = time.monotonic()

    def after_test(self, engine: RNNCovSession) -> None:
        """Write the checkpoint if ``engine``'s data changed since the last one. A write
        that fails (a full disk, the folder on another machine) is left out: the worker's
        data still travels to the controller at its end, as without checkpoints."""
        mark = engine.data_mark()
        start = time.monotonic()
        if mark == self._written or self._cost > MAX_SHARE * (start - self._since):
            return
        if not self.path.parent.is_dir():  # a remote worker (--tx ssh=...): not shared
            return
        from ..files import write_atomic

        try:
            payload = engine.data().dumps()
            write_atomic(self.path, payload, "a worker checkpoint", durable=False)
        except Exception:  # the worker's own send at its end names what cannot be sent
            return
        self._written = mark
        self._since = time.monotonic()
        self._cost = self._since - start
