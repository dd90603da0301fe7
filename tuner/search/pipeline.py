"""The studies of a run searched one after another on one device, each handing the device to the next.

A study's search asks ahead of its measurements (:mod:`tuner.search.study`). Once it has asked its last
configuration, its :class:`Handover` makes the next study's search and prepares it (its first configurations
asked and handed to the compilers) and lets the backend make the next problem's inputs: while the last
configurations of the study compile, the device measures the next study's compiled ones. The searches meet only
through their public side: the next search's waiting configurations, whether one of them still owns its
configuration, and the recording of its measurement, which the next search does itself.
"""

from __future__ import annotations

from collections.abc import Callable

from optuna.trial import Trial

from tuner.search.study import StudySearch
from tuner.search.worker_policy import Entry


class StudyPipeline:
    """The searches of a run's studies, made once each (``make(at)``: the search of study ``at``), and, with
    ``ahead``, each handing the device to the next one; ``ready_next(at)`` is called once study ``at`` has been
    prepared ahead (the backend makes its problem's inputs)."""

    def __init__(self, count: int, make: Callable[[int], StudySearch], ready_next: Callable[[int], None],
                 ahead: bool):
        self.count, self.make, self.ready_next, self.ahead = count, make, ready_next, ahead
        self.searches: dict[int, StudySearch] = {}

    def search(self, at: int) -> StudySearch:
        """The search of study ``at``, made once."""
        if at not in self.searches:
            self.searches[at] = self.make(at)
        return self.searches[at]

    def start(self, at: int) -> StudySearch:
        """The search of study ``at``, about to run: with ``ahead``, it hands the device to the next study."""
        search = self.search(at)
        if self.ahead and at + 1 < self.count:
            search.handover = Handover(self, at + 1)
        return search


class Handover:
    """What a study's search hands the device to once it has asked its last configuration: the search of study
    ``next_at``, prepared then."""

    def __init__(self, pipeline: StudyPipeline, next_at: int):
        self.pipeline, self.next_at = pipeline, next_at
        self.successor: StudySearch | None = None

    def asked_all(self) -> None:
        if self.successor is not None:
            return
        self.successor = self.pipeline.search(self.next_at)
        self.successor.prepare()
        self.pipeline.ready_next(self.next_at)

    def waiting(self, flying: Trial | None) -> list[tuple[StudySearch, Entry]]:
        if self.successor is None:
            return []
        return [(self.successor, entry) for entry in self.successor.waiting(flying)]
