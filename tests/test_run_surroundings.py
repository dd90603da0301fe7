"""A run's surroundings going wrong: the output folder, the Optuna storage, a full or read-only disk, a missing
backend. Each is one paragraph and exit status 2, nothing is created before the backend has started, and
nothing recorded is lost. The failures are real ones (a database that fills up, /dev/full, a read-only mount)."""

from __future__ import annotations

import contextlib
import importlib.util
import os
import subprocess
import sys
import tomllib
from pathlib import Path

import pandas as pd
import pytest
import sqlalchemy
from scripted_backend import ScriptedBackend

import tuner
from tests.tmpfs_mount import remount, tmpfs
from tuner import cli
from tuner.errors import TunerError
from tuner.results import metadata
from tuner.results import table as results
from tuner.search.storage import open_storage
from tuner.tuning import run as tuning
from tuner.tuning.folder import stored_records

ROOT = Path(__file__).resolve().parent.parent
FERMI = ROOT / "experiments" / "fermi_like.yaml"


def tuner_cli(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "tuner", *args], cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=600)


def one_paragraph(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, done.stderr
    assert "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ")
    return lines[0]


@pytest.fixture
def no_report(monkeypatch):
    monkeypatch.setattr("tuner.report.write_report", lambda out, quiet, jobs=1: [])


def scripted_run(out: Path, trials: int, *options: str) -> int:
    """``python -m tuner run`` in this process, measured by the scripted stand-in."""
    return cli.main(["run", str(FERMI), "--strategy", "grid", "--trials", str(trials), "--out", str(out), "--quiet",
                     *options])


# --- the output folder ----------------------------------------------------------------------------------------


@pytest.mark.slow
def test_an_empty_out_is_refused_and_nothing_is_written(tmp_path, recording):
    done = tuner_cli("run", str(FERMI), "--backend", "replay", "--replay", str(recording), "--out", "", cwd=tmp_path)
    assert "--out is empty" in one_paragraph(done)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_a_name_with_a_nul_creates_no_folder(tmp_path, recording):
    experiment = tmp_path / "nul.yaml"
    experiment.write_text(FERMI.read_text().replace("name: fermi_like", 'name: "fermi\\0like"'))
    done = tuner_cli("run", str(experiment), "--backend", "replay", "--replay", str(recording), cwd=tmp_path)
    message = one_paragraph(done)
    assert message.startswith(f"error: {experiment}, line ") and "field 'name': is used as a folder name" in message
    assert [p.name for p in tmp_path.iterdir()] == ["nul.yaml"]


@pytest.mark.skipif(importlib.util.find_spec("pycuda") is not None, reason="PyCUDA is installed here")
@pytest.mark.slow
def test_a_backend_that_cannot_start_leaves_no_folder_and_no_storage(tmp_path):
    done = tuner_cli("run", str(FERMI), "--backend", "pycuda", "--out", str(tmp_path / "run"))
    assert "the pycuda backend needs PyCUDA" in one_paragraph(done)
    assert not (tmp_path / "run").exists()


# --- the storage -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("url", ["sqlite:///:memory:", "sqlite://", "sqlite:///file:x?mode=memory&uri=true"])
@pytest.mark.slow
def test_an_in_memory_storage_is_refused(tmp_path, recording, url):
    done = tuner_cli("run", str(FERMI), "--backend", "replay", "--replay", str(recording), "--storage", url,
                     "--out", str(tmp_path / "run"))
    assert "in-memory SQLite database" in one_paragraph(done) and "sqlite:///path/to/study.db" in done.stderr
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_a_storage_file_that_is_no_database_is_named_and_the_results_stay(tmp_path, recording):
    out = tmp_path / "run"
    assert tuner_cli("run", str(FERMI), "--backend", "replay", "--replay", str(recording), "--trials", "1",
                     "--out", str(out)).returncode == 0
    (out / "study.log").write_text("notes, not a journal\n")
    table = (out / "results.parquet").read_bytes()
    done = tuner_cli("run", str(FERMI), "--backend", "replay", "--replay", str(recording), "--out", str(out))
    message = one_paragraph(done)
    assert f"the journal storage file {(out / 'study.log').resolve()} cannot be read as an Optuna journal" in message
    assert f"The results table {out / 'results.parquet'} is left as it is" in message
    assert "move it aside" in message
    assert (out / "study.log").read_text() == "notes, not a journal\n"
    assert (out / "results.parquet").read_bytes() == table


@contextlib.contextmanager
def databases_limited_to_their_size() -> object:
    """Every SQLite connection opened meanwhile may not grow its database: the next page it needs fails as a
    full disk does (SQLITE_FULL, "database or disk is full")."""

    def limit(connection: object, _record: object) -> None:
        cursor = connection.cursor()
        cursor.execute("PRAGMA max_page_count = 1")  # SQLite keeps it at the current size
        cursor.close()

    sqlalchemy.event.listen(sqlalchemy.engine.Engine, "connect", limit)
    try:
        yield
    finally:
        sqlalchemy.event.remove(sqlalchemy.engine.Engine, "connect", limit)


