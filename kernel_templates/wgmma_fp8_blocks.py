"""Hopper's FP8 path with fine-grained scales, as DeepSeek-V3 trains: the ``wgmma_fp8`` kernel where A has a scale
per row and 128-element block of K (SA, K-block by K-block) and B one per 128×128 block (SB).

Each k-slice (BK = 128, one scale block) is summed in the tensor core, then promoted: multiplied by its rows' and
columns' scales and added into float32 sums (so the promotion interval is one k-slice). A slice's scales travel with it:
the producer warpgroup's second warp copies them (``cp.async``) into the stage as the TMA fills it and arrives on the
stage's full barrier when they have landed, so that they are STAGES slices ahead of their use, as the operands are
(loaded by the consumers from global memory, a slice ahead, their DRAM latency after an L2 flush outlasted a slice's
MMAs: 0.58 of the per-tensor kernel at 8192³). BN is the wgmma family's (64, 128, 192 or 256):
a 64- or 128-wide tile lies in one of B's 128-column scale blocks, a 256-wide one in two, and a 192-wide one starts 0
or 64 columns into a block and meets two, each 8-column group of accumulators selecting its block's scale. See
kernel_templates/wgmma_fp8.py for the layout.
"""

from __future__ import annotations

from dataclasses import replace

from kernel_templates import wgmma, wgmma_fp8
from tuner.kernels import fp8_matmul
from tuner.kernels.family import Constraint, Parameter, Params


def column_blocks(params: Params) -> int:
    """B's 128-column scale blocks a tile meets: one for BN 64 or 128, two for 192 (it starts 0 or 64 columns into
    a block) and 256."""
    BN = int(params["BN"])
    return (BN + 191) // 128 if BN % 128 and BN > 128 else max(BN // 128, 1)


def shared_bytes(params: Params, size: int) -> int:
    """The wgmma family's stages, and each stage's scales (the tile's rows', then its column blocks', in whole
    16-byte units)."""
    scale_floats = -(-(int(params["BM"]) + column_blocks(params)) // 4) * 4
    return wgmma.shared_bytes(params, size) + int(params["STAGES"]) * 4 * scale_floats


def estimated_registers(params: Params, dtype: str) -> int:
    """The accumulators twice (the tensor core's and the promoted sums) and the rest: the scales, this slice's and the
    next's, fit within the rest's estimate (ptxas: BM 128, BN 192, two consumers, no spill at 232)."""
    return wgmma.estimated_registers(params, dtype) + wgmma.accumulators(params, dtype)


CONSTRAINTS = (
    *wgmma_fp8.SHARED_CONSTRAINTS,
    wgmma_fp8.registers_fit(estimated_registers),
    Constraint("SCALING 'blocks'", lambda p, d: p.get("SCALING", "blocks") == "blocks"),
    wgmma_fp8.PINGPONG_RULE,
)

FAMILY = replace(
    wgmma_fp8.FAMILY,
    name="wgmma_fp8_blocks",
    description="Hopper TMA + wgmma on FP8 with fine-grained scales (A 1×128, B 128×128), promoted per k-slice",
    parameters=(
        *wgmma_fp8.PARAMETERS,
        Parameter("SCALING", "fine-grained scales: A per 1×128, B per 128×128 block", ("blocks",)),
    ),
    arguments=fp8_matmul.BLOCK_ARGUMENTS,
    reference=fp8_matmul.block_reference,
    shared_bytes=shared_bytes,
    constraints=CONSTRAINTS,
)
"""The per-tensor family's kernel, geometry and cost model with the block scales' arguments, reference and rules."""
