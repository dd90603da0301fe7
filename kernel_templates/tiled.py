"""The classic shared-memory tiled kernel: TILE_WIDTH² threads stage TILE_WIDTH² tiles of A and B.

Every element loaded from global memory is used TILE_WIDTH times from shared memory, so global traffic
falls by TILE_WIDTH against the naive kernel: TILE_WIDTH/s FLOP per byte (T/4 in float32).
"""

from tuner.config import Problem
from tuner.kernels.family import Constraint, Family, Parameter, Params, ceil_div


def _global_bytes(params: Params, problem: Problem, size: int) -> int:
    T = int(params["TILE_WIDTH"])
    M, N, K = problem.M, problem.N, problem.K
    # Each block row of C reads its rows of A once per block column, and vice versa for B.
    return size * (M * K * ceil_div(N, T) + K * N * ceil_div(M, T) + M * N)


FAMILY = Family(
    name="tiled",
    description="shared-memory tiles of TILE_WIDTH×TILE_WIDTH, zero-filled at the edges",
    parameters=(Parameter("TILE_WIDTH", "tile edge; the block is TILE_WIDTH×TILE_WIDTH threads", (8, 16, 32)),),
    block=lambda p: (int(p["TILE_WIDTH"]), int(p["TILE_WIDTH"]), 1),
    grid=lambda p, pr: (ceil_div(pr.N, int(p["TILE_WIDTH"])), ceil_div(pr.M, int(p["TILE_WIDTH"])), 1),
    shared_bytes=lambda p, size: 2 * int(p["TILE_WIDTH"]) ** 2 * size,
    global_bytes=_global_bytes,
    constraints=(Constraint("TILE_WIDTH ≥ 1", lambda p, d: int(p["TILE_WIDTH"]) >= 1, precondition=True),),
)
