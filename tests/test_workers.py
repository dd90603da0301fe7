"""Heartbeats of the workers of a shared storage: a worker whose heartbeat stops is dead after the grace period,
one that beats stays alive, one that finished is no longer working; on PostgreSQL and on a journal file."""

from __future__ import annotations

import time

import pytest

from tests.patience import patient
from tuner.search.workers import WorkerRegistry

pytestmark = pytest.mark.slow


@pytest.fixture(params=["postgresql", "journal"])
def shared_url(request, tmp_path):
    if request.param == "journal":
        return f"journal://{tmp_path / 'study.log'}"
    return request.getfixturevalue("postgres_url")


def silence(registry: WorkerRegistry) -> None:
    """The worker's process dies: its heartbeat stops and its trial stays RUNNING."""
    registry._stop.set()
    registry._thread.join()


def test_a_worker_on_another_host_is_dead_once_its_heartbeat_stops(shared_url):
    watcher = WorkerRegistry(shared_url, "exp", "here/1/1", heartbeat_s=1)
    beating = WorkerRegistry(shared_url, "exp", "otherhost/7/7", heartbeat_s=1)
    silent = WorkerRegistry(shared_url, "exp", "otherhost/8/8", heartbeat_s=1)
    try:
        assert watcher.alive("otherhost/7/7") and watcher.alive("otherhost/8/8")
        silence(silent)
        deadline = time.monotonic() + patient(30)
        while watcher.alive("otherhost/8/8") and time.monotonic() < deadline:
            time.sleep(0.5)
        assert not watcher.alive("otherhost/8/8")
        assert time.monotonic() < deadline
        assert watcher.alive("otherhost/7/7")
    finally:
        beating.close()
        watcher.close()


def test_a_finished_or_unknown_worker_is_not_working(shared_url):
    watcher = WorkerRegistry(shared_url, "exp", "here/1/1", heartbeat_s=1)
    done = WorkerRegistry(shared_url, "exp", "otherhost/9/9", heartbeat_s=1)
    done.close()
    try:
        assert not watcher.alive("otherhost/9/9")
        assert not watcher.alive("nowhere/1/1") and not watcher.alive(None)
        assert watcher.alive("here/1/1")
    finally:
        watcher.close()


def test_a_worker_of_this_host_whose_process_is_gone_is_dead_at_once(shared_url):
    import socket
    import subprocess

    gone = subprocess.run(["true"])  # a process id no process holds any more (unless reused meanwhile)
    assert gone.returncode == 0
    watcher = WorkerRegistry(shared_url, "exp", "here/1/1", heartbeat_s=60)
    ghost_id = f"{socket.gethostname()}/999999999/1"
    ghost = WorkerRegistry(shared_url, "exp", ghost_id, heartbeat_s=60)
    try:
        assert not watcher.alive(ghost_id)
    finally:
        ghost.close()
        watcher.close()
