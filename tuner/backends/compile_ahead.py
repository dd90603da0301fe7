"""Compiling ahead: a pool of CPU processes fills PyCUDA's compiler cache while the GPU measures.

Each source gets its own cache folder (named by a hash of source, options, arch and nvcc version), so
``SourceModule`` in the GPU worker, given the same folder and arguments, loads the cubin without compiling,
and a compile can tell a cache hit (the folder already holds a cubin: 0 s, as the results schema has it)
from a real compile (its wall time).
"""

from __future__ import annotations

import hashlib
import os
import time
import warnings
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass
from multiprocessing import get_context
from pathlib import Path

from tuner.experiment import CompileSettings
from tuner.metadata import nvcc_version

RESOURCE_MARKERS = ("too much shared data", "too much local data")
"""Compiler messages that mean a hardware limit, not a mistake in the source: such configurations are invalid."""
MESSAGE_LIMIT = 4000


@dataclass(frozen=True)
class CompileOutcome:
    ok: bool
    seconds: float
    """Wall time of the compile; 0 when the cubin came from the cache."""
    message: str = ""

    @property
    def resource_limit(self) -> bool:
        return not self.ok and any(marker in self.message for marker in RESOURCE_MARKERS)


def module_cache_dir(root: Path, source: str, arch: str, options: tuple[str, ...]) -> Path:
    """The cache folder of one source under ``root`` (shared by the pool and the GPU worker)."""
    digest = hashlib.sha256()
    for part in (source, arch, *options, nvcc_version() or "no nvcc"):
        digest.update(part.encode())
        digest.update(b"\0")
    key = digest.hexdigest()[:32]
    return root / key[:2] / key


def compile_message(exc: BaseException) -> str:
    """The compiler's own words (its stderr, else stdout), without PyCUDA's wrapping."""
    text = getattr(exc, "stderr", None) or getattr(exc, "stdout", None) or str(exc)
    text = text.decode("utf-8", "replace") if isinstance(text, bytes) else str(text)
    return text.strip()[:MESSAGE_LIMIT] or type(exc).__name__


def compile_into_cache(source: str, arch: str, options: tuple[str, ...], root: str) -> CompileOutcome:
    """Compile one source into its cache folder (runs in a pool process; imports only PyCUDA's compiler)."""
    from pycuda.compiler import compile as pycuda_compile

    folder = module_cache_dir(Path(root), source, arch, options)
    folder.mkdir(parents=True, exist_ok=True)
    cached = any(folder.glob("*.cubin"))
    started = time.perf_counter()
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # PyCUDA warns on every compiler remark
            pycuda_compile(source, options=list(options), arch=arch, no_extern_c=True, cache_dir=str(folder))
    except Exception as exc:  # pycuda.driver.CompileError, or OSError when nvcc cannot run
        return CompileOutcome(False, time.perf_counter() - started, compile_message(exc))
    return CompileOutcome(True, 0.0 if cached else time.perf_counter() - started)


class CompilePool:
    """Compiles sources in parallel processes, once each; ``outcome`` waits for one."""

    def __init__(self, settings: CompileSettings, root: Path):
        self.settings = settings
        self.root = root
        self.workers = settings.workers or os.cpu_count() or 1
        self._pool: ProcessPoolExecutor | None = None
        self._futures: dict[str, Future[CompileOutcome]] = {}

    def _executor(self) -> ProcessPoolExecutor:
        if self._pool is None:
            self._pool = ProcessPoolExecutor(max_workers=self.workers, mp_context=get_context("spawn"))
        return self._pool

    def submit(self, source: str) -> Future[CompileOutcome]:
        future = self._futures.get(source)
        if future is None:
            future = self._executor().submit(compile_into_cache, source, self.settings.arch,
                                             tuple(self.settings.options), str(self.root))
            self._futures[source] = future
        return future

    def cache_dir(self, source: str) -> Path:
        return module_cache_dir(self.root, source, self.settings.arch, tuple(self.settings.options))

    def outcome(self, source: str) -> CompileOutcome:
        try:
            return self.submit(source).result()
        except BrokenProcessPool:
            # A compiler process died (killed, out of memory): start a fresh pool and try this one again.
            self.close()
            self._futures = {}
            try:
                return self.submit(source).result()
            except BrokenProcessPool as exc:
                return CompileOutcome(False, 0.0, f"the compiler process died twice: {exc}")

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None
