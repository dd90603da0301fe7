"""cuBLASLt through ctypes: the top algorithms its heuristic proposes for a GEMM, each one launchable.

cuBLAS as a user gets it runs the first algorithm of its heuristic; cuBLASLt lets the caller ask for the first
``count`` and time them all, which is the vendor's own autotuning. The row-major product C = A·B is computed as
Cᵀ = Bᵀ·Aᵀ in cuBLASLt's column-major terms, as in :mod:`tuner.backends.pycuda.cublas` (:func:`plan`); the FP8
GEMM, with its own layout and scales, is :mod:`tuner.backends.pycuda.cublaslt_fp8`.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from tuner.backends.pycuda.cublas import BaselineUnavailable

WORKSPACE_BYTES = 32 * 1024 * 1024
"""The workspace cuBLASLt may use: NVIDIA's guide asks for 32 MiB on Hopper."""

# Values of cuBLAS's and CUDA's headers (cublasLt.h, cublas_api.h, library_types.h).
CUDA_R_32F, CUDA_R_64F, CUDA_R_16F, CUDA_R_16BF, CUDA_R_8F_E4M3, CUDA_R_8F_E5M2 = 0, 1, 2, 14, 28, 29
COMPUTE_32F, COMPUTE_64F, COMPUTE_32F_FAST_TF32 = 68, 70, 77
DESC_TRANSA, DESC_TRANSB, DESC_A_SCALE_POINTER, DESC_B_SCALE_POINTER, DESC_FAST_ACCUM = 3, 4, 17, 18, 25
OP_N, OP_T = 0, 1
PREF_MAX_WORKSPACE_BYTES = 1
ALGO_CONFIG = {"algo": 0, "tile": 1, "split_k": 2, "reduction": 3, "swizzle": 4, "stages": 6, "cluster": 8}
"""cublasLtMatmulAlgoConfigAttributes_t: what an algorithm's description reports (header ids, not names)."""

LT_TYPES: dict[str, tuple[int, int, int, int, str]] = {
    "float32": (CUDA_R_32F, CUDA_R_32F, COMPUTE_32F, CUDA_R_32F, "CUBLAS_COMPUTE_32F"),
    "tf32": (CUDA_R_32F, CUDA_R_32F, COMPUTE_32F_FAST_TF32, CUDA_R_32F, "CUBLAS_COMPUTE_32F_FAST_TF32"),
    "float64": (CUDA_R_64F, CUDA_R_64F, COMPUTE_64F, CUDA_R_64F, "CUBLAS_COMPUTE_64F"),
    "bfloat16": (CUDA_R_16BF, CUDA_R_32F, COMPUTE_32F, CUDA_R_32F, "CUBLAS_COMPUTE_32F"),
    "float16": (CUDA_R_16F, CUDA_R_32F, COMPUTE_32F, CUDA_R_32F, "CUBLAS_COMPUTE_32F"),
}
"""Per dtype: the inputs' type, the output's, the compute type, the type of alpha and beta, the compute's name."""


@dataclass(frozen=True)
class LtPlan:
    """One cublasLtMatmul in cuBLASLt's column-major terms: the operands' operations and layouts (type, rows,
    columns; each packed, its leading dimension its rows), the compute type and the type of alpha and beta."""

    transa: int
    transb: int
    first: tuple[int, int, int]
    """The first operand's layout: the row-major B buffer."""
    second: tuple[int, int, int]
    """The second operand's: the row-major A buffer."""
    output: tuple[int, int, int]
    """C's and D's: the row-major C buffer."""
    compute: int
    scale: int
    compute_name: str

    @property
    def layouts(self) -> tuple[tuple[int, int, int], ...]:
        return self.first, self.second, self.output


def plan(M: int, N: int, K: int, dtype: str) -> LtPlan:
    """C = A·B row-major as Cᵀ (N×M, ld N) = Bᵀ (N×K, ld N) · Aᵀ (K×M, ld K), no transposes: see the module
    text."""
    if dtype not in LT_TYPES:
        raise BaselineUnavailable(f"cuBLASLt has no {dtype} GEMM here")
    inputs, output, compute, scale, compute_name = LT_TYPES[dtype]
    return LtPlan(OP_N, OP_N, (inputs, N, K), (inputs, K, M), (output, N, M), compute, scale, compute_name)


class MatmulAlgo(ctypes.Structure):
    _fields_ = [("data", ctypes.c_uint64 * 8)]


class HeuristicResult(ctypes.Structure):
    _fields_ = [("algo", MatmulAlgo), ("workspace_size", ctypes.c_size_t), ("state", ctypes.c_int),
                ("waves_count", ctypes.c_float), ("reserved", ctypes.c_int * 4)]


