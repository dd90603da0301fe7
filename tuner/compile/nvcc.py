"""Compiling CUDA sources with nvcc to cubins, with the compiler's resource report.

Each compilation runs ``nvcc -cubin -arch=<arch> <options> -Xptxas -v`` in its own temporary folder, tied to
the run (:mod:`tuner.lifetime`); ptxas's verbose report gives registers, static shared memory, stack (local
memory) and spills per entry function. Cubins are cached under ``$TUNER_CACHE_DIR/nvcc`` (default
``~/.cache/tuner/nvcc``, :mod:`tuner.compile.cache`), keyed by source, options, architecture and the full
``nvcc --version`` text.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict
from functools import cache
from pathlib import Path

from tuner.compile import cache as compile_cache
from tuner.compile.options import OptionError, check_nvcc_options
from tuner.compile.pool import compile_all
from tuner.compile.result import CompileResult
from tuner.config import Config
from tuner.errors import TunerError
from tuner.kernels.render import render
from tuner.kernels.targets import parse_arch
from tuner.lifetime import run_tied
from tuner.measure.measurement import Resources
from tuner.settings import cache_root

COMPILE_TIMEOUT_S = 600.0
TOOLKIT_BIN_FOLDERS: tuple[Path, ...] = (Path("/usr/local/cuda/bin"),)
"""Where nvcc is looked for after PATH and $CUDA_HOME/bin."""
RESOURCE_MARKERS = ("too much shared data", "too much local data", "Entry function uses too much")
"""Compiler messages that mean a hardware limit, not a mistake in the source: such configurations are invalid."""
CUBIN = ".cubin"


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
        registers = _REGISTERS.search(line)
        assert registers is not None  # only such lines are kept
        stack, spill_stores, spill_loads = frames.get(name, (0, 0, 0))
        local = max([stack, *(int(m) for pattern in (_LMEM, _STACK) for m in pattern.findall(line))])
        smem = _SMEM.search(line)
        report[name] = Resources(
            registers=int(registers[1]),
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
    largest = {}
    for name in asdict(Resources()):
        known = [value for r in report.values() if (value := getattr(r, name)) is not None]
        largest[name] = max(known) if known else None
    return Resources(**largest)


# --- compiling --------------------------------------------------------------------------------------------


def cache_dir() -> Path:
    return cache_root() / "nvcc"


def arch_options(arch: str) -> list[str]:
    """nvcc's target options: ``-arch=sm_90``, or for an architecture-specific target (``sm_90a``: wgmma,
    setmaxnreg) the explicit ``-gencode`` pair, since the ``-arch=sm_90a`` shorthand has been seen to run a plain
    sm_90 pass as well, which rejects those instructions."""
    if arch[-1] in "af":
        virtual = "compute_" + arch.removeprefix("sm_")
        return [f"-gencode=arch={virtual},code={arch}"]
    return [f"-arch={arch}"]


def _run_nvcc(nvcc: str, source: str, arch: str, options: Sequence[str]) -> CompileResult:
    with tempfile.TemporaryDirectory(prefix="tuner-nvcc-") as tmp:
        folder = Path(tmp)
        (folder / "kernel.cu").write_text(source)
        command = [nvcc, "-cubin", *arch_options(arch), *options, "-Xptxas", "-v", "-o", "kernel.cubin", "kernel.cu"]
        start = time.perf_counter()
        try:
            done = run_tied(command, folder, {**os.environ, "TMPDIR": tmp}, COMPILE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            log = f"nvcc did not finish within {COMPILE_TIMEOUT_S:.0f} s: {' '.join(command)}"
            return CompileResult(False, None, Resources(), log, time.perf_counter() - start, False)
        seconds = time.perf_counter() - start
        log = (done.stdout + done.stderr).strip()
        cubin_path = folder / "kernel.cubin"
        if done.returncode != 0 or not cubin_path.is_file():
            log = log or f"nvcc exited with status {done.returncode} and no message: {' '.join(command)}"
            limit = any(marker in log for marker in RESOURCE_MARKERS)
            return CompileResult(False, None, Resources(), log, seconds, False, resource_limit=limit)
        return CompileResult(True, cubin_path.read_bytes(), _worst(parse_ptxas_report(log)), log, seconds, False)


def compile_source(source: str, arch: str, options: Sequence[str] = ("-O3",)) -> CompileResult:
    """Compile one CUDA source to a cubin for ``arch``, from the cache when it was compiled before.

    A compile error is a result with ``ok=False`` and the compiler's message in ``log``, not an exception;
    a missing nvcc, an unknown architecture or an unusable cache folder raises TunerError.
    """
    parse_arch(arch)
    try:
        check_nvcc_options(options)
    except OptionError as exc:
        raise TunerError(f"compile.options[{exc.index}]: {exc}") from None
    nvcc = find_nvcc()
    key = compile_cache.cache_key(source, list(options), arch, _version_text(nvcc))
    entry = compile_cache.read(cache_dir(), key, CUBIN)
    if entry is not None:
        record = entry.record
        return CompileResult(True, entry.binary, Resources(**record["resources"]), record["log"], record["seconds"],
                             True)
    result = _run_nvcc(nvcc, source, arch, options)
    if result.ok and result.binary is not None:
        record = {"resources": asdict(result.resources), "log": result.log, "seconds": result.seconds,
                  "arch": arch, "options": list(options), "nvcc": _version_text(nvcc)}
        compile_cache.write(cache_dir(), key, CUBIN, compile_cache.Entry(result.binary, record))
    return result


def compile_configs(configs: Sequence[Config], arch: str, options: Sequence[str] = ("-O3",),
                    workers: int | None = None,
                    progress: Callable[[int, int, Config], None] | None = None) -> dict[Config, CompileResult]:
    """Compile every configuration's rendered source, ``workers`` nvcc processes at a time (None: one per CPU
    core). Configurations with the same source (the same kernel for several problem sizes) share one
    compilation; ``progress(done, total, config)`` is called as each distinct source finishes."""
    parse_arch(arch)
    _version_text(find_nvcc())  # fail once, clearly, before starting any work
    sources = {config: render(config) for config in configs}
    first = {source: config for config, source in reversed(sources.items())}
    report = None if progress is None else (lambda done, total, source: progress(done, total, first[source]))
    results = compile_all(sources.values(), lambda source: compile_source(source, arch, options), workers, report)
    return {config: results[source] for config, source in sources.items()}
