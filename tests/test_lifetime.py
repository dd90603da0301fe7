"""Nothing outlives a run: compiler commands and their children, and measuring processes, die with the process
that started them, however it ends."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from tests.patience import patient

ROOT = Path(__file__).resolve().parent.parent
GRACE_S = 2.0
"""How long a process takes to notice its parent is gone and end, on an idle machine (stretched by the load)."""


def processes_with(marker: str) -> list[int]:
    """The live processes whose environment holds ``marker`` (every descendant of a run inherits it)."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker.encode() in (entry / "environ").read_bytes():
                status = (entry / "stat").read_text().split()
                if status[2] != "Z":  # a zombie is already dead, waiting for its parent to read its status
                    found.append(int(entry.name))
        except OSError:
            continue
    return found


def command_line(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return b""


def wait_until_gone(marker: str, seconds: float = GRACE_S) -> list[int]:
    deadline = time.monotonic() + patient(seconds)
    while time.monotonic() < deadline:
        if not processes_with(marker):
            return []
        time.sleep(0.05)
    return processes_with(marker)


def start(code: str, marker: str) -> subprocess.Popen:
    env = {**os.environ, "TUNER_TEST_MARKER": marker, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT, env=env,
                            stdout=subprocess.PIPE, text=True)


pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc (Linux)")


def test_a_command_and_its_children_die_with_the_run():
    marker = f"lifetime-{uuid.uuid4()}"
    run = start("""
        from pathlib import Path
        import os
        from tuner.lifetime import run_tied
        print("started", flush=True)
        run_tied(["sh", "-c", "sleep 60 & sleep 60"], Path("."), os.environ, 120)
    """, marker)
    assert run.stdout.readline().strip() == "started"
    deadline = time.monotonic() + patient(10)
    while len(processes_with(marker)) < 4 and time.monotonic() < deadline:  # python, sh, sh, sleep, sleep
        time.sleep(0.05)
    assert len(processes_with(marker)) >= 4
    run.send_signal(signal.SIGKILL)
    run.wait()
    assert wait_until_gone(marker) == []


def test_a_measuring_process_dies_with_the_run():
    marker = f"lifetime-{uuid.uuid4()}"
    run = start("""
        from tuner.backends.measuring_process import MeasuringProcess
        from tests.lifetime_entries import sleeper
        measuring = MeasuringProcess(sleeper, (), "test-measurer", 60)
        print("measuring", measuring.process.pid, flush=True)
        import time
        time.sleep(120)
    """, marker)
    line = run.stdout.readline().split()
    assert line[0] == "measuring"
    measuring_pid = int(line[1])
    assert measuring_pid in processes_with(marker)
    run.send_signal(signal.SIGKILL)
    run.wait()
    assert wait_until_gone(marker) == []


@pytest.mark.slow
def test_the_processes_drawing_a_report_die_with_the_run(tmp_path):
    marker = f"lifetime-{uuid.uuid4()}"
    folder = tmp_path / "run"
    run = start(f"""
        import shutil, time
        from concurrent.futures import ProcessPoolExecutor
        import tuner.report as report
        shutil.copytree("experiments/data/fermi_like_h100", {str(folder)!r})
        report.PARALLEL_FROM_CORES = 1  # draw in processes on any machine
        report.start_drawing_processes()
        pool = report._pool(3)
        drawing = [pool.submit(time.sleep, 60) for _ in range(3)]
        print("drawing", flush=True)
        time.sleep(120)
    """, marker)
    assert run.stdout.readline().strip() == "drawing"
    deadline = time.monotonic() + patient(30)
    while len(processes_with(marker)) < 5 and time.monotonic() < deadline:  # the run, the server, three drawers
        time.sleep(0.05)
    assert len(processes_with(marker)) >= 5
    run.send_signal(signal.SIGKILL)
    run.wait()
    assert wait_until_gone(marker) == []


@pytest.mark.slow
def test_a_killed_compile_leaves_no_compiler_behind(nvcc, tmp_path):
    marker = f"lifetime-{uuid.uuid4()}"
    env = {**os.environ, "TUNER_TEST_MARKER": marker, "TUNER_CACHE_DIR": str(tmp_path / "cache")}
    space = subprocess.Popen([sys.executable, "-m", "tuner", "space", "experiments/h100_sgemm.yaml", "--compile"],
                             cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + patient(60)
    compilers: list[int] = []
    while time.monotonic() < deadline and not compilers:
        compilers = [pid for pid in processes_with(marker) if pid != space.pid
                     and any(name in command_line(pid) for name in (b"cicc", b"ptxas", b"nvcc"))]
        time.sleep(0.05)
    assert compilers, "the compile pool never got busy"
    space.send_signal(signal.SIGKILL)
    space.wait()
    assert wait_until_gone(marker) == []

