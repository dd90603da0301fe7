"""Compiling C sources with the system C compiler to shared libraries, with the compiler's report.

Every source is built with ``cc -O3 -march=native -fPIC -shared`` (plus ``-fopenmp`` where the compiler has
OpenMP) in its own temporary folder, tied to the run (:mod:`tuner.lifetime`). ``$CC`` names another compiler.
The report is the library's code size (its ``.text`` section) and, from GCC, the loops it vectorized
(``-fopt-info-vec-optimized``). Libraries are cached under ``$TUNER_CACHE_DIR/cc`` (default
``~/.cache/tuner/cc``, :mod:`tuner.compile.cache`), keyed by source, flags, the compiler's identity
(``cc --version``, ``cc -dumpmachine``) and the machine ``-march=native`` targets (the CPU's model and flags).
"""

from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import tempfile
import time
from dataclasses import asdict
from functools import cache
from pathlib import Path

from tuner.compile import cache as compile_cache
from tuner.compile.result import CompileResult
from tuner.errors import TunerError
from tuner.lifetime import run_tied
from tuner.measure.measurement import Resources
from tuner.settings import cache_root

BASE_FLAGS: tuple[str, ...] = ("-O3", "-march=native", "-fPIC", "-shared")
OPENMP_FLAG = "-fopenmp"
VECTORIZATION_REMARKS = "-fopt-info-vec-optimized"
"""GCC's report of each loop it vectorized (on stderr); other compilers build without it."""
COMPILE_TIMEOUT_S = 300.0
MESSAGE_LIMIT = 4000
PROC_CPUINFO = Path("/proc/cpuinfo")
LIBRARY = ".so"
OWN_KERNELS = Path(__file__).resolve().parent.parent / "ceiling_kernels"
"""The project's own C kernels: cache eviction and the CPU's ceilings."""


def find_cc() -> str:
    """The C compiler: ``$CC``, else ``cc`` on PATH."""
    name = os.environ.get("CC") or "cc"
    found = shutil.which(name)
    if found is None:
        raise TunerError(f"the CPU backend compiles with the system C compiler, and '{name}' is not on the PATH; "
                         "install one (e.g. apt-get install gcc) or name it in the CC environment variable")
    return found


def _output(*command: str) -> str:
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise TunerError(f"cannot run '{' '.join(command)}' ({exc})") from None
    return (done.stdout or done.stderr).strip()


@cache
def compiler_identity(cc: str) -> str:
    """``cc --version`` (first line) and the target triple, e.g. ``cc (Debian 12.2.0-14) 12.2.0; x86_64-linux-gnu``."""
    version = _output(cc, "--version").splitlines()
    return f"{version[0] if version else cc}; {_output(cc, '-dumpmachine')}"


@cache
def is_gcc(cc: str) -> bool:
    """True for GCC (clang also answers -dumpversion, but names itself in --version)."""
    text = _output(cc, "--version").lower()
    return "clang" not in text and ("gcc" in text or "free software foundation" in text)


@cache
def openmp_works(cc: str) -> bool:
    """Whether ``cc -fopenmp`` builds a shared library that calls the OpenMP runtime."""
    with tempfile.TemporaryDirectory(prefix="tuner-cc-") as folder:
        source = Path(folder) / "probe.c"
        source.write_text("#include <omp.h>\nint threads(void) { return omp_get_max_threads(); }\n")
        try:
            done = run_tied([cc, *BASE_FLAGS, OPENMP_FLAG, str(source), "-o", str(Path(folder) / "probe.so")],
                            Path(folder), os.environ, COMPILE_TIMEOUT_S)
        except (OSError, subprocess.TimeoutExpired):
            return False
        return done.returncode == 0


@cache
def flags(cc: str) -> tuple[str, ...]:
    """The flags every source is built with on this machine."""
    return BASE_FLAGS + ((OPENMP_FLAG,) if openmp_works(cc) else ())


