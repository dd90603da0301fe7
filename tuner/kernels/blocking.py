"""The analytical cost of the C families: FLOPs, compulsory traffic, the DRAM traffic of a blocking, and the
cache each block of the blocking fits in.

The loop order of the blocked families is jc (NC columns of C) → pc (KC deep in K) → ic (MC rows): each KC×NC
block of B is brought into cache once and serves all M rows, each MC×KC block of A serves the NC columns of
its panel, and each KC step reads and writes the panel of C it adds to. Between DRAM and the cache the B block
fits in, that moves, in elements:

    A: M·K·⌈N/NC⌉          (all of A once per column panel)
    B: K·N                 (each block once)
    C: M·N·(2·⌈K/KC⌉ − 1)  (read and written per KC step; the first step only writes)

The compulsory traffic, s·(M·K + K·N + M·N) for elements of s bytes (:func:`tuner.kernels.matmul.compulsory_bytes`),
is the least any kernel moves.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from tuner.config import Config, Problem
from tuner.kernels.discovery import get_family
from tuner.kernels.family import ceil_div


def row_streaming_bytes(problem: Problem, size: int) -> int:
    """A loop nest without blocking: A and C move once, B once per row of C (it is not kept in cache)."""
    M, N, K = problem.M, problem.N, problem.K
    return size * (M * K + M * K * N + M * N)


def blocked_bytes(problem: Problem, size: int, MC: int, NC: int, KC: int) -> int:
    """DRAM traffic of the jc → pc → ic blocking (see the module text); MC does not change it."""
    M, N, K = problem.M, problem.N, problem.K
    return size * (M * K * ceil_div(N, NC) + K * N + M * N * (2 * ceil_div(K, KC) - 1))


def block_intensity(MC: int, NC: int, KC: int, size: int) -> float:
    """FLOP per byte of one MC×NC×KC block product when its three tiles each move once."""
    return 2 * MC * NC * KC / (size * (MC * KC + KC * NC + MC * NC))


@dataclass(frozen=True)
class CacheLevel:
    name: str
    """e.g. "L1d", "L2", "L3"."""
    bytes: int


def smallest_fit(nbytes: int, levels: Sequence[CacheLevel]) -> CacheLevel | None:
    """The smallest cache holding ``nbytes``; None when none does."""
    fitting = [level for level in levels if nbytes <= level.bytes]
    return min(fitting, key=lambda level: level.bytes) if fitting else None


@dataclass(frozen=True)
class BlockingCost:
    flops: int
    compulsory_bytes: int
    dram_bytes: int
    """The family's model of the traffic between DRAM and the last-level cache (its ``global_bytes``)."""
    working_sets: Mapping[str, tuple[int, CacheLevel | None]]
    """Each block of the blocking: its bytes and the smallest cache it fits in."""

    @property
    def compulsory_intensity(self) -> float:
        return self.flops / self.compulsory_bytes

    @property
    def dram_intensity(self) -> float:
        return self.flops / self.dram_bytes

    def lines(self) -> list[str]:
        """The cost as text, one quantity a line."""
        lines = [f"FLOPs 2·M·N·K = {self.flops:.4g}",
                 f"compulsory traffic {self.compulsory_bytes / 2**20:.1f} MiB ({self.compulsory_intensity:.1f} FLOP/B)",
                 f"DRAM traffic of the blocking {self.dram_bytes / 2**20:.1f} MiB ({self.dram_intensity:.1f} FLOP/B)"]
        for name, (nbytes, level) in self.working_sets.items():
            where = f"fits in {level.name} ({100 * nbytes / level.bytes:.0f}% of it)" if level else "fits in no cache"
            lines.append(f"{name} {nbytes / 1024:.1f} KiB: {where}")
        return lines


def blocking_cost(config: Config, levels: Sequence[CacheLevel]) -> BlockingCost:
    """The cost model of one configuration on a machine with these data caches (per core, or shared)."""
    family = get_family(config.family)
    params, size = config.param_dict, config.element_bytes
    family.require_preconditions(params, config.dtype)
    sets = family.working_sets(params, size)
    return BlockingCost(
        flops=family.flops(config.problem),
        compulsory_bytes=family.compulsory_bytes(config.problem, size),
        dram_bytes=family.global_bytes(params, config.problem, size),
        working_sets={name: (nbytes, smallest_fit(nbytes, levels)) for name, nbytes in sets.items()},
    )
