"""A kernel table exported as plain CUDA, built into a shared library with nvcc alone and called through its C
dispatch function on device buffers: the product within the family's tolerance of the float64 reference (an FP8
entry's with its per-tensor scales, B stored N × K); a shape the table does not hold answered with
TUNER_GEMM_NO_ENTRY."""

from __future__ import annotations

import ctypes
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from tests.gpu.support import on_hopper
from tests.test_table_export_cuda import ENERGY, FERMI, FP8, WGMMA, build_folder
from tuner import cli
from tuner.kernels.discovery import get_family
from tuner.table.artifact import Entry, write_table
from tuner.table.build import build_table
from tuner.table.export_cuda import LIBRARY

pytestmark = pytest.mark.gpu

NO_ENTRY = 1


@pytest.fixture(scope="module")
def context() -> Iterator:
    import pycuda.driver as cuda

    cuda.init()
    primary = cuda.Device(0).retain_primary_context()  # the one the library's CUDA runtime uses
    primary.push()
    yield cuda
    primary.pop()
    primary.detach()


def _library(run: Path, nvcc: str, folder: Path) -> tuple[ctypes.CDLL, Entry]:
    table, sources = build_table([run])
    write_table(folder / "table", table, sources)
    assert cli.main(["table", "export-cuda", str(folder / "table"), "--out", str(folder / "cuda")]) == 0
    build_folder(folder / "cuda", nvcc)
    library = ctypes.CDLL(str(folder / "cuda" / LIBRARY))
    return library, table.entries[0]


def _bfloat16_bits(values: np.ndarray) -> np.ndarray:
    """float32 values whose low 16 bits are zero, as bfloat16 (their high halves)."""
    return (values.view(np.uint32) >> 16).astype(np.uint16)


def _widened(bits: np.ndarray) -> np.ndarray:
    """bfloat16 values (their bits) as float32."""
    return (bits.astype(np.uint32) << 16).view(np.float32)


def _call(library: ctypes.CDLL, cuda, dtype: str, sizes: tuple[int, int, int], A, B, C) -> int:
    function = getattr(library, f"tuner_gemm_{dtype}")
    function.argtypes = [ctypes.c_int] * 3 + [ctypes.c_void_p] * 4
    function.restype = ctypes.c_int
    status = function(*sizes, int(A), int(B), int(C), None)
    cuda.Context.synchronize()
    return status


@pytest.mark.parametrize("run", [FERMI, ENERGY, WGMMA], ids=lambda run: run.name)
def test_the_exported_dispatch_computes_the_product(run, context, nvcc, tmp_path):
    if run == WGMMA and not on_hopper():
        pytest.skip("the wgmma entry is compiled for sm_90a and runs on a Hopper GPU only")
    cuda = context
    library, entry = _library(run, nvcc, tmp_path)
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (entry.M, entry.K)).astype(np.float32)
    b = rng.uniform(-1, 1, (entry.K, entry.N)).astype(np.float32)
    if entry.dtype == "bfloat16":
        a_device, b_device = _bfloat16_bits(a), _bfloat16_bits(b)
        a, b = _widened(a_device), _widened(b_device)
    else:
        a, b = a.astype(entry.dtype), b.astype(entry.dtype)
        a_device, b_device = a, b
    out_dtype = np.float32 if entry.dtype == "bfloat16" else np.dtype(entry.dtype)
    A, B = cuda.to_device(a_device), cuda.to_device(b_device)
    C = cuda.mem_alloc(entry.M * entry.N * np.dtype(out_dtype).itemsize)
    assert _call(library, cuda, entry.dtype, (entry.M, entry.N, entry.K), A, B, C) == 0
    c = cuda.from_device(C, (entry.M, entry.N), out_dtype)
    reference = a.astype(np.float64) @ b.astype(np.float64)
    error = np.linalg.norm(c - reference) / np.linalg.norm(reference)
    assert error <= get_family(entry.family).tolerance(entry.dtype, entry.problem).bound
    assert _call(library, cuda, entry.dtype, (entry.M + 1, entry.N, entry.K), A, B, C) == NO_ENTRY


def test_an_exported_fp8_kernel_applies_the_scales_it_is_given(context, nvcc, tmp_path):
    if not on_hopper():
        pytest.skip("the FP8 entry is compiled for sm_90a and runs on a Hopper GPU only")
    import ml_dtypes

    cuda = context
    library, entry = _library(FP8, nvcc, tmp_path)
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (entry.M, entry.K)).astype(ml_dtypes.float8_e4m3fn)
    b = rng.uniform(-1, 1, (entry.N, entry.K)).astype(ml_dtypes.float8_e4m3fn)  # B stored N × K
    A, B = cuda.to_device(a.view(np.uint8)), cuda.to_device(b.view(np.uint8))
    C = cuda.mem_alloc(entry.M * entry.N * 4)
    function = getattr(library, f"tuner_gemm_{entry.dtype}")
    function.argtypes = [ctypes.c_int] * 3 + [ctypes.c_void_p] * 3 + [ctypes.c_float] * 2 + [ctypes.c_void_p]
    function.restype = ctypes.c_int
    scale_a, scale_b = 1.5, 0.625
    assert function(entry.M, entry.N, entry.K, int(A), int(B), int(C), scale_a, scale_b, None) == 0
    cuda.Context.synchronize()
    c = cuda.from_device(C, (entry.M, entry.N), np.float32)
    reference = scale_a * scale_b * (a.astype(np.float64) @ b.astype(np.float64).T)
    error = np.linalg.norm(c - reference) / np.linalg.norm(reference)
    assert error <= get_family(entry.family).tolerance(entry.dtype, entry.problem).bound
    assert function(entry.M + 1, entry.N, entry.K, int(A), int(B), int(C), scale_a, scale_b, None) == NO_ENTRY
