"""The energy window on a GPU: after the timed samples, the kernel launched back to back (hot: no flush) for
``SETTLE_S`` uncounted, then for a window of at least ``MIN_WINDOW_S`` holding ``MIN_UPDATES`` update periods of
the energy counter, queued in chunks of about ``CHUNK_S`` while a thread reads the counter. One launch's energy
is the counter's mean power over whole update periods (:func:`tuner.energy.counter.counted_span`) times the time
per launch; a window with too few changes is measured again twice as long, up to ``LONGEST_WINDOW_S``, and a
counter that never changes or cannot be read is :class:`CounterFailed`."""

from __future__ import annotations

import math
import sys
import time
from collections import deque
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Protocol

from tuner.energy.counter import counted_span, counter_properties
from tuner.energy.measured import Energy
from tuner.energy.poller import CounterPoller

MIN_UPDATES = 3
"""Update periods of the counter that the power is taken over, at least."""
MIN_WINDOW_S = 0.1
FIRST_WINDOW_S = 0.3
"""The first window of a measuring process, before the counter's update interval is known."""
LONGEST_WINDOW_S = 4.0
SETTLE_S = 0.3
"""Back-to-back launches before the window opens, so that the power controller has settled the clocks at this
kernel's load: the window's time per launch and its power are then taken at the same clocks."""
STUCK_AFTER_S = 1.0
CHUNK_S = 0.01
MOST_LAUNCHES = 200_000
SWITCH_INTERVAL_S = 0.0005
"""The interpreter's thread switch interval during a window, so that the reading thread runs within half a
millisecond of asking even while the host queues launches."""


class Marks(Protocol):
    """Launches on a device, and markers between them (CUDA events)."""

    def mark(self) -> object:
        """A marker queued now."""
        ...

    def queue(self, launches: int) -> object:
        """Queue ``launches`` launches, then a marker after them."""
        ...

    def wait(self, marker: object) -> None:
        """Block until the device has passed the marker (releasing the interpreter)."""
        ...

    def elapsed_s(self, first: object, last: object) -> float:
        """Seconds between two markers, on the device's clock."""
        ...


class CounterFailed(Exception):
    """The counter could not be read, or did not change during a long busy window."""


def method(min_updates: int = MIN_UPDATES) -> str:
    return (f"energy: the kernel launched back to back (hot) after the timed samples, {SETTLE_S:g} s to settle "
            f"the clocks, then a window of at least {MIN_WINDOW_S:g} s and {min_updates} update periods of the "
            f"counter after one period of lead (up to {LONGEST_WINDOW_S:g} s); mean power between the counter's "
            f"changes inside the window, times the window's time per launch")


def _keep_busy(device: Marks, launches: int, chunk: int, in_flight: deque[object]) -> None:
    """Queue ``launches`` in chunks, each closed by a marker kept in ``in_flight``, waiting on the chunk before the
    last so that the device always has work queued."""
    queued = 0
    while queued < launches:
        count = min(chunk, launches - queued)
        in_flight.append(device.queue(count))
        queued += count
        if len(in_flight) > 2:
            device.wait(in_flight.popleft())


@contextmanager
def _quick_switching() -> Iterator[None]:
    previous = sys.getswitchinterval()
    sys.setswitchinterval(SWITCH_INTERVAL_S)
    try:
        yield
    finally:
        sys.setswitchinterval(previous)


class EnergyWindows:
    """Measures energy windows with one counter (``read``: its value, in units of ``unit_j`` joules), learning
    its update interval as it goes. ``side`` is read now and then during each window (the SM clock) and
    ``power_limit`` once per window."""

    def __init__(self, read: Callable[[], int], unit_j: float, source: str,
                 side: Callable[[], float | None] | None = None,
                 power_limit: Callable[[], float | None] | None = None, min_updates: int = MIN_UPDATES):
        self.read, self.unit_j, self.source = read, unit_j, source
        self.side, self.power_limit, self.min_updates = side, power_limit, min_updates
        self.update_interval_s: float | None = None

    def target_s(self) -> float:
        """How long the next window should be."""
        if self.update_interval_s is None:
            return FIRST_WINDOW_S
        return min(LONGEST_WINDOW_S, max(MIN_WINDOW_S, (self.min_updates + 3) * self.update_interval_s))

    def measure(self, device: Marks, seconds_per_launch: float) -> Energy | None:
        """One launch's energy, from as many windows as it takes (None when even the longest window holds too few
        changes of the counter)."""
        target, settle_s = self.target_s(), SETTLE_S
        while True:
            energy = self._window(device, seconds_per_launch, target, settle_s)
            if energy is not None or target >= LONGEST_WINDOW_S:
                return energy
            target, settle_s = min(LONGEST_WINDOW_S, max(2 * target, self.target_s())), 0.0  # settled by the last

    def _window(self, device: Marks, seconds_per_launch: float, target_s: float, settle_s: float) -> Energy | None:
        per_launch = max(seconds_per_launch, 1e-7)
        planned = min(MOST_LAUNCHES, max(2, math.ceil(target_s / per_launch)))
        chunk = max(1, min(planned, round(CHUNK_S / per_launch)))
        limit = self.power_limit() if self.power_limit else None
        with _quick_switching(), CounterPoller(self.read, self.side) as poller:
            in_flight: deque[object] = deque()
            _keep_busy(device, min(MOST_LAUNCHES, math.ceil(settle_s / per_launch)), chunk, in_flight)
            first = device.mark()
            _keep_busy(device, planned, chunk, in_flight)
            last = in_flight[-1]
            device.wait(last)
            ended = time.perf_counter()
        if poller.error is not None:
            raise CounterFailed(f"the {self.source} energy counter could not be read ({poller.error})")
        window_s = device.elapsed_s(first, last)
        seen = counter_properties(poller.readings)
        if seen.update_interval_s is not None:
            self.update_interval_s = seen.update_interval_s
        elif window_s >= STUCK_AFTER_S:
            raise CounterFailed(f"the {self.source} energy counter did not change in {window_s:.2f} s of launches")
        span = counted_span(poller.readings, ended - window_s, ended, self.min_updates)
        if span is None:
            return None
        power_w = span.rate * self.unit_j
        clocks = sorted(poller.side_values)
        return Energy(joules=power_w * window_s / planned, power_w=power_w, launches=planned, window_s=window_s,
                      counted_s=span.span_s, updates=span.updates, source=self.source,
                      sm_clock_mhz=clocks[len(clocks) // 2] if clocks else None, power_limit_w=limit)
