"""The tensor cores' ceilings on sm_90: warpgroup MMA (wgmma) beside mma.sync, and the faster of the two per dtype.

Every GPU from sm_80 has its tensor-core ceilings measured with mma.sync chains on register fragments
(``tuner/ceiling_kernels/mma.cu``). On sm_90 mma.sync reaches only part of the tensor cores' rate, which needs
wgmma: ``tuner/ceiling_kernels/wgmma.cu`` issues back-to-back ``wgmma.mma_async`` m64n256k16 (bfloat16, float16),
m64n256k8 (tf32) and m64n256k32 (float8_e4m3, float8_e5m2) from shared memory, WGMMA_BLOCKS_PER_SM one-warpgroup
blocks per SM. Both are measured and the device keeps the higher rate per dtype, with the instruction that gave it;
float64 has no wgmma (DMMA is mma.sync only), so its ceiling stays mma.sync's, and the 8-bit dtypes have no
mma.sync ceiling (only wgmma reaches sm_90's full FP8 rate), so theirs is wgmma's. Both FP8 formats are measured, each
with both operands in it (a mixed e4m3 × e5m2 product is not measured apart: NVIDIA gives one FP8 rate).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any

from tuner.peaks import FP8_DTYPES
from tuner.peaks import MMA_SYNC as MMA_SYNC  # the instructions, as the ceilings name them
from tuner.peaks import WGMMA as WGMMA

if TYPE_CHECKING:
    from tuner.backends.pycuda.timing import Timer
    from tuner.measure.measurement import Timing
    from tuner.settings import MeasureSettings

WGMMA_ARCH = {"9.0": "sm_90a"}
"""The target that compiles wgmma, per compute capability that has it."""
WGMMA_K = {"tf32": 8, "bfloat16": 16, "float16": 16, **dict.fromkeys(FP8_DTYPES, 32)}
"""The K of each dtype's wgmma (its shape is m64n256kK: 32 bytes of K in every dtype); the dtypes wgmma
multiplies."""
WGMMA_M, WGMMA_N = 64, 256
WGMMA_KSTEPS = 4
"""wgmma per commit group: the k-steps of one 128-byte operand row (the kernel's KSTEPS)."""
WGMMA_IN_FLIGHT = 1
"""Commit groups left running while the next is issued (wait_group's count)."""
WGMMA_ITERATIONS = 2048
WGMMA_BLOCKS_PER_SM = 3
"""One-warpgroup blocks per SM (the kernel's launch bounds): 154 registers per thread (ptxas) let three share an
SM's 65536."""
WGMMA_THREADS = 128
WGMMA_SHARED_BYTES = (WGMMA_M + WGMMA_N) * 128 + 1024
"""A (64 rows) and B (256 rows) of 128 bytes, and the slack that aligns them to the swizzle's 1024-byte period."""
METHOD = (f"wgmma (sm_90): {WGMMA_BLOCKS_PER_SM} blocks of one warpgroup per SM, {WGMMA_ITERATIONS} commit groups "
          f"of {WGMMA_KSTEPS} m{WGMMA_M}n{WGMMA_N}k16 (tf32: k8; float8_e4m3, float8_e5m2: k32, both operands of "
          f"the one format) wgmma from 128-byte-swizzled shared memory, {WGMMA_IN_FLIGHT} group left in flight, "
          "2·m·n·k operations each / median time; the tensor ceiling of a dtype is the higher of mma.sync's and "
          "wgmma's (the 8-bit dtypes': wgmma's)")


def wgmma_arch(compute_capability: str) -> str | None:
    """The target that compiles wgmma on this GPU, or None where it has none."""
    return WGMMA_ARCH.get(compute_capability)


def kernel_prefix(dtype: str) -> str:
    """What ``wgmma.cu`` is compiled after for ``dtype``: its dtype, groups in flight and blocks per SM."""
    return (f"#define WGMMA_{dtype.upper()}\n#define IN_FLIGHT {WGMMA_IN_FLIGHT}\n"
            f"#define BLOCKS_PER_SM {WGMMA_BLOCKS_PER_SM}\n")


def wgmma_operations(dtype: str, blocks: int, iterations: int = WGMMA_ITERATIONS) -> int:
    """Operations of one launch: 2·m·n·k per wgmma, KSTEPS wgmma per iteration and block."""
    return 2 * WGMMA_M * WGMMA_N * WGMMA_K[dtype] * WGMMA_KSTEPS * iterations * blocks


def pick(rates: Mapping[str, Mapping[str, float]]) -> dict[str, tuple[float, str]]:
    """Per dtype, the highest rate any instruction measured and that instruction.

    ``rates`` maps an instruction (``mma.sync``, ``wgmma``) to its measured GFLOP/s per dtype; a dtype an
    instruction lacks, or a rate that is not positive, is not a candidate. On a tie the instruction named first wins.
    """
    best: dict[str, tuple[float, str]] = {}
    for instruction, by_dtype in rates.items():
        for dtype, value in by_dtype.items():
            if value > 0 and (dtype not in best or value > best[dtype][0]):
                best[dtype] = (value, instruction)
    return best


def measure_wgmma(device: Mapping[str, Any], dtype: str, timer: Timer, settings: MeasureSettings,
                  load_kernel: Callable[[str, str, str, str], Any]) -> tuple[int, Timing]:
    """Operations and timing of the wgmma ceiling kernel in ``dtype``. ``load_kernel(file, prefix, name, arch)``
    compiles and loads one of the project's ceiling kernels."""
    import numpy as np
    import pycuda.driver as cuda

    arch = wgmma_arch(device["compute_capability"])
    if arch is None or dtype not in WGMMA_K:
        raise ValueError(f"no wgmma ceiling for {dtype} on compute capability {device['compute_capability']}")
    blocks = device["multiprocessors"] * WGMMA_BLOCKS_PER_SM
    kernel = load_kernel("wgmma.cu", kernel_prefix(dtype), "wgmma_chains", arch)
    kernel.prepare([np.intp, np.int32])
    out = cuda.mem_alloc(blocks * WGMMA_THREADS * 4)
    try:
        timing = timer.time(partial(kernel.prepared_call, (blocks, 1, 1), (WGMMA_THREADS, 1, 1), int(out),
                                    np.int32(WGMMA_ITERATIONS), shared_size=WGMMA_SHARED_BYTES), settings)
    finally:
        out.free()
    return wgmma_operations(dtype, blocks), timing
