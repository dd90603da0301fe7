"""Tensor cores through warp-level ``mma.sync``: float64 (DMMA), tf32, bfloat16 and float16.

A block computes a BM×BN tile of C in BK-deep slices. cp.async copies the slices of A (BM×BK) and B (BK×BN)
16 bytes at a time into a ring of STAGES shared-memory stages, STAGES-1 slices ahead of the arithmetic. The
block's warps are laid (BM/WM)×(BN/WN) over the tile; each accumulates its WM×WN warp tile in registers as
(WM/16)×(WN/8) m16n8 mma tiles, and loads the fragments of the next k-step while the mma instructions of the
current one run. The mma shape is m16n8k16 for the 16-bit types (float accumulators), m16n8k8 for tf32 (float
accumulators, inputs rounded to tf32 on the way) and m16n8k{4,8,16} for float64 (MMA_K). Fragments of the
16-bit types come from shared memory by ``ldmatrix`` (``.trans`` for B, which is row-major K×N), A of tf32
too; the other fragments by scalar loads. Shared rows are padded or XOR-swizzled (SWIZZLE) so that neither
the copies nor the fragment loads conflict on banks. GROUP_M orders the block tiles in groups of tile rows,
column by column, so that blocks running at the same time share A's rows and B's columns in L2.

Any M, N, K: a chunk past the matrix's edge is zero-filled by the copy; where K (for A) or N (for B) is not a
multiple of the 16-byte chunk or the pointer is not 16-byte aligned, that operand's chunks are gathered element
by element instead (decided at run time), and C is written pair by pair or element by element.

Cost model. Every element of A is read once per block column and every element of B once per block row, C is
written once: s·(M·K·⌈N/BN⌉ + K·N·⌈M/BM⌉) + c·M·N bytes, with s the element size and c the accumulator's
(float64: 8; tf32, bfloat16, float16: 4, so c = max(s, 4)).
"""

from collections.abc import Callable

from tuner.config import DTYPE_BYTES, Problem
from tuner.kernels.family import Constraint, Family, Parameter, Params, ceil_div

DTYPES = ("float64", "tf32", "bfloat16", "float16")
MMA_M, MMA_N = 16, 8
CHUNK = 16
"""Bytes of one cp.async copy and of one ldmatrix row."""
BANK_LINE = 128
"""Bytes of shared memory one access serves without conflicts (32 banks of 4 bytes)."""
REGISTERS_BESIDE_TILE = {2: 56, 4: 44, 8: 12}
"""Registers beside the accumulators, fragments and copies, by element size: addresses (the 16-bit types keep
ldmatrix addresses of A per k-step and of B per pair of n8 tiles), indices and loop state. Fitted to ptxas's
reports (nvcc 13.0, sm_90): no float64 configuration of the default space spills (all 73 with GROUP_M 8
compiled; GROUP_M only orders the blocks and leaves the report unchanged), nor any tf32, bfloat16 or float16 one
whose estimate comes within 40 registers of the budget (and 36 others drawn at random). It turns down a few
shapes that just fit: 64×64 warp tiles at 252-255 registers, 16-bit ones of 128×128 blocks with 64-deep
slices and tf32 ones of 4 warps with 32-deep slices (one of which spilled)."""
SIZES = ("BM", "BN", "BK", "WM", "WN")


def _p(params: Params, name: str) -> int:
    return int(params[name])


def accumulator_bytes(size: int) -> int:
    """Bytes of one element of C: double for float64, float for the narrower dtypes."""
    return max(size, 4)


def mma_k(dtype: str) -> tuple[int, ...]:
    """The k of the m16n8k shapes the dtype's mma.sync has on sm_90."""
    return (4, 8, 16) if dtype == "float64" else (8,) if dtype == "tf32" else (16,)


def ldmatrix_operands(size: int) -> tuple[bool, bool]:
    """Whether A and B fragments come through ldmatrix (else scalar loads): both for 16-bit types, A for tf32."""
    return size < 8, size == 2


