"""The Python API on the CPU backend where people call it: a plain script without an ``if __name__ ==
"__main__":`` guard, an interactive session and a notebook (executed with nbclient). The measuring process must
start without running the user's script again."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat", reason="the notebook tests need nbformat (the test extra)")
nbclient = pytest.importorskip("nbclient", reason="the notebook tests need nbclient (the test extra)")
NotebookClient = nbclient.NotebookClient

ROOT = Path(__file__).resolve().parents[2]
TIMEOUT_S = 300


def code(out: Path, mark: Path) -> str:
    """A few statements that tune a small C kernel, noting each time they run (a re-run script notes twice)."""
    return textwrap.dedent(f"""\
        import tuner
        open({str(mark)!r}, "a").write("ran\\n")
        kernel = tuner.KernelSpec("cpu_reorder", {{"PARALLEL": (0, 1)}}, ("float32",))
        experiment = tuner.Experiment(name="guardless", problems=(tuner.Problem(64, 48, 40),), kernels=(kernel,))
        result = tuner.run(experiment, trials=2, out={str(out)!r}, quiet=True, report=False)
        print(repr(result))
        """)


def environment() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}


@pytest.mark.slow  # a Python process of its own, which starts the measuring process
def test_a_script_without_a_main_guard_runs_once(quick_ceilings, tmp_path):
    script = tmp_path / "tune.py"
    script.write_text(code(tmp_path / "out", tmp_path / "ran.txt"))
    done = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True,
                          timeout=TIMEOUT_S, env=environment())
    assert done.returncode == 0, done.stderr
    assert "RunResult(guardless: 1 study, 2 evaluations, 2 ok" in done.stdout
    assert (tmp_path / "ran.txt").read_text() == "ran\n"


@pytest.mark.slow  # an interactive Python of its own, which starts the measuring process
def test_an_interactive_session_runs(quick_ceilings, tmp_path):
    done = subprocess.run([sys.executable, "-i", "-q"], input=code(tmp_path / "out", tmp_path / "ran.txt"),
                          cwd=tmp_path, capture_output=True, text=True, timeout=TIMEOUT_S, env=environment())
    assert done.returncode == 0, done.stderr
    assert "RunResult(guardless: 1 study, 2 evaluations, 2 ok" in done.stdout
    assert "Traceback" not in done.stderr


@pytest.mark.slow  # a Jupyter kernel of its own, which starts the measuring process
def test_a_notebook_runs_and_shows_the_result_as_a_table(quick_ceilings, tmp_path, monkeypatch):
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(code(tmp_path / "out", tmp_path / "ran.txt")),
                      nbformat.v4.new_code_cell("result")]
    monkeypatch.setenv("PYTHONPATH", environment()["PYTHONPATH"])  # the kernel starts with this environment
    NotebookClient(notebook, timeout=TIMEOUT_S, kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    printed = "".join(output.get("text", "") for output in notebook.cells[0].outputs)
    assert "RunResult(guardless: 1 study, 2 evaluations, 2 ok" in printed
    shown = notebook.cells[1].outputs[0]["data"]
    assert "<b>guardless</b>" in shown["text/html"] and "cpu_reorder" in shown["text/html"]
    assert shown["text/plain"].startswith("RunResult(guardless")
    assert (tmp_path / "ran.txt").read_text() == "ran\n"
