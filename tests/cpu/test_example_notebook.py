"""The example notebook runs from top to bottom in a Jupyter kernel (executed with nbclient) on the CPU backend:
its progress shows in the cell, the results show as tables and the report's figures inline."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.cpu.test_api_surroundings import environment
from tests.patience import patient

nbformat = pytest.importorskip("nbformat", reason="the notebook tests need nbformat (the test extra)")
nbclient = pytest.importorskip("nbclient", reason="the notebook tests need nbclient (the test extra)")
NotebookClient = nbclient.NotebookClient

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "examples" / "cpu_tuning.ipynb"


def outputs(cell: nbformat.NotebookNode, kind: str) -> list[nbformat.NotebookNode]:
    return [output for output in cell.get("outputs", []) if output["output_type"] == kind]


@pytest.mark.slow  # a Jupyter kernel of its own, which starts the measuring process and draws the report
def test_the_example_notebook_runs_and_shows_progress_tables_and_figures(quick_ceilings, tmp_path, monkeypatch):
    shutil.copy(NOTEBOOK, tmp_path / NOTEBOOK.name)
    notebook = nbformat.read(tmp_path / NOTEBOOK.name, as_version=4)
    monkeypatch.setenv("PYTHONPATH", environment()["PYTHONPATH"])  # the kernel starts with this environment
    NotebookClient(notebook, timeout=round(patient(300)), kernel_name="python3",
                   resources={"metadata": {"path": str(tmp_path)}}).execute()
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert not [output for cell in code for output in outputs(cell, "error")]
    run_cell = next(cell for cell in code if "tuner.run(" in cell.source)
    progress = "".join(output["text"] for output in outputs(run_cell, "stream") if output["name"] == "stderr")
    assert "notebook_cpu/256x192x160/float64  6/6  best " in progress and "[6 configurations evaluated]" in progress
    tables = [output["data"]["text/html"] for cell in code for output in outputs(cell, "execute_result")
              if "text/html" in output["data"]]
    assert any("time_median_ms" in table and "p_MC" in table for table in tables)  # the results as a DataFrame
    assert any("<b>notebook_cpu</b>" in table for table in tables)  # the result's own view
    figures = [output for cell in code for output in outputs(cell, "display_data") if "image/png" in output["data"]]
    assert len(figures) == 2
    assert (tmp_path / "reports" / "notebook_cpu" / "report.html").is_file()
