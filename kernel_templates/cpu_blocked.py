"""Cache blocking (MC, NC, KC) of the reordered loop nest: jc → pc → ic, then i, k, j inside the block.

A KC×NC block of B is reused by every row of the MC-row blocks below it, a row segment of C (NC elements) by
every k of the block. Traffic between DRAM and the cache is ``tuner.kernels.blocking.blocked_bytes``.
"""

from tuner.kernels.blocking import block_intensity, blocked_bytes
from tuner.kernels.family import Constraint, Family, Parameter, Params


def _blocks(p: Params) -> tuple[int, int, int]:
    return int(p["MC"]), int(p["NC"]), int(p["KC"])


FAMILY = Family(
    name="cpu_blocked",
    description="C loop nest blocked MC×NC×KC for the caches (jc, pc, ic), then i, k, j inside a block",
    parameters=(
        Parameter("MC", "rows of C per block", (64, 256)),
        Parameter("NC", "columns of C per block (a row of the block of B)", (256, 1024)),
        Parameter("KC", "depth of a block (rows of the block of B)", (64, 256)),
        Parameter("PARALLEL", "1: OpenMP threads share the MC-row blocks", (0, 1)),
    ),
    constraints=(
        Constraint("MC, NC and KC are at least 1", lambda p, dtype: min(_blocks(p)) >= 1,
                   precondition=True),
        Constraint("PARALLEL is 0 or 1", lambda p, dtype: p["PARALLEL"] in (0, 1)),
    ),
    target="c",
    dtypes=("float32", "float64"),
    global_bytes=lambda p, problem, size: blocked_bytes(problem, size, *_blocks(p)),
    extra_intensities=lambda p, size: {"block_intensity": block_intensity(*_blocks(p), size)},
    working_sets=lambda p, size: {
        "row of C (NC)": int(p["NC"]) * size,
        "block of B (KC×NC)": int(p["KC"]) * int(p["NC"]) * size,
        "block of A (MC×KC)": int(p["MC"]) * int(p["KC"]) * size,
    },
)
