"""Compiling rendered kernels with nvcc to cubins: the compiler's resource report, a parallel pool and a
content-addressed cache.

Each compilation runs ``nvcc -cubin -arch=<arch> <options> -Xptxas -v`` in its own temporary folder; ptxas's
verbose report gives registers, static shared memory, stack (local memory) and spills per entry function.
Results are cached under ``$TUNER_CACHE_DIR/nvcc`` (default ``~/.cache/tuner/nvcc``), keyed by the SHA-256 of
source, options, architecture and the full ``nvcc --version`` text; failed compilations are not cached.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path

from tuner.config import Config
from tuner.errors import TunerError
from tuner.measurement import Resources
from tuner.templates import render

DEFAULT_ARCH = "sm_90"
DEFAULT_OPTIONS: tuple[str, ...] = ("-O3",)
COMPILE_TIMEOUT_S = 600.0
TOOLKIT_BIN_FOLDERS: tuple[Path, ...] = (Path("/usr/local/cuda/bin"),)
"""Where nvcc is looked for after PATH and $CUDA_HOME/bin."""
_CACHE_FORMAT = 1  # bump when the layout of a cache entry changes

Progress = Callable[[int, int, Config], None]


@dataclass(frozen=True)
class CompileResult:
    ok: bool
    cubin: bytes | None
    resources: Resources
    log: str
    """nvcc's output: the ptxas report when it compiled, the compiler's message when it did not."""
    seconds: float
    """Wall time of the nvcc run that produced this result (also when it now comes from the cache)."""
    cached: bool


# --- finding nvcc -----------------------------------------------------------------------------------------


def find_nvcc() -> str:
    """The nvcc executable: on PATH, else in $CUDA_HOME/bin, else in TOOLKIT_BIN_FOLDERS."""
    found = shutil.which("nvcc")
    if found:
        return found
    folders = [Path(os.environ["CUDA_HOME"]) / "bin"] if os.environ.get("CUDA_HOME") else []
    folders.extend(TOOLKIT_BIN_FOLDERS)
    for folder in folders:
        candidate = folder / "nvcc"
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    looked = " or ".join(str(f) for f in folders) or "no other folder"
    raise TunerError(
        f"cannot find the CUDA compiler nvcc on PATH or in {looked}; install the CUDA toolkit and put its bin "
        "folder on PATH, or set CUDA_HOME to the toolkit's folder"
    )


@cache
def _version_text(nvcc: str) -> str:
    try:
        done = subprocess.run([nvcc, "--version"], capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise TunerError(f"cannot run '{nvcc} --version' ({exc}); check the CUDA toolkit installation") from None
    if done.returncode != 0:
        raise TunerError(f"'{nvcc} --version' failed with status {done.returncode}: {done.stderr.strip()}")
    return done.stdout.strip()


def nvcc_version() -> str:
    """The compiler's version, e.g. ``13.0.88`` (the whole ``--version`` text when it has no V-number)."""
    text = _version_text(find_nvcc())
    match = re.search(r"release [\d.]+, V([\d.]+)", text)
    return match.group(1) if match else text


# --- reading ptxas's report -------------------------------------------------------------------------------

_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_PROPERTIES = re.compile(r"Function properties for (\S+)")
_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_REGISTERS = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")
_LMEM = re.compile(r"(\d+)(?:\+\d+)? bytes lmem")
_STACK = re.compile(r"(\d+) bytes cumulative stack size")


def parse_ptxas_report(log: str) -> dict[str, Resources]:
    """Resources per entry function from ``-Xptxas -v`` output.

    nvcc 13 writes, per kernel::

        ptxas info    : Compiling entry function 'matmul' for 'sm_90'
        ptxas info    : Function properties for matmul
            0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
        ptxas info    : Used 32 registers, used 1 barriers, 4096 bytes smem

    Older releases list ``bytes lmem`` and ``bytes cmem[0]`` on the ``Used`` line; the fields are found by
    name, in any order. Shared memory absent from the report is zero. Local bytes are the largest of the
    stack frame, the cumulative stack size and lmem.
    """
    entry: str | None = None
    properties_of: str | None = None
    frames: dict[str, tuple[int, int, int]] = {}
    used: dict[str, str] = {}
    for line in log.splitlines():
        if match := _ENTRY.search(line):
            entry = match.group(1)
        elif match := _PROPERTIES.search(line):
            properties_of = match.group(1)
        elif (match := _FRAME.search(line)) and properties_of is not None:
            frames[properties_of] = (int(match[1]), int(match[2]), int(match[3]))
        elif _REGISTERS.search(line) and entry is not None:
            used[entry] = line
    report = {}
    for name, line in used.items():
        stack, spill_stores, spill_loads = frames.get(name, (0, 0, 0))
        local = max([stack, *(int(m) for pattern in (_LMEM, _STACK) for m in pattern.findall(line))])
        smem = _SMEM.search(line)
        report[name] = Resources(
            registers=int(_REGISTERS.search(line)[1]),
            shared_bytes=int(smem[1]) if smem else 0,
            local_bytes=local,
            spill_store_bytes=spill_stores,
            spill_load_bytes=spill_loads,
        )
    return report


def _worst(report: dict[str, Resources]) -> Resources:
    """One source's resources: its kernel's, or the largest of each field over several kernels."""
    if not report:
        return Resources()
    fields = asdict(next(iter(report.values())))
    return Resources(**{f: max(getattr(r, f) for r in report.values()) for f in fields})


# --- the cache --------------------------------------------------------------------------------------------


def cache_dir() -> Path:
    root = os.environ.get("TUNER_CACHE_DIR")
    return (Path(root) if root else Path.home() / ".cache" / "tuner") / "nvcc"


