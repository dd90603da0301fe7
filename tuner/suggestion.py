"""The "did you mean" of an error message: the known name closest to a misspelt one, where one is close."""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

CUTOFF = 0.6
"""How alike (difflib's ratio) a known name must be to be suggested."""


def did_you_mean(given: Any, known: Iterable[str]) -> str:
    """" (did you mean 'TILE_WIDTH'?)" for the known name closest to ``given``, or "" where none is close (or
    ``given`` is not text); the case of the letters counts for little."""
    if not isinstance(given, str) or not given:
        return ""
    names = [str(name) for name in known]
    by_case = {name.casefold(): name for name in names}
    close = difflib.get_close_matches(given.casefold(), list(by_case), n=1, cutoff=CUTOFF)
    return f" (did you mean '{by_case[close[0]]}'?)" if close and by_case[close[0]] != given else ""