def cpuinfo_fields(text: str) -> dict[str, str]:
    """The first processor's "key: value" lines of /proc/cpuinfo."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if not line.strip():
            if fields:
                break
            continue
        key, _, value = line.partition(":")
        fields.setdefault(key.strip(), value.strip())
    return fields



@cache
def target_machine() -> str:
    """What ``-march=native`` resolves from: the CPU's model and instruction-set flags."""
    try:
        fields = cpuinfo_fields(PROC_CPUINFO.read_text())
    except OSError:
        fields = {}
    return "; ".join(fields.get(key, "") for key in ("vendor_id", "cpu family", "model", "model name", "flags"))


def cache_dir() -> Path:
    return cache_root() / "cc"


def text_bytes(library: Path) -> int | None:
    """The .text section's size as binutils' ``size`` reports it; None where ``size`` is missing."""
    tool = shutil.which("size")
    if tool is None:
        return None
    for line in _output(tool, "-A", "-d", str(library)).splitlines():
        parts = line.split()
        if len(parts) >= 2 and parts[0] == ".text" and parts[1].isdigit():
            return int(parts[1])
    return None


def _run_cc(cc: str, source: str) -> CompileResult:
    remarks = (VECTORIZATION_REMARKS,) if is_gcc(cc) else ()
    with tempfile.TemporaryDirectory(prefix="tuner-cc-") as tmp:
        folder = Path(tmp)
        (folder / "kernel.c").write_text(source)
        command = [cc, *flags(cc), *remarks, "kernel.c", "-o", f"kernel{LIBRARY}"]
        started = time.perf_counter()
        try:
            done = run_tied(command, folder, {**os.environ, "TMPDIR": tmp}, COMPILE_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            log = f"{cc} did not finish within {COMPILE_TIMEOUT_S:.0f} s: {' '.join(command)}"
            return CompileResult(False, None, Resources(), log, time.perf_counter() - started, False)
        seconds = time.perf_counter() - started
        built = folder / f"kernel{LIBRARY}"
        if done.returncode != 0 or not built.is_file():
            log = "\n".join(line for line in done.stderr.splitlines() if "optimized:" not in line).strip()
            return CompileResult(False, None, Resources(), log[:MESSAGE_LIMIT] or
                                 f"{cc} exited with status {done.returncode} and no message: {' '.join(command)}",
                                 seconds, False)
        vectorized = len(re.findall(r"loop vectorized", done.stderr)) if remarks else None
        resources = Resources(code_bytes=text_bytes(built), vectorized_loops=vectorized)
        return CompileResult(True, built.read_bytes(), resources, done.stderr.strip()[:MESSAGE_LIMIT], seconds,
                             False)


def compile_source(source: str) -> CompileResult:
    """Compile one C source to a shared library, from the cache when it was compiled before; ``path`` names
    the library's file in the cache.

    A compile error is a result with ``ok=False`` and the compiler's message in ``log``, not an exception; a
    missing compiler or an unusable cache folder raises TunerError.
    """
    cc = find_cc()
    key = compile_cache.cache_key(source, list(flags(cc)), compiler_identity(cc), target_machine())
    path = compile_cache.binary_path(cache_dir(), key, LIBRARY)
    entry = compile_cache.read(cache_dir(), key, LIBRARY)
    if entry is not None:
        record = entry.record
        return CompileResult(True, entry.binary, Resources(**record["resources"]), record["log"], record["seconds"],
                             True, path=path)
    result = _run_cc(cc, source)
    if not result.ok or result.binary is None:
        return result
    record = {"resources": asdict(result.resources), "log": result.log, "seconds": result.seconds,
              "flags": list(flags(cc)), "cc": compiler_identity(cc)}
    compile_cache.write(cache_dir(), key, LIBRARY, compile_cache.Entry(result.binary, record))
    return CompileResult(True, result.binary, result.resources, result.log, result.seconds, False, path=path)


def own_kernel(name: str, prefix: str = "") -> ctypes.CDLL:
    """One of the project's own C kernels (``tuner/ceiling_kernels/<name>``, after ``prefix``), built and loaded."""
    built = compile_source(prefix + (OWN_KERNELS / name).read_text())
    if not built.ok or built.path is None:
        raise TunerError(f"the project's own kernel {name} does not compile with {find_cc()}:\n{built.log}")
    return ctypes.CDLL(str(built.path))
