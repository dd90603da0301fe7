"""A workload recorded from a PyTorch program: ``with recording() as record:`` around a block of PyTorch code
collects the shapes of the matrix products it runs — ``aten.mm``, ``aten.addmm``, ``aten.bmm`` and ``aten.baddbmm``,
which ``torch.matmul``, ``nn.Linear`` and ``F.linear`` come down to — with the number of calls of each (a batched
product of B matrices is B calls of one shape), and ``record.write(path)`` writes them as a workload file.

Each input dtype is the table's dtype of that product: bfloat16 → ``bfloat16_out_bfloat16``, float16 →
``float16_out_float16``, float32 → ``float32``, or ``tf32`` where ``torch.backends.cuda.matmul.allow_tf32`` is set
when it runs; products in other dtypes are counted in ``record.skipped``. PyTorch is imported only when recording."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuner.table.arrays import TORCH_STORAGE
from tuner.table.routing import table_dtype as call_dtype
from tuner.table.workload import Shape, workload_text

RECORDED_STORAGE = ("bfloat16", "float16", "float32")
"""The inputs' element types whose products are recorded (those the tensor-core and float32 tables take)."""
OPERANDS = {"mm": 0, "addmm": 1, "bmm": 0, "baddbmm": 1}
"""Each recorded operator, by name, with the position of A among its arguments (B follows it)."""


def table_dtype(storage: str | None, tf32: bool) -> str | None:
    """The table dtype a call of the table's matmul asks for with two inputs of ``storage`` elements and the
    result in the library's own type (:func:`tuner.table.routing.table_dtype`); None for one not recorded."""
    return call_dtype(storage, storage, None, tf32) if storage in RECORDED_STORAGE else None


@dataclass
class Recording:
    """The shapes a block of PyTorch code multiplied, in the order they first ran, with their calls."""

    calls: dict[Shape, int] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)
    """Calls in dtypes no table takes, by the PyTorch dtype's name."""

    @property
    def shapes(self) -> list[Shape]:
        return list(self.calls)

    def add(self, a: Sequence[int], b: Sequence[int], torch_dtype: str, tf32: bool) -> None:
        """One product of A of sizes ``a`` (M×K, or B×M×K for B batches) by B of sizes ``b`` (…×K×N)."""
        dtype = self.dtype_or_skip(torch_dtype, TORCH_STORAGE.get(torch_dtype), tf32)
        if dtype is not None:
            self.count(Shape(int(a[-2]), int(b[-1]), int(a[-1]), dtype), int(a[0]) if len(a) == 3 else 1)

    def dtype_or_skip(self, type_name: str, storage: str | None, tf32: bool) -> str | None:
        """The table dtype of a product of inputs of ``storage``; None, the call counted as skipped under its
        type's ``type_name``, where none is recorded."""
        dtype = table_dtype(storage, tf32)
        if dtype is None:
            self.skipped[type_name] = self.skipped.get(type_name, 0) + 1
        return dtype

    def count(self, shape: Shape, batches: int) -> None:
        """``batches`` calls of ``shape`` (none where the product is empty)."""
        if min(shape.M, shape.N, shape.K, batches) > 0:
            self.calls[shape] = self.calls.get(shape, 0) + batches

    def write(self, path: str | Path) -> Path:
        """The workload file (JSON, with the calls), replaced atomically."""
        from tuner import atomic_file

        path = Path(path)
        atomic_file.write_text(path, workload_text(self.calls))
        return path


@contextmanager
def recording() -> Iterator[Recording]:
    """Record the matrix products the block runs (they run as they would without it) into the Recording given."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    record = Recording()
    operands = {getattr(torch.ops.aten, name): first for name, first in OPERANDS.items()}
    settings = torch.backends.cuda.matmul

    class _RecordMatmuls(TorchDispatchMode):
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            first = operands.get(func.overloadpacket)
            if first is not None and len(args) >= first + 2:
                a, b = args[first], args[first + 1]
                record.add(tuple(a.shape), tuple(b.shape), str(a.dtype), bool(settings.allow_tf32))
            return func(*args, **(kwargs or {}))

    with _RecordMatmuls():
        yield record
