"""Register blocking: a BM×BN block tile staged through shared memory, TM×TN of it accumulated per thread.

The block reads BK-deep slices of A (BM×BK) and B (BK×BN) into shared memory; each thread then takes a
column of TM values of A and a row of TN values of B per step of k and adds their outer product to its
TM×TN accumulators in registers. Two levels of reuse follow. Global memory: every element brought into
shared memory is used BN (for A) or BM (for B) times, so a block tile moves s·(M·K·⌈N/BN⌉ + K·N·⌈M/BM⌉ + M·N)
bytes, about 2·BM·BN/((BM+BN)·s) FLOP per byte. Shared memory: each value a thread loads from it feeds TN
or TM multiply-adds, 2·TM·TN/((TM+TN)·s) FLOP per byte.

Tunable besides the tiles: the warp's shape over the thread tiles (WARP_N lanes along N, optionally swizzled
2×2 so that pairs of lanes share each fragment load, which shared memory returns at twice the rate), A's
layout in shared memory (transposed, so fragments are 16-byte loads, element by element or by 16-byte
vectors, and padded against bank conflicts), 128-bit global accesses (chosen at run time where K, N and the
pointers allow it), double buffering through registers or a cp.async pipeline of STAGES slices, in which the
copies of a slice either precede its arithmetic or are spread over the steps of the slice before while the
fragments alternate between two register sets (COPY_SPREAD), the unroll of the k loop, the blocks per SM the
compiler must make room for, and the order of a step's multiply-adds (OUTER_ORDER): row by row, or serpentine,
so that consecutive ones share an operand across each turn as well and the operand reuse cache rather than the
register file serves it.

The schedule (SCHEDULE) either launches one block per tile, or one block per SM slot that the kernel's
resources allow (MIN_BLOCKS per SM), each walking tiles in steps of the grid; the last full wave and the
partial wave after it are then cut into equal runs of k-slices (stream-K), so that no SM idles through a
partial last wave, at the price of one tile's partial sums per block passing through C.
"""

from collections.abc import Callable

from tuner.config import DTYPE_BYTES, Problem
from tuner.kernels.family import Constraint, Family, Parameter, Params, ceil_div

REGISTERS_BESIDE_TILE = 40


def _p(params: Params, name: str) -> int:
    return int(params[name])


def vector_width(size: int) -> int:
    """Elements in one 128-bit access."""
    return 16 // size


