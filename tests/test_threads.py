"""numpy's BLAS threads while pytest-rnncov computes (``core/threads.py``): one limit per
process, set and restored by one ``numpy_work`` in one thread, work entered meanwhile
runs under it."""

from __future__ import annotations

import threading

import pytest
from helpers import blas_threads
from threadpoolctl import ThreadpoolController, threadpool_limits

from pytest_rnncov import InvalidArgument
from pytest_rnncov.core.threads import numpy_work


def test_one_limit_while_any_thread_works(monkeypatch):
    """A worker enters and leaves numpy_work while the caller holds it: the limit is set
    once, stays one BLAS thread throughout, and numpy's own two come back when the caller,
    who set it, leaves."""
    monkeypatch.delenv("RNNCOV_BLAS_THREADS", raising=False)
    seen: dict[str, set[int]] = {}
    changes = []  # BLAS limits set: changing one while a matmul runs is not safe
    limit = ThreadpoolController.limit

    def counted(self, *args, **kwargs):
        changes.append(threading.current_thread().name)
        return limit(self, *args, **kwargs)

    monkeypatch.setattr(ThreadpoolController, "limit", counted)

    def worker() -> None:
        with numpy_work():
            seen["worker"] = blas_threads()
        seen["worker left"] = blas_threads()

    with threadpool_limits(2, "blas"):
        assert blas_threads() == {2}
        with numpy_work():
            seen["caller"] = blas_threads()
            thread = threading.Thread(target=worker)
            thread.start()
            thread.join(10)
            with numpy_work():  # nested in the caller's thread: nothing changes either
                seen["nested"] = blas_threads()
            seen["nested left"] = blas_threads()
        assert seen == dict.fromkeys(
            ["caller", "worker", "worker left", "nested", "nested left"], {1}
        )
        assert blas_threads() == {2}
        assert changes == ["MainThread"]


def test_the_thread_that_set_the_limit_restores_it(monkeypatch):
    """The caller leaves while a worker is still inside: numpy's own setting comes back
    then, from the caller's thread (OpenBLAS keeps a limit that another thread raises), and
    the worker's leaving changes nothing."""
    monkeypatch.delenv("RNNCOV_BLAS_THREADS", raising=False)
    worker_inside, caller_left = threading.Event(), threading.Event()
    seen: dict[str, set[int]] = {}

    def worker() -> None:
        with numpy_work():
            seen["worker"] = blas_threads()
            worker_inside.set()
            caller_left.wait(10)
            seen["worker, caller gone"] = blas_threads()

    with threadpool_limits(2, "blas"):
        thread = threading.Thread(target=worker)
        with numpy_work():
            thread.start()
            assert worker_inside.wait(10)
        caller_left.set()
        thread.join(10)
        assert seen == {"worker": {1}, "worker, caller gone": {2}}
        assert blas_threads() == {2}


def test_the_configured_threads(monkeypatch):
    with threadpool_limits(2, "blas"):
        monkeypatch.setenv("RNNCOV_BLAS_THREADS", "0")  # numpy's own setting
        with numpy_work():
            assert blas_threads() == {2}
        monkeypatch.setenv("RNNCOV_BLAS_THREADS", "1")
        with numpy_work(batched=True):  # large batched matmuls: numpy's own setting
            assert blas_threads() == {2}
        monkeypatch.setenv("RNNCOV_BLAS_THREADS", "two")
        with pytest.raises(InvalidArgument, match="RNNCOV_BLAS_THREADS='two'"):
            with numpy_work():
                pass
        assert blas_threads() == {2}
