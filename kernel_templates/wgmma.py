"""Hopper's tensor-core path: TMA copies, warpgroup MMA (``wgmma``), a producer and consumer warpgroups.

C (M×N, float32) = A (M×K) · B (K×N) in bfloat16, float16 or tf32, all row-major, on sm_90a; with the
``bfloat16_out_bfloat16`` and ``float16_out_float16`` dtypes C is written in the inputs' 16-bit type instead, each
thread's pair of adjacent float32 sums rounded to nearest even and stored as one 4-byte ``__nv_bfloat162`` or
``__half2`` (no split-K there: the splits add their partial sums in C).

Each block computes BM×BN tiles of C. Its first warpgroup is the producer: one thread issues the Tensor Memory
Accelerator's copies of each BK-deep slice of A (one BK×BM box) and B (boxes of 128 bytes × BK rows) into one of
STAGES shared-memory stages, with the 128-byte swizzle (16-byte chunks of each 128-byte row permuted by the row's
index mod 8, so that the tensor cores read them without bank conflicts). A full barrier per stage counts the bytes
in; the CONSUMERS warpgroups after it wait there, multiply the stage with ``wgmma.mma_async`` into accumulators in
registers, and each of their warps arrives on the stage's empty barrier, which the producer waits on before it fills
the stage again. Out-of-bounds parts of a box arrive as zeros (TMA fills them), and the stores of C are guarded, so
any M, N, K is computed, as long as a tensor map can describe A and B: their rows must be multiples of 16 bytes
(K and N multiples of 8 in the 16-bit dtypes, of 4 in tf32; otherwise the launch is refused as invalid, naming the
buffer: a copy of the inputs padded by the host would be work outside the kernel's timing).

A_BOX (0: one box of BM rows) copies A's slice in boxes of A_BOX rows instead, only as many as reach into A
(⌈rows of the tile inside A / A_BOX⌉; none in a cluster's block below M), and the full barrier expects those bytes.
The boxes land where the one box would have put their rows (8-row groups of 1024 bytes, so the swizzle is the
same), and the stages keep their size: the wgmma still reads 64-row slabs, whose rows no box filled hold what earlier
slices, tiles or launches left there, and produce only rows of C past M, which are never stored. At decode
(M ≤ 16) a tile then copies 16 rows of A a slice instead of 64: TMA fills rows past M with zeros, but a whole box
crosses from L2 into shared memory, as many bytes as B's slice of a 64-column tile.

Layouts (the wgmma descriptor's fields, PTX ISA "Matrix Descriptor Format"):

- 16-bit dtypes: each consumer owns BM/CONSUMERS rows of the tile, in 64-row slabs: ``m64nBNk16`` with A K-major
  (rows of BK = 64 elements, 128 bytes; 8-row groups 1024 bytes apart: stride byte offset 1024; the k-step of 16
  elements advances the start address by 32 bytes) and B N-major (transposed: each 64-column box is BK rows of 128
  bytes; leading byte offset = the box's size, between 64-column groups; stride byte offset 1024, between 8-row
  groups of k; a k-step advances 16 rows, 2048 bytes).
- tf32: wgmma reads TF32 operands from shared memory K-major only, and B is N-major. The consumers compute Cᵀ
  instead: Cᵀ = Bᵀ·Aᵀ with Bᵀ as the wgmma's A, loaded from the swizzled B tile into registers (``m64nBMk8``, A
  from registers), and the K-major A tile as the wgmma's B. Each consumer owns BN/CONSUMERS columns of C.

The accumulators of a 64-row slab take N/2 registers per thread (N the wgmma's N), so a consumer's share of the
tile is bounded by its registers: 255 per thread with one consumer (256 threads, one block per SM), 168 with two
(384 threads), or 232 when the warpgroups trade registers with ``setmaxnreg`` (REGALLOC: the producer drops to 40).

Clusters (CLUSTER blocks along M, launched with the cluster-dimension attribute): the blocks of a cluster compute
tiles one above the other, which need the same slices of B; each block loads every CLUSTER-th box of B and the TMA
multicasts it into every block of the cluster, so B crosses from L2 once per cluster. A block's consumer warps then
arrive on the empty barriers of every block of the cluster (a stage is refilled only when all have read it).

Schedule: work units are clusters of tiles, taken in groups of GROUP units along M, column by column within a group
(grouped raster order: the tiles in flight share panels of A and B in L2). PERSISTENT=1 launches one block per SM,
each walking units in steps of the grid, so that the producer loads the next tile while the consumers store the
last; PERSISTENT=0 launches one block per unit.

Split-K (SPLIT_K > 1): a unit's K is cut into SPLIT_K splits, so that few tiles still fill the SMs (a decode layer
of N = 4096 in 64×128 tiles has 32 of them for 132 SMs). The work items are w = 0 … units·SPLIT_K − 1: unit
w / SPLIT_K, split s = w % SPLIT_K (the splits of a tile are adjacent, so they run at once), k-tiles
[s·per, min(k_tiles, (s + 1)·per)) with per = ⌈k_tiles / SPLIT_K⌉ (a split may be empty: it adds zeros). A
non-persistent launch has one block (cluster) per work item; persistent blocks walk them as they walk units, the
producer and the consumers the same sequence. The splits are reduced in C itself, in float32, serially and
deterministically (the sum is ((part 0 + part 1) + part 2) …, whatever the timing), within the one launch: no
workspace, no memset, no atomics on C. A module-global array of flags holds, per tile (tile_m·tiles_n + tile_n),
the split whose turn it is. Split 0 stores its accumulators; split s > 0 waits, in one consumer thread, until an
``ld.acquire.gpu`` of the flag reads s, then the consumer warpgroups meet at named barrier 1 (the producer takes no
part) and each thread adds the values of C it owns (read with ``ld.global.cg``, past L1) to its accumulators and
stores them. Every split then fences (``__threadfence``), meets at the barrier again, and one thread
``st.release.gpu``-writes s + 1 to the flag, or 0 for the last split: the flags are zero again when the launch ends,
as they were when the module was loaded, so no launch needs them cleared.

REDUCE = "atomic" shortens that chain to one link and takes the wait for split 0's sum out of it: as split 0's block
starts, warps 2 and 3 of its producer warpgroup (which issue no copies) zero the tile in C, fence, and release-write 1
to the flag; every split, split 0 too, once the flag is non-zero (long since, by the time it has its sum), adds its
accumulators to C with atomic additions and counts itself on the flag with an atomic increment; the last to count (it
reads SPLIT_K) sets the flag back to 0. In the 16-bit dtypes adjacent lanes swap half of their sums first (a
``__shfl_xor``), so that each adds four consecutive columns of one row in one 16-byte atomic addition
(``ATOMG.E.ADD.F32x4``): half the additions of float2 pairs, which the L2 performs one at a time per address. The
splits add at once instead of one after another, at the cost of a sum whose order, and so whose rounding, may change
from launch to launch; "serial" stays the default and the deterministic choice.

Why it cannot deadlock: a split waits only for the split before it of its own tile (atomic: for split 0 to begin), whose
work index is lower, and split 0 waits for nothing. Non-persistent blocks (clusters) are dispatched in the order of
their index (CUDA does not promise it; serial split-K reductions rely on it), so the one a waiting block needs has
been dispatched before it, holds its SM or has finished, and waits, in turn, only for lower indices.
Persistent blocks are all resident at once (the launch takes only as many blocks, in whole clusters, as run at
once) and each walks increasing work indices, so the lowest unfinished work item always has a block on it that
waits for nothing unfinished. The flags cover MAX_SPLIT_TILES tiles, 2^20: a C of more tiles (2^32 elements and
more in 64×64 tiles, 16 GiB of float32) is left unwritten by a split launch (and so verifies as wrong).

Stream-K (STREAM_K > 0, persistent blocks without clusters or split-K; Osama et al., PPoPP 2023): split-K cuts every
tile into the same number of splits, which leaves SMs idle whenever tiles × splits is not a whole number of waves
(a decode layer of 48 tiles in 4 splits is 192 work items for 132 SMs). Stream-K instead lays the MAC iterations (k-
tiles) of the streamed units end to end, unit after unit, and gives each of the G persistent blocks an equal share:
block b takes iterations [b·total/G, (b+1)·total/G), so no block has more than one k-tile more than another. A
unit's iterations are laid in decreasing k: the share holding a unit's k-tile 0 is part 0 of that tile's sum and is
always the first thing its block does in the streamed run (the unit began in an earlier block's share and ends at the
start of this one's), so it stores C at once; the parts that end earlier blocks' shares add theirs later, with the
flags and the reduction of split-K (REDUCE: serial, in turn — turn t is the part whose block starts t blocks before
part 0's — or atomic). STREAM_K = 2 streams every unit; STREAM_K = 1 is the hybrid: whole waves of G units run
data-parallel (one block per tile, no fix-up) and only the last whole wave with the partial one after it is streamed
(so each block still has at least one tile's worth of iterations); a whole number of waves is all data-parallel.
The fix-up goes through C itself, as split-K's does: no workspace. It cannot deadlock: the blocks are all resident,
a part waits only for parts of its tile in blocks of higher index, and every block's first streamed item is a part 0
or a tile of its own, which waits for nothing. The traffic model counts C once per part: the tiles plus at most one
more part per block boundary inside a tile (MODELLED_SMS blocks, as the model has no device), and with atomic
additions once more per tile of several parts (part 0's zeros).
"""

