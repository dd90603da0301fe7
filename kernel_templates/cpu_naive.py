"""The naive C loop nest (i, j, k): one dot product per element of C, B read down its columns.

Each row of A stays in cache while its dot products run, but B is walked column by column with a stride of
N elements, so it moves from memory once per row of C: s·(M·K + M·K·N + M·N) bytes, 1/s FLOP per byte.
"""

from tuner.kernels.blocking import row_streaming_bytes
from tuner.kernels.family import Constraint, Family, Parameter

FAMILY = Family(
    name="cpu_naive",
    description="C loop nest i, j, k: a dot product per element of C, B read along its columns",
    parameters=(Parameter("PARALLEL", "1: OpenMP threads share the rows of C", (0, 1)),),
    constraints=(Constraint("PARALLEL is 0 or 1", lambda p, dtype: p["PARALLEL"] in (0, 1)),),
    target="c",
    dtypes=("float32", "float64"),
    global_bytes=lambda p, problem, size: row_streaming_bytes(problem, size),
)
