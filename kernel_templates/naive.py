"""The naive kernel: one thread per element of C, every operand read from global memory.

Each multiply-add loads one element of A and one of B: 2·s bytes per 2 FLOP, so 1/s FLOP per byte
(0.25 in float32) however the threads are arranged.
"""

from tuner.config import Problem
from tuner.kernels.family import Constraint, Family, Parameter, Params, ceil_div


def _global_bytes(params: Params, problem: Problem, size: int) -> int:
    M, N, K = problem.M, problem.N, problem.K
    return size * (2 * M * N * K + M * N)


FAMILY = Family(
    name="naive",
    description="one thread per element of C; A and B read from global memory in the inner loop",
    parameters=(
        Parameter("BLOCK_X", "threads per block along N (columns of C)", (16, 32)),
        Parameter("BLOCK_Y", "threads per block along M (rows of C)", (4, 8, 16, 32)),
    ),
    block=lambda p: (int(p["BLOCK_X"]), int(p["BLOCK_Y"]), 1),
    grid=lambda p, pr: (ceil_div(pr.N, int(p["BLOCK_X"])), ceil_div(pr.M, int(p["BLOCK_Y"])), 1),
    shared_bytes=lambda p, size: 0,
    global_bytes=_global_bytes,
    constraints=(Constraint("BLOCK_X and BLOCK_Y ≥ 1", lambda p, d: min(int(p["BLOCK_X"]), int(p["BLOCK_Y"])) >= 1,
                            precondition=True),),
)