_P, _I, _U64, _SIZE = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64, ctypes.c_size_t
SIGNATURES: dict[str, list[type]] = {
    "cublasLtCreate": [_P],
    "cublasLtDestroy": [_P],
    "cublasLtMatmulDescCreate": [_P, _I, _I],
    "cublasLtMatmulDescDestroy": [_P],
    "cublasLtMatmulDescSetAttribute": [_P, _I, _P, _SIZE],
    "cublasLtMatrixLayoutCreate": [_P, _I, _U64, _U64, ctypes.c_int64],
    "cublasLtMatrixLayoutDestroy": [_P],
    "cublasLtMatmulPreferenceCreate": [_P],
    "cublasLtMatmulPreferenceDestroy": [_P],
    "cublasLtMatmulPreferenceSetAttribute": [_P, _I, _P, _SIZE],
    "cublasLtMatmulAlgoGetHeuristic": [_P, _P, _P, _P, _P, _P, _P, _I, _P, _P],
    "cublasLtMatmulAlgoConfigGetAttribute": [_P, _I, _P, _SIZE, _P],
    "cublasLtMatmul": [_P, _P, _P, _P, _P, _P, _P, _P, _P, _P, _P, _P, _P, _P, _SIZE, _P],
}
"""The C signatures used (every function returns a cublasStatus_t; handles and descriptors are pointers)."""


def _candidate_paths() -> Iterator[str]:
    """Where libcublasLt may be: the loader's path, the CUDA toolkit, and the NVIDIA wheels of this Python."""
    yield from ("libcublasLt.so.13", "libcublasLt.so.12", "libcublasLt.so")
    if found := ctypes.util.find_library("cublasLt"):
        yield found
    roots = [Path(os.environ[v]) / "lib64" for v in ("CUDA_HOME", "CUDA_PATH") if v in os.environ]
    roots.append(Path("/usr/local/cuda/lib64"))
    roots += [Path(p) / "nvidia" / sub / "lib" for p in sys.path if p for sub in ("cublas", "cu13", "cu12")]
    for root in roots:
        yield from (str(p) for p in sorted(root.glob("libcublasLt.so*"), reverse=True))


@cache
def library() -> ctypes.CDLL:
    """libcublasLt, loaded once; BaselineUnavailable where none is found."""
    tried = []
    for path in _candidate_paths():
        try:
            lib = ctypes.CDLL(path)
        except OSError as exc:
            tried.append(f"{path}: {exc}")
            continue
        for name, argtypes in SIGNATURES.items():
            function = getattr(lib, name)
            function.argtypes, function.restype = argtypes, ctypes.c_int
        return lib
    raise BaselineUnavailable(f"libcublasLt could not be loaded ({'; '.join(tried[:4])})")


def _check(status: int, call: str) -> None:
    if status != 0:
        raise BaselineUnavailable(f"cuBLASLt's {call} returned status {status}")


@dataclass(frozen=True)
class LtAlgorithm:
    """One algorithm the heuristic proposed: its rank, its configuration's ids and its expected waves."""

    rank: int
    config: dict[str, int]
    waves: float
    workspace_bytes: int

    def describe(self) -> str:
        ids = ", ".join(f"{name} {value}" for name, value in self.config.items())
        return f"heuristic rank {self.rank} ({ids}; {self.waves:.2f} waves)"