@pytest.mark.slow
def test_a_full_database_is_named_and_nothing_recorded_is_lost(tmp_path, monkeypatch, capsys, no_report):
    monkeypatch.setattr(tuning, "open_backends", lambda *args, **options: [ScriptedBackend()])
    out = tmp_path / "run"
    out.mkdir()
    sqlite = f"sqlite:///{out / 'study.db'}"
    assert scripted_run(out, 1, "--storage", sqlite) == 0
    capsys.readouterr()
    with databases_limited_to_their_size():
        assert scripted_run(out, 100, "--storage", sqlite) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"error: the storage file {out.resolve() / 'study.db'} is full (SQLite: database or "
                          f"disk is full); everything recorded before the failure is kept")
    assert len(err.splitlines()) == 1
    store = open_storage(f"sqlite:///{out / 'study.db'}")
    try:
        stored = {(r.study, r.config.key) for r in stored_records(store, "fermi_like")}
    finally:
        store.engine.dispose()
    saved = results.load(out)[0]
    assert stored == set(zip(saved["study"], saved["config_key"], strict=True))
    assert len(stored) > 4  # more than the first run's baseline and evaluation per study
    assert scripted_run(out, 100, "--storage", sqlite) == 0  # the same command continues
    finished = results.load(out)[0]
    assert set(saved["config_key"]) < set(finished["config_key"]) and finished["config_key"].is_unique


# --- the results table on a disk that refuses it ---------------------------------------------------------------


def small_table() -> pd.DataFrame:
    return pd.DataFrame({"experiment": ["t"], "gflops": [1.0]})


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full on this system")
def test_a_full_disk_leaves_the_saved_table_and_no_partial_file(tmp_path, monkeypatch):
    import tempfile

    from tuner import atomic_file

    results.save(small_table(), {"runs": []}, tmp_path)
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    fresh = tempfile.mkstemp

    def full(*args, **kwargs):
        """A temporary as the writer makes it, but on a full disk: writes to /dev/full fail with ENOSPC."""
        handle, name = fresh(*args, **kwargs)
        os.unlink(name)
        os.symlink("/dev/full", name)
        return handle, name

    monkeypatch.setattr(atomic_file.tempfile, "mkstemp", full)
    with pytest.raises(TunerError) as caught:
        results.save(pd.concat([small_table()] * 2), {"runs": [1]}, tmp_path)
    assert str(caught.value).startswith(f"{tmp_path}: the results table cannot be saved in this folder (No space "
                                        f"left on device)")
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before


def test_a_folder_below_a_file_is_named(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(TunerError, match=r"file/run: the results table cannot be saved in this folder \(Not a dir"):
        results.save(small_table(), {}, tmp_path / "file" / "run")


@pytest.fixture
def read_only_mount(tmp_path):
    """A tmpfs mounted at tmp_path/ro, made read-only with ``remount(ro)`` (function); skips where mounting is
    not allowed (it needs root or CAP_SYS_ADMIN)."""
    with tmpfs(tmp_path / "ro", "16m") as mount_point:
        yield mount_point, lambda: remount(mount_point, "ro")


@pytest.mark.slow
def test_a_read_only_output_folder_is_one_paragraph(read_only_mount, tmp_path, recording, no_report):
    mount_point, remount_read_only = read_only_mount
    out, own = mount_point / "run", mount_point / "own"
    storage_elsewhere = f"sqlite:///{tmp_path / 'elsewhere.db'}"
    tuner.run(FERMI, backend="replay", replay=recording, trials=1, out=out, storage=storage_elsewhere, quiet=True)
    tuner.run(FERMI, backend="replay", replay=recording, trials=1, out=own, quiet=True)
    replay = ("--backend", "replay", "--replay", str(recording), "--trials", "2", "--quiet")
    saved = (out / "results.parquet").read_bytes()
    remount_read_only()

    done = tuner_cli("run", str(FERMI), *replay, "--storage", storage_elsewhere, "--out", str(out))
    assert one_paragraph(done).startswith(f"error: {out}: the results table cannot be saved in this folder "
                                          f"(Read-only file system)")
    own_storage = one_paragraph(tuner_cli("run", str(FERMI), *replay, "--out", str(own)))
    assert f"the journal storage file {own.resolve() / 'study.log'} cannot be written (Read-only file system); " \
           f"everything recorded before the failure is kept" in own_storage
    report = tuner_cli("report", str(out))
    assert report.returncode == 2 and "Traceback" not in report.stderr
    *progress, error = report.stderr.strip().splitlines()
    assert all(line.startswith("report: ") for line in progress)  # the figures it was about to write
    assert error.startswith(f"error: {out}: the report cannot be written in this folder (Read-only file system)")
    assert (out / "results.parquet").read_bytes() == saved


# --- what a run prints, and the hints it gives ----------------------------------------------------------------


def test_quiet_silences_the_summary_of_the_api_unless_asked_for(tmp_path, capsys, no_report, recording):
    tuner.run(FERMI, backend="replay", replay=recording, trials=1, out=tmp_path / "quiet", quiet=True)
    assert capsys.readouterr().out == ""
    tuner.run(FERMI, backend="replay", replay=recording, trials=1, out=tmp_path / "told", quiet=True, summary=True)
    assert f"results: {tmp_path / 'told'}" in capsys.readouterr().out


def test_the_distribution_has_a_name_of_its_own():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["name"] == metadata.DISTRIBUTION != "tuner"
    assert metadata.tuner_version() is not None


def test_install_hints_work_from_a_checkout():
    for path in (ROOT / "tuner").rglob("*.py"):
        assert "'tuner[" not in path.read_text(), f"{path} suggests installing 'tuner[...]', another project's name"


@pytest.mark.skipif(importlib.util.find_spec("pycuda") is not None, reason="PyCUDA is installed here")
def test_device_without_pycuda_suggests_what_works():
    message = one_paragraph(tuner_cli("device"))
    assert 'pip install -e ".[cuda]"' in message
    assert "python -m tuner run EXPERIMENT --backend replay" in message
