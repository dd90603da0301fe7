"""Runs given what they cannot use: one paragraph naming the file and field, exit status 2, nothing recorded lost
and no folder left behind; and what a run writes stays faithful (reproducible seeds, a CSV no spreadsheet runs)."""

from __future__ import annotations

import dataclasses
import json
import shutil
import socket
import threading
import time
from pathlib import Path

import pandas as pd
import pytest

import tuner
from tests.conftest import ROOT, run_cli
from tests.patience import patient
from tuner import cli
from tuner.backends.cpu.backend import default_threads
from tuner.config import Problem
from tuner.errors import ExperimentError, TunerError
from tuner.results.schema import BASELINE_FAMILY
from tuner.space.entry_space import KernelSpec

FERMI = ROOT / "experiments" / "fermi_like.yaml"
RECORDING = ROOT / "experiments" / "data" / "fermi_like_h100"
SGEMM_RECORDING = ROOT / "experiments" / "data" / "h100_sgemm_h100"


def _one_paragraph(stderr: str) -> str:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "Traceback" not in stderr, stderr
    return lines[0]


@pytest.mark.slow
def test_replaying_a_recording_of_another_experiment_is_refused_before_anything_is_written(tmp_path):
    out = tmp_path / "out"
    done = run_cli("run", str(FERMI), "--replay", str(SGEMM_RECORDING), "--out", str(out), "--quiet", timeout=120)
    assert done.returncode == 2
    line = _one_paragraph(done.stderr)
    assert f"the recording {SGEMM_RECORDING} holds no valid configuration of the study fermi_like/" in line
    assert not out.exists()


