"""One search per GPU, in threads: an interruption or an error in one stops the others at their next
evaluation, and is raised again once every thread has ended."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from scripted_backend import ScriptedBackend

from tests.patience import patient
from tuner.experiment.schema import load_experiment
from tuner.search.study_space import study_spaces
from tuner.tuning.parallel import search_on_each

FERMI = Path(__file__).resolve().parent.parent / "experiments" / "fermi_like.yaml"


def configs():
    return list(study_spaces(load_experiment(FERMI))[0].valid)


@pytest.mark.parametrize("failure", [KeyboardInterrupt, RuntimeError])
def test_one_search_failing_stops_the_others(failure):
    evaluated: dict[int, int] = {0: 0, 1: 0, 2: 0}
    others_started = threading.Barrier(3)

    def search(index, backend):
        others_started.wait(timeout=patient(10))
        for config in configs() * 1000:
            if index == 0 and evaluated[0] == 2:
                while not (evaluated[1] and evaluated[2]):  # the others are measuring
                    time.sleep(0.01)
                raise failure("stop")
            backend.evaluate(config)
            evaluated[index] += 1

    with pytest.raises(failure):
        search_on_each([ScriptedBackend(), ScriptedBackend(), ScriptedBackend()], search)
    assert evaluated[0] == 2
    assert 0 < evaluated[1] < len(configs()) * 1000 and 0 < evaluated[2] < len(configs()) * 1000


def test_every_search_runs_on_its_own_backend():
    backends = [ScriptedBackend(), ScriptedBackend()]
    used: dict[int, object] = {}

    def search(index, backend):
        backend.evaluate(configs()[0])
        used[index] = backend.backend

    search_on_each(backends, search)
    assert used == {0: backends[0], 1: backends[1]}
