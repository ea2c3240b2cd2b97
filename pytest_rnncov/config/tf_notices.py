"""TensorFlow's native start-up notices, kept out of test output and the command line.

TensorFlow 2.21 writes, from C++ straight to file descriptor 2, a notice block while its
libraries load (absl's "All log messages before absl::InitializeLog()", oneDNN's
``port.cc``, ``cudart_stub.cc``, ``cpu_feature_guard.cc``), twice (a second library holds
its own copy of the logging code). ``TF_CPP_MIN_LOG_LEVEL`` cannot remove the first lines:
they are logged before the library reads it. So while ``tensorflow`` is imported, fd 2 is
spooled and every line is written back except those notices; anything else (a real error,
the user's own output) comes through, in order. ``TF_CPP_MIN_LOG_LEVEL=0`` set by the user
turns this off. Numpy-free: the pytest hook module installs it before conftest files load.
"""

from __future__ import annotations

import contextlib
import importlib.abc
import importlib.util
import os
import re
import sys
import tempfile
from typing import Any, Iterator, Sequence

_NOTICE = re.compile(
    r"WARNING: All log messages before absl::InitializeLog\(\)"
    r"|[IW]\d{4} [\d:. ]+ \d+ (port|cudart_stub|cpu_feature_guard)\.cc:\d+\]"
    r"|To enable the following instructions: .*rebuild TensorFlow"
    r"|E\d{4} [\d:. ]+ \d+ cuda_platform\.cc:\d+\] failed call to cuInit: "
    r".*(UNKNOWN ERROR \(303\)|CUDA_ERROR_NO_DEVICE)"
)


def is_notice(line: str) -> bool:
    """Whether a line of fd 2 is one of TensorFlow's known start-up notices."""
    return _NOTICE.match(line) is not None


@contextlib.contextmanager
def without_notices() -> Iterator[None]:
    """Spool fd 2 during the block; write back every line that is not a known notice."""
    with tempfile.TemporaryFile() as spool:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(spool.fileno(), 2)
        try:
            yield
        finally:
            sys.stderr.flush()
            os.dup2(saved, 2)
            os.close(saved)
            spool.seek(0)
            kept = [line for line in spool if not is_notice(line.decode("utf-8", "replace"))]
            if kept:
                os.write(2, b"".join(kept))


class _QuietImport(importlib.abc.MetaPathFinder):
    """A one-shot finder: the next ``import tensorflow`` runs under ``without_notices``
    (and, with ``list_devices``, lists the devices there, where CUDA logs cuInit)."""

    def __init__(self, list_devices: bool) -> None:
        self.list_devices = list_devices

    def find_spec(self, name: str, path: Sequence[str] | None = None, target: Any = None) -> Any:
        if name != "tensorflow":
            return None
        sys.meta_path.remove(self)  # then the normal finders find it
        spec = importlib.util.find_spec(name)
        if spec is not None and spec.loader is not None:
            run = spec.loader.exec_module
            list_devices = self.list_devices

            def exec_module(module: Any) -> None:
                with without_notices():
                    run(module)
                    if list_devices:
                        module.config.list_physical_devices()

            spec.loader.exec_module = exec_module  # type: ignore[method-assign]
        return spec


def quiet_tensorflow_import(list_devices: bool = False) -> None:
    """Keep TensorFlow's start-up notices out of fd 2 when it is imported later in this
    process (nothing when it is already imported or the user set TF_CPP_MIN_LOG_LEVEL=0);
    ``TF_CPP_MIN_LOG_LEVEL`` defaults to 2 (a level the user set wins)."""
    if "tensorflow" in sys.modules or os.environ.get("TF_CPP_MIN_LOG_LEVEL", "2") == "0":
        return
    os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
    if not any(isinstance(finder, _QuietImport) for finder in sys.meta_path):
        sys.meta_path.insert(0, _QuietImport(list_devices))
