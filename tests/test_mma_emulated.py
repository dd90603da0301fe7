"""The mma family's rendered source, run on the host (tests/emulated): its tiling, fragment layouts, pipeline
order and edge handling compute the product of exactly representable inputs, for every dtype and on shapes that
take the cp.async and the element-wise paths, partial tiles and misaligned rows. Its PTX instructions are
replaced by implementations written from the PTX ISA, so a wrong fragment layout, swizzle or barrier shows here
without a GPU; the threads run in three orders (in turn, the lowest first, the highest first) and the copies land
as late as cp.async.wait_group allows or at once, so that a missing barrier or wait shows too."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tests.emulated import host_kernel
from tests.test_mma_family import FLAGSHIPS
from tuner.config import Config, Problem

pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(host_kernel.compiler() is None, reason="no C++ compiler (g++ or c++) here")]

CASES = [
    *FLAGSHIPS.items(),
    ("bfloat16", dict(FLAGSHIPS["bfloat16"], BM=64, BN=128, SWIZZLE=0, STAGES=3, GROUP_M=1, WM=32)),
    ("float16", dict(FLAGSHIPS["float16"], BM=128, BN=128, BK=64, WN=32, STAGES=3)),
    ("tf32", dict(FLAGSHIPS["tf32"], BM=64, BN=128, BK=32, WM=32, SWIZZLE=0, STAGES=3)),
    ("float64", dict(FLAGSHIPS["float64"], BM=64, BN=128, WM=32, WN=64, MMA_K=4, STAGES=4)),
    ("float64", dict(FLAGSHIPS["float64"], BM=128, BN=64, BK=32, WM=32, WN=32, MMA_K=16)),
]
# (M, N, K), thread order, where the copies land
SHAPES = [
    ((1, 1, 1), "round", "wait"),         # every operand gathered element by element
    ((17, 33, 9), "last", "wait"),
    ((70, 136, 96), "first", "wait"),     # 16-byte copies; partial tiles along M and N
    ((70, 136, 96), "last", "issue"),
    ((129, 131, 67), "first", "wait"),    # A (K odd) and B (N odd) gathered; C element by element
]
ACCUMULATOR = {"float64": np.float64, "tf32": np.float32, "bfloat16": np.float32, "float16": np.float32}
UNIT_ROUNDOFF = {"float64": 2.0 ** -53, "tf32": 2.0 ** -24, "bfloat16": 2.0 ** -24, "float16": 2.0 ** -24}


def exact_inputs(dtype: str, M: int, N: int, K: int, seed: int = 0):
    """A and B in the kernel's storage (bfloat16 as uint16 bits), and their values in float64."""
    rng = np.random.default_rng([seed, M, N, K])
    out = []
    for shape in ((M, K), (K, N)):
        x = rng.uniform(0.1, 1.0, shape) * rng.choice([-1.0, 1.0], shape)
        if dtype == "float64":
            stored, exact = x, x
        elif dtype == "float16":
            stored = x.astype(np.float16)
            exact = stored.astype(np.float64)
        elif dtype == "bfloat16":
            bits = x.astype(np.float32).view(np.uint32)
            stored = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
            exact = (stored.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
        else:  # tf32: float32 with 10 mantissa bits
            stored = ((x.astype(np.float32).view(np.uint32) + 0x1000) & 0xFFFFE000).view(np.float32)
            exact = stored.astype(np.float64)
        out += [stored, exact]
    return out


def relative_error(C: np.ndarray, reference: np.ndarray) -> float:
    return float(np.linalg.norm(C.astype(np.float64) - reference) / np.linalg.norm(reference))


def bound(dtype: str, K: int) -> float:
    return 16 * math.sqrt(K) * UNIT_ROUNDOFF[dtype]


def check(binary: Path, dtype: str, params: dict, problem: Problem, schedule: str = "round", land: str = "wait",
          shift: int = 0) -> float:
    config = Config.make(problem, "mma", dtype, params)
    a, a64, b, b64 = exact_inputs(dtype, problem.M, problem.N, problem.K)
    C = host_kernel.run(binary, config, a, b, ACCUMULATOR[dtype], shift=shift, copies_land=land, schedule=schedule)
    assert not np.isnan(C).any(), f"{int(np.isnan(C).sum())} elements of C never written"
    return relative_error(C, a64 @ b64)


@pytest.mark.parametrize(("dtype", "params"), CASES, ids=[f"{d}-{i}" for i, (d, _) in enumerate(CASES)])
def test_the_source_computes_the_product(dtype, params, tmp_path):
    binary = host_kernel.build(Config.make(Problem(1, 1, 1), "mma", dtype, params), tmp_path)
    for (M, N, K), schedule, land in SHAPES:
        error = check(binary, dtype, params, Problem(M, N, K), schedule, land)
        assert error <= bound(dtype, K), f"{M}x{N}x{K} ({schedule}, copies land at {land}): error {error:.3g}"


@pytest.mark.parametrize("dtype", ["bfloat16", "float64"])
def test_rows_off_16_byte_boundaries_are_gathered(dtype, tmp_path):
    params = FLAGSHIPS[dtype]
    binary = host_kernel.build(Config.make(Problem(1, 1, 1), "mma", dtype, params), tmp_path)
    assert check(binary, dtype, params, Problem(64, 72, 64), "first", shift=1) <= bound(dtype, 64)


def test_a_wrong_fragment_layout_shows(tmp_path, monkeypatch):
    """The check is not vacuous: B's two n8 tiles swapped in the ldmatrix.trans registers make C wrong."""
    dtype, params = "bfloat16", FLAGSHIPS["bfloat16"]
    rendered = host_kernel.render

    def swapped(config: Config) -> str:
        source = rendered(config)
        right = "ldmatrix_x4_trans(f.b[2 * p][0], f.b[2 * p][1], f.b[2 * p + 1][0], f.b[2 * p + 1][1],"
        wrong = "ldmatrix_x4_trans(f.b[2 * p][0], f.b[2 * p + 1][0], f.b[2 * p][1], f.b[2 * p + 1][1],"
        assert right in source
        return source.replace(right, wrong)

    monkeypatch.setattr(host_kernel, "render", swapped)
    binary = host_kernel.build(Config.make(Problem(1, 1, 1), "mma", dtype, params), tmp_path)
    assert check(binary, dtype, params, Problem(70, 136, 96)) > 0.1