def warps(params: Params) -> int:
    return (_p(params, "BM") // _p(params, "WM")) * (_p(params, "BN") // _p(params, "WN"))


def threads(params: Params) -> int:
    return 32 * warps(params) if _positive(params) else 0


def _positive(params: Params) -> bool:
    return all(_p(params, n) >= 1 for n in (*SIZES, "STAGES", "GROUP_M", "MMA_K"))


def pad_chunks(params: Params, size: int) -> tuple[int, int]:
    """Chunks added to each shared row of A and of B: 2 for rows read by scalar loads (4 rows × 2 chunks a
    phase: rows 2 chunks apart in the bank line), 1 for ldmatrix rows (8 rows × 1 chunk a phase), none for
    ldmatrix rows that are swizzled instead."""
    swizzle = bool(_p(params, "SWIZZLE"))
    return tuple(0 if ldsm and swizzle else 1 if ldsm else 2  # type: ignore[return-value]
                 for ldsm in ldmatrix_operands(size))


def stage_bytes(params: Params, size: int) -> int:
    BM, BN, BK = (_p(params, n) for n in ("BM", "BN", "BK"))
    a_pad, b_pad = pad_chunks(params, size)
    return BM * (BK * size + a_pad * CHUNK) + BK * (BN * size + b_pad * CHUNK)


def shared_bytes(params: Params, size: int) -> int:
    return _p(params, "STAGES") * stage_bytes(params, size)


def fragment_registers(params: Params, size: int) -> int:
    """32-bit registers of one set of fragments: per m16 tile 4 (16-bit, tf32) or MMA_K (float64, MMA_K/2
    doubles); per n8 tile 2 or MMA_K/2."""
    per_a, per_b = (4, 2) if size < 8 else (_p(params, "MMA_K"), _p(params, "MMA_K") // 2)
    return _p(params, "WM") // MMA_M * per_a + _p(params, "WN") // MMA_N * per_b


def accumulator_registers(params: Params, size: int) -> int:
    return _p(params, "WM") * _p(params, "WN") // 32 * accumulator_bytes(size) // 4


def copies_per_thread(params: Params, size: int) -> int:
    """16-byte chunks of a slice of A and B that each thread copies."""
    BM, BN, BK = (_p(params, n) for n in ("BM", "BN", "BK"))
    return (BM * BK + BK * BN) // (CHUNK // size) // max(1, threads(params))


def estimated_registers(params: Params, size: int) -> int:
    """The accumulators, two sets of fragments (the next k-step's loads while the current one multiplies), one
    register per copy of a slice and REGISTERS_BESIDE_TILE."""
    return (accumulator_registers(params, size) + 2 * fragment_registers(params, size)
            + copies_per_thread(params, size) + REGISTERS_BESIDE_TILE[size])


def global_bytes(params: Params, problem: Problem, size: int) -> int:
    M, N, K = problem.M, problem.N, problem.K
    return (size * (M * K * ceil_div(N, _p(params, "BN")) + K * N * ceil_div(M, _p(params, "BM")))
            + accumulator_bytes(size) * M * N)


def compulsory_bytes(problem: Problem, size: int) -> int:
    """A and B read once, C written once at the accumulator's size."""
    M, N, K = problem.M, problem.N, problem.K
    return size * (M * K + K * N) + accumulator_bytes(size) * M * N


def extra_intensities(params: Params, size: int) -> dict[str, float]:
    """FLOP per byte a block brings into shared memory (block tile), and per byte a warp reads from it (warp
    tile: each k-step reads WM + WN rows of k for 2·WM·WN multiply-adds' worth)."""
    BM, BN, WM, WN = (_p(params, n) for n in ("BM", "BN", "WM", "WN"))
    return {
        "block_intensity": 2 * BM * BN / ((BM + BN) * size),
        "warp_intensity": 2 * WM * WN / ((WM + WN) * size),
    }


def grid(params: Params, problem: Problem) -> tuple[int, int, int]:
    """One block per tile of C, all along x (the kernel orders them in groups of GROUP_M tile rows)."""
    return ceil_div(problem.M, _p(params, "BM")) * ceil_div(problem.N, _p(params, "BN")), 1, 1


def _power_of_two(value: int) -> bool:
    return value >= 1 and value & (value - 1) == 0


def _copies_integral(params: Params, size: int) -> bool:
    chunk = CHUNK // size
    BM, BN, BK, t = _p(params, "BM"), _p(params, "BN"), _p(params, "BK"), threads(params)
    return t == 0 or (BM * BK // chunk) % t == 0 and (BK * BN // chunk) % t == 0


def _scalar_rows_fill_lines(params: Params, size: int) -> bool:
    """Rows read by scalar loads span at least one 128-byte bank line (the pad and swizzle of such rows place 4
    consecutive rows on disjoint chunk pairs of the line)."""
    a_ldsm, b_ldsm = ldmatrix_operands(size)
    a_ok = a_ldsm or _p(params, "BK") * size >= BANK_LINE
    b_ok = b_ldsm or _p(params, "BN") * size >= BANK_LINE
    return a_ok and b_ok


def _if_positive(check: Callable[[Params, str], bool]) -> Callable[[Params, str], bool]:
    """A rule that only speaks once the sizes it divides by are positive (the precondition rejects the rest)."""
    return lambda p, d: not _positive(p) or check(p, d)


CONSTRAINTS = (
    Constraint("BM, BN, BK, WM, WN, STAGES, GROUP_M and MMA_K ≥ 1", lambda p, d: _positive(p), precondition=True),
    Constraint("MMA_K is a k of the dtype's mma.sync shape: 4, 8 or 16 for float64 (m16n8k4/k8/k16), 8 for tf32 "
               "(m16n8k8), 16 for bfloat16 and float16 (m16n8k16)", lambda p, d: _p(p, "MMA_K") in mma_k(d)),
    Constraint("BM, BN, BK, WM and WN powers of two (shared rows are swizzled and copies spread by bit operations)",
               lambda p, d: all(_power_of_two(_p(p, n)) for n in SIZES)),
    Constraint("WM a multiple of 16 (the mma's m) and WN of 16 (pairs of n8 tiles, as ldmatrix.x4.trans loads B)",
               lambda p, d: _p(p, "WM") % MMA_M == 0 and _p(p, "WN") % (2 * MMA_N) == 0),
    Constraint("BM divisible by WM and BN by WN (whole warp tiles)",
               _if_positive(lambda p, d: _p(p, "BM") % _p(p, "WM") == 0 and _p(p, "BN") % _p(p, "WN") == 0)),
    Constraint("at least 4 warps a block (one for each scheduler of an SM; fewer leave tensor cores idle and give "
               "each thread more copies, which spill)", _if_positive(lambda p, d: warps(p) >= 4)),
    Constraint("BK 2·MMA_K or 4·MMA_K (an even number of k-steps per slice, as the fragments alternate between two "
               "register sets; deeper slices unroll into more fragment loads in flight than registers hold)",
               _if_positive(lambda p, d: _p(p, "BK") in (2 * _p(p, "MMA_K"), 4 * _p(p, "MMA_K")))),
    Constraint("the 16-byte chunks of a slice of A (BM·BK) and of B (BK·BN) a multiple of the threads (whole "
               "cp.async copies per thread)", _if_positive(lambda p, d: _copies_integral(p, DTYPE_BYTES[d]))),
    Constraint("rows read by scalar loads at least 128 bytes (A of float64: BK ≥ 16; B of tf32: BN ≥ 32; B of "
               "float64: BN ≥ 16)", _if_positive(lambda p, d: _scalar_rows_fill_lines(p, DTYPE_BYTES[d]))),
    Constraint("STAGES ≥ 2 (the next slice copied while one is multiplied)", lambda p, d: _p(p, "STAGES") >= 2),
    Constraint("SWIZZLE 0 (padded rows) or 1 (XOR-swizzled rows); float64 has no rows read by ldmatrix, the "
               "only ones swizzled, so it takes 0",
               lambda p, d: _p(p, "SWIZZLE") in ((0,) if d == "float64" else (0, 1))),
)

FAMILY = Family(
    name="mma",
    description="tensor-core mma.sync: BM×BN×BK block tiles through a cp.async pipeline, WM×WN warp tiles",
    parameters=(
        Parameter("BM", "rows of C per block", (64, 128, 256)),
        Parameter("BN", "columns of C per block", (64, 128, 256)),
        Parameter("BK", "depth of a slice of A and B in shared memory", (16, 32, 64)),
        Parameter("WM", "rows of C per warp", (32, 64)),
        Parameter("WN", "columns of C per warp", (32, 64)),
        Parameter("STAGES", "shared-memory stages of the cp.async pipeline (STAGES-1 slices in flight)", (3, 4)),
        Parameter("SWIZZLE", "shared rows: 0 padded, 1 XOR-swizzled", (0, 1)),
        Parameter("GROUP_M", "tile rows per group of the block order (1: row by row)", (1, 8)),
        Parameter("MMA_K", "k of the m16n8k mma shape (float64: 4, 8 or 16; tf32: 8; 16-bit: 16)", (4, 8, 16)),
    ),
    dtypes=DTYPES,
    block=lambda p: (threads(p), 1, 1),
    grid=grid,
    shared_bytes=shared_bytes,
    dynamic_shared=True,
    estimated_registers=lambda p, size: estimated_registers(p, size) if _positive(p) else 0,
    global_bytes=global_bytes,
    compulsory_bytes=compulsory_bytes,
    extra_intensities=extra_intensities,
    constraints=CONSTRAINTS,
)
