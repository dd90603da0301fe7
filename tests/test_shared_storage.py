"""Storages several processes can share: a real PostgreSQL server (started for the tests) and a journal file.

A run records into them as into the folder's SQLite file, continues from them, and rebuilds its table from
them; a server that cannot be reached or a journal in a missing folder is one paragraph and exit status 2."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import tuner
from tests.conftest import run_cli
from tuner.errors import TunerError
from tuner.search.storage import close_storage, open_storage, shown
from tuner.tuning.folder import stored_records

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parent.parent
FERMI = ROOT / "experiments" / "fermi_like.yaml"


def replay(storage: str, out: Path, recording: Path, trials: int) -> pd.DataFrame:
    return tuner.run(FERMI, backend="replay", replay=recording, storage=storage, out=out, trials=trials,
                     strategy="random", quiet=True, report=False).df


def evaluations(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["study"] != "baseline"]


@pytest.mark.parametrize("driver", ["postgresql", "postgresql+psycopg"])
def test_a_run_records_into_postgresql_and_continues_from_it(postgres_url, recording, tmp_path, driver):
    url = postgres_url.replace("postgresql+psycopg://", f"{driver}://")
    first = replay(url, tmp_path / "run", recording, trials=3)
    assert evaluations(first).groupby("study").size().unique().tolist() == [3]
    again = replay(url, tmp_path / "run", recording, trials=5)
    assert evaluations(again).groupby("study").size().unique().tolist() == [5]
    assert not again["config_key"].duplicated().any()
    store = open_storage(url)
    try:
        assert {r.config.key for r in stored_records(store, "fermi_like")} == set(again["config_key"])
    finally:
        close_storage(store)


def test_a_run_records_into_a_journal_file_and_continues_from_it(recording, tmp_path):
    url = f"journal://{tmp_path / 'shared' / 'study.log'}"
    (tmp_path / "shared").mkdir()
    replay(url, tmp_path / "run", recording, trials=2)
    again = replay(url, tmp_path / "run", recording, trials=4)
    assert evaluations(again).groupby("study").size().unique().tolist() == [4]
    assert (tmp_path / "shared" / "study.log").stat().st_size > 0


def test_another_folder_on_the_same_storage_sees_every_row(postgres_url, recording, tmp_path):
    replay(postgres_url, tmp_path / "host_a", recording, trials=2)
    seen_elsewhere = replay(postgres_url, tmp_path / "host_b", recording, trials=2)
    assert set(seen_elsewhere["config_key"]) >= set(pd.read_parquet(tmp_path / "host_a" / "results.parquet")
                                                    ["config_key"])


def test_an_unreachable_server_is_one_paragraph_naming_the_url(tmp_path, recording):
    url = "postgresql://tuner:secret@127.0.0.1:1/tuning"
    done = run_cli("run", str(FERMI), "--backend", "replay", "--replay", str(recording), "--storage", url,
                     "--out", str(tmp_path / "run"))
    assert done.returncode == 2 and "Traceback" not in done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("error: the database server of the Optuna storage "
                               "'postgresql://tuner:***@127.0.0.1:1/tuning' cannot be reached")
    assert "secret" not in done.stderr


def test_a_journal_in_a_missing_folder_is_refused(tmp_path, recording):
    done = run_cli("run", str(FERMI), "--backend", "replay", "--replay", str(recording), "--storage",
                     f"journal://{tmp_path / 'nowhere' / 'study.log'}", "--out", str(tmp_path / "run"))
    assert done.returncode == 2 and "names no file in an existing folder" in done.stderr
    assert not (tmp_path / "run").exists()


def test_a_shown_url_hides_its_password():
    assert shown("postgresql://me:pw@db.example/x") == "postgresql://me:***@db.example/x"
    assert shown("journal:///shared/study.log") == "journal:///shared/study.log"


def test_a_damaged_journal_is_named(tmp_path):
    log = tmp_path / "study.log"
    log.write_bytes(b"\x00\x01 not a journal\n")
    with pytest.raises(TunerError, match="journal storage file"):
        open_storage(f"journal://{log}")


def test_tables_another_process_created_at_the_same_moment_are_retried_not_reported():
    import sqlalchemy

    from tuner.search.storage import _created_meanwhile

    def error(kind: type, words: str) -> Exception:
        return kind("CREATE TABLE studies (...)", None, Exception(words))

    assert _created_meanwhile(error(sqlalchemy.exc.OperationalError, "table studies already exists"))  # SQLite
    assert _created_meanwhile(error(sqlalchemy.exc.IntegrityError, 'duplicate key value violates "pg_type"'))
    assert not _created_meanwhile(error(sqlalchemy.exc.OperationalError, "unable to open database file"))
