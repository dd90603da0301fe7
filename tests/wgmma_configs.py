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


def _split_k_design(dtype: str, consumers: int, cluster: int, persistent: int, split_k: int,
                    reduce: str = "serial") -> dict[str, int | str]:
    """The ladder's plainest tile with one consumer, its fastest with two (with setmaxnreg), in ``dtype``, its splits
    reduced in turn (``serial``) or with atomic additions."""
    bk = 32 if dtype == "tf32" else 64
    if consumers == 1:
        bm, bn = (128, 64) if dtype == "tf32" else (64, 128)
    else:
        bm, bn = (256, 128) if dtype == "tf32" else (128, 256)
    return dict(BM=bm, BN=bn, BK=bk, STAGES=4, CONSUMERS=consumers, CLUSTER=cluster, PERSISTENT=persistent,
                GROUP=8, REGALLOC=int(consumers == 2), SPLIT_K=split_k,
                **({"REDUCE": reduce} if reduce != "serial" else {}))


SPLIT_K_COMPILED: list[tuple[str, dict[str, int]]] = [
    (dtype, _split_k_design(dtype, consumers, cluster, persistent, split_k))
    for dtype in ("bfloat16", "tf32") for split_k in (1, 3, 4) for consumers in (1, 2) for cluster in (1, 2)
    for persistent in (0, 1)]
SPLIT_K_COMPILED += [("bfloat16", _split_k_design("bfloat16", 1, 1, 0, 4, "atomic")),
                     ("tf32", _split_k_design("tf32", 2, 2, 1, 4, "atomic"))]
"""Split-K designs the compile tests build: every schedule (consumers, cluster, persistent) at 1, 3 and 4 splits
reduced in turn, and at 4 splits reduced with atomic additions the plainest schedule in bfloat16 and the fastest in
tf32 (the GPU tests build the rest)."""


SPLIT_K_GPU: list[tuple[str, dict[str, int]]] = [
    (dtype, _split_k_design(dtype, consumers, cluster, persistent, split_k))
    for dtype in ("bfloat16", "float16", "tf32") for split_k in (2, 3, 4, 8)
    for consumers, cluster, persistent in ((1, 1, 0), (1, 1, 1), (2, 2, 0), (2, 2, 1))]
SPLIT_K_GPU += [
    (dtype, _split_k_design(dtype, consumers, cluster, persistent, split_k, "atomic"))
    for dtype in ("bfloat16", "tf32") for split_k in (3, 8)
    for consumers, cluster, persistent in ((1, 1, 0), (2, 2, 1))]
"""Split-K designs the GPU tests run: one consumer without clusters and two in clusters of two, each with one block
per work item and persistent, reduced in turn at 2, 3, 4 and 8 splits; and reduced with atomic additions at 3 and 8
splits in the plainest and the fastest schedule (float16 stores C as bfloat16 does)."""

def _stream_k_design(dtype: str, consumers: int, mode: int, reduce: str) -> dict[str, int | str]:
    """The split-K designs' tiles on persistent blocks without clusters, sharing k-tiles by stream-K (``mode`` 1:
    the last waves, 2: all)."""
    design = _split_k_design(dtype, consumers, 1, 1, 1, reduce)
    return {**design, "STREAM_K": mode, "REDUCE": reduce}


STREAM_K_GPU: list[tuple[str, dict[str, int | str]]] = (
    [("bfloat16", _stream_k_design("bfloat16", consumers, mode, reduce))
     for consumers in (1, 2) for mode in (1, 2) for reduce in ("serial", "atomic")]
    + [("float16", _stream_k_design("float16", 2, mode, "atomic")) for mode in (1, 2)]
    + [("tf32", _stream_k_design("tf32", consumers, mode, reduce))
       for consumers, mode, reduce in ((1, 2, "serial"), (2, 1, "atomic"), (2, 2, "serial"), (1, 1, "atomic"))]
    + [("bfloat16", {**_stream_k_design("bfloat16", 2, 1, "atomic"), "BM": 256, "BN": 192})])
"""Stream-K designs the GPU tests run: in bfloat16 both tiles in both modes with either reduction, in float16 the
fastest tile with atomic additions, in tf32 four of the combinations (C transposed), and the 256×192 tile whose
accumulators fill the consumers' registers, which only the atomic reduction fits beside."""
SPLIT_K_GPU += [("bfloat16", {**_split_k_design("bfloat16", 2, 1, 0, 2, "atomic"), "REGALLOC": 0})]
"""And atomic split-K on 128×256 over two consumers without setmaxnreg: 168 registers a thread, all but 40 of them
accumulators."""

OUTPUT_16_PARAMETERS: list[tuple[str, dict[str, int]]] = [
    (dtype, _LADDER_16[i]) for dtype in ("bfloat16_out_bfloat16", "float16_out_float16") for i in (0, 3, 4)]
"""The 16-bit ladder's plainest design and its two fastest with C written in 16 bits (no split-K: a 16-bit C
refuses it)."""

_PLAIN = dict(BK=64, STAGES=4, CONSUMERS=1, CLUSTER=1, PERSISTENT=0, GROUP=8, REGALLOC=0)
_FAST = dict(BK=64, STAGES=4, CONSUMERS=2, CLUSTER=2, PERSISTENT=1, GROUP=8, REGALLOC=1)
A_BOX_GPU: list[tuple[str, str, dict[str, int | str]]] = [
    ("wgmma", "bfloat16", dict(_PLAIN, BM=64, BN=128, A_BOX=8, SPLIT_K=4, REDUCE="atomic")),
    ("wgmma", "bfloat16", dict(_PLAIN, BM=64, BN=64, STAGES=12, A_BOX=16)),
    ("wgmma", "float16", dict(_FAST, BM=128, BN=256, A_BOX=32)),
    ("wgmma", "bfloat16", dict(_FAST, BM=128, BN=128, CLUSTER=1, A_BOX=16, STREAM_K=2, REDUCE="atomic")),
    ("wgmma", "tf32", dict(_PLAIN, BM=128, BN=64, BK=32, A_BOX=8, SPLIT_K=3)),
    ("wgmma", "tf32", dict(_FAST, BM=256, BN=128, BK=32, A_BOX=64)),
    ("wgmma", "bfloat16_out_bfloat16", dict(_PLAIN, BM=64, BN=128, A_BOX=16)),
    ("wgmma_fp8", "float8_e4m3", dict(_PLAIN, BM=64, BN=128, BK=128, PROMOTE=0, A_BOX=16, SPLIT_K=4,
                                      REDUCE="atomic")),
    ("wgmma_fp8_blocks", "float8_e4m3", dict(_FAST, BM=128, BN=128, BK=128, SCALING="blocks", A_BOX=32)),
]
"""A copied in boxes of fewer rows than the tile (family, dtype, parameters): decode tiles of one consumer with
8 and 16 rows a box (with atomic split-K and 12 stages), two consumers in clusters of two (a cluster's block below
M copies no box) and under stream-K, C transposed in tf32, C in 16 bits, and both FP8 families."""
