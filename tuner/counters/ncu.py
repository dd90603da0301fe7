"""Nsight Compute's command-line profiler: where it is, which metrics the GPU has, one profiling session.

A session profiles every kernel a child process launches (:mod:`tuner.backends.pycuda.ncu_child`), each replayed as many
times as the metrics need (``--replay-mode kernel``: the kernel's memory is saved before the first pass and
restored before each next one), with the GPU's clocks left as they are (``--clock-control none``: the tuner
never locks clocks) and every cache flushed before each pass (``--cache-control all``, as the tuner flushes the
L2 before each timed sample). Its report is read back as the raw CSV page (:mod:`tuner.counters.ncu_csv`).

Failures become one-line reasons (:class:`NcuUnavailable`): no ncu, no permission to read the counters
(``ERR_NVGPUCTRPERM``), a process that failed, a session that did not end in time.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from tuner import atomic_file
from tuner.counters.conditions import CACHE_CONTROL, CLOCK_CONTROL
from tuner.counters.job import MANIFEST_FILE, launched_count
from tuner.counters.metrics import base_name
from tuner.lifetime import kill_running_commands, run_tied
from tuner.settings import cache_root

NCU_ENV = "TUNER_NCU"
"""An environment variable naming the ncu executable to use (else ncu on PATH, beside nvcc, or in the toolkit)."""
TOOLKIT_BIN = Path("/usr/local/cuda/bin")
REPORT = "counters"
"""The session's report file, in the job's folder (ncu adds .ncu-rep)."""
REPLAY_MODE = "kernel"
QUERY_TIMEOUT_S = 120.0
SESSION_TIMEOUT_S = 300.0
"""A session's time limit: this, plus PER_KERNEL_TIMEOUT_S for each kernel it profiles."""
PER_KERNEL_TIMEOUT_S = 30.0
POLL_S = 0.5
RETRIES = 6
"""Sessions retried without the metrics a failed one named (when the metric list could not be checked first: each
of the tensor pipe's names may be unknown to the GPU)."""
PERMISSION = "ERR_NVGPUCTRPERM"
_PASSES = re.compile(r'==PROF== Profiling "[^"]*".*?(\d+) pass', re.IGNORECASE)
_METRIC_LINE = re.compile(r"^\s*\"?([a-z0-9]+__[A-Za-z0-9_]+)\"?(?:[\s,]|$)")


class NcuUnavailable(Exception):
    """Counters cannot be read; the message is the one-line reason."""


def one_line(text: str, limit: int = 300) -> str:
    """Text as one line of at most ``limit`` characters."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def find_ncu() -> str:
    """The ncu executable, or NcuUnavailable saying where it was looked for."""
    named = os.environ.get(NCU_ENV)
    if named:
        if shutil.which(named):
            return str(shutil.which(named))
        raise NcuUnavailable(f"{NCU_ENV}={named} names no executable")
    found = shutil.which("ncu")
    if found:
        return found
    folders = [Path(os.environ["CUDA_HOME"]) / "bin"] if os.environ.get("CUDA_HOME") else []
    nvcc = shutil.which("nvcc")
    folders += [Path(nvcc).parent] if nvcc else []
    folders.append(TOOLKIT_BIN)
    for folder in folders:
        if (folder / "ncu").is_file() and os.access(folder / "ncu", os.X_OK):
            return str(folder / "ncu")
    raise NcuUnavailable("Nsight Compute's ncu is not installed here (not on PATH, beside nvcc or in "
                         f"{TOOLKIT_BIN}); install Nsight Compute, or name it with {NCU_ENV}")


def _run(command: Sequence[str], timeout_s: float, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    try:
        return run_tied(command, Path.cwd(), env if env is not None else dict(os.environ), timeout_s)
    except subprocess.TimeoutExpired:
        raise NcuUnavailable(f"{Path(command[0]).name} did not finish within {timeout_s:.0f} s") from None
    except OSError as exc:
        raise NcuUnavailable(f"{command[0]} cannot be run ({exc})") from None


@cache
def ncu_version(ncu: str) -> str:
    """ncu's version (``2025.3.0.0``), or its first line of ``--version`` where that has none."""
    done = _run([ncu, "--version"], QUERY_TIMEOUT_S)
    text = done.stdout + done.stderr
    if done.returncode != 0:
        raise NcuUnavailable(f"{ncu} --version failed: {failure_reason(text)}")
    match = re.search(r"Version\s+(\S+)", text)
    return match.group(1) if match else one_line(text.strip().splitlines()[-1] if text.strip() else "unknown", 80)


def failure_reason(output: str) -> str:
    """Why a session or query failed, in one line, from its output."""
    if PERMISSION in output:
        return (f"no permission to read the GPU's performance counters ({PERMISSION}): run as root, or let every "
                "user read them (the NVIDIA driver option NVreg_RestrictProfilingToAdminUsers=0)")
    errors = [line.split("==ERROR==", 1)[1].strip() for line in output.splitlines() if "==ERROR==" in line]
    if errors:
        return one_line("; ".join(dict.fromkeys(errors)))
    lines = [line for line in output.strip().splitlines() if line.strip()]
    return one_line(lines[-1]) if lines else "no message"


