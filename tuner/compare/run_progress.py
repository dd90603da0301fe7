"""A comparison's progress on stderr: runs done, of how many, the time elapsed and the time left; at the end, the
CPU time of each strategy's runs.

The time left is the CPU time the remaining runs are expected to take, at the pace each strategy has shown so far
(CPU seconds per expected evaluation; the mean pace for a strategy with no finished run yet), over the CPU seconds
the pool has delivered per second so far (which a busy machine lowers).
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable

from tuner.console.live_line import LiveLine, duration

EVERY_S = 10.0
"""Where the line cannot be rewritten (a log file): the least time between two lines."""


class RunProgress:
    """Told of each finished run (its strategy, the evaluations it was expected to make and the CPU seconds it took),
    shows the line; ``note`` is told the CPU time by strategy at the end (None: nothing is shown)."""

    def __init__(self, expected: list[tuple[str, float]], note: Callable[[str], None] | None) -> None:
        self.total, self.note = len(expected), note
        self.line = LiveLine(quiet=note is None, every_s=EVERY_S)
        self.left: defaultdict[str, float] = defaultdict(float)
        for strategy, weight in expected:
            self.left[strategy] += weight
        self.weight_done: defaultdict[str, float] = defaultdict(float)
        self.cpu_s: defaultdict[str, float] = defaultdict(float)
        self.done = 0
        self.started = time.monotonic()
        self.line.start(self.total)

    def __call__(self, strategy: str, space: str, weight: float, cpu_s: float) -> None:
        self.done += 1
        self.left[strategy] -= weight
        self.weight_done[strategy] += weight
        self.cpu_s[strategy] += cpu_s
        elapsed = time.monotonic() - self.started
        left = self.time_left(elapsed)
        text = (f"runs: {self.done:,} of {self.total:,} done  elapsed {duration(elapsed)}"
                + (f"  ~{duration(left)} left" if left is not None and self.done < self.total else "")
                + f"  ({sum(self.cpu_s.values()):.0f} s of CPU time; last {strategy} on {space})")
        if self.done < self.total:
            self.line.show(text, self.done)
            return
        self.line.close(text)
        if self.note is not None:
            slowest = sorted(self.cpu_s.items(), key=lambda item: -item[1])
            self.note("CPU time by strategy: " + ", ".join(f"{name} {s:.0f} s" for name, s in slowest))

    def time_left(self, elapsed: float) -> float | None:
        """Seconds the remaining runs are expected to take (None before the pool has shown its pace)."""
        busy = sum(self.cpu_s.values())
        weighed = sum(self.weight_done.values())
        if busy <= 0 or weighed <= 0 or elapsed <= 0:
            return None
        mean_pace = busy / weighed
        cpu_left = sum(max(0.0, weight) * (self.cpu_s[strategy] / self.weight_done[strategy]
                                           if self.weight_done[strategy] > 0 else mean_pace)
                       for strategy, weight in self.left.items())
        return cpu_left / (busy / elapsed)

    def close(self) -> None:
        self.line.close_bar()
