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

import json
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, NamedTuple

if TYPE_CHECKING:
    from ..reporting.data import CoverageData
    from .session import RNNCovSession

#: the key of a worker's ``workerinput`` naming its checkpoint file
CHECKPOINT_KEY = "rnncov_checkpoint"
#: the most of a worker's time its checkpoints may take: a checkpoint that took longer than
#: MIN_SKIPPED seconds is followed by none until this share of the time since has passed
#: (a large state, very quick tests); the reports name the last test a checkpoint holds
MAX_SHARE = 0.1
MIN_SKIPPED = 0.005
#: what a worker's name says where it was still running when the session stopped
RUNNING = "still running when the session stopped"


#: the most characters of a test's id in a worker's name (a parametrized id can be long)
MAX_TEST_CHARS = 200
#: what a checkpoint may hold besides its data: a retry reason's characters, profile
#: files and the characters of each path
MAX_RETRY_CHARS = 400
MAX_PROFILES = 1000
MAX_PATH_CHARS = 4096


def recovered_text(test: str) -> str:
    """What a worker's name says where its checkpoint, written after ``test``, was merged."""
    from ..validation import cut

    return f"recovered through {cut(test, MAX_TEST_CHARS)}"


class Recovered(NamedTuple):
    """What a worker's checkpoint held: its data (None: no checkpoint, or one that cannot
    be read), the test it was written after, the worker's retry reason (--lf, --sw), the
    profile files its track() fitted and wrote, whether it is the worker's final one
    (written at the end of its session, after the other sessionfinish hooks: all it
    fed), and what to add to the worker's name where it is reported as missing."""

    data: CoverageData | None
    test: str
    retry: str
    profiles: list[str]
    final: bool
    note: str


class CheckpointFolder:
    """The controller's side: one file per worker in a private temporary folder."""

    def __init__(self, config: Any = None) -> None:
        self._config = config
        self._folder: Path | None = None
        self._files: dict[str, Path] = {}

    def assign(self, worker: str) -> str:
        """The checkpoint file of ``worker`` (the folder is made on the first call)."""
        if self._folder is None:
            self._folder = _new_folder(self._config)
        stem = re.sub(r"[^A-Za-z0-9_-]", "_", worker)[:50]
        path = self._folder / f"{len(self._files)}-{stem}.json"
        self._files[worker] = path
        return str(path)

    def written(self) -> bool:
        """Whether any worker wrote its checkpoint."""
        return any(path.is_file() for path in self._files.values())

    def recover(self, worker: str) -> Recovered:
        """What ``worker``'s checkpoint holds."""
        path = self._files.get(worker)
        if path is None or not path.is_file():
            return Recovered(None, "", "", [], False, "")
        from ..errors import RNNCovError
        from ..files import Fields, parse_json, read_bounded
        from ..reporting.data import RETRY_PREFIXES, CoverageData
        from ..validation import shown

        where = f"the checkpoint of worker {worker}"
        try:
            fields = Fields(parse_json(read_bounded(path, where), where), where)
            fields.exact_keys(("test", "retry", "profiles", "final", "data"))
            test, retry = fields.get("test", str), fields.get("retry", str)
            profiles, final = fields.strings("profiles"), fields.get("final", bool)
            if len(retry) > MAX_RETRY_CHARS or (retry and not retry.startswith(RETRY_PREFIXES)):
                raise fields.fail(f"'retry' is no --lf or --sw reason: {shown(retry)}")
            if len(profiles) > MAX_PROFILES or any(len(p) > MAX_PATH_CHARS for p in profiles):
                raise fields.fail(
                    f"'profiles' lists {len(profiles)} paths; at most {MAX_PROFILES} of at "
                    f"most {MAX_PATH_CHARS} characters"
                )
            data = CoverageData.from_json(fields.get("data", dict), where)
        except RNNCovError as exc:
            return Recovered(None, "", "", [], False, f"its checkpoint unreadable: {exc}")
        return Recovered(data, test, retry, profiles, final, recovered_text(test))

    def remove(self) -> None:
        """Delete the folder and every checkpoint in it."""
        if self._folder is not None:
            shutil.rmtree(self._folder, ignore_errors=True)
            self._folder = None


def _new_folder(config: Any) -> Path:
    """A private folder in pytest's base temporary folder, where xdist puts its workers'
    (pytest keeps those of the last three sessions only: a controller killed before it
    removed its folder leaves nothing for long); without pytest's tmp_path plugin (``-p
    no:tmpdir``), in the system's temporary folder."""
    factory = getattr(config, "_tmp_path_factory", None)
    if factory is not None:
        return Path(tempfile.mkdtemp(prefix="rnncov-workers-", dir=factory.getbasetemp()))
    return Path(tempfile.mkdtemp(prefix="pytest-rnncov-workers-"))


class CheckpointWriter:
    """A worker's side: rewrites its checkpoint after each test that changed its data
    (``retry``: why the worker runs only some tests, or "", asked only when it writes)."""

    def __init__(self, path: str, retry: Callable[[], str]) -> None:
        self.path = Path(path)
        self._retry = retry
        self._written: Any = None
        self._test = ""
        self._cost = 0.0
        self._since = time.monotonic()

    def final(self, engine: RNNCovSession) -> None:
        """Write the final checkpoint, whatever the share: all the worker fed, at the end
        of its session (named after the last test it finished)."""
        self._write(engine, engine.data_mark(), final=True)

    def after_test(self, engine: RNNCovSession, test: str) -> None:
        """Write the checkpoint if ``engine``'s data changed since the last one (``test``:
        the test that just finished). A write that fails (a full disk, the folder on
        another machine) is left out: the worker's data still travels to the controller
        at its end, as without checkpoints; it counts toward the share all the same."""
        self._test = test
        mark = engine.data_mark()
        if mark == self._written:
            return
        if self._cost > MIN_SKIPPED and self._cost > MAX_SHARE * (time.monotonic() - self._since):
            return
        self._write(engine, mark, final=False)

    def _write(self, engine: RNNCovSession, mark: Any, final: bool) -> None:
        from ..files import write_atomic

        start = time.monotonic()
        try:
            fields = {
                "test": self._test,
                "retry": self._retry(),
                "profiles": engine.profiles_written,
            }
            head = json.dumps({**fields, "final": final})[:-1]
            text = f'{head},"data":{engine.data().dumps()}}}'
            # the folder is the controller's: never made again here (it is being removed)
            write_atomic(self.path, text, "a worker checkpoint", durable=False, make_folder=False)
            self._written = mark
        except Exception:  # the worker's own send at its end names what cannot be sent
            pass
        finally:
            self._since = time.monotonic()
            self._cost = self._since - start
