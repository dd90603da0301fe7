"""The wgmma configurations the GPU tests, the compile tests and benchmarks/wgmma_check.sh run: per dtype, a ladder
from the plainest (one consumer warpgroup, no cluster, one block per tile, no register trade) to the fastest
designs (two consumers with setmaxnreg, persistent blocks, clusters of two sharing B by multicast), so that a
failure points at the feature that brought it."""

from __future__ import annotations

_LADDER_16 = [
    dict(BM=64, BN=128, BK=64, STAGES=4, CONSUMERS=1, CLUSTER=1, PERSISTENT=0, GROUP=8, REGALLOC=0),
    dict(BM=128, BN=256, BK=64, STAGES=4, CONSUMERS=2, CLUSTER=1, PERSISTENT=0, GROUP=8, REGALLOC=1),
    dict(BM=128, BN=256, BK=64, STAGES=4, CONSUMERS=2, CLUSTER=1, PERSISTENT=1, GROUP=8, REGALLOC=1),
    dict(BM=128, BN=256, BK=64, STAGES=4, CONSUMERS=2, CLUSTER=2, PERSISTENT=1, GROUP=8, REGALLOC=1),
    dict(BM=256, BN=128, BK=64, STAGES=4, CONSUMERS=2, CLUSTER=2, PERSISTENT=1, GROUP=8, REGALLOC=1),
]
_LADDER_TF32 = [
    dict(BM=128, BN=64, BK=32, STAGES=4, CONSUMERS=1, CLUSTER=1, PERSISTENT=0, GROUP=8, REGALLOC=0),
    dict(BM=256, BN=128, BK=32, STAGES=4, CONSUMERS=2, CLUSTER=1, PERSISTENT=0, GROUP=8, REGALLOC=1),
    dict(BM=256, BN=128, BK=32, STAGES=4, CONSUMERS=2, CLUSTER=1, PERSISTENT=1, GROUP=8, REGALLOC=1),
    dict(BM=256, BN=128, BK=32, STAGES=4, CONSUMERS=2, CLUSTER=2, PERSISTENT=1, GROUP=8, REGALLOC=1),
    dict(BM=128, BN=256, BK=32, STAGES=4, CONSUMERS=2, CLUSTER=2, PERSISTENT=1, GROUP=8, REGALLOC=1),
]

GPU_PARAMETERS: list[tuple[str, dict[str, int]]] = (
    [("bfloat16", p) for p in _LADDER_16] + [("float16", p) for p in _LADDER_16]
    + [("tf32", p) for p in _LADDER_TF32])
"""(dtype, parameters), the plainest first in each dtype."""