def parse_metric_names(text: str) -> set[str]:
    """The base metric names of ``ncu --query-metrics`` output (one per line, first in its line)."""
    return {base_name(m[1]) for line in text.splitlines() if (m := _METRIC_LINE.match(line))}


def known_metrics(ncu: str, device_name: str) -> set[str] | None:
    """The base names of the metrics the GPU has (cached per ncu version and GPU); None where the query gives
    none, so that the metrics are asked for unchecked."""
    key = hashlib.sha256(f"{ncu_version(ncu)}|{device_name}".encode()).hexdigest()[:16]
    path = cache_root() / f"ncu-metrics-{key}.json"
    try:
        cached = json.loads(path.read_text())
        if isinstance(cached, list) and cached:
            return set(cached)
    except (OSError, ValueError):
        pass
    done = _run([ncu, "--query-metrics"], QUERY_TIMEOUT_S)
    names = parse_metric_names(done.stdout)
    if PERMISSION in done.stdout + done.stderr:
        raise NcuUnavailable(failure_reason(done.stdout + done.stderr))
    if done.returncode != 0 or not names:
        return None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_file.write_text(path, json.dumps(sorted(names)))
    except OSError:  # the query is only repeated next time
        pass
    return names


@dataclass(frozen=True)
class Session:
    """What one profiling session produced."""

    raw_csv: str
    """The report's raw page (``--csv --page raw``), empty where the session profiled nothing."""
    passes: tuple[int, ...]
    """Replay passes of each profiled kernel, as ncu reported them."""
    output: str
    """ncu's and the profiled process's output."""
    returncode: int
    metrics: tuple[str, ...]
    """The metrics the session collected."""


def passes_of(output: str) -> tuple[int, ...]:
    """The replay passes of each kernel a session profiled, from its ``==PROF== Profiling`` lines."""
    return tuple(int(count) for count in _PASSES.findall(output))


def named_in(metric: str, output: str) -> bool:
    """Whether ``output`` names the metric (its base name as a whole word: not a longer metric it begins)."""
    return re.search(rf"\b{re.escape(base_name(metric))}\b", output) is not None


def profile_command(ncu: str, metrics: Sequence[str], report: Path, program: Sequence[str]) -> list[str]:
    return [ncu, "--metrics", ",".join(metrics), "--clock-control", CLOCK_CONTROL, "--cache-control", CACHE_CONTROL,
            "--replay-mode", REPLAY_MODE, "--target-processes", "all", "--export", str(report), "--force-overwrite",
            *program]


def child_program(folder: Path) -> list[str]:
    return [sys.executable, "-m", "tuner.backends.pycuda.ncu_child", str(folder)]


def run_session(ncu: str, metrics: Sequence[str], folder: Path, kernels: int, env: dict[str, str],
                progress: Callable[[int], None] | None = None) -> Session:
    """Profile the job in ``folder`` (its child process launches ``kernels`` kernels) with ``metrics``; a metric
    the GPU lacks that ncu names is left out and the session run again (at most RETRIES times)."""
    wanted = list(metrics)
    for _ in range(RETRIES + 1):
        (folder / MANIFEST_FILE).unlink(missing_ok=True)
        (folder / REPORT).with_suffix(".ncu-rep").unlink(missing_ok=True)
        session = _session(ncu, wanted, folder, kernels, env, progress)
        if session.raw_csv or session.returncode == 0:
            return session
        named = [m for m in wanted if named_in(m, session.output)]
        if not named or len(named) == len(wanted) or PERMISSION in session.output:
            return session
        wanted = [m for m in wanted if m not in named]
    return session


def _session(ncu: str, metrics: Sequence[str], folder: Path, kernels: int, env: dict[str, str],
             progress: Callable[[int], None] | None) -> Session:
    report = folder / REPORT
    command = profile_command(ncu, metrics, report, child_program(folder))
    timeout = SESSION_TIMEOUT_S + PER_KERNEL_TIMEOUT_S * kernels
    pool = ThreadPoolExecutor(1, thread_name_prefix="tuner-ncu")
    running = pool.submit(_run, command, timeout, env)
    seen = -1
    try:
        while True:
            try:
                done = running.result(timeout=POLL_S)
                break
            except FutureTimeout:
                count = launched_count(folder / MANIFEST_FILE)
                if progress is not None and count != seen:
                    progress(count)
                    seen = count
    except BaseException:  # interrupted: the profiler and its process go, and the waiting thread with them
        kill_running_commands()
        raise
    finally:
        pool.shutdown(wait=False)
    output = done.stdout + done.stderr
    rep = report.with_suffix(".ncu-rep")
    return Session(export_raw(ncu, rep) if rep.is_file() else "", passes_of(output), output, done.returncode,
                   tuple(metrics))


def export_raw(ncu: str, report: Path) -> str:
    """A report's raw page as CSV, every value in its base unit where this ncu can print them so (else as it
    scales them); "" where it holds no kernel."""
    for units in (["--print-units", "base"], []):
        exported = _run([ncu, "--import", str(report), "--csv", "--page", "raw", *units], QUERY_TIMEOUT_S)
        if exported.returncode == 0:
            return exported.stdout if '"ID"' in exported.stdout else ""
    raise NcuUnavailable(f"ncu --import failed: {failure_reason(exported.stdout + exported.stderr)}")
