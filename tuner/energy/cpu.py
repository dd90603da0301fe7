"""Energy on the CPU: RAPL's counters read around a window of back-to-back calls, where this machine has them.

RAPL updates its counters about every millisecond, so readings at the two ends of a window of ``WINDOW_S`` bound
the error to about 1% (one update at each end); the calls run hot (no eviction between them), after the timed
samples. Where RAPL is not available here, ``unavailable`` says why and nothing is measured.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tuner.energy.measured import Energy
from tuner.energy.rapl import POWERCAP, RaplCounter, RaplUnavailable, rapl_zones

SOURCE = "rapl"
WINDOW_S = 0.2
METHOD = (f"energy: the kernel called back to back (hot) after the timed samples for at least {WINDOW_S:g} s, "
          f"the RAPL counters read before and after; the energy over the number of calls")


class CpuEnergy:
    """The energy of calls on this CPU, or the reason there is none (``unavailable``)."""

    def __init__(self, root: Path = POWERCAP):
        self.counter: RaplCounter | None = None
        self.unavailable: str | None = None
        try:
            self.counter = RaplCounter(rapl_zones(root))
        except RaplUnavailable as exc:
            self.unavailable = str(exc)

    def measure(self, run: Callable[[], object]) -> Energy | None:
        """One call's energy, from a window of back-to-back calls (None where RAPL is not available here)."""
        if self.counter is None:
            return None
        calls = 0
        before = self.counter.read()
        started = time.perf_counter()
        while calls < 2 or time.perf_counter() - started < WINDOW_S:
            run()
            calls += 1
        window_s = time.perf_counter() - started
        joules = self.counter.delta_uj(before, self.counter.read()) * 1e-6
        return Energy(joules=joules / calls, power_w=joules / window_s, launches=calls, window_s=window_s,
                      counted_s=window_s, updates=1, source=SOURCE)

    def describe(self) -> dict[str, Any]:
        """What a run's environment records of its energy measurements."""
        return {"counter": self.counter.describe() if self.counter else "RAPL", "available": self.counter is not None,
                "reason": self.unavailable, "power_limit_w": None, "method": METHOD}
