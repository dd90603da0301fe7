"""How long a test waits for something that takes wall time (a process to start, a kernel to be killed, a server
to answer): the time it takes on an idle machine, stretched by the machine's load, so that a test holds on two
cores shared with other work. Tests wait on events; these are the limits after which waiting has failed."""

from __future__ import annotations

import os


def load_factor() -> float:
    """How many runnable processes share each core (the last minute's load average per core), at least 1."""
    try:
        load = os.getloadavg()[0]
    except OSError:  # no load average on this platform
        return 1.0
    return max(1.0, load / (os.cpu_count() or 1))


def patient(seconds: float) -> float:
    """``seconds`` stretched by the machine's load, and doubled, for the variance of a shared machine."""
    return 2.0 * seconds * load_factor()
