"""Calling a kernel table from PyTorch, CuPy or any DLPack / ``__cuda_array_interface__`` array::

    table = tuner.load_table("tables/llama")
    c = table.matmul(a, b)          # a: M×K, b: K×N, on the GPU; c: M×N in the inputs' type

A call checks the arrays (device, element types, shapes, layouts), finds the table dtype they ask for, and runs
the shape's own entry, else the configuration predicted from the table's entries (never measured at call time),
on the caller's current stream in the caller's context; each kernel is loaded once per context. A call no table
kernel can take goes to the caller's library (cuBLAS) and says why, once per shape. Inside ``torch.compile`` the
call is the custom op ``tuner::table_matmul``."""

from __future__ import annotations

import functools
import sys
import warnings
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuner.config import Problem
from tuner.table.arrays import (
    ArrayRefused,
    empty_like_result,
    is_torch,
    stream_of,
    torch_key,
    vendor_matmul,
    view,
    view_key,
)
from tuner.table.artifact import KernelTable, read_table
from tuner.table.loaded import LoadedKernel, arch_for, cubin_for, load_kernel
from tuner.table.routing import Route, entry_of, layout_refusal, route, table_dtype

TMA_ALIGNMENT = 16
OTHER_GPU = ("warn", "refuse", "ignore")


@dataclass(frozen=True)
class Plan:
    """What every call with the same arrays' shapes, strides, element types and device does."""

    device: int
    library: str
    rows: int
    columns: int
    said: tuple[Any, ...]
    """The shape and dtype, for a fallback's warning (once per shape)."""
    kernel: LoadedKernel | None = None
    """None: the caller's library's matmul, for ``reason``."""
    reason: str = ""
    context: int = 0
    stream: Callable[[], int] = lambda: 0


class OtherGpuWarning(RuntimeWarning):
    """The table was tuned on another GPU model: its kernels are correct here, their choice was measured there."""