from __future__ import annotations

from collections.abc import Callable

from tuner.config import DTYPE_BYTES, Problem
from tuner.kernels.family import Constraint, Family, Parameter, Params, ceil_div
from tuner.kernels.tensor_maps import TensorMap
from tuner.precision import rounds_output

SWIZZLE_BYTES = 128
"""The swizzle span: one row of a box, and of a k-slice of A (BK·element size)."""
SLAB = 64
"""Rows of one wgmma (its M)."""
ALIGNMENT_SLACK = 1024
"""Dynamic shared memory beyond the stages: their base is rounded up to the swizzle's 1024-byte period."""
MAX_WGMMA_N = 256
REGISTERS_PER_SM = 65536
PRODUCER_REGISTERS = 40
CONSUMER_REGISTERS = 232
"""Registers per thread after ``setmaxnreg``: 128·40 + 256·232 fits the SM's 65536 registers."""
REGISTERS_BESIDE_ACCUMULATORS = 40
"""Descriptors, addresses, indices and loop state beside the accumulators (ptxas reports of this template)."""
TF32_FRAGMENT_REGISTERS = 16
"""tf32 only: one stage's A fragments per 64-row slab (4 k-steps × 4 registers)."""
SPLIT_K_REGISTERS = 16
"""16-bit dtypes with split-K or stream-K reduced in turn: the reduction's addresses, loaded values and turn (ptxas:
16-19 more). Reduced with atomic additions, which load nothing, none: ptxas kept the tiles at the budget (256×192 over
two consumers with setmaxnreg, 128×256 and 256×128 over two without, 128×192 over one) free of spills."""
SPLIT_K_TF32_SLAB_REGISTERS = 28
"""tf32 with SPLIT_K > 1, per 64-row slab: Cᵀ's elements lie in rows of their own, each load an address of its own
(ptxas spilled two-slab tiles at 200 estimated registers, and kept one-slab tiles of 184 within 232)."""
MAX_SPLIT_K = 16
MAX_SPLIT_TILES = 1 << 20
"""Tiles the split-K flags cover (the template's array, 4 MiB of device memory in a module with SPLIT_K > 1)."""
STREAM_K_MODES = (0, 1, 2)
"""0: tiles (or split-K items) per block; 1: data-parallel whole waves, then stream-K; 2: stream-K throughout."""
MODELLED_SMS = 132
"""Persistent blocks the traffic model assumes for stream-K (H100 SXM and H200; the model has no device)."""


