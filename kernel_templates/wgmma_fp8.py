"""Hopper's FP8 path: the wgmma family's kernel (``wgmma.cu.j2``) on e4m3 or e5m2 operands with per-tensor scales.

C (M×N, float32) = s_A·s_B · A (M×K) · B (K×N), A row-major and B stored K-major (Bᵀ, N×K row-major): FP8 wgmma
(``m64nNk32``) reads both operands K-major from shared memory and has no transposed form, so B is kept as FP8 GEMMs
keep it (a linear layer's weight, N×K; cuBLASLt's FP8 GEMM wants the same "TN" layout). A row-major B would cost a
transpose pass over K·N bytes before the product. A k-slice is BK = 128 elements: one 128-byte swizzled row, as in
the 16-bit path; B arrives in boxes of 64 rows of it, each consumer's wgmma reads BN rows of B in 8-row groups 1024
bytes apart, exactly as A is read.

The tensor core adds each 32-term step of products to its accumulators keeping about 14 significand bits. PROMOTE
> 0 adds the accumulators into float32 registers every PROMOTE k-slices (and clears them), so that the sum over K
is a float32 sum of short tensor-core sums, at the cost of a second set of accumulators; PROMOTE = 0 keeps the whole
K in the tensor core. The scales multiply the tile's sums once, before C is written.

Everything else (tiles, stages, consumers, clusters, persistence, raster order, register reallocation, split-K and
stream-K) is the wgmma family's: see kernel_templates/wgmma.py.
"""

from __future__ import annotations

from collections.abc import Callable

from kernel_templates import wgmma
from tuner.kernels import fp8_matmul
from tuner.kernels.family import Constraint, Family, Parameter, Params
from tuner.kernels.tensor_maps import TensorMap

B_BOX_ROWS = 64
"""Rows of B one TMA copy brings (of 128 bytes each: one k-slice)."""
FP8_DTYPES = ("float8_e4m3", "float8_e5m2", "float8_e4m3_e5m2", "float8_e4m3_out_bfloat16", "float8_e5m2_out_bfloat16",
              "float8_e4m3_e5m2_out_bfloat16")
REGISTER_RULE = "the accumulators and the rest"


def promote(params: Params) -> int:
    return int(params.get("PROMOTE", 0))


def estimated_registers(params: Params, dtype: str) -> int:
    """The wgmma family's estimate, plus the float32 sums the accumulators are promoted into."""
    promoted = wgmma.accumulators(params, dtype) if promote(params) else 0
    return wgmma.estimated_registers(params, dtype) + promoted


def tensor_maps(params: Params, size: int) -> tuple[TensorMap, ...]:
    """A in BK×A_BOX boxes (BM rows unless A_BOX says fewer), B (K-major) in BK×64 boxes: each a k-slice of 128
    bytes by rows of the tile."""
    BK = int(params["BK"])
    return (TensorMap("A", (BK, wgmma.a_box(params)), wgmma.SWIZZLE_BYTES),
            TensorMap("B", (BK, B_BOX_ROWS), wgmma.SWIZZLE_BYTES))


def registers_fit(estimate: Callable[[Params, str], int]) -> Constraint:
    return Constraint(
        "the accumulators, their promoted float32 sums (PROMOTE > 0 or block scales) and the rest fit a consumer "
        "thread's registers: 255 with one consumer, 168 with two, 232 with setmaxnreg (REGALLOC=1)",
        wgmma._if_positive(lambda p, d: estimate(p, d) <= wgmma.register_budget(p)))


PINGPONG_RULE = Constraint(
    "PINGPONG 0 or 1, and 1 only with two consumers (they take turns issuing their MMAs)",
    lambda p, d: int(p.get("PINGPONG", 0)) in (0, 1) and (not int(p.get("PINGPONG", 0)) or int(p["CONSUMERS"]) == 2))

SHARED_CONSTRAINTS = tuple(c for c in wgmma.CONSTRAINTS if not c.description.startswith(REGISTER_RULE))
"""The wgmma family's rules but its register estimate (the FP8 families add promoted sums to it)."""

CONSTRAINTS = (
    *SHARED_CONSTRAINTS,
    registers_fit(estimated_registers),
    Constraint("PROMOTE ≥ 0 (k-slices between promotions to float32; 0: none)", lambda p, d: promote(p) >= 0),
    PINGPONG_RULE,
)

PARAMETERS = (
    *(p for p in wgmma.FAMILY.parameters if p.name not in ("BK",)),
    Parameter("BK", "depth of a slice: 128 bytes of A's row (128 FP8 elements)", (128,)),
    Parameter("PINGPONG", "1: the two consumers issue their MMAs in turn, one promoting while the other multiplies",
              (0,)),
)

FAMILY = Family(
    name="wgmma_fp8",
    description="Hopper TMA + wgmma on FP8 (e4m3, e5m2) with per-tensor scales; B stored K-major",
    parameters=(
        *PARAMETERS,
        Parameter("PROMOTE", "k-slices (of 128) between promotions of the tensor core's sums to float32 (0: none)",
                  (0,)),
    ),
    dtypes=FP8_DTYPES,
    arch="sm_90a",
    template="wgmma.cu.j2",
    arguments=fp8_matmul.TENSOR_ARGUMENTS,
    reference=fp8_matmul.tensor_reference,
    tolerance=fp8_matmul.tolerance,
    compulsory_bytes=fp8_matmul.compulsory_bytes,
    block=wgmma.FAMILY.block,
    grid=wgmma.grid,
    cluster=wgmma.FAMILY.cluster,
    tensor_maps=tensor_maps,
    resident_blocks=wgmma.FAMILY.resident_blocks,
    shared_bytes=wgmma.shared_bytes,
    dynamic_shared=True,
    global_bytes=wgmma.global_bytes,
    extra_intensities=wgmma.extra_intensities,
    constraints=CONSTRAINTS,
)
