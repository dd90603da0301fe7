"""How a configuration's counters were read, in words: by which tool, under which cache control, in how many passes.

Two tools read them: Nsight Compute (``ncu_version`` holds its version, cache control ``all``: every cache flushed
before each replay pass) and CUPTI's range profiler inside the measuring process (``ncu_version`` holds ``CUPTI
API …``, cache control ``l2``: the L2 flushed before each pass, as before each timed sample). Neither locks the
clocks (clock control ``none``).
"""

from __future__ import annotations

from collections.abc import Sequence

from tuner.counters.metrics import REQUESTED_BYTES

CUPTI = "CUPTI"
"""How a CUPTI version begins (``CUPTI API 130001``)."""
CLOCK_CONTROL = "none"
CACHE_CONTROL = "all"
L2_FLUSHED = "l2"
INSTRUMENTED_WORDS = (f"the instrumented metrics ({REQUESTED_BYTES} and the FLOP instructions, read by a patched "
                      "kernel: the FLOPs are the problem's 2·M·N·K)")
CACHE_WORDS = {CACHE_CONTROL: "every cache flushed before each replay pass",
               L2_FLUSHED: "the L2 flushed before each replay pass"}


def counted_by(version: str) -> str:
    """The tool that counted, in words, from the version a counters row records."""
    if version.startswith(CUPTI):
        return f"CUPTI's range profiler in the measuring process ({version})"
    return f"Nsight Compute {version}"


def cache_words(cache_control: str) -> str:
    return CACHE_WORDS.get(cache_control, f"cache control {cache_control}")


def describe_conditions(version: str, passes: Sequence[int], detail: bool = True,
                        cache_control: str = CACHE_CONTROL) -> str:
    """One sentence: the tool, the clocks, the caches, the most replay passes and what was left out."""
    most = max(passes) if passes else None
    replays = f", {most} replay pass{'es' if most != 1 else ''} per kernel" if most else ""
    left = "" if detail else f"; {INSTRUMENTED_WORDS} not asked for"
    return (f"{counted_by(version)}, clock control {CLOCK_CONTROL} (the clocks as found), {cache_words(cache_control)}"
            f" (cache control {cache_control}){replays}{left}")
