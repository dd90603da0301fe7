"""Matrix transpose, B (N×M) = Aᵀ with A (M×N) row-major: a kernel that only moves data.

Two variants. ``naive`` reads rows of A and writes columns of B: every thread of a warp writes its own 32-byte
sector, so the writes move 32 bytes for each element of 4 (float32) or 8 (float64). ``tiled`` stages a TILE×TILE
tile in shared memory so that reads and writes both go along rows; without padding, the threads of a warp
reading a column of the tile hit one shared-memory bank (a 32-way conflict for float32), and one padding element
per row spreads them over all banks. The compulsory traffic is one read and one write of each element.
"""

from tuner.config import Problem
from tuner.kernels.arguments import Buffer, Scalar
from tuner.kernels.family import Constraint, Family, Parameter, Params, ceil_div
from tuner.kernels.verify import Full, Tolerance

SECTOR_BYTES = 32


def _tile(params: Params) -> int:
    return int(params["TILE"])


def global_bytes(params: Params, problem: Problem, size: int) -> int:
    elements = problem.M * problem.N
    if params["VARIANT"] == "tiled":
        return 2 * elements * size
    return elements * size + elements * max(size, SECTOR_BYTES)  # every element written alone in a sector


def reference(inputs, problem, seed):
    return {"B": Full(inputs["A"].astype("float64").T)}


FAMILY = Family(
    name="transpose",
    description="B = Aᵀ, naive (uncoalesced writes) or through a shared-memory tile (padded against bank conflicts)",
    kernel_name="transpose",
    dims=("M", "N"),
    arguments=(
        Buffer("A", lambda p: (p.M, p.N)),
        Buffer("B", lambda p: (p.N, p.M), intent="out"),
        Scalar("M", lambda p: p.M),
        Scalar("N", lambda p: p.N),
    ),
    reference=reference,
    tolerance=lambda dtype, problem: Tolerance(0.0, "an exact copy"),
    flops=lambda problem: 0,
    compulsory_bytes=lambda problem, size: 2 * problem.M * problem.N * size,
    baseline=None,
    parameters=(
        Parameter("VARIANT", "naive: uncoalesced writes; tiled: through shared memory", ("naive", "tiled")),
        Parameter("TILE", "edge of the square tile a block handles", (32,)),
        Parameter("BLOCK_ROWS", "rows of threads; each walks TILE/BLOCK_ROWS rows of the tile", (8,)),
        Parameter("PAD", "one padding element per shared-memory row (tiled only)", (False, True)),
    ),
    constraints=(
        Constraint("TILE and BLOCK_ROWS ≥ 1", lambda p, d: _tile(p) >= 1 and int(p["BLOCK_ROWS"]) >= 1),
        Constraint("BLOCK_ROWS divides TILE",
                   lambda p, d: int(p["BLOCK_ROWS"]) < 1 or _tile(p) % int(p["BLOCK_ROWS"]) == 0),
        Constraint("PAD only with the tiled variant", lambda p, d: p["VARIANT"] == "tiled" or not p["PAD"]),
    ),
    dtypes=("float32", "float64"),
    block=lambda p: (_tile(p), int(p["BLOCK_ROWS"]), 1),
    grid=lambda p, problem: (ceil_div(problem.N, _tile(p)), ceil_div(problem.M, _tile(p)), 1),
    shared_bytes=lambda p, size: _tile(p) * (_tile(p) + int(bool(p["PAD"]))) * size if p["VARIANT"] == "tiled"
    else 0,
    global_bytes=global_bytes,
)