def _p(params: Params, name: str) -> int:
    return int(params[name])


def split_k(params: Params) -> int:
    """Splits of K per tile; 1 for a configuration recorded before the family had the parameter."""
    return int(params.get("SPLIT_K", 1))


def stream_k(params: Params) -> int:
    """The stream-K mode (STREAM_K_MODES); 0 for a configuration recorded before the family had the parameter."""
    return int(params.get("STREAM_K", 0))


def a_box(params: Params) -> int:
    """Rows of A one TMA copy moves: A_BOX, or (0, and configurations recorded before the parameter) the tile's BM."""
    return int(params.get("A_BOX", 0)) or _p(params, "BM")


def reduces(params: Params) -> bool:
    """Whether partial sums of a tile meet in C (split-K or stream-K)."""
    return split_k(params) > 1 or stream_k(params) > 0


def reduction(params: Params) -> str:
    """How the splits of a tile meet in C: "serial" (in turn, deterministic; the default, and the only one of
    configurations recorded before the family had the parameter) or "atomic"."""
    return str(params.get("REDUCE", "serial"))


def is_tf32(dtype: str) -> bool:
    return dtype == "tf32"


def threads(params: Params) -> int:
    return 128 * (1 + _p(params, "CONSUMERS"))


def wgmma_n(params: Params, dtype: str) -> int:
    """The N of the consumers' wgmma: the tile's columns, or for tf32 (Cᵀ) its rows."""
    return _p(params, "BM") if is_tf32(dtype) else _p(params, "BN")


