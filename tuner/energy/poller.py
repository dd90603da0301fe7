"""Reading a counter from a thread of its own while the measuring thread launches and waits.

The poller reads as often as ``period_s`` allows and stamps each reading with the host clock at the middle of the
call. The measuring thread spends the window waiting on device events (which release the interpreter), so the
poller sees each change of the counter within about one period. ``side`` (the SM clock, say) is read now and then
beside it.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from tuner.energy.counter import Reading

POLL_PERIOD_S = 0.0005
SIDE_PERIOD_S = 0.02


class CounterPoller:
    """``with CounterPoller(read) as poller:`` reads ``read()`` until the block ends; ``poller.readings`` then holds
    them in order, and ``poller.side_values`` what ``side()`` read (its Nones left out)."""

    def __init__(self, read: Callable[[], int], side: Callable[[], float | None] | None = None,
                 period_s: float = POLL_PERIOD_S):
        self._read, self._side, self.period_s = read, side, period_s
        self.readings: list[Reading] = []
        self.side_values: list[float] = []
        self.error: Exception | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._poll, name="tuner-energy-poller", daemon=True)

    def _poll(self) -> None:
        next_side = 0.0
        try:
            while True:
                before = time.perf_counter()
                value = self._read()
                after = time.perf_counter()
                self.readings.append(Reading((before + after) / 2, value, after - before))
                if self._side is not None and after >= next_side:
                    side = self._side()
                    if side is not None:
                        self.side_values.append(side)
                    next_side = after + SIDE_PERIOD_S
                if self._stop.wait(self.period_s):
                    break
        except Exception as exc:  # the window reports it; the measuring thread must not hang on it
            self.error = exc

    def __enter__(self) -> CounterPoller:
        self._thread.start()
        while not self.readings and self.error is None and self._thread.is_alive():
            time.sleep(self.period_s / 4)  # the window starts with a reading in hand
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join()
