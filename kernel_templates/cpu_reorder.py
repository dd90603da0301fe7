"""The reordered C loop nest (i, k, j): a row of C accumulates rows of B scaled by the elements of A.

The inner loop walks rows of B and C with unit stride, so it vectorizes; the row of C stays in cache across k.
B still moves from memory once per row of C: s·(M·K + M·K·N + M·N) bytes, as in the naive nest.
"""

from tuner.kernels.blocking import row_streaming_bytes
from tuner.kernels.family import Constraint, Family, Parameter

FAMILY = Family(
    name="cpu_reorder",
    description="C loop nest i, k, j: rows of B scaled and added to a row of C, unit stride, vectorized",
    parameters=(Parameter("PARALLEL", "1: OpenMP threads share the rows of C", (0, 1)),),
    constraints=(Constraint("PARALLEL is 0 or 1", lambda p, dtype: p["PARALLEL"] in (0, 1)),),
    target="c",
    dtypes=("float32", "float64"),
    global_bytes=lambda p, problem, size: row_streaming_bytes(problem, size),
)
