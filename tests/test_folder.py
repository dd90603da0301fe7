"""A run never deletes or replaces a recorded row: a folder of another experiment or storage is refused, and a
table whose storage is gone re-seeds the studies so that nothing is measured twice."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

import tuner
from tests.conftest import run_cli
from tests.scripted_backend import ScriptedBackend
from tuner.errors import TunerError
from tuner.results import table as results

ROOT = Path(__file__).resolve().parent.parent
FERMI = ROOT / "experiments" / "fermi_like.yaml"


def sweep(out: Path, backend: ScriptedBackend | None = None, **options) -> tuner.RunResult:
    options = {"strategy": "grid", "trials": 4, "quiet": True, "report": False, **options}
    return tuner.run(tuner.load_experiment(FERMI), backend=backend or ScriptedBackend(), out=out, **options)


@pytest.fixture(scope="module")
def measured_once(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("measured") / "run"
    sweep(out)
    return out


@pytest.fixture
def measured(measured_once, tmp_path) -> Path:
    """A folder of a finished run of its own for each test: a copy of one run (a copied folder goes on as its
    original would, see test_a_copy_of_a_folder_continues_with_its_own_storage)."""
    out = tmp_path / "run"
    shutil.copytree(measured_once, out)
    return out


def table(out: Path) -> pd.DataFrame:
    return results.load(out)[0].sort_values(["study", "config_key"]).reset_index(drop=True)


@pytest.mark.parametrize("how", ["deleted", "emptied"])
def test_a_lost_storage_is_reseeded_from_the_table(measured, how):
    before = table(measured)
    (measured / "study.log").unlink()
    if how == "emptied":
        (measured / "study.log").touch()  # a journal without a study
    again = ScriptedBackend()
    result = sweep(measured, again)
    assert again.calls == [] and again.baselines == [], "what the table holds is not measured again"
    pd.testing.assert_frame_equal(table(measured), before)
    assert len(result.df) == len(before)
    assert [run["evaluations"] for run in result.metadata["runs"]] == [len(before), 0]


def test_a_reseeded_study_goes_on_where_the_table_stopped(measured):
    before = table(measured)
    (measured / "study.log").unlink()
    more = ScriptedBackend()
    sweep(measured, more, trials=6)
    after = table(measured)
    assert len(more.calls) == 2 * 3 and not set(more.calls) & set(before["config_key"])
    pd.testing.assert_frame_equal(after[after["config_key"].isin(before["config_key"])].reset_index(drop=True),
                                  before)


@pytest.mark.slow
def test_another_storage_is_refused_and_the_table_kept(measured, tmp_path):
    before = table(measured)
    with pytest.raises(TunerError, match=r"recorded in the storage the folder's own storage.*with out$"):
        sweep(measured, storage=f"sqlite:///{tmp_path / 'other.db'}")
    pd.testing.assert_frame_equal(table(measured), before)
    done = run_cli("run", str(FERMI), "--backend", "replay", "--replay", str(measured), "--out", str(measured),
                   "--storage", f"sqlite:///{tmp_path / 'other.db'}", "--no-report")
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1 and "no --storage" in done.stderr
    pd.testing.assert_frame_equal(table(measured), before)


@pytest.mark.slow
def test_a_folder_recorded_in_another_storage_takes_only_that_storage(tmp_path):
    out, elsewhere = tmp_path / "run", f"sqlite:///{tmp_path / 'shared.db'}"
    sweep(out, storage=elsewhere)
    assert json.loads((out / "metadata.json").read_text())["storage"] == elsewhere
    with pytest.raises(TunerError, match="run with storage='sqlite:///"):
        sweep(out)
    assert sweep(out, ScriptedBackend(), storage=elsewhere).df.shape[0] == table(out).shape[0]


def test_another_experiment_is_refused_and_the_table_kept(measured, tmp_path):
    before = table(measured)
    other = tmp_path / "other.yaml"
    other.write_text(FERMI.read_text().replace("name: fermi_like", "name: another"))
    with pytest.raises(TunerError, match="holds the results of experiment 'fermi_like'.*with out, so that"):
        tuner.run(tuner.load_experiment(other), backend=ScriptedBackend(), out=measured, quiet=True, report=False)
    pd.testing.assert_frame_equal(table(measured), before)
    assert not (measured / "study.log.lock").exists()


def test_a_row_the_experiment_no_longer_lists_is_kept(measured, tmp_path):
    before = table(measured)
    narrower = tmp_path / "narrower.yaml"
    text = FERMI.read_text()
    assert "TILE_WIDTH: [8, 16, 32]" in text
    narrower.write_text(text.replace("TILE_WIDTH: [8, 16, 32]", "TILE_WIDTH: [16, 32]"))
    (measured / "study.log").unlink()
    again = ScriptedBackend()
    tuner.run(tuner.load_experiment(narrower), backend=again, out=measured, strategy="grid", trials=4, quiet=True,
              report=False)
    assert again.calls == []
    pd.testing.assert_frame_equal(table(measured), before)


def test_a_copy_of_a_folder_continues_with_its_own_storage(measured, tmp_path):
    copy = tmp_path / "copy"
    shutil.copytree(measured, copy)
    again = ScriptedBackend()
    sweep(copy, again)
    assert again.calls == []
    pd.testing.assert_frame_equal(table(copy), table(measured))


def test_a_row_the_static_rules_reject_is_kept_and_not_counted_against_the_search(measured):
    df, metadata = results.load(measured)
    naive = df[(df["family"] == "naive") & (df["trial"] >= 0)].iloc[[0]].copy()
    old_key = naive["config_key"].iloc[0]
    rejected_key = old_key.split("/naive/")[0] + "/naive/float32/BLOCK_X=64,BLOCK_Y=32"
    naive = naive.assign(config_key=rejected_key, p_BLOCK_X=64, p_BLOCK_Y=32, status="invalid",
                         reason="threads per block ≤ 1024", gflops=None, performance=None)
    results.save(pd.concat([df, naive], ignore_index=True), metadata, measured)  # a row of a search over the product
    before = table(measured)
    (measured / "study.log").unlink()
    again = ScriptedBackend()
    sweep(measured, again, trials=100)
    after = table(measured)
    assert rejected_key not in again.calls and not set(again.calls) & set(before["config_key"])
    assert (after["config_key"] == rejected_key).sum() == 1
    evaluated = after[after["trial"] >= 0]
    assert len(evaluated) == len(before[before["trial"] >= 0]) + len(again.calls)
    assert sorted(evaluated.groupby("study")["config_key"].nunique()) == [18, 18, 18 + 1]  # every candidate


def test_a_folder_whose_storage_is_the_earlier_sqlite_file_is_refused_naming_the_journal(measured):
    before = table(measured)
    (measured / "study.log").unlink()
    (measured / "study.db").write_bytes(b"SQLite format 3\0")  # where a run folder kept its storage before
    again = ScriptedBackend()
    with pytest.raises(TunerError, match=r"holds study.db, .* its own storage is the journal study.log now"):
        sweep(measured, again, trials=6)
    assert again.calls == [] and not (measured / "study.log").exists()
    assert (measured / "study.db").read_bytes() == b"SQLite format 3\0"
    pd.testing.assert_frame_equal(table(measured), before)


def test_a_half_written_last_line_of_the_folders_journal_is_cut_before_going_on(measured):
    before = table(measured)
    log = measured / "study.log"
    whole = log.read_bytes()
    log.write_bytes(whole + b'{"op_code": 5, "worker_id": "killed mid-wri')
    again = ScriptedBackend()
    sweep(measured, again, trials=5)
    assert log.read_bytes().startswith(whole) and b"killed mid-wri" not in log.read_bytes()
    assert len(again.calls) == 3 and table(measured).shape[0] == before.shape[0] + 3
