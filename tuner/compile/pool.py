"""Compiling ahead: threads run compiler commands in parallel while the measuring process measures.

The compilers are separate processes (:mod:`tuner.lifetime` ties each to the run), so threads are enough to
keep every core busy; closing the pool kills what is still compiling.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, as_completed, wait

from tuner.compile.result import CompileResult
from tuner.lifetime import kill_running_commands

Compile = Callable[[str], CompileResult]


class CompilePool:
    """Compiles sources in parallel, once each while they are wanted; ``result`` waits for one."""

    def __init__(self, compile_one: Compile, workers: int | None = None):
        self.compile_one = compile_one
        self.workers = workers or os.cpu_count() or 1
        self._pool = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="tuner-compile")
        self._futures: dict[str, Future[CompileResult]] = {}
        self._lock = threading.Lock()  # the measuring threads of several GPUs share one pool

    def submit(self, source: str) -> Future[CompileResult]:
        with self._lock:
            future = self._futures.get(source)
            if future is None:
                future = self._futures[source] = self._pool.submit(self.compile_one, source)
            return future

    def compiling(self, source: str) -> bool:
        """Whether the source's compile is under way (False once it ended, and for one not submitted)."""
        with self._lock:
            future = self._futures.get(source)
        return future is not None and not future.done()

    def wait_any(self, sources: Iterable[str], timeout: float | None = None) -> bool:
        """Wait until one of the sources is not compiling any more; False when all still are after ``timeout``
        seconds."""
        with self._lock:
            futures = [self._futures.get(source) for source in sources]
        if any(future is None for future in futures):
            return True
        done, _ = wait([f for f in futures if f is not None], timeout, return_when=FIRST_COMPLETED)
        return bool(done)

    def result(self, source: str) -> CompileResult:
        """The source's compile (waiting for it); the pool forgets it, since the cache now holds it."""
        result = self.submit(source).result()
        with self._lock:
            self._futures.pop(source, None)
        return result

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        kill_running_commands()


def compile_all(sources: Iterable[str], compile_one: Compile, workers: int | None = None,
                progress: Callable[[int, int, str], None] | None = None) -> dict[str, CompileResult]:
    """Compile every distinct source, ``workers`` at a time; ``progress(done, total, source)`` as each ends."""
    distinct = list(dict.fromkeys(sources))
    pool = CompilePool(compile_one, workers)
    try:
        futures = {pool.submit(source): source for source in distinct}
        results = {}
        for done, future in enumerate(as_completed(futures), start=1):
            results[futures[future]] = future.result()
            if progress is not None:
                progress(done, len(distinct), futures[future])
        return results
    finally:
        pool.close()
