"""Processes that never outlive the run that started them, however it ends (even by SIGKILL).

Two kinds of children. A compiler command runs in a process group of its own under a small shell that the
kernel sends SIGTERM when its parent dies (``setpriv --pdeathsig``); the shell then kills its whole group, so
that nvcc's or cc's own children (cicc, ptxas, as) go too. A measuring process asks for
SIGKILL on its parent's death itself, first thing (``die_with_parent``), and exits at once if its parent is
already gone. Linux only; elsewhere the compiler runs directly and measuring processes rely on their pipes closing.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import signal
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from functools import cache
from pathlib import Path

PR_SET_PDEATHSIG = 1
_running: set[int] = set()
_running_lock = threading.Lock()
_GROUP_SHELL = 'trap "kill -KILL 0" TERM; "$@" & wait $!'
"""Runs the command in the background and waits; on SIGTERM, kills the whole process group."""


@cache
def _setpriv() -> str | None:
    return shutil.which("setpriv") if sys.platform.startswith("linux") else None


def tied_command(command: Sequence[str]) -> list[str]:
    """``command`` wrapped so that it and its children die when the calling process dies."""
    setpriv = _setpriv()
    if setpriv is None:
        return list(command)
    return [setpriv, "--pdeathsig", "TERM", "sh", "-c", _GROUP_SHELL, "tuner-child", *command]


def run_tied(command: Sequence[str], cwd: Path, env: Mapping[str, str],
             timeout_s: float) -> subprocess.CompletedProcess:
    """Run a command to completion, capturing text output; on a timeout, kill its whole process group and
    raise ``subprocess.TimeoutExpired``."""
    process = subprocess.Popen(tied_command(command), cwd=cwd, env=dict(env), stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, start_new_session=True)
    with _running_lock:
        _running.add(process.pid)
    try:
        stdout, stderr = process.communicate(timeout=timeout_s)
    except BaseException:
        _kill_group(process.pid)
        process.communicate()
        raise
    finally:
        with _running_lock:
            _running.discard(process.pid)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def _kill_group(pid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, signal.SIGKILL)


def kill_running_commands() -> None:
    """Kill every command ``run_tied`` is still waiting for (their waits then return a killed status)."""
    with _running_lock:
        pids = list(_running)
    for pid in pids:
        _kill_group(pid)


def die_with_parent(parent_pid: int) -> None:
    """Ask the kernel to SIGKILL this process when its parent dies; exit now if the parent is already gone."""
    if sys.platform.startswith("linux"):
        with contextlib.suppress(OSError, AttributeError):
            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent_pid:
        os._exit(1)


STARTER_VARIABLE = "TUNER_STARTER_PID"
"""Where a process that starts a child through an intermediary (multiprocessing's fork server) leaves its pid,
for the child to tie itself to (``die_with_starter``)."""


def name_starter() -> None:
    """Let the children started from now on know this process as the one they die with."""
    os.environ[STARTER_VARIABLE] = str(os.getpid())


def die_with_starter() -> None:
    """``die_with_parent`` for the process ``name_starter`` named (the parent, where none was named): a child
    whose starter died before this call exits at once."""
    die_with_parent(int(os.environ.get(STARTER_VARIABLE) or os.getppid()))
