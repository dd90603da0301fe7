"""A table kernel loaded into the caller's CUDA context and launched on the caller's stream, through the driver
(:mod:`tuner.backends.cuda_driver`): the cubin the table holds for its GPU, else the kernel's source compiled
once (nvcc, with the project's compile cache). The launch is laid out once; its parameter block is updated in place
for each call's arrays, their tensor maps encoded once per address."""

from __future__ import annotations

import ctypes
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tuner.config import Config
from tuner.errors import TunerError
from tuner.kernels.arguments import Buffer
from tuner.kernels.discovery import get_family, template_text_hash
from tuner.kernels.render import launch as launch_of
from tuner.kernels.render import render
from tuner.kernels.tensor_maps import TensorMapFields, tensor_map_fields
from tuner.precision import PRECISIONS
from tuner.table.artifact import Entry
from tuner.table.routing import b_transposed

SCALAR_CODES = {"int32": "i", "float32": "f"}
MAPS_KEPT = 256
TENSOR_MAP_BYTES = 128
MAX_CUBIN_BYTES = 64 * 2**20


def arch_for(config: Config, compute_capability: str) -> str:
    """The architecture a configuration's kernel is built for on a device of ``compute_capability``."""
    return get_family(config.family).arch or f"sm_{compute_capability.replace('.', '')}"


def cubin_for(config: Config, entry: Entry | None, folder: Path, arch: str) -> bytes:
    """The entry's own cubin where it was built for ``arch`` from the family's current template, else the
    configuration's source compiled for ``arch``; TunerError where nvcc refuses it."""
    from tuner.compile.nvcc import compile_source

    current = template_text_hash(config.family)
    if entry is not None and entry.cubin and entry.source_template_hash == current and _built_for(entry, arch):
        found = _table_cubin(folder / entry.cubin)
        if found is not None:
            return found
    result = compile_source(render(config), arch)
    if not result.ok or result.binary is None:
        raise TunerError(f"{config.key}: the kernel does not compile for {arch}: {result.log[:400]}")
    return result.binary


def _table_cubin(path: Path) -> bytes | None:
    """The cubin at ``path`` where it is a regular file of at most MAX_CUBIN_BYTES, not a link (a link, a FIFO or
    a device planted in the folder is passed by, and the kernel compiled from its source instead)."""
    from tuner import input_file

    if path.is_symlink():
        return None
    try:
        return input_file.read_bytes(path, MAX_CUBIN_BYTES)
    except OSError:
        return None


def _built_for(entry: Entry, arch: str) -> bool:
    return entry.cubin is not None and entry.cubin.endswith(f".{arch}.cubin")


def cubin_name(source: str, arch: str) -> str:
    """The file name of an entry's cubin beside its source (``<source stem>.<arch>.cubin``)."""
    return f"{Path(source).stem}.{arch}.cubin"


@dataclass
class LoadedKernel:
    """One configuration's kernel in one context, with what a launch of it needs."""

    config: Config
    maps: tuple[tuple[str, TensorMapFields], ...]
    arguments: tuple[tuple[str, str], ...]
    """(name, parameter code) of the family's arguments: buffers ``P``, sizes ``i``, scales ``f``."""
    output_storage: str
    transposed_b: bool
    """The family stores B as N×K (see :func:`tuner.table.routing.b_transposed`)."""
    prepared: Any
    """The launch laid out once (:class:`tuner.backends.cuda_driver.PreparedLaunch`, which holds the loaded
    module)."""
    _block: Any = None
    """The parameter block of the last launch; updated in place for the next (the driver copies it at launch)."""
    _last: tuple[float, ...] = ()
    _encoded: OrderedDict[tuple[str, int], Any] = field(default_factory=OrderedDict)

    def launch(self, a: int, b: int, c: int, scales: tuple[float, float], stream: int) -> None:
        """Queue the kernel on ``stream`` over the buffers at ``a``, ``b`` and ``c``. The parameter block is made
        once and updated in place where an address or a scale changed; tensor maps are encoded once per buffer
        address (the last MAPS_KEPT of them kept), so a model's layers, whose weights and activations come back to
        the same addresses, encode none after their first calls."""
        key = (a, b, c, *scales)
        if self._block is None:
            self._block = self._parameters({"A": a, "B": b, "C": c}, scales)
        elif key != self._last:
            self._update({"A": a, "B": b, "C": c}, scales)
        self._last = key
        self.prepared.run(self._block, stream)

    def _map(self, name: str, fields: TensorMapFields, address: int) -> Any:
        from tuner.backends import cuda_driver

        key = (name, address)
        found = self._encoded.get(key)
        if found is None:
            found = self._encoded[key] = cuda_driver.TensorMapBuffer(fields, address)
            if len(self._encoded) > MAPS_KEPT:
                self._encoded.popitem(last=False)
        else:
            self._encoded.move_to_end(key)
        return found

    def _parameters(self, pointers: dict[str, int], scales: tuple[float, float]) -> Any:
        from tuner.backends import cuda_driver

        M, N, K = self.config.problem.M, self.config.problem.N, self.config.problem.K
        values = {**pointers, "M": M, "N": N, "K": K, "scale_a": scales[0], "scale_b": scales[1]}
        maps = [cuda_driver.TensorMapBuffer(fields, pointers[name]) for name, fields in self.maps]
        return cuda_driver.parameters(maps, "".join(c for _, c in self.arguments),
                                      [values[name] for name, _ in self.arguments])

    def _update(self, pointers: dict[str, int], scales: tuple[float, float]) -> None:
        """The block's tensor maps and values set for these addresses and scales."""
        block, values = self._block, {**pointers, "scale_a": scales[0], "scale_b": scales[1]}
        for slot, (name, fields) in enumerate(self.maps):
            encoded = self._map(name, fields, pointers[name])
            ctypes.memmove(block.maps[slot].address, encoded.address, TENSOR_MAP_BYTES)
        for value, (name, _) in zip(block.values, self.arguments, strict=True):
            if name in values:
                value.value = values[name]


def load_kernel(config: Config, cubin: bytes, multiprocessors: int) -> LoadedKernel:
    """``cubin`` loaded into the current context, its launch laid out for ``config``'s problem."""
    from tuner.backends import cuda_driver

    family = get_family(config.family)
    launch = launch_of(config)
    buffers = {b.name: b for b in family.buffers}
    maps = tuple((spec.buffer, tensor_map_fields(spec, buffers[spec.buffer].shape(config.problem),
                                                 buffers[spec.buffer].dtype_of(config.dtype)))
                 for spec in launch.tensor_maps)
    arguments = tuple((a.name, "P" if isinstance(a, Buffer) else SCALAR_CODES[a.type_of(config.dtype)])
                      for a in family.arguments)
    kernel = cuda_driver.ExtendedKernel(cubin, launch.kernel_name, launch.dynamic_shared_bytes)
    grid = cuda_driver.launch_grid(kernel, launch, multiprocessors)
    output = PRECISIONS[buffers["C"].dtype_of(config.dtype)].storage
    prepared = kernel.prepared(grid, launch.block, launch.dynamic_shared_bytes, launch.cluster)
    return LoadedKernel(config, maps, arguments, output, b_transposed(config), prepared)