class LtGemm:
    """C = A·B on device buffers through cuBLASLt: the heuristic's first ``count`` algorithms, each a launch.

    Call :meth:`close` when done (the descriptors and the workspace are freed)."""

    def __init__(self, a: int, b: int, c: int, M: int, N: int, K: int, dtype: str, count: int):
        self._build(plan(M, N, K, dtype), (b, a, c), count)

    def _build(self, lt: LtPlan, pointers: tuple[int, int, int], count: int,
               attributes: tuple[tuple[int, ctypes._SimpleCData], ...] = ()) -> None:
        """The descriptors of ``lt`` (with the further matmul ``attributes``), the workspace and the heuristic's
        algorithms; whatever was made is released where a step fails."""
        self.handle, self.desc, self.pref = ctypes.c_void_p(), ctypes.c_void_p(), ctypes.c_void_p()
        self.layouts = [ctypes.c_void_p() for _ in range(3)]
        self.workspace: Any = None
        try:
            self._describe(lt, attributes)
            self._ask_heuristic(count)
        except BaselineUnavailable:
            self.close()
            raise
        self.compute_name = lt.compute_name
        scalar = ctypes.c_double if lt.scale == CUDA_R_64F else ctypes.c_float
        self.alpha, self.beta = scalar(1.0), scalar(0.0)
        self.pointers = tuple(ctypes.c_void_p(pointer) for pointer in pointers)

    def _describe(self, lt: LtPlan, attributes: tuple[tuple[int, ctypes._SimpleCData], ...]) -> None:
        self.lib = lib = library()
        _check(lib.cublasLtCreate(ctypes.byref(self.handle)), "cublasLtCreate")
        _check(lib.cublasLtMatmulDescCreate(ctypes.byref(self.desc), lt.compute, lt.scale),
               "cublasLtMatmulDescCreate")
        for attribute, value in ((DESC_TRANSA, ctypes.c_int(lt.transa)), (DESC_TRANSB, ctypes.c_int(lt.transb)),
                                 *attributes):
            _check(lib.cublasLtMatmulDescSetAttribute(self.desc, attribute, ctypes.byref(value),
                                                      ctypes.sizeof(value)), "cublasLtMatmulDescSetAttribute")
        for layout, (kind, rows, cols) in zip(self.layouts, lt.layouts, strict=True):
            _check(lib.cublasLtMatrixLayoutCreate(ctypes.byref(layout), kind, ctypes.c_uint64(rows),
                                                  ctypes.c_uint64(cols), ctypes.c_int64(rows)),
                   "cublasLtMatrixLayoutCreate")

    def _ask_heuristic(self, count: int) -> None:
        import pycuda.driver as cuda

        lib = self.lib
        self.workspace = cuda.mem_alloc(WORKSPACE_BYTES)
        limit = ctypes.c_uint64(WORKSPACE_BYTES)
        _check(lib.cublasLtMatmulPreferenceCreate(ctypes.byref(self.pref)), "cublasLtMatmulPreferenceCreate")
        _check(lib.cublasLtMatmulPreferenceSetAttribute(self.pref, PREF_MAX_WORKSPACE_BYTES, ctypes.byref(limit),
                                                        ctypes.sizeof(limit)), "cublasLtMatmulPreferenceSetAttribute")
        self.results = (HeuristicResult * count)()
        returned = ctypes.c_int(0)
        first, second, output = self.layouts
        _check(lib.cublasLtMatmulAlgoGetHeuristic(self.handle, self.desc, first, second, output, output,
                                                  self.pref, count, self.results, ctypes.byref(returned)),
               "cublasLtMatmulAlgoGetHeuristic")
        self.asked = count
        self.algorithms = [self._algorithm(rank) for rank in range(returned.value) if self.results[rank].state == 0]

    def _algorithm(self, rank: int) -> LtAlgorithm:
        found = self.results[rank]
        config = {}
        for name, attribute in ALGO_CONFIG.items():
            # The size given must be the attribute's own (2 or 4 bytes): asked for first, then read into a zeroed
            # little-endian 8-byte buffer.
            size, value = ctypes.c_size_t(0), ctypes.c_uint64(0)
            get = self.lib.cublasLtMatmulAlgoConfigGetAttribute
            if get(ctypes.byref(found.algo), attribute, None, 0, ctypes.byref(size)) == 0 and size.value <= 8 and \
                    get(ctypes.byref(found.algo), attribute, ctypes.byref(value), size, ctypes.byref(size)) == 0:
                config[name] = int(value.value)
        return LtAlgorithm(rank, config, float(found.waves_count), int(found.workspace_size))

    def launcher(self, algorithm: LtAlgorithm) -> Callable[[], None]:
        """A callable queuing the product with ``algorithm`` on the default stream."""
        lib, found = self.lib, self.results[algorithm.rank]
        b, a, c = self.pointers
        b_layout, a_layout, c_layout = self.layouts
        workspace = ctypes.c_void_p(int(self.workspace))

        def launch() -> None:
            # D = alpha·op(first)·op(second) + beta·C, written over C (beta is 0)
            _check(lib.cublasLtMatmul(self.handle, self.desc, ctypes.byref(self.alpha), b, b_layout, a, a_layout,
                                      ctypes.byref(self.beta), c, c_layout, c, c_layout, ctypes.byref(found.algo),
                                      workspace, ctypes.c_size_t(WORKSPACE_BYTES), None), "cublasLtMatmul")

        return launch

    def describe(self, algorithm: LtAlgorithm) -> str:
        return (f"cuBLASLt cublasLtMatmul ({self.compute_name}), the fastest of the {len(self.algorithms)} "
                f"algorithms its heuristic returned for {self.asked} asked: {algorithm.describe()}")

    def close(self) -> None:
        """Free what was made (again: nothing)."""
        lib = getattr(self, "lib", None)
        if lib is not None:  # where the library did not load, nothing of it was made
            made = [(self.pref, lib.cublasLtMatmulPreferenceDestroy),
                    *((layout, lib.cublasLtMatrixLayoutDestroy) for layout in self.layouts),
                    (self.desc, lib.cublasLtMatmulDescDestroy), (self.handle, lib.cublasLtDestroy)]
            for pointer, destroy in made:
                if pointer.value:
                    destroy(pointer)
                    pointer.value = None
        if self.workspace is not None:
            self.workspace.free()
            self.workspace = None