@dataclass
class TableMatmul:
    table: KernelTable
    folder: Path
    exclude: Collection[tuple[int, int, int]] = ()
    """Shapes (M, N, K) treated as never tuned: predicted from the others (held-out measurement)."""
    other_gpu: str = "warn"
    """On a GPU model the table was not tuned on: ``warn`` once, ``refuse`` (every call to the fallback), or
    ``ignore``."""
    tf32: bool = False
    """Multiply float32 arrays with the table's ``tf32`` entries."""
    _routes: dict[tuple[int, int, int, str], Route] = field(default_factory=dict)
    _plans: dict[tuple[Any, ...], Plan] = field(default_factory=dict)
    _loaded: dict[tuple[int, Any], LoadedKernel] = field(default_factory=dict)
    _devices: dict[int, Any] = field(default_factory=dict)
    _said: set[tuple[Any, ...]] = field(default_factory=set)

    def __post_init__(self) -> None:
        if self.other_gpu not in OTHER_GPU:
            raise ValueError(f"other_gpu={self.other_gpu!r}: expected one of {', '.join(OTHER_GPU)}")
        self._excluded = frozenset(Problem(*shape) for shape in self.exclude)
        if "torch" in sys.modules:
            from tuner.table.torch_op import register

            register(self)

    def route(self, M: int, N: int, K: int, dtype: str) -> str:
        """``exact``, ``predicted`` or ``fallback``: where a call of this shape and table dtype goes."""
        return self._route(M, N, K, dtype).kind

    def explain(self, M: int, N: int, K: int, dtype: str) -> str:
        """Where a call goes, with the configuration and the reason."""
        found = self._route(M, N, K, dtype)
        config = f" {found.config.family} {found.config.param_dict}" if found.config else ""
        return f"{found.kind}{config}: {found.reason}"

    def _route(self, M: int, N: int, K: int, dtype: str) -> Route:
        key = (M, N, K, dtype)
        if key not in self._routes:
            self._routes[key] = route(self.table, Problem(M, N, K), dtype, self._excluded)
        return self._routes[key]

    def matmul(self, a: Any, b: Any, out: Any = None, *, scale_a: float = 1.0, scale_b: float = 1.0) -> Any:
        """``a @ b`` (times ``scale_a·scale_b`` for FP8 inputs) into ``out`` or a new array of ``a``'s library."""
        if type(a).__module__.startswith("torch") and out is None and scale_a == scale_b == 1.0:
            import torch

            if torch.compiler.is_compiling():
                from tuner.table.torch_op import table_matmul

                return table_matmul(self, a, b)
        return self.run(a, b, out, scale_a, scale_b)

    def run(self, a: Any, b: Any, out: Any, scale_a: float = 1.0, scale_b: float = 1.0) -> Any:
        """The eager call (what ``matmul`` does outside ``torch.compile``): the plan of calls with these arrays'
        shapes, strides, types and device (made at the first of them), then the launch."""
        from tuner.backends import cuda_driver

        torch_arrays = is_torch(a) and is_torch(b) and (out is None or is_torch(out))
        views = None if torch_arrays else (view(a, "a"), view(b, "b"), None if out is None else view(out, "out"))
        key = torch_key(a, b, out) if views is None else view_key(views)
        plan = self._plans.get(key)
        if plan is None:
            plan = self._plans[key] = self._plan(a, b, out)
        kernel = plan.kernel
        if kernel is None:
            return self._fallback(a, b, out, plan.library, plan.said, plan.reason)
        if not cuda_driver.context_is(plan.context):
            cuda_driver.make_current(plan.context)
        if out is None:
            out = empty_like_result(a, plan.library, plan.rows, plan.columns, kernel.output_storage)
        if views is None:
            pointers = a.data_ptr(), b.data_ptr(), out.data_ptr()
        else:
            result = views[2] or view(out, "out")
            pointers = views[0].pointer, views[1].pointer, result.pointer
        if kernel.maps and (pointers[0] | pointers[1]) % TMA_ALIGNMENT:
            return self._fallback(a, b, out, plan.library, (*plan.said, "aligned"), f"{plan.said[-1]}: the "
                                  f"kernel's tensor maps need A and B on {TMA_ALIGNMENT}-byte boundaries")
        kernel.launch(*pointers, (scale_a, scale_b), plan.stream())
        return out

    def _plan(self, a: Any, b: Any, out: Any) -> Plan:
        """Every check of a first call: the arrays, the table dtype, the route, the kernel loaded, the layouts."""
        left, right = view(a, "a"), view(b, "b")
        if len(left.shape) != 2 or len(right.shape) != 2 or left.shape[1] != right.shape[0]:
            raise ArrayRefused(f"a {left.shape} and b {right.shape}: expected matrices M×K and K×N")
        if left.device != right.device:
            raise ArrayRefused(f"a is on device {left.device}, b on device {right.device}")
        (M, K), N = left.shape, right.shape[1]
        result = view(out, "out") if out is not None else None
        if result is not None and (result.shape != (M, N) or result.device != left.device):
            raise ArrayRefused(f"out {result.shape} on device {result.device}: expected {M}×{N} on {left.device}")
        dtype = table_dtype(left.storage, right.storage, result.storage if result else None, self.tf32)
        said: tuple[Any, ...] = (M, N, K, dtype, f"{M}x{N}x{K} {dtype}")
        make = functools.partial(Plan, device=left.device, library=left.library, rows=M, columns=N, said=said)
        if dtype is None:
            return make(reason=f"no table dtype multiplies {left.storage} by {right.storage} into "
                               f"{result.storage if result else 'the default type'}")
        from tuner.backends import cuda_driver

        context = cuda_driver.current_context(left.device)
        kernel, why = self._kernel(context, left.device, M, N, K, dtype)
        if kernel is None:
            return make(reason=why)
        refused = layout_refusal(kernel.transposed_b, left.row_major(), right.row_major(), right.column_major(),
                                 result is None or result.row_major())
        if refused is not None:
            return make(reason=f"{M}x{N}x{K} {dtype}: {refused}")
        return make(kernel=kernel, context=context, stream=stream_of(left.library, left.device))

    def _kernel(self, context: int, ordinal: int, M: int, N: int, K: int,
                dtype: str) -> tuple[LoadedKernel | None, str]:
        """The kernel a shape's route runs, loaded into ``context`` (once), or None and why."""
        found = self._route(M, N, K, dtype)
        if found.config is None:
            return None, found.reason
        key = (context, found.config)
        if key not in self._loaded:
            facts = self._device(ordinal)
            if self.other_gpu == "refuse" and not self._tuned_on(facts.name):
                return None, f"the table was tuned on {self._models()}, not on this {facts.name}"
            arch = arch_for(found.config, facts.compute_capability)
            cubin = cubin_for(found.config, entry_of(self.table, found.config), self.folder, arch)
            self._loaded[key] = load_kernel(found.config, cubin, facts.multiprocessors)
        return self._loaded[key], ""

    def _device(self, ordinal: int) -> Any:
        from tuner.backends import cuda_driver

        if ordinal not in self._devices:
            facts = self._devices[ordinal] = cuda_driver.device_facts(ordinal)
            if self.other_gpu == "warn" and not self._tuned_on(facts.name):
                warnings.warn(f"{self.folder}: this kernel table was tuned on {self._models()}, and this GPU is "
                              f"a {facts.name}: its kernels are correct here, but they were chosen by times "
                              f"measured on the other model (tune this GPU for its own table)", OtherGpuWarning,
                              stacklevel=4)
        return self._devices[ordinal]

    def _tuned_on(self, name: str) -> bool:
        return any(e.device_name == name for e in self.table.entries)

    def _models(self) -> str:
        return " and ".join(sorted({e.device_name for e in self.table.entries})) or "no GPU"

    def _fallback(self, a: Any, b: Any, out: Any, library: str, said: tuple[Any, ...], why: str) -> Any:
        if said not in self._said:
            self._said.add(said)
            warnings.warn(f"{self.folder}: {why}; this call and the next ones like it run the "
                          f"{library} library's own matmul (cuBLAS)", RuntimeWarning, stacklevel=4)
        return vendor_matmul(a, b, out, library)


def load_table(path: str | Path, *, other_gpu: str = "warn", tf32: bool = False) -> TableMatmul:
    """The kernel table in the folder ``path`` (``tuner table build`` writes one), ready to be called."""
    folder = Path(path)
    folder = folder.parent if folder.is_file() else folder
    return TableMatmul(read_table(folder), folder, other_gpu=other_gpu, tf32=tf32)
