"""The kernel-table benchmark's measurements of a built table on the GPU: each tuned shape predicted from the
others against its own entry, the host overhead of a call, the model's forward in a CUDA graph, and the model end
to end with ``torch.matmul`` and with the table. PyTorch is imported inside the functions."""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

from benchmarks.table_timing import gpu_median_ms, graph_replay, host_us_per_call, relative_error
from tuner.names.key_text import pairs_text
from tuner.table.artifact import KernelTable

OVERHEAD_SHAPE = (64, 64, 64)
OVERHEAD_CALLS = 10_000


def _operands(M: int, N: int, K: int) -> tuple[Any, Any, Any]:
    import torch

    a = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(K, N, device="cuda", dtype=torch.bfloat16) * K ** -0.5
    return a, b, torch.empty(M, N, device="cuda", dtype=torch.bfloat16)


def predicted_config(table: KernelTable, M: int, N: int, K: int, dtype: str) -> str | None:
    """The configuration a call of the shape runs with its own entry left out, in words (None where none is
    valid): the route of ``TableMatmul(table, …, exclude=((M, N, K),))``."""
    from tuner.config import Problem
    from tuner.table.routing import route

    problem = Problem(M, N, K)
    found = route(table, problem, dtype, exclude=(problem,))
    if found.config is None:
        return None
    return f"{found.config.family} {pairs_text(found.config.params)} ({found.reason.removeprefix('predicted: ')})"


def held_out(table_dir: Path, dtype: str) -> list[dict[str, Any]]:
    """For each tuned shape of ``dtype``: the table's own entry and, with that entry left out, the prediction from
    the others, each timed by CUDA events in this process (and torch.matmul beside them)."""
    import torch

    from tuner import load_table
    from tuner.table import call
    from tuner.table.artifact import read_table

    table = read_table(table_dir)
    full = load_table(table_dir)
    rows = []
    for entry in (e for e in table.entries if e.dtype == dtype):
        M, N, K = entry.M, entry.N, entry.K
        a, b, c = _operands(M, N, K)
        without = call.TableMatmul(table, table_dir, exclude=((M, N, K),))
        route = without.route(M, N, K, dtype)
        own_ms = gpu_median_ms(lambda: full.matmul(a, b, out=c))  # noqa: B023 - timed before the next shape
        predicted_ms = gpu_median_ms(lambda: without.matmul(a, b, out=c))  # noqa: B023
        torch_ms = gpu_median_ms(lambda: torch.matmul(a, b, out=c))  # noqa: B023
        share = own_ms / predicted_ms if route == "predicted" else None
        rows.append({"shape": entry.problem.label, "route": route, "own_ms": own_ms, "predicted_ms": predicted_ms,
                     "torch_ms": torch_ms, "share": share, "own_config": f"{entry.family} "
                     f"{pairs_text(tuple(sorted(entry.params.items())))}",
                     "predicted_config": predicted_config(table, M, N, K, dtype)})
        print(f"held out {entry.problem.label}: {route}, share {share if share is None else round(share, 3)}",
              file=sys.stderr)
    return rows


def host_overhead(table: Any, dtype: str) -> dict[str, Any]:
    """Wall time a call of ``table.matmul`` and of ``torch.matmul`` at OVERHEAD_SHAPE, over OVERHEAD_CALLS calls."""
    import torch

    M, N, K = OVERHEAD_SHAPE
    a, b, _ = _operands(M, N, K)
    table_us = host_us_per_call(lambda: table.matmul(a, b), OVERHEAD_CALLS)
    torch_us = host_us_per_call(lambda: torch.matmul(a, b), OVERHEAD_CALLS)
    return {"shape": f"{M}x{N}x{K}", "calls": OVERHEAD_CALLS, "route": table.route(M, N, K, dtype),
            "table_us": table_us, "torch_us": torch_us, "difference_us": table_us - torch_us}


def _reference(model: Any) -> Any:
    """A float32 copy of the model, its products in full float32 (no TF32)."""
    import torch

    reference = copy.deepcopy(model).float()
    reference.matmul = torch.matmul
    return reference


def end_to_end(model: Any, table: Any, tokens: int, bound: float) -> dict[str, Any]:
    """The model's forward at ``tokens`` with torch.matmul and with the table (median CUDA-event times), both
    outputs' relative error against the float32 model, and whether the table's is within ``bound``."""
    import torch

    x = torch.randn(tokens, model.layers[0].q.weight.shape[0], device="cuda", dtype=torch.bfloat16)
    with torch.no_grad():
        model.matmul = torch.matmul
        torch_ms = gpu_median_ms(lambda: model(x))
        torch_out = model(x)
        model.matmul = table.matmul
        table_ms = gpu_median_ms(lambda: model(x))
        table_out = model(x)
        model.matmul = torch.matmul
        allowed = torch.backends.cuda.matmul.allow_tf32
        torch.backends.cuda.matmul.allow_tf32 = False
        try:
            reference = _reference(model)(x.float())
        finally:
            torch.backends.cuda.matmul.allow_tf32 = allowed
    table_error, torch_error = relative_error(table_out, reference), relative_error(torch_out, reference)
    del reference
    torch.cuda.empty_cache()
    return {"tokens": tokens, "torch_ms": torch_ms, "table_ms": table_ms, "ratio": torch_ms / table_ms,
            "table_error": table_error, "torch_error": torch_error, "bound": bound,
            "within_bound": table_error <= bound}


def graph_capture(model: Any, table: Any, tokens: int) -> dict[str, Any]:
    """The model's forward with the table's matmul captured in a CUDA graph and replayed, against eager."""
    import torch

    x = torch.randn(tokens, model.layers[0].q.weight.shape[0], device="cuda", dtype=torch.bfloat16)
    model.matmul = table.matmul
    try:
        with torch.no_grad():
            return {"tokens": tokens, **graph_replay(lambda: model(x))}
    finally:
        model.matmul = torch.matmul