@pytest.mark.parametrize("name", ["../../x", "/abs", "a\nb", "", ".hidden"])
def test_an_experiment_built_in_python_cannot_name_a_folder_outside(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    experiment = tuner.Experiment(name=name, problems=(Problem(64, 64, 64),),
                                  kernels=(KernelSpec("tiled", {"TILE_WIDTH": (16,)}, ("float32",)),))
    with pytest.raises(ExperimentError) as caught:
        tuner.run(experiment, backend="replay", replay=RECORDING, quiet=True, report=False)
    assert caught.value.field == "name"
    assert list(tmp_path.iterdir()) == []


def test_a_loaded_experiment_renamed_in_python_is_checked_too(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    renamed = dataclasses.replace(tuner.load_experiment(FERMI), name="../escaped")
    with pytest.raises(ExperimentError, match="folder name") as caught:
        tuner.run(renamed, backend="replay", quiet=True, report=False)
    assert caught.value.field == "name"
    assert list(tmp_path.iterdir()) == []


def test_a_parameter_value_past_64_bits_never_reaches_the_results_table(tmp_path):
    experiment = tuner.Experiment(name="big", problems=(Problem(64, 64, 64),),
                                  kernels=(KernelSpec("tiled", {"TILE_WIDTH": (2**63,)}, ("float32",)),))
    with pytest.raises(ExperimentError, match="C int constants") as caught:
        tuner.run(experiment, backend="replay", replay=RECORDING, out=tmp_path / "out", quiet=True, report=False)
    assert caught.value.field == "kernels[0].parameters.TILE_WIDTH[0]"
    assert not (tmp_path / "out").exists()


# --- the output folder --------------------------------------------------------------------------------------

def _folder_of(tmp_path: Path, experiment: str) -> Path:
    """A run folder of ``experiment`` (a copy of the fermi_like recording under another name)."""
    folder = tmp_path / "taken"
    shutil.copytree(RECORDING, folder)
    metadata = json.loads((folder / "metadata.json").read_text())
    metadata["experiment"]["name"] = experiment
    (folder / "metadata.json").write_text(json.dumps(metadata))
    return folder


def test_a_folder_whose_table_was_moved_aside_still_belongs_to_its_experiment(tmp_path, capsys):
    folder = _folder_of(tmp_path, "other")
    (folder / "results.parquet").rename(tmp_path / "aside.parquet")
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    assert cli.main(["run", str(FERMI), "--backend", "replay", "--out", str(folder), "--quiet"]) == 2
    assert "holds the metadata of experiment 'other'" in _one_paragraph(capsys.readouterr().err)
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


@pytest.mark.slow
def test_a_folder_holding_only_another_experiments_storage_is_refused(tmp_path):
    other = tmp_path / "other.yaml"
    other.write_text(FERMI.read_text().replace("name: fermi_like", "name: other"))
    out = tmp_path / "out"
    done = run_cli("run", str(other), "--replay", str(RECORDING), "--trials", "2", "--no-report", "--quiet",
                   "--out", str(out), timeout=120)
    assert done.returncode == 0, done.stderr
    for name in ("results.parquet", "results.csv", "metadata.json"):
        (out / name).unlink()
    log = (out / "study.log").read_bytes()
    done = run_cli("run", str(FERMI), "--backend", "replay", "--out", str(out), "--quiet", timeout=120)
    assert done.returncode == 2
    assert "holds the Optuna storage study.log of experiment 'other'" in _one_paragraph(done.stderr)
    assert (out / "study.log").read_bytes() == log


@pytest.mark.slow
def test_a_folder_with_its_own_experiments_storage_only_is_continued(tmp_path):
    out = tmp_path / "out"
    args = ("run", str(FERMI), "--backend", "replay", "--trials", "3", "--no-report", "--quiet", "--out", str(out))
    assert run_cli(*args, timeout=120).returncode == 0
    rows = len(pd.read_parquet(out / "results.parquet"))
    (out / "results.parquet").unlink()
    (out / "metadata.json").unlink()
    done = run_cli(*args, timeout=120)
    assert done.returncode == 0, done.stderr
    assert len(pd.read_parquet(out / "results.parquet")) == rows  # rebuilt from the storage, nothing measured again


# --- storages -----------------------------------------------------------------------------------------------

def _searched(out: Path) -> list[str]:
    df = pd.read_parquet(out / "results.parquet")
    kernels = df[df["family"] != BASELINE_FAMILY].sort_values(["study", "trial"])
    return list(kernels["config_key"])


@pytest.mark.slow
def test_a_run_alone_in_a_shared_storage_proposes_what_it_would_in_its_own_folder(tmp_path):
    common = ("run", str(FERMI), "--backend", "replay", "--strategy", "random", "--seed", "7", "--trials", "6",
              "--no-report", "--quiet")
    for name, extra in (("own", ()), ("shared1", ("--storage", f"journal://{tmp_path / 'a.log'}")),
                        ("shared2", ("--storage", f"journal://{tmp_path / 'b.log'}"))):
        done = run_cli(*common, *extra, "--out", str(tmp_path / name), timeout=120)
        assert done.returncode == 0, done.stderr
    assert _searched(tmp_path / "own") == _searched(tmp_path / "shared1") == _searched(tmp_path / "shared2")


@pytest.mark.slow
def test_a_storage_that_cannot_be_opened_leaves_no_folder(tmp_path):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    out = tmp_path / "out"
    done = run_cli("run", str(FERMI), "--backend", "replay", "--storage", f"postgresql://u@127.0.0.1:{port}/db",
                   "--out", str(out), "--quiet", timeout=120)
    assert done.returncode == 2
    assert "cannot be reached" in _one_paragraph(done.stderr)
    assert not out.exists()


@pytest.mark.slow
def test_a_database_that_accepts_but_never_answers_is_given_up_in_seconds(tmp_path):
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []
    stop = threading.Event()

    def accept() -> None:
        server.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(server.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    try:
        started = time.monotonic()
        done = run_cli("run", str(FERMI), "--backend", "replay", "--storage",
                       f"postgresql://u@127.0.0.1:{server.getsockname()[1]}/db", "--out", str(tmp_path / "out"),
                       "--quiet", timeout=120)
        elapsed = time.monotonic() - started
    finally:
        stop.set()
        thread.join()
        for connection in held:
            connection.close()
        server.close()
    assert done.returncode == 2
    assert "cannot be reached" in _one_paragraph(done.stderr)
    assert elapsed < 60  # the connection is given up after 10 s (libpq's own default waits 130 s)
    assert not (tmp_path / "out").exists()


# --- what a run writes ----------------------------------------------------------------------------------------

@pytest.mark.slow
def test_text_a_spreadsheet_would_run_is_quoted_in_the_csv_only(tmp_path):
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(FERMI.read_text().replace("name: fermi_like", 'name: "=HYPERLINK(1)"'))
    out = tmp_path / "out"
    done = run_cli("run", str(experiment), "--replay", str(RECORDING), "--trials", "2", "--no-report", "--quiet",
                   "--out", str(out), timeout=120)
    assert done.returncode == 0, done.stderr
    table = pd.read_parquet(out / "results.parquet")
    assert set(table["experiment"]) == {"=HYPERLINK(1)"}
    csv = pd.read_csv(out / "results.csv", dtype=str)
    assert set(csv["experiment"]) == {"'=HYPERLINK(1)"}
    studies = csv.loc[csv["family"] != BASELINE_FAMILY, "study"]
    assert len(studies) and all(str(study).startswith("'=HYPERLINK(1)/") for study in studies)


@pytest.mark.slow
def test_an_experiment_name_holding_dollars_draws_every_figure(tmp_path):
    experiment = tmp_path / "exp.yaml"
    experiment.write_text(FERMI.read_text().replace("name: fermi_like", 'name: "$x^$"')
                          .replace("name: Fermi-like", 'name: "$F^$ model"'))
    out = tmp_path / "out"
    done = run_cli("run", str(experiment), "--replay", str(RECORDING), "--trials", "4", "--quiet", "--out", str(out),
                   timeout=300)
    assert done.returncode == 0, done.stderr
    assert "warning" not in done.stderr
    figures = {p.name for p in out.glob("*.png")}
    assert {"roofline.png", "convergence.png", "params_naive.png", "params_tiled.png"} <= figures


def test_as_written_keeps_the_log_axis_numbers_and_draws_names_literally():
    from matplotlib.figure import Figure

    from tuner.report.literal_text import as_written

    figure = Figure()
    ax = figure.subplots()
    ax.plot([1, 10, 100], [1, 2, 3], label="$a^$")
    ax.set_xscale("log")
    ax.set_xticks([1, 10, 100])
    ax.set_yticks([1, 2, 3], labels=["$x", "y$", "$z$"])
    ax.set_title("$x^$")
    ax.legend()
    as_written(figure)
    figure.canvas.draw()
    assert not ax.title.get_parse_math()
    assert ax.xaxis.get_major_ticks()[0].label1.get_parse_math()  # 10⁰: mathematics on purpose
    assert [t.get_text() for t in ax.get_yticklabels()] == [r"\$x", r"y\$", r"\$z\$"]


# --- the deeply nested metadata.json --------------------------------------------------------------------------

@pytest.fixture
def deep_folder(tmp_path) -> Path:
    folder = tmp_path / "deep"
    shutil.copytree(RECORDING, folder)
    (folder / "metadata.json").write_text('{"experiment": ' + "[" * 100_000 + "]" * 100_000 + "}")
    return folder


@pytest.mark.slow
def test_a_deeply_nested_metadata_is_refused_by_replay_compare_and_run(tmp_path, deep_folder):
    for args in (("run", str(FERMI), "--replay", str(deep_folder), "--out", str(tmp_path / "out")),
                 ("compare", str(deep_folder), "--out", str(tmp_path / "cmp")),
                 ("run", str(FERMI), "--backend", "replay", "--out", str(deep_folder))):
        done = run_cli(*args, "--quiet", timeout=120)
        assert done.returncode == 2, done.stderr
        assert "nests its values too deeply" in _one_paragraph(done.stderr)


@pytest.mark.slow
def test_a_deeply_nested_metadata_still_gets_a_report_with_a_note(deep_folder):
    done = run_cli("report", str(deep_folder), timeout=300)
    assert done.returncode == 0, done.stderr
    assert "nests its values too deeply" in (deep_folder / "report.html").read_text()


# --- the environment ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("value", ["0", "abc", "-1", "2.5", "٣"])
def test_omp_num_threads_that_is_no_count_is_refused(monkeypatch, value):
    monkeypatch.setenv("OMP_NUM_THREADS", value)
    with pytest.raises(TunerError, match=f"OMP_NUM_THREADS={value!r}"):
        default_threads()


@pytest.mark.parametrize(("value", "threads"), [("3", 3), ("2,1", 2), (" 1 ", 1)])
def test_omp_num_threads_as_openmp_reads_it(monkeypatch, value, threads):
    monkeypatch.setenv("OMP_NUM_THREADS", value)
    assert default_threads() == threads


@pytest.mark.slow
def test_the_cli_refuses_omp_num_threads_of_zero(tmp_path):
    import os
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-m", "tuner", "run", str(ROOT / "experiments" / "cpu_blocking.yaml"),
                           "--out", str(tmp_path / "out"), "--quiet"], cwd=ROOT, capture_output=True, text=True,
                          timeout=patient(120), env={**os.environ, "OMP_NUM_THREADS": "0"})
    assert done.returncode == 2
    assert "OMP_NUM_THREADS='0'" in _one_paragraph(done.stderr)
    assert not (tmp_path / "out").exists()
