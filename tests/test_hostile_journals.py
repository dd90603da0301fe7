"""Journals are hostile surroundings too: a full disk cuts a write short, and a link planted where the journal goes
could lead anywhere. A failed append leaves no torn line, so that running again continues, and no journal is ever
opened through a link."""

from __future__ import annotations

import errno
import os

import optuna
import pandas as pd
import pytest
from optuna.storages.journal import JournalStorage

from tests.conftest import ROOT, run_cli
from tests.tmpfs_mount import remount, tmpfs
from tuner.search import journal_file
from tuner.search.journal_file import JournalFile, LinkedJournal

FERMI = ROOT / "experiments" / "fermi_like.yaml"
REPLAY = ("--backend", "replay", "--quiet", "--no-report")


def _study(path) -> optuna.Study:
    storage = JournalStorage(JournalFile(str(path)))
    return optuna.create_study(study_name="s", storage=storage, load_if_exists=True)


def test_an_append_cut_short_by_a_full_disk_is_cut_back_and_the_journal_goes_on(tmp_path, monkeypatch):
    path = tmp_path / "study.log"
    _study(path).enqueue_trial({"x": 1})
    before = path.read_bytes()
    written = os.write

    def half_then_full(descriptor: int, data) -> int:
        written(descriptor, bytes(data[:len(data) // 2]))
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(journal_file.os, "write", half_then_full)
    with pytest.raises(OSError, match="No space left on device"):
        _study(path).enqueue_trial({"x": 2})
    assert path.read_bytes() == before  # nothing of the failed change, everything before it
    monkeypatch.undo()
    _study(path).enqueue_trial({"x": 3})
    assert [t.system_attrs["fixed_params"] for t in _study(path).trials] == [{"x": 1}, {"x": 3}]


@pytest.fixture
def small_mount(tmp_path):
    """A 80 KiB tmpfs at tmp_path/small and a function that makes it 64 MiB; skips where mounting is not allowed."""
    with tmpfs(tmp_path / "small", "80k") as mount_point:
        yield mount_point, lambda: remount(mount_point, "size=64m")


@pytest.mark.slow
def test_a_run_that_fills_its_disk_continues_when_run_again(small_mount, tmp_path):
    mount_point, grow = small_mount
    out = mount_point / "out"
    full = run_cli("run", str(FERMI), *REPLAY, "--out", str(out), timeout=120)
    assert full.returncode == 2 and "Traceback" not in full.stderr, full.stderr
    lines = full.stderr.strip().splitlines()
    assert len(lines) == 1 and "run the same command again" in lines[0]
    assert (out / "study.log").read_bytes().endswith(b"\n")
    grow()
    again = run_cli("run", str(FERMI), *REPLAY, "--out", str(out), timeout=120)
    assert again.returncode == 0, again.stderr
    ample = run_cli("run", str(FERMI), *REPLAY, "--out", str(tmp_path / "ample"), timeout=120)
    assert ample.returncode == 0, ample.stderr
    rows = pd.read_parquet(out / "results.parquet")
    assert len(rows) == len(pd.read_parquet(tmp_path / "ample" / "results.parquet"))
    assert rows["config_key"].is_unique


def test_a_journal_is_never_opened_through_a_link(tmp_path):
    target = tmp_path / "elsewhere.log"
    link = tmp_path / "study.log"
    link.symlink_to(target)
    with pytest.raises(LinkedJournal, match="is a symbolic link"):
        JournalFile(str(link))
    assert not target.exists()


@pytest.mark.slow
@pytest.mark.parametrize("dangling", [False, True], ids=["to another journal", "dangling"])
def test_a_link_planted_as_the_folders_journal_is_refused(tmp_path, dangling):
    other = tmp_path / "other.log"
    if not dangling:
        other.write_text('{"op_code": 0, "worker_id": "w", "study_name": "x", "directions": [1]}\n')
    out = tmp_path / "out"
    out.mkdir()
    (out / "study.log").symlink_to(other)
    before = other.read_bytes() if not dangling else None
    done = run_cli("run", str(FERMI), *REPLAY, "--out", str(out), timeout=120)
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.strip() == (f"error: the journal storage file {out.resolve() / 'study.log'} is a symbolic link "
                                   f"(to {other}); a journal is never written through a link, which could lead to "
                                   f"any file: remove the link, or give the file it points to")
    assert (other.read_bytes() if not dangling else None) == before and other.exists() is not dangling
    assert sorted(p.name for p in out.iterdir()) == ["study.log"]


@pytest.mark.slow
def test_a_lock_link_planted_beside_the_folders_journal_does_not_hang_the_run(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "study.log.lock").symlink_to(tmp_path / "nowhere")  # Optuna never ages a lock whose target is missing
    done = run_cli("run", str(FERMI), *REPLAY, "--trials", "3", "--out", str(out), timeout=60)
    assert done.returncode == 0, done.stderr
    assert not (out / "study.log.lock").is_symlink() and not (tmp_path / "nowhere").exists()
    assert len(pd.read_parquet(out / "results.parquet")) > 0
