"""What each setting of a run's search may be, whoever gives it: the experiment file (``search``,
``measure.counters``), an experiment built in Python, ``tuner.run``'s parameters and the command line's options are
checked by these rules, and each caller names the setting in its own words (the file's field, the parameter, the
option)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from tuner.errors import TunerError
from tuner.settings import COUNTERS_CHOICES


@dataclass(frozen=True)
class Rule:
    """A setting's rule: what it must be (``expected``, to follow "must be" or "expected") and whether a value
    is that."""

    expected: str
    accepts: Callable[[Any], bool]

    def remark(self, value: Any) -> str:
        """What to add to the refusal of ``value`` where the rule alone would not explain it."""
        if isinstance(value, float) and not math.isfinite(value):
            return " (only finite numbers are allowed)"
        return ""

    def check(self, value: Any, name: str) -> Any:
        """``value``, or a TunerError naming the setting ``name``."""
        if not self.accepts(value):
            raise TunerError(f"{name} must be {self.expected}, not {value!r}{self.remark(value)}")
        return value


def _whole(minimum: int) -> Callable[[Any], bool]:
    return lambda value: not isinstance(value, bool) and isinstance(value, int) and value >= minimum


def _seconds(value: Any) -> bool:
    return not isinstance(value, bool) and isinstance(value, int | float) and 0 < value < math.inf


TRIALS = Rule("an integer ≥ 1", _whole(1))
"""``search.trials``: distinct configurations per study."""
TIMEOUT = Rule("a positive number of seconds", _seconds)
"""``search.timeout_s``: the wall time per study (None: none)."""
SEED = Rule("an integer ≥ 0", _whole(0))
"""``search.seed``."""
TRANSFER = Rule("an integer ≥ 0", _whole(0))
"""``search.transfer``: configurations carried over from the studies before."""
COUNTERS = Rule(f"one of {', '.join(COUNTERS_CHOICES)}", lambda value: value in COUNTERS_CHOICES)
"""``measure.counters``."""
HEARTBEAT = Rule("an integer ≥ 1 (seconds)", _whole(1))
"""A worker's heartbeat interval in a shared storage."""

SEARCH = {"trials": TRIALS, "timeout_s": TIMEOUT, "seed": SEED, "transfer": TRANSFER}
"""The rules of the experiment's ``search`` numbers, by field (a ``timeout_s`` of None is none)."""
