"""Several GPUs of one host measuring for the same studies: one thread per GPU, each driving its own search.

Each thread measures through its own backend (a measuring process on one GPU; the compile pool is shared)
and asks the shared study for configurations; the study's claims (:mod:`tuner.search.claims`) see to it that no two
threads measure the same configuration. The first GPU's search runs in the calling thread, so that Ctrl-C
reaches it; when any search ends with an error or an interruption the others are stopped at their next
evaluation (which raises KeyboardInterrupt in them, so that they release their claims as an interrupted search
does), and the first error is raised again once every thread has ended.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from typing import Any

from tuner.backends.protocol import Backend, Pending, start_evaluation
from tuner.config import Config, Problem
from tuner.measure.measurement import Measurement


class Halting:
    """A backend that stops its search, at the next evaluation, once ``halt`` is set."""

    def __init__(self, backend: Backend, halt: threading.Event):
        self.backend, self.halt = backend, halt

    def evaluate(self, config: Config) -> Measurement:
        if self.halt.is_set():
            raise KeyboardInterrupt
        return self.backend.evaluate(config)

    def submit(self, config: Config) -> Pending:
        if self.halt.is_set():
            raise KeyboardInterrupt
        return start_evaluation(self.backend, config)

    def baseline(self, problem: Problem, dtype: str) -> Measurement | None:
        return self.backend.baseline(problem, dtype)

    def __getattr__(self, name: str) -> Any:  # everything else is the wrapped backend's
        return getattr(self.backend, name)


def search_on_each(backends: Sequence[Backend], search: Callable[[int, Backend], None]) -> None:
    """Run ``search(index, backend)`` for every backend at once, one thread each (the first in this thread)."""
    if len(backends) == 1:
        search(0, backends[0])
        return
    halt = threading.Event()
    errors: list[BaseException] = []

    def guarded(index: int) -> None:
        try:
            search(index, Halting(backends[index], halt))  # a Backend by delegation
        except BaseException as exc:  # recorded, then raised again by the calling thread
            errors.append(exc)
            halt.set()

    threads = [threading.Thread(target=guarded, args=(index,), name=f"tuner-gpu-{index}", daemon=True)
               for index in range(1, len(backends))]
    for thread in threads:
        thread.start()
    try:
        guarded(0)
    finally:
        for thread in threads:
            while thread.is_alive():
                try:
                    thread.join(0.2)
                except KeyboardInterrupt:  # a second Ctrl-C while the others finish their evaluation
                    halt.set()
    interrupted = [e for e in errors if isinstance(e, KeyboardInterrupt)]
    failures = [e for e in errors if not isinstance(e, KeyboardInterrupt)]
    if failures:
        raise failures[0]
    if interrupted:
        raise KeyboardInterrupt
