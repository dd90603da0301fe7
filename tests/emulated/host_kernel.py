"""A CUDA kernel family's rendered source, run on the host: the kernel's own code with its PTX section (the
lines from ``// ---- PTX`` to the next ``// ----`` heading) replaced by a host header, every thread a fiber
(cuda_host.h), compiled by the system C++ compiler with the address sanitizer. It checks what the source
computes (indexing, fragment layouts, pipeline order, edges) without a GPU; it says nothing of speed."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import numpy as np

from tuner.config import Config, Problem
from tuner.kernels.render import launch, render

HERE = Path(__file__).resolve().parent
PTX_SECTION = re.compile(r"^// ---- PTX .*?(?=^// ---- )", re.S | re.M)
SHARED = re.compile(r"extern __shared__[^;]*\bsmem\[\];")
CUDA_HEADER = re.compile(r"^#include <cuda_\w+\.h>\n", re.M)
DTYPE_CODES = {"float64": 1, "tf32": 2, "bfloat16": 3, "float16": 4}


def compiler() -> str | None:
    return shutil.which(os.environ.get("CXX", "g++")) or shutil.which("c++")


def host_source(config: Config, ptx_header: str) -> str:
    source = render(config)
    source, replaced = PTX_SECTION.subn(f'#include "{ptx_header}"\n\n', source)
    if replaced != 1:
        raise ValueError("the rendered source has no '// ---- PTX' section followed by another '// ----' heading")
    source, replaced = SHARED.subn("unsigned char* const smem = emu::shared_base();", source)
    if replaced != 1:
        raise ValueError("the rendered source declares no extern __shared__ smem[]")
    return '#include "cuda_host.h"\n' + CUDA_HEADER.sub("", source) + '\n#include "run_kernel.h"\n'


def build(config: Config, folder: Path, ptx_header: str = "mma_ptx.h") -> Path:
    """Compile the configuration's host program into ``folder``; CalledProcessError with g++'s message."""
    cxx = compiler()
    if cxx is None:
        raise FileNotFoundError("no C++ compiler (g++ or c++) on PATH")
    folder.mkdir(parents=True, exist_ok=True)
    source = folder / "kernel.cpp"
    source.write_text(host_source(config, ptx_header))
    binary = folder / "kernel"
    defines = [f"-DEMU_DTYPE={DTYPE_CODES[config.dtype]}", f"-DEMU_MMA_K={config.param_dict.get('MMA_K', 0)}"]
    subprocess.run([cxx, "-std=c++17", "-O1", "-g", "-fsanitize=address", "-fno-omit-frame-pointer",
                    f"-I{HERE}", *defines, "-o", str(binary), str(source)],
                   check=True, capture_output=True, text=True, timeout=600)
    return binary


def run(binary: Path, config: Config, a: np.ndarray, b: np.ndarray, accumulator: type, shift: int = 0,
        copies_land: str = "wait", schedule: str = "round", timeout: float = 600) -> np.ndarray:
    """C of ``problem`` from the host program, A and B given in the kernel's storage type (bfloat16 as uint16
    bits); ``shift`` elements in front of A and B move them off 16-byte alignment."""
    problem: Problem = config.problem
    geometry = launch(config)
    folder = binary.parent
    (folder / "a.bin").write_bytes(np.ascontiguousarray(a).tobytes())
    (folder / "b.bin").write_bytes(np.ascontiguousarray(b).tobytes())
    blocks = geometry.grid[0] * geometry.grid[1] * geometry.grid[2]
    env = {**os.environ, "EMU_COPIES_LAND": copies_land, "EMU_SCHEDULE": schedule,
           "ASAN_OPTIONS": "detect_leaks=0:detect_stack_use_after_return=0"}
    subprocess.run([str(binary), str(problem.M), str(problem.N), str(problem.K), str(blocks), str(geometry.block[0]),
                    str(geometry.dynamic_shared_bytes), str(folder / "a.bin"), str(folder / "b.bin"),
                    str(folder / "c.bin"), str(shift)], check=True, capture_output=True, text=True, env=env,
                   timeout=timeout)
    return np.fromfile(folder / "c.bin", dtype=accumulator).reshape(problem.M, problem.N)
