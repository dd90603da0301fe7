"""Blocking with packed panels and a register micro-kernel (the layout of GotoBLAS and BLIS).

Loops jc (NC) → pc (KC) → ic (MC) → jr (NR) → ir (MR). Each KC×NC block of B is copied into slivers of NR
columns (zero-padded at the edge) meant to stay in the last-level cache, each MC×KC block of A into slivers of MR
rows meant for L2, and a KC×NR sliver of B is reused from L1 by all MC/MR slivers of A. The micro-kernel keeps an
MR×NR tile of C in vector registers (GCC vector extensions; the widest vector that divides a row of the tile)
and adds one outer product of MR values of A and NR values of B per step of k: 2·MR·NR FLOPs per MR + NR loads.
DRAM traffic is ``tuner.kernels.blocking.blocked_bytes``, as for the plain blocking.
"""

from tuner.kernels.blocking import block_intensity, blocked_bytes
from tuner.kernels.family import Constraint, Family, Parameter, Params

VECTOR_BYTES = 16
"""A row of the register tile is a whole number of these (the narrowest vector the template uses)."""
ACCUMULATOR_BYTES = 14 * 32
"""The register tile fits in 14 of the 16 AVX registers of 32 bytes, leaving room for a row of B and an A value."""


def _p(params: Params, name: str) -> int:
    return int(params[name])


def _blocks(p: Params) -> tuple[int, int, int]:
    return _p(p, "MC"), _p(p, "NC"), _p(p, "KC")


NAMES = ("MC", "NC", "KC", "MR", "NR", "KU")

FAMILY = Family(
    name="cpu_packed",
    description="packed A and B panels, MC×NC×KC cache blocks, an MR×NR register micro-kernel (vectorized)",
    parameters=(
        Parameter("MC", "rows of a block of A (packed, meant for L2)", (96, 192)),
        Parameter("NC", "columns of a block of B (packed, meant for the last-level cache)", (1536, 3072)),
        Parameter("KC", "depth of the blocks of A and B", (256,)),
        Parameter("MR", "rows of the register tile of C", (4, 6)),
        Parameter("NR", "columns of the register tile of C", (8, 12)),
        Parameter("KU", "unroll factor of the micro-kernel's loop over k", (4,)),
        Parameter("PARALLEL", "OpenMP threads share: 0 nothing (one thread), 1 the MC-row blocks (each packs its own "
                  "block of A), 2 the NR-column slivers of each block", (0, 1)),
    ),
    constraints=(
        Constraint("MC, NC, KC, MR, NR and KU are at least 1", lambda p, dtype: min(_p(p, n) for n in NAMES) >= 1,
                   precondition=True),
        Constraint("MC is a multiple of MR (a block of A is whole slivers)",
                   lambda p, dtype: _p(p, "MC") % max(_p(p, "MR"), 1) == 0),
        Constraint("NC is a multiple of NR (a block of B is whole slivers)",
                   lambda p, dtype: _p(p, "NC") % max(_p(p, "NR"), 1) == 0),
        Constraint(f"a row of the register tile (NR elements) is a whole number of {VECTOR_BYTES}-byte vectors",
                   lambda p, dtype: _p(p, "NR") * (8 if dtype == "float64" else 4) % VECTOR_BYTES == 0),
        Constraint(f"the MR×NR register tile takes at most {ACCUMULATOR_BYTES} bytes (14 AVX registers)",
                   lambda p, dtype: _p(p, "MR") * _p(p, "NR") * (8 if dtype == "float64" else 4)
                   <= ACCUMULATOR_BYTES),
        Constraint("PARALLEL is 0, 1 or 2", lambda p, dtype: p["PARALLEL"] in (0, 1, 2)),
    ),
    target="c",
    dtypes=("float32", "float64"),
    global_bytes=lambda p, problem, size: blocked_bytes(problem, size, *_blocks(p)),
    extra_intensities=lambda p, size: {
        "block_intensity": block_intensity(*_blocks(p), size),
        "register_intensity": 2 * _p(p, "MR") * _p(p, "NR") / (size * (_p(p, "MR") + _p(p, "NR"))),
    },
    working_sets=lambda p, size: {
        "register tile of C (MR×NR)": _p(p, "MR") * _p(p, "NR") * size,
        "sliver of B (KC×NR)": _p(p, "KC") * _p(p, "NR") * size,
        "block of A (MC×KC)": _p(p, "MC") * _p(p, "KC") * size,
        "block of B (KC×NC)": _p(p, "KC") * _p(p, "NC") * size,
    },
)