def threads(params: Params) -> int:
    """Threads per block, (BM/TM)·(BN/TN); 0 where a tile size is not positive."""
    if not _positive(params):
        return 0
    return (_p(params, "BM") // _p(params, "TM")) * (_p(params, "BN") // _p(params, "TN"))


def _positive(params: Params) -> bool:
    return all(_p(params, n) >= 1 for n in ("BM", "BN", "BK", "TM", "TN", "WARP_N", "UNROLL", "MIN_BLOCKS"))


def a_stage_elements(params: Params, size: int) -> int:
    """Elements of one stage of A in shared memory: [BM][BK+PAD], [BK][BM+PAD] transposed (A_T=1), or
    [BK/V][BM·V+PAD] with each row's V-element vectors kept together (A_T=2)."""
    BM, BK, PAD, layout = (_p(params, n) for n in ("BM", "BK", "PAD", "A_T"))
    if layout == 2:
        vector = vector_width(size)
        return BK // vector * (BM * vector + PAD)
    return BK * (BM + PAD) if layout else BM * (BK + PAD)


def shared_bytes(params: Params, size: int) -> int:
    return _p(params, "STAGES") * (a_stage_elements(params, size) + _p(params, "BK") * _p(params, "BN")) * size


def global_bytes(params: Params, problem: Problem, size: int) -> int:
    BM, BN = _p(params, "BM"), _p(params, "BN")
    M, N, K = problem.M, problem.N, problem.K
    # Each block row of C reads its BM rows of A once per block column, each block column its BN columns of B
    # once per block row; C is written once.
    return size * (M * K * ceil_div(N, BN) + K * N * ceil_div(M, BM) + M * N)


def extra_intensities(params: Params, size: int) -> dict[str, float]:
    BM, BN, TM, TN = (_p(params, n) for n in ("BM", "BN", "TM", "TN"))
    return {
        "shared_intensity": 2 * TM * TN / ((TM + TN) * size),
        "block_intensity": 2 * BM * BN / ((BM + BN) * size),
    }


def estimated_registers(params: Params, size: int) -> int:
    """The fewest registers a thread gets by with: its accumulators, the slice it stages when loading
    through registers, its fragments beyond one step's TM + TN (A_T=2 loads V steps of A at a time, and the
    spread pipeline keeps two sets), and about 40 more for fragments in flight, addresses and indices
    (ptxas reports of this template: 8×8 float64 tiles fit 168 registers, 8×8 float32 tiles 128, without
    spilling; with the spread pipeline 8×8 float64 tiles take 220-248)."""
    words = size // 4
    BM, BN, BK, TM, TN = (_p(params, n) for n in ("BM", "BN", "BK", "TM", "TN"))
    staged = 0 if _p(params, "ASYNC") else (BM * BK + BK * BN) // threads(params)
    a_steps = vector_width(size) if _p(params, "A_T") == 2 else 1
    fragments = (TM * a_steps + TN) * (2 if _p(params, "COPY_SPREAD") else 1) - (TM + TN)
    return (TM * TN + staged + fragments) * words + REGISTERS_BESIDE_TILE


def _piece_widths(params: Params, dtype: str) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Elements per global access the template may use for A and for B: 1 always (the path for unaligned
    shapes), the 128-bit vector too with VECTOR=1, except for A copied by cp.async into its element-wise
    transposed layout (A_T=1)."""
    vector = vector_width(DTYPE_BYTES[dtype])
    use_vector = bool(_p(params, "VECTOR"))
    a_vector = use_vector and not (_p(params, "ASYNC") and _p(params, "A_T") == 1)
    return ((1, vector) if a_vector else (1,)), ((1, vector) if use_vector else (1,))


def a_group(params: Params, size: int) -> int:
    """Elements of a row of A copied together: a 32-byte sector when A is transposed, else the whole slice row."""
    sector = 32 // size
    BK = _p(params, "BK")
    return sector if _p(params, "A_T") and sector < BK else BK


def _slices(params: Params, dtype: str) -> list[tuple[int, int, int, int]]:
    """(rows, columns, group, width) of every way the template hands out a slice of A or B."""
    widths_a, widths_b = _piece_widths(params, dtype)
    BM, BN, BK = _p(params, "BM"), _p(params, "BN"), _p(params, "BK")
    group = a_group(params, DTYPE_BYTES[dtype])
    return [(BM, BK, group, w) for w in widths_a] + [(BK, BN, BN, w) for w in widths_b]


def _loads_integral(params: Params, dtype: str) -> bool:
    t = threads(params)
    return all((rows * cols) % (t * w) == 0 for rows, cols, _, w in _slices(params, dtype))


def _pieces_spread(params: Params, dtype: str) -> bool:
    """Each thread's pieces of a slice form a fixed pattern: per-thread offset plus compile-time steps
    (the template's Pieces), which needs threads, groups and rows that divide one another."""
    t = threads(params)
    for rows, cols, group, w in _slices(params, dtype):
        if cols % group or group % w:
            return False
        pieces = group // w
        if t % pieces == 0:
            per_round = t // pieces
            if per_round % rows and rows % per_round:
                return False
        elif pieces % t:
            return False
    return True


def _warp_layout(params: Params) -> bool:
    lanes_n = _p(params, "WARP_N")
    if lanes_n <= 0 or 32 % lanes_n:
        return False
    return (_p(params, "BN") // _p(params, "TN")) % lanes_n == 0 and (_p(params, "BM") // _p(params, "TM")) % (
        32 // lanes_n
    ) == 0


def _stages_fit_pipeline(params: Params) -> bool:
    stages = _p(params, "STAGES")
    return 2 <= stages <= 4 if _p(params, "ASYNC") else stages in (1, 2)


def _spread_fits(params: Params, dtype: str) -> bool:
    """The spread pipeline unrolls whole slices, alternates two fragment sets (an even number of A loads per
    slice, so that each slice starts on the same set) and issues copies at COPY_SPREAD evenly spaced steps."""
    spread, BK = _p(params, "COPY_SPREAD"), _p(params, "BK")
    if spread == 0:
        return True
    a_steps = vector_width(DTYPE_BYTES[dtype]) if _p(params, "A_T") == 2 else 1
    return (bool(_p(params, "ASYNC")) and spread > 0 and BK % spread == 0 and _p(params, "UNROLL") % BK == 0
            and BK % a_steps == 0 and BK // a_steps % 2 == 0)


def persistent(params: Params) -> bool:
    """SCHEDULE=1; configurations recorded before SCHEDULE existed ran one block per tile."""
    return int(params.get("SCHEDULE", 0)) == 1


def grid(params: Params, problem: Problem) -> tuple[int, int, int]:
    """Block tiles over N and M; with SCHEDULE=1 all of them along x, for the persistent blocks to walk."""
    along_n, along_m = ceil_div(problem.N, _p(params, "BN")), ceil_div(problem.M, _p(params, "BM"))
    return (along_n * along_m, 1, 1) if persistent(params) else (along_n, along_m, 1)


def _if_positive(check: Callable[[Params, str], bool]) -> Callable[[Params, str], bool]:
    """A rule that only speaks once the sizes it divides by are positive (another rule rejects them)."""
    return lambda p, d: not _positive(p) or check(p, d)


def _vector_multiple(p: Params, d: str) -> bool:
    width = vector_width(DTYPE_BYTES[d])
    return _p(p, "TM") % width == 0 and _p(p, "TN") % width == 0


CONSTRAINTS = (
    Constraint("BM, BN, BK, TM, TN, WARP_N, UNROLL and MIN_BLOCKS ≥ 1", lambda p, d: _positive(p), precondition=True),
    Constraint(
        "BM divisible by TM and BN by TN",
        _if_positive(lambda p, d: _p(p, "BM") % _p(p, "TM") == 0 and _p(p, "BN") % _p(p, "TN") == 0),
    ),
    Constraint("TM and TN multiples of the 128-bit vector (4 float32/int32 or 2 float64 elements)",
               _if_positive(_vector_multiple)),
    Constraint("threads per block a multiple of 32", _if_positive(lambda p, d: threads(p) % 32 == 0)),
    Constraint("WARP_N divides 32 and BN/TN, and 32/WARP_N divides BM/TM", _if_positive(lambda p, d: _warp_layout(p))),
    Constraint(
        "loads per thread integral: BM·BK and BK·BN divisible by threads (× vector width for 128-bit loads)",
        _if_positive(_loads_integral),
    ),
    Constraint(
        "threads, slice rows and copy groups divide one another (each thread's share of a slice is a fixed pattern)",
        _if_positive(_pieces_spread),
    ),
    Constraint(
        "VECTOR=1 needs BK a multiple of the vector width",
        lambda p, d: not _p(p, "VECTOR") or _p(p, "BK") % vector_width(DTYPE_BYTES[d]) == 0,
    ),
    Constraint(
        "PAD keeps shared rows 16-byte aligned (PAD·element size a multiple of 16)",
        lambda p, d: (_p(p, "PAD") * DTYPE_BYTES[d]) % 16 == 0,
    ),
    Constraint(
        "A_T and OUTER_ORDER are 0, 1 or 2; VECTOR, ASYNC, SWIZZLE and SCHEDULE 0 or 1; COPY_SPREAD ≥ 0",
        lambda p, d: _p(p, "A_T") in (0, 1, 2) and all(_p(p, n) in (0, 1) for n in ("VECTOR", "ASYNC", "SWIZZLE"))
        and _p(p, "COPY_SPREAD") >= 0 and int(p.get("OUTER_ORDER", 0)) in (0, 1, 2)
        and int(p.get("SCHEDULE", 0)) in (0, 1),
    ),
    Constraint("STAGES 1 or 2 without cp.async (ASYNC=0), 2 to 4 with it", lambda p, d: _stages_fit_pipeline(p)),
    Constraint(
        "UNROLL divides BK, or is a multiple of it (the whole slice unrolled)",
        _if_positive(lambda p, d: _p(p, "BK") % _p(p, "UNROLL") == 0 or _p(p, "UNROLL") % _p(p, "BK") == 0),
    ),
    Constraint(
        "COPY_SPREAD ≥ 1 needs cp.async, COPY_SPREAD dividing BK, the whole slice unrolled (UNROLL a multiple of "
        "BK) and an even number of A fragment loads per slice (BK/V for A_T=2, else BK)",
        _if_positive(_spread_fits),
    ),
    Constraint("A_T=2 needs BK a multiple of the vector width",
               lambda p, d: _p(p, "A_T") != 2 or _p(p, "BK") % vector_width(DTYPE_BYTES[d]) == 0),
    Constraint("SWIZZLE=1 needs at least 2 lanes along N and along M (WARP_N 2 to 16)",
               lambda p, d: not _p(p, "SWIZZLE") or 2 <= _p(p, "WARP_N") <= 16),
)

FAMILY = Family(
    name="regblock",
    description="BM×BN block tiles in BK slices through shared memory, TM×TN register tiles per thread",
    parameters=(
        Parameter("BM", "rows of C per block", (64, 128)),
        Parameter("BN", "columns of C per block", (128, 256)),
        Parameter("BK", "depth of the slice of A and B staged in shared memory", (16, 32)),
        Parameter("TM", "rows of C per thread (register tile)", (8,)),
        Parameter("TN", "columns of C per thread (register tile)", (8, 16)),
        Parameter("WARP_N", "lanes of a warp laid along N; the other 32/WARP_N go along M", (4, 16)),
        Parameter("A_T", "A in shared memory: 0 as in global ([BM][BK+PAD]), 1 transposed ([BK][BM+PAD]), 2 "
                  "transposed by 16-byte vectors ([BK/V][BM·V+PAD]: V consecutive elements of a row together)", (1,)),
        Parameter("PAD", "elements added to each shared row of A against bank conflicts", (4,)),
        Parameter("VECTOR", "1: 128-bit global accesses where K, N and the pointers allow it", (1,)),
        Parameter("ASYNC", "1: cp.async global→shared copies; 0: through registers", (1,)),
        Parameter("STAGES", "shared-memory slices: 1, 2 (double buffering) or up to 4 with cp.async", (2, 4)),
        Parameter("UNROLL", "unroll factor of the loop over a slice's k; BK or more unrolls it whole", (32,)),
        Parameter("MIN_BLOCKS", "blocks per SM asked of the compiler in __launch_bounds__", (1, 2)),
        Parameter("COPY_SPREAD", "cp.async pipeline: 0 copies each slice, then computes it; n ≥ 1 double-buffers "
                  "the fragments across steps and slices and issues the next slice's copies at n evenly spaced steps",
                  (0,)),
        Parameter("SWIZZLE", "1: lanes laid 2×2 so that pairs of lanes read each fragment together", (0,)),
        Parameter("OUTER_ORDER", "order of a step's multiply-adds: 0 row by row, 1 rows serpentine (odd rows "
                  "backwards), 2 columns serpentine; the serpentines let each turn reuse an operand", (0,)),
        Parameter("SCHEDULE", "0: one block per tile; 1: MIN_BLOCKS persistent blocks per SM, whole waves of "
                  "tiles then the last two waves split evenly by k-slices (stream-K)", (0, 1)),
    ),
    block=lambda p: (threads(p), 1, 1),
    grid=grid,
    resident_blocks=lambda p: _p(p, "MIN_BLOCKS") if persistent(p) else 0,
    min_blocks_per_sm=lambda p: _p(p, "MIN_BLOCKS"),
    estimated_registers=lambda p, size: estimated_registers(p, size) if _positive(p) else 0,
    shared_bytes=shared_bytes,
    global_bytes=global_bytes,
    constraints=CONSTRAINTS,
    dynamic_shared=True,
    extra_intensities=extra_intensities,
)
