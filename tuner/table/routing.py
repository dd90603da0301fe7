"""Which kernel a call of the table's matmul runs: the table dtype its arrays' element types ask for, then the
shape's own entry, else the configuration predicted from the table's other entries, else the caller's library
(cuBLAS) with the reason. Pure logic: nothing here touches a GPU."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Literal

from tuner.config import DTYPE_BYTES, Config, Problem
from tuner.kernels.arguments import Buffer
from tuner.kernels.discovery import UnknownFamily, get_family
from tuner.table.artifact import Entry, KernelTable
from tuner.table.lookup import table_candidates
from tuner.table.predict import Candidate, predict

CALL_SCALARS = ("M", "N", "K", "scale_a", "scale_b")
"""The scalars a call can pass: the sizes, and an FP8 product's per-tensor scales."""
FP8_STORAGE = {"float8_e4m3fn": "float8_e4m3", "float8_e5m2": "float8_e5m2"}
SIXTEEN_BITS = ("bfloat16", "float16")


def table_dtype(a: str, b: str, out: str | None, tf32: bool = False) -> str | None:
    """The table dtype of a product of ``a`` by ``b`` elements written as ``out`` (None: the caller's library's
    default, the inputs' own type, bfloat16 for FP8), or None where the table has no such dtype."""
    if a in FP8_STORAGE and b in FP8_STORAGE:
        inputs = FP8_STORAGE[a] if a == b else f"{FP8_STORAGE[a]}_{FP8_STORAGE[b].removeprefix('float8_')}"
        written = out or "bfloat16"
        name = inputs if written == "float32" else f"{inputs}_out_{written}"
    elif a != b:
        return None
    elif a in SIXTEEN_BITS:
        written = out or a
        name = a if written == "float32" else f"{a}_out_{written}"
    elif a in ("float32", "float64"):
        name = "tf32" if a == "float32" and tf32 else a
        if (out or a) != a:
            return None
    else:
        return None
    return name if name in DTYPE_BYTES else None


@dataclass(frozen=True)
class Route:
    kind: Literal["exact", "predicted", "fallback"]
    config: Config | None
    reason: str


def callable_family(config: Config) -> str | None:
    """Why a call cannot pass the family's arguments (buffers other than A, B, C; scalars other than the sizes and
    per-tensor scales), or None."""
    try:
        family = get_family(config.family)
    except UnknownFamily as exc:
        return str(exc)
    if family.target != "cuda":
        return f"the family '{family.name}' is a C function for the CPU"
    extra = [a.name for a in family.arguments
             if (a.name not in "ABC" if isinstance(a, Buffer) else a.name not in CALL_SCALARS)]
    return (f"the family '{family.name}' takes {', '.join(extra)}, which a call does not pass" if extra else None)


def route(table: KernelTable, problem: Problem, dtype: str, exclude: Collection[Problem] = ()) -> Route:
    """Where (``problem``, ``dtype``) goes; shapes in ``exclude`` are treated as never tuned (held out)."""
    exact = table.entry(problem, dtype) if problem not in exclude else None
    if exact is not None:
        config = Config.make(problem, exact.family, dtype, exact.params)
        why = callable_family(config)
        if why is None:
            return Route("exact", config, f"tuned on this shape ({exact.time_median_ms:.4g} ms on "
                                          f"{exact.device_name})")
    pool = table_candidates(e for e in table.entries if e.problem not in exclude and e.problem != problem)
    found = predict(_callable(pool), problem, dtype)
    if found is not None:
        return Route("predicted", found.config, f"predicted: {found.reason}")
    held = sum(e.dtype == dtype for e in table.entries)
    why = f"the table holds no {dtype} configuration a call can run on {problem.label} ({held} {dtype} entries)"
    return Route("fallback", None, why)


def _callable(candidates: list[Candidate]) -> list[Candidate]:
    return [c for c in candidates if callable_family(c.config) is None]


def entry_of(table: KernelTable, config: Config) -> Entry | None:
    """The table's entry measured for exactly this configuration on its shape, if any."""
    entry = table.entry(config.problem, config.dtype)
    return entry if entry is not None and entry.family == config.family and dict(entry.params) == config.param_dict \
        else None


def b_transposed(config: Config) -> bool:
    """Whether the family stores B as N×K (K-major, as FP8 tensor cores read it) rather than K×N."""
    b = next(x for x in get_family(config.family).buffers if x.name == "B")
    return b.shape(Problem(2, 3, 5)) == (3, 5)


def layout_refusal(transposed_b: bool, a_row_major: bool, b_row_major: bool, b_column_major: bool,
                   c_row_major: bool) -> str | None:
    """Why the arrays' layouts do not fit a kernel's buffers (A and C row-major; B row-major K×N, or where the
    family stores B as N×K, a K×N view of a row-major N×K matrix), or None."""
    if not a_row_major or not c_row_major:
        return "A and the result must be row-major and contiguous"
    if transposed_b and not b_column_major:
        return ("this kernel reads B as N×K row-major: pass b as a K×N view of it (b = bt.t() in PyTorch, "
                "bt.T in CuPy)")
    if not transposed_b and not b_row_major:
        return "B must be row-major K×N and contiguous"
    return None
