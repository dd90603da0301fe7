"""The workers of a shared storage register beside its studies, so that Optuna's tools list the experiment's studies
alone: in a journal or SQLite file of their own, or a schema of their own on PostgreSQL."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest

import tuner
from tuner.search.storage import close_storage, open_storage
from tuner.search.workers_storage import SCHEMA, registry_url

ROOT = Path(__file__).resolve().parent.parent
STUDIES = {"fermi_like/4096x4096x4096/float32", "fermi_like/1024x1024x1024/float32",
           "fermi_like/1000x777x333/float32"}


def test_the_registry_of_each_kind_of_storage():
    assert registry_url("journal:///shared/runs/study.log") == "journal:///shared/runs/study.log.workers"
    assert registry_url("sqlite:////shared/runs/study.db") == "sqlite:////shared/runs/study.db.workers"
    assert registry_url("postgresql://tuner:secret@db/tuning") == (
        f"postgresql://tuner:secret@db/tuning?options=-csearch_path%3D{SCHEMA}")
    assert registry_url("mysql://tuner@db/tuning") == "mysql://tuner@db/tuning"


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["journal", "postgresql"])
def test_a_shared_storage_lists_the_studies_alone(kind, recording, tmp_path, request):
    url = f"journal://{tmp_path / 'study.log'}" if kind == "journal" else request.getfixturevalue("postgres_url")
    tuner.run(ROOT / "experiments" / "fermi_like.yaml", backend="replay", replay=recording, storage=url,
              out=tmp_path / "run", trials=2, strategy="random", quiet=True, report=False)
    storage, registry = open_storage(url), open_storage(registry_url(url))
    try:
        assert {s.study_name for s in optuna.get_all_study_summaries(storage)} == STUDIES
        assert [s.study_name for s in optuna.get_all_study_summaries(registry)] == ["fermi_like/workers"]
    finally:
        close_storage(storage)
        close_storage(registry)
