"""Loading compiled cubins into the current CUDA context (the one compiler makes them: tuner.compile.nvcc)."""

from __future__ import annotations

from typing import Any

from tuner.compile.nvcc import compile_source
from tuner.errors import TunerError


def compiled_function(source: str, arch: str, name: str, options: tuple[str, ...] = ("-O3",)) -> Any:
    """The kernel ``name`` of ``source``, compiled for ``arch`` (from the cache when it can) and loaded."""
    import pycuda.driver as cuda

    result = compile_source(source, arch, options)
    if not result.ok or result.binary is None:
        raise TunerError(f"the project's own kernel '{name}' did not compile for {arch}:\n{result.log}")
    return cuda.module_from_buffer(result.binary).get_function(name)