def _cache_key(source: str, options: Sequence[str], arch: str, version_text: str) -> str:
    material = json.dumps([_CACHE_FORMAT, source, list(options), arch, version_text])
    return hashlib.sha256(material.encode()).hexdigest()


def _read_cached(folder: Path, key: str) -> CompileResult | None:
    try:
        entry = json.loads((folder / f"{key}.json").read_text())
        cubin = (folder / f"{key}.cubin").read_bytes()
        return CompileResult(True, cubin, Resources(**entry["resources"]), entry["log"], entry["seconds"], True)
    except (OSError, ValueError, KeyError, TypeError):
        return None  # absent or damaged: compile again


def _write_atomically(path: Path, data: bytes) -> None:
    handle, partial = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".partial")
    with os.fdopen(handle, "wb") as file:
        file.write(data)
    os.replace(partial, path)


def _store(folder: Path, key: str, result: CompileResult, arch: str, options: Sequence[str], nvcc: str) -> None:
    entry = {
        "resources": asdict(result.resources),
        "log": result.log,
        "seconds": result.seconds,
        "arch": arch,
        "options": list(options),
        "nvcc": _version_text(nvcc),
    }
    try:
        folder.mkdir(parents=True, exist_ok=True)
        _write_atomically(folder / f"{key}.cubin", result.cubin or b"")
        _write_atomically(folder / f"{key}.json", json.dumps(entry, indent=1).encode())
    except OSError as exc:
        raise TunerError(
            f"cannot write the compile cache in {folder} ({exc}); make it writable or point TUNER_CACHE_DIR "
            "at a writable folder"
        ) from None


# --- compiling --------------------------------------------------------------------------------------------

_ARCH = re.compile(r"sm_\d+[af]?")


def check_arch(arch: str) -> None:
    """Raise TunerError unless ``arch`` names a GPU architecture (sm_80, sm_90, sm_90a, ...)."""
    if not _ARCH.fullmatch(arch):
        raise TunerError(f"'{arch}' is not a GPU architecture nvcc compiles for; expected a name such as sm_90")


def _run_nvcc(nvcc: str, source: str, arch: str, options: Sequence[str]) -> CompileResult:
    with tempfile.TemporaryDirectory(prefix="tuner-nvcc-") as tmp:
        folder = Path(tmp)
        (folder / "kernel.cu").write_text(source)
        command = [nvcc, "-cubin", f"-arch={arch}", *options, "-Xptxas", "-v", "-o", "kernel.cubin", "kernel.cu"]
        start = time.perf_counter()
        try:
            done = subprocess.run(
                command, cwd=folder, env={**os.environ, "TMPDIR": tmp}, capture_output=True, text=True,
                timeout=COMPILE_TIMEOUT_S, check=False,
            )
        except subprocess.TimeoutExpired:
            seconds = time.perf_counter() - start
            log = f"nvcc did not finish within {COMPILE_TIMEOUT_S:.0f} s: {' '.join(command)}"
            return CompileResult(False, None, Resources(), log, seconds, False)
        seconds = time.perf_counter() - start
        log = (done.stdout + done.stderr).strip()
        cubin_path = folder / "kernel.cubin"
        if done.returncode != 0 or not cubin_path.is_file():
            log = log or f"nvcc exited with status {done.returncode} and no message: {' '.join(command)}"
            return CompileResult(False, None, Resources(), log, seconds, False)
        return CompileResult(True, cubin_path.read_bytes(), _worst(parse_ptxas_report(log)), log, seconds, False)


def compile_source(source: str, arch: str = DEFAULT_ARCH, options: Sequence[str] = DEFAULT_OPTIONS) -> CompileResult:
    """Compile one CUDA source to a cubin for ``arch``, from the cache when it was compiled before.

    A compile error is a result with ``ok=False`` and the compiler's message in ``log``, not an exception;
    a missing nvcc or an unusable cache folder raises TunerError.
    """
    check_arch(arch)
    nvcc = find_nvcc()
    folder = cache_dir()
    key = _cache_key(source, options, arch, _version_text(nvcc))
    cached = _read_cached(folder, key)
    if cached is not None:
        return cached
    result = _run_nvcc(nvcc, source, arch, options)
    if result.ok:
        _store(folder, key, result, arch, options, nvcc)
    return result


def compile_configs(
    configs: Sequence[Config],
    arch: str = DEFAULT_ARCH,
    options: Sequence[str] = DEFAULT_OPTIONS,
    workers: int | None = None,
    progress: Progress | None = None,
) -> dict[Config, CompileResult]:
    """Compile every configuration's rendered source, ``workers`` nvcc processes at a time (None: one per
    CPU core). Configurations with the same source (e.g. the same kernel for several problem sizes) share
    one compilation. ``progress(done, total, config)`` is called as each distinct source finishes.
    """
    check_arch(arch)
    _version_text(find_nvcc())  # fail once, clearly, before starting any work
    by_source: dict[str, list[Config]] = {}
    for config in configs:
        by_source.setdefault(render(config), []).append(config)
    results: dict[Config, CompileResult] = {}
    pool = ThreadPoolExecutor(max_workers=workers or os.cpu_count() or 1)
    try:
        futures: dict[Future[CompileResult], str] = {
            pool.submit(compile_source, source, arch, tuple(options)): source for source in by_source
        }
        for done, future in enumerate(as_completed(futures), start=1):
            same = by_source[futures[future]]
            result = future.result()
            results.update(dict.fromkeys(same, result))
            if progress is not None:
                progress(done, len(by_source), same[0])
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    return {config: results[config] for config in configs}
