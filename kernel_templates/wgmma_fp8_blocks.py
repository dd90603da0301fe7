"""Hopper's FP8 path with fine-grained scales, as DeepSeek-V3 trains: the ``wgmma_fp8`` kernel where A has a scale
per row and 128-element block of K (SA, K-block by K-block) and B one per 128×128 block (SB).

Each k-slice (BK = 128, one scale block) is summed in the tensor core, then promoted: multiplied by its rows' and
columns' scales and added into float32 sums (so the promotion interval is one k-slice). A tile's columns must not
straddle B's 128-column scale blocks except where the template knows it (BN 64, 128 or 256). See
kernel_templates/wgmma_fp8.py for the layout.
"""

from __future__ import annotations

from dataclasses import replace

from kernel_templates import wgmma, wgmma_fp8
from tuner.kernels import fp8_matmul
from tuner.kernels.family import Constraint, Parameter, Params

SCALE_REGISTERS = 8
"""A k-slice's scales of the thread's rows and of the tile's column blocks, and their addresses (ptxas)."""


def estimated_registers(params: Params, dtype: str) -> int:
    return wgmma.estimated_registers(params, dtype) + wgmma.accumulators(params, dtype) + SCALE_REGISTERS


CONSTRAINTS = (
    *wgmma_fp8.SHARED_CONSTRAINTS,
    wgmma_fp8.registers_fit(estimated_registers),
    Constraint("BN 64, 128 or 256: a tile's columns meet B's 128-column scale blocks where the kernel expects",
               lambda p, d: int(p["BN"]) in (64, 128, 256)),
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
    constraints=CONSTRAINTS,
)
"""The per-tensor family's kernel, geometry and cost model with the block scales' arguments, reference and rules."""
