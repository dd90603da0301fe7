"""The problems of an experiment built in Python, checked as an experiment file's are: every size a whole
number of at least 1, and every buffer of every kernel within the kernels' 32-bit index range."""

from __future__ import annotations

from collections.abc import Sequence

from tuner.config import Problem
from tuner.kernels.family import Family

INDEX_LIMIT = 2**31 - 1
"""The kernels index their buffers with 32-bit ints."""


def problem_refusal(problems: Sequence[Problem], families: Sequence[Family]) -> tuple[str, str] | None:
    """(field, why) for the first problem that no kernel can be run on, or None."""
    for i, problem in enumerate(problems):
        for dim, size in problem.sizes:
            if isinstance(size, bool) or not isinstance(size, int) or size < 1:
                return f"problems[{i}].{dim}", f"expected an integer ≥ 1, found {size!r}"
        for family in families:
            refusal = index_range_refusal(problem, family)
            if refusal is not None:
                return f"problems[{i}]", refusal
    return None


def index_range_refusal(problem: Problem, family: Family) -> str | None:
    """Why a buffer of ``family`` on ``problem`` passes the 32-bit index range, or None."""
    for buffer in family.buffers:
        elements = buffer.elements(problem)
        if elements > INDEX_LIMIT:
            shape = "×".join(map(str, buffer.shape(problem)))
            return (f"{family.name}'s buffer {buffer.name} ({shape} = {elements} elements) exceeds the kernels' "
                    f"32-bit index range ({INDEX_LIMIT})")
    return None