def consumer_share(params: Params, dtype: str) -> int:
    """Rows (tf32: columns) of the tile one consumer warpgroup computes, in 64-row slabs."""
    split = _p(params, "BN") if is_tf32(dtype) else _p(params, "BM")
    return split // _p(params, "CONSUMERS")


def accumulators(params: Params, dtype: str) -> int:
    """Accumulator registers per consumer thread: N/2 per 64-row slab."""
    return consumer_share(params, dtype) // SLAB * wgmma_n(params, dtype) // 2


def estimated_registers(params: Params, dtype: str) -> int:
    slabs = consumer_share(params, dtype) // SLAB
    fragments = TF32_FRAGMENT_REGISTERS * slabs if is_tf32(dtype) else 0
    extra = 0
    if reduces(params) and is_tf32(dtype):
        extra = SPLIT_K_TF32_SLAB_REGISTERS * slabs
    elif reduces(params) and (reduction(params) == "serial" or dtype not in ("bfloat16", "float16")):
        extra = SPLIT_K_REGISTERS
    return accumulators(params, dtype) + fragments + REGISTERS_BESIDE_ACCUMULATORS + extra


def register_budget(params: Params) -> int:
    """Registers a consumer thread may use: what setmaxnreg grants, else an equal share of the SM's (at most 255)."""
    if _p(params, "REGALLOC"):
        return CONSUMER_REGISTERS
    return min(255, REGISTERS_PER_SM // threads(params) // 8 * 8)


def box_columns(size: int) -> int:
    """Elements in one 128-byte row of a box."""
    return SWIZZLE_BYTES // size


def stage_bytes(params: Params, size: int) -> int:
    return (_p(params, "BM") + _p(params, "BN")) * _p(params, "BK") * size


def shared_bytes(params: Params, size: int) -> int:
    return _p(params, "STAGES") * stage_bytes(params, size) + ALIGNMENT_SLACK


def tensor_maps(params: Params, size: int) -> tuple[TensorMap, ...]:
    """A in BK×A_BOX boxes (a k-slice of the tile's rows: BM of them unless A_BOX says fewer), B in boxes of one
    128-byte row × BK rows."""
    return (TensorMap("A", (_p(params, "BK"), a_box(params)), SWIZZLE_BYTES),
            TensorMap("B", (box_columns(size), _p(params, "BK")), SWIZZLE_BYTES))


def units(params: Params, problem: Problem) -> int:
    """Work units: clusters of CLUSTER tiles along M, times the tiles along N."""
    tiles_m = ceil_div(problem.M, _p(params, "BM"))
    return ceil_div(tiles_m, _p(params, "CLUSTER")) * ceil_div(problem.N, _p(params, "BN"))


def k_tiles(params: Params, problem: Problem) -> int:
    return ceil_div(problem.K, _p(params, "BK"))


def grid(params: Params, problem: Problem) -> tuple[int, int, int]:
    """One block per tile of every work item, a unit's split (a persistent launch takes as many of them as the SMs
    hold); stream-K's cells are its MAC iterations (a block takes at least one)."""
    if stream_k(params):
        return (units(params, problem) * k_tiles(params, problem), 1, 1)
    return (units(params, problem) * split_k(params) * _p(params, "CLUSTER"), 1, 1)


def _stream_k_cuts(params: Params, problem: Problem) -> list[int]:
    """Under stream-K, the streamed tile each boundary between blocks' shares falls inside (a boundary between two
    tiles cuts none): at most MODELLED_SMS − 1 of them."""
    tiles = units(params, problem) * _p(params, "CLUSTER")
    per_tile = k_tiles(params, problem)
    blocks = max(1, min(MODELLED_SMS, tiles * per_tile))   # K = 0: no iterations, one block
    partial = tiles % blocks
    streamed = tiles if stream_k(params) == 2 else 0 if partial == 0 else min(tiles, blocks + partial)
    total = streamed * per_tile
    return [b * total // blocks // per_tile for b in range(1, blocks) if b * total // blocks % per_tile]


def parts(params: Params, problem: Problem) -> int:
    """Partial sums of tiles that reach C: SPLIT_K per tile, or under stream-K the tiles plus one per boundary
    between blocks' shares that falls inside a streamed tile."""
    tiles = units(params, problem) * _p(params, "CLUSTER")
    if not stream_k(params):
        return tiles * split_k(params)
    return tiles + len(_stream_k_cuts(params, problem))


def reduced_tiles(params: Params, problem: Problem) -> int:
    """Tiles whose sum comes in more than one part."""
    if stream_k(params):
        return len(set(_stream_k_cuts(params, problem)))
    return units(params, problem) * _p(params, "CLUSTER") if split_k(params) > 1 else 0


def global_bytes(params: Params, problem: Problem, size: int) -> int:
    """Each tile row reads its rows of A once per tile column, each tile column its columns of B once per tile row
    (once per cluster from L2, but from memory once per tile either way; the parts of a tile read disjoint slices
    of K); C is written once, in float32, and each part after a tile's first reads and writes its tile again (with
    atomic additions, part 0 zeroes the tile and adds as well: once more for each tile of several parts)."""
    M, N, K = problem.M, problem.N, problem.K
    BM, BN = _p(params, "BM"), _p(params, "BN")
    tiles = units(params, problem) * _p(params, "CLUSTER")
    again = parts(params, problem) - tiles + (reduced_tiles(params, problem) if reduction(params) == "atomic" else 0)
    c_passes = 1 + 2 * again / tiles
    return (size * (M * K * ceil_div(N, BN) + K * N * ceil_div(M, BM))
            + round(DTYPE_BYTES["float32"] * M * N * c_passes))


def extra_intensities(params: Params, size: int) -> dict[str, float]:
    """FLOP per byte a block copies into shared memory, and per byte it takes from L2 when B is multicast."""
    BM, BN, cluster = _p(params, "BM"), _p(params, "BN"), _p(params, "CLUSTER")
    return {
        "block_intensity": 2 * BM * BN / ((BM + BN) * size),
        "l2_intensity": 2 * BM * BN / ((BM + BN / cluster) * size),
    }


def _positive(params: Params) -> bool:
    sizes = ("BM", "BN", "BK", "STAGES", "CONSUMERS", "CLUSTER", "GROUP")
    return all(_p(params, n) >= 1 for n in sizes) and split_k(params) >= 1


def _if_positive(check: Callable[[Params, str], bool]) -> Callable[[Params, str], bool]:
    return lambda p, d: not _positive(p) or check(p, d)


def _a_box_fits(value: int, bm: int) -> bool:
    return value == 0 or (0 < value < bm and value % 8 == 0 and bm % value == 0)


def _slabs_split(params: Params, dtype: str) -> bool:
    split = _p(params, "BN") if is_tf32(dtype) else _p(params, "BM")
    return split % (SLAB * _p(params, "CONSUMERS")) == 0


CONSTRAINTS = (
    Constraint("BM, BN, BK, STAGES, CONSUMERS, CLUSTER, GROUP and SPLIT_K ≥ 1", lambda p, d: _positive(p),
               precondition=True),
    Constraint("BK·element size = 128 bytes (BK 64 in bfloat16 and float16, 32 in tf32): a k-slice row of A is one "
               "row of the 128-byte swizzle the descriptors describe",
               lambda p, d: _p(p, "BK") * DTYPE_BYTES[d] == SWIZZLE_BYTES),
    Constraint("BM and BN multiples of 64, at most 256: whole 64-row wgmma slabs, 128-byte boxes of B, TMA boxes "
               "and wgmma's N of at most 256",
               lambda p, d: all(_p(p, n) % SLAB == 0 and _p(p, n) <= MAX_WGMMA_N for n in ("BM", "BN"))),
    Constraint("A_BOX 0 (A's rows in one copy of BM) or a multiple of 8 below BM that divides it (whole 8-row groups "
               "of the 128-byte swizzle, copies that stay in the tile)",
               _if_positive(lambda p, d: _a_box_fits(int(p.get("A_BOX", 0)), _p(p, "BM")))),
    Constraint("CONSUMERS 1 or 2 (consumer warpgroups)", lambda p, d: _p(p, "CONSUMERS") in (1, 2)),
    Constraint("each consumer warpgroup owns whole 64-row slabs: BM (tf32: BN, C is computed transposed) a "
               "multiple of 64·CONSUMERS", _if_positive(_slabs_split)),
    Constraint("the accumulators and the rest (with SPLIT_K > 1, the reduction's too) fit a consumer thread's "
               "registers: 255 with one consumer, 168 with two, 232 with setmaxnreg (REGALLOC=1)",
               _if_positive(lambda p, d: estimated_registers(p, d) <= register_budget(p))),
    Constraint("STAGES ≥ 2 (a stage fills while another is multiplied)", lambda p, d: _p(p, "STAGES") >= 2),
    Constraint("CLUSTER 1, 2 or 4 (blocks along M sharing B by multicast; portable clusters have at most 8)",
               lambda p, d: _p(p, "CLUSTER") in (1, 2, 4)),
    Constraint("PERSISTENT and REGALLOC 0 or 1",
               lambda p, d: _p(p, "PERSISTENT") in (0, 1) and _p(p, "REGALLOC") in (0, 1)),
    Constraint("REGALLOC=1 needs two consumer warpgroups (with one, each thread has 255 registers already)",
               lambda p, d: not _p(p, "REGALLOC") or _p(p, "CONSUMERS") == 2),
    Constraint(f"SPLIT_K 1 to {MAX_SPLIT_K} (splits of K per tile, added into C in turn)",
               lambda p, d: split_k(p) <= MAX_SPLIT_K),
    Constraint("REDUCE 'serial' or 'atomic', and 'serial' without split-K or stream-K (nothing to reduce)",
               lambda p, d: reduction(p) in ("serial", "atomic") and (reduces(p) or reduction(p) == "serial")),
    Constraint("SPLIT_K 1 and STREAM_K 0 where C is written in 16 bits (an _out_ dtype): the parts add their partial "
               "sums in C, which would round each of them to 16 bits",
               lambda p, d: not reduces(p) or not rounds_output(d)),
    Constraint("STREAM_K 0, 1 (data-parallel whole waves, then stream-K) or 2 (stream-K throughout), and stream-K only "
               "on persistent blocks (PERSISTENT=1) without clusters (CLUSTER=1) or split-K (SPLIT_K=1)",
               lambda p, d: stream_k(p) in STREAM_K_MODES and (not stream_k(p) or (
                   _p(p, "PERSISTENT") == 1 and _p(p, "CLUSTER") == 1 and split_k(p) == 1))),
)

FAMILY = Family(
    name="wgmma",
    description="Hopper TMA + wgmma: a producer warpgroup, consumer warpgroups, mbarrier stages, clusters",
    parameters=(
        Parameter("BM", "rows of C per block tile (multiple of 64)", (128,)),
        Parameter("BN", "columns of C per block tile (multiple of 64; the wgmma's N for 16-bit dtypes)", (128, 256)),
        Parameter("BK", "depth of a slice: 128 bytes of A's row (64 for 16-bit dtypes, 32 for tf32)", (32, 64)),
        Parameter("STAGES", "shared-memory stages the producer fills ahead", (4,)),
        Parameter("CONSUMERS", "consumer warpgroups (each owns BM/CONSUMERS rows; tf32: BN/CONSUMERS columns)", (2,)),
        Parameter("CLUSTER", "blocks of a cluster along M, sharing B through TMA multicast (1: no cluster)", (1, 2)),
        Parameter("PERSISTENT", "1: one block per SM walking the tiles; 0: one block per tile (cluster of tiles)",
                  (0, 1)),
        Parameter("GROUP", "raster: units (clusters of tiles) along M taken together, column by column", (8,)),
        Parameter("REGALLOC", "1: setmaxnreg moves registers from the producer (40) to the consumers (232)", (1,)),
        Parameter("SPLIT_K", "splits of K per tile, run at once and added into C (1: no split)", (1,)),
        Parameter("REDUCE", "how a tile's parts meet in C: 'serial' (in turn, deterministic) or 'atomic' (part 0 "
                  "stores, the others add at once)", ("serial",), pattern="serial|atomic"),
        Parameter("STREAM_K", "persistent blocks share k-tiles evenly: 0 off, 1 the last waves only (hybrid), 2 all",
                  (0,)),
        Parameter("A_BOX", "rows of A per TMA copy, as many copies as reach into A (0: one copy of BM rows); a "
                  "decode tile of M = 1 then copies 8 rows, not BM", (0,)),
    ),
    dtypes=("bfloat16", "float16", "tf32", "bfloat16_out_bfloat16", "float16_out_float16"),
    arch="sm_90a",
    block=lambda p: (threads(p), 1, 1),
    grid=grid,
    cluster=lambda p: (_p(p, "CLUSTER"), 1, 1),
    tensor_maps=tensor_maps,
    resident_blocks=lambda p: 1 if _p(p, "PERSISTENT") else 0,
    shared_bytes=shared_bytes,
    dynamic_shared=True,
    global_bytes=global_bytes,
    extra_intensities=extra_intensities,
    constraints=CONSTRAINTS,
)
