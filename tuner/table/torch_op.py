"""The table's matmul as the PyTorch custom op ``tuner::table_matmul``, so that ``torch.compile`` keeps the call
whole (an opaque node of the graph) instead of tracing into the driver calls. The op names its table by a number
kept here, since an op's arguments are tensors and plain values; tables are registered, and the op defined, when
they are made in a process that has imported PyTorch (never while a graph is traced)."""

from __future__ import annotations

import functools
from typing import Any

_TABLES: dict[int, Any] = {}
OP_NAMESPACE = "tuner"


def register(table: Any) -> None:
    """Make ``table`` callable through the op (defining the op the first time)."""
    _op()
    _TABLES[id(table)] = table


def table_matmul(table: Any, a: Any, b: Any) -> Any:
    """``table.matmul(a, b)`` through the custom op."""
    import torch

    if id(table) not in _TABLES:
        raise RuntimeError("this kernel table was loaded before PyTorch was imported, so torch.compile cannot call "
                           "it: load it after `import torch`")
    return getattr(torch.ops, OP_NAMESPACE).table_matmul(a, b, id(table))


@functools.cache
def _op() -> Any:
    import torch

    @torch.library.custom_op(f"{OP_NAMESPACE}::table_matmul", mutates_args=(),
                             schema="(Tensor a, Tensor b, int table) -> Tensor")
    def op(a: torch.Tensor, b: torch.Tensor, table: int) -> torch.Tensor:
        return _TABLES[table].run(a, b, None)

    @op.register_fake
    def _(a: torch.Tensor, b: torch.Tensor, table: int) -> torch.Tensor:
        fp8 = a.dtype in (torch.float8_e4m3fn, torch.float8_e5m2)
        return a.new_empty((a.shape[0], b.shape[1]), dtype=torch.bfloat16 if fp8 else a.dtype)

    return op
