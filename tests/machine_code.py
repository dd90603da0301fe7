"""The machine code of a compiled kernel for tests that read it, or the test skipped where cuobjdump is missing
(nvcc can be installed without it: a pip-installed nvcc, or a toolkit without its binary utilities)."""

from __future__ import annotations

import pytest

from benchmarks.kernel_anatomy import disassemble, find_cuobjdump
from tuner.compile.result import CompileResult
from tuner.errors import TunerError


def sass_or_skip(binary: bytes) -> str:
    """``cuobjdump -sass`` of ``binary``; skips the calling test where cuobjdump cannot be found."""
    try:
        find_cuobjdump()
    except TunerError as exc:
        pytest.skip(f"the machine code cannot be read here: {exc}")
    return disassemble(binary)


def assert_compiled_without_spills(result: CompileResult) -> None:
    """Compiled, with no local memory or spills, and with every setmaxnreg kept by ptxas."""
    assert result.ok, result.log
    r = result.resources
    assert (r.local_bytes, r.spill_store_bytes, r.spill_load_bytes) == (0, 0, 0), result.log
    assert "C7508" not in result.log, "ptxas ignored setmaxnreg"
