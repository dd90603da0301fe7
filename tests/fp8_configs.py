"""The FP8 configurations the GPU tests and the compile tests run: per family, a ladder from the plainest (one
consumer, no cluster, one block per tile) to the fastest designs (two consumers with setmaxnreg, persistent blocks,
clusters of two), with promotion, ping-pong, split-K and stream-K, so that a failure points at the feature that
brought it."""

from __future__ import annotations

_BASE = dict(BK=128, STAGES=4, GROUP=8, SPLIT_K=1)

FP8_LADDER: list[dict[str, int | str]] = [
    dict(_BASE, BM=64, BN=128, CONSUMERS=1, CLUSTER=1, PERSISTENT=0, REGALLOC=0, PROMOTE=0),
    dict(_BASE, BM=128, BN=256, CONSUMERS=2, CLUSTER=1, PERSISTENT=0, REGALLOC=1, PROMOTE=0),
    dict(_BASE, BM=128, BN=256, CONSUMERS=2, CLUSTER=2, PERSISTENT=1, REGALLOC=1, PROMOTE=0),
    dict(_BASE, BM=128, BN=128, CONSUMERS=2, CLUSTER=1, PERSISTENT=1, REGALLOC=1, PROMOTE=1),
    dict(_BASE, BM=128, BN=128, CONSUMERS=2, CLUSTER=2, PERSISTENT=1, REGALLOC=1, PROMOTE=4),
    dict(_BASE, BM=64, BN=128, CONSUMERS=1, CLUSTER=1, PERSISTENT=1, REGALLOC=0, PROMOTE=2, SPLIT_K=3),
    dict(_BASE, BM=128, BN=256, CONSUMERS=2, CLUSTER=2, PERSISTENT=1, REGALLOC=1, PROMOTE=0, SPLIT_K=4),
    dict(_BASE, BM=128, BN=128, CONSUMERS=2, CLUSTER=2, PERSISTENT=1, REGALLOC=1, PROMOTE=1, PINGPONG=1),
    dict(_BASE, BM=128, BN=256, CONSUMERS=2, CLUSTER=1, PERSISTENT=1, REGALLOC=1, PROMOTE=0, PINGPONG=1, SPLIT_K=2),
    dict(_BASE, BM=128, BN=256, CONSUMERS=2, CLUSTER=2, PERSISTENT=1, REGALLOC=1, PROMOTE=0, SPLIT_K=4,
         REDUCE="atomic"),
    dict(_BASE, BM=128, BN=128, CONSUMERS=2, CLUSTER=1, PERSISTENT=1, REGALLOC=1, PROMOTE=4, STREAM_K=1,
         REDUCE="atomic"),
]
BLOCKS_LADDER: list[dict[str, int | str]] = [
    dict(_BASE, BM=64, BN=64, CONSUMERS=1, CLUSTER=1, PERSISTENT=0, REGALLOC=0, SCALING="blocks"),
    dict(_BASE, BM=128, BN=128, CONSUMERS=2, CLUSTER=1, PERSISTENT=1, REGALLOC=1, SCALING="blocks"),
    dict(_BASE, BM=128, BN=128, CONSUMERS=2, CLUSTER=2, PERSISTENT=1, REGALLOC=1, SCALING="blocks"),
    dict(_BASE, BM=256, BN=64, CONSUMERS=2, CLUSTER=2, PERSISTENT=1, REGALLOC=1, SCALING="blocks", SPLIT_K=2),
    dict(_BASE, BM=128, BN=128, CONSUMERS=2, CLUSTER=2, PERSISTENT=1, REGALLOC=1, SCALING="blocks", PINGPONG=1),
    dict(_BASE, BM=128, BN=128, CONSUMERS=2, CLUSTER=1, PERSISTENT=0, REGALLOC=1, SCALING="blocks", PINGPONG=1,
         SPLIT_K=3),
    dict(_BASE, BM=128, BN=192, CONSUMERS=2, CLUSTER=2, PERSISTENT=1, REGALLOC=1, SCALING="blocks"),
    dict(_BASE, BM=128, BN=128, CONSUMERS=2, CLUSTER=1, PERSISTENT=1, REGALLOC=1, SCALING="blocks", STREAM_K=2),
]

FP8_CONFIGS: list[tuple[str, str, dict]] = (
    [("wgmma_fp8", dtype, p) for dtype in ("float8_e4m3", "float8_e5m2") for p in FP8_LADDER]
    + [("wgmma_fp8_blocks", dtype, p) for dtype in ("float8_e4m3", "float8_e5m2") for p in BLOCKS_LADDER]
    + [(family, "float8_e4m3_e5m2", ladder[i]) for family, ladder in (("wgmma_fp8", FP8_LADDER),
                                                                       ("wgmma_fp8_blocks", BLOCKS_LADDER))
       for i in (0, 2)])
"""(family, dtype, parameters), the plainest first in each family."""

FP8_OUT_CONFIGS: list[tuple[str, str, dict]] = [
    (family, dtype, ladder[i])
    for dtype in ("float8_e4m3_out_bfloat16", "float8_e5m2_out_bfloat16", "float8_e4m3_e5m2_out_bfloat16")
    for family, ladder, rungs in (("wgmma_fp8", FP8_LADDER, (0, 3, 7)), ("wgmma_fp8_blocks", BLOCKS_LADDER, (0, 2)))
    for i in rungs]
"""(family, dtype, parameters) with C written in bfloat16: the plainest design, promotion, ping-pong and clusters
(no split-K: a 16-bit C refuses it)."""
