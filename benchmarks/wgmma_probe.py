"""Structured inputs through the wgmma family's kernels, to say where a wrong element of C came from.

    python benchmarks/wgmma_probe.py [--dtypes bfloat16,float16,tf32] [--rungs 0,3] [--shape M,N,K]
                                     [--random-only] [--launch-only]

For each configuration of the GPU tests' ladder (tests/wgmma_configs.py) and dtype, on the GPU of this machine:

- **B through**: A = I, so C must equal B. Run once with B[k][n] = n mod 256 and once with B[k][n] = k (integers that
  are exact in every dtype): each element of C then names the element of B it came from.
- **A through**: B = I, so C must equal A, likewise with A[m][k] = m mod 256 and A[m][k] = k.
- **random**: random inputs at ``--shape`` (default 1000×3000×2000: edge tiles everywhere) against the float64
  product, relative error ‖C − ref‖/‖ref‖.

Prints one line per case (ok, or how many elements are wrong with the first few sources), flushing as it goes so
that a kernel that hangs leaves the cases before it. The same launch path as the GPU worker
(:mod:`tuner.backends.cuda_driver`); run it under ``compute-sanitizer`` with ``--random-only`` for memcheck, and
under a profiler with ``--launch-only`` (one launch on random inputs, nothing computed on the host).
"""

from __future__ import annotations

import argparse
import functools
import os
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from tests.wgmma_configs import GPU_PARAMETERS  # noqa: E402
from tuner.compile.nvcc import compile_source  # noqa: E402
from tuner.config import Config, Problem  # noqa: E402
from tuner.kernels.matmul import tolerance  # noqa: E402
from tuner.kernels.render import launch, render  # noqa: E402
from tuner.kernels.tensor_maps import TensorMapRefused, tensor_map_fields  # noqa: E402
from tuner.precision import raw_bytes, round_to  # noqa: E402

SHOWN = 6
HANG_S = 20.0
"""A launch still running after this long is a deadlock (the largest here take milliseconds)."""


class Runner:
    """One configuration compiled and loaded; ``multiply`` runs it on host matrices and returns C."""

    def __init__(self, config: Config):
        from tuner.backends import cuda_driver

        self.driver, self.config, self.geometry = cuda_driver, config, launch(config)
        compiled = compile_source(render(config), "sm_90a", ("-O3",))
        if not compiled.ok or compiled.binary is None:
            raise RuntimeError(f"compile error:\n{compiled.log}")
        self.kernel = cuda_driver.ExtendedKernel(compiled.binary, self.geometry.kernel_name,
                                            self.geometry.dynamic_shared_bytes)

    def multiply(self, A: np.ndarray, B: np.ndarray) -> np.ndarray:
        import pycuda.driver as cuda

        (M, K), N = A.shape, B.shape[1]
        dtype = self.config.dtype
        a, b = cuda.mem_alloc(A.nbytes), cuda.mem_alloc(B.nbytes)
        c = cuda.mem_alloc(M * N * 4)
        try:
            cuda.memcpy_htod(a, raw_bytes(A))
            cuda.memcpy_htod(b, raw_bytes(B))
            cuda.memset_d32(c, 0xFFFFFFFF, M * N)  # NaN: an element never written stays NaN
            maps = [self.driver.TensorMapBuffer(tensor_map_fields(spec, matrix.shape, dtype), int(pointer))
                    for spec, matrix, pointer in zip(self.geometry.tensor_maps, (A, B), (a, b), strict=True)]
            block = self.driver.parameters(maps, "PPPiii", [int(a), int(b), int(c), M, N, K])
            device = cuda.Context.get_device()
            grid = self.driver.launch_grid(self.kernel, self.geometry,
                                           device.get_attribute(cuda.device_attribute.MULTIPROCESSOR_COUNT))
            self.kernel.launch(grid, self.geometry.block, self.geometry.dynamic_shared_bytes, self.geometry.cluster,
                               block)
            finished = cuda.Event()
            finished.record()
            deadline = time.monotonic() + HANG_S
            while not finished.query():
                if time.monotonic() > deadline:
                    print(f"HANG: {self.config.dtype} {self.config.param_dict} {M}×{N}×{K} still running after "
                          f"{HANG_S:g} s", flush=True)
                    os._exit(3)  # the context cannot be torn down while the kernel runs
                time.sleep(0.01)
            cuda.Context.synchronize()
            C = np.empty((M, N), np.float32)
            cuda.memcpy_dtoh(C, c)
            return C
        finally:
            for pointer in (a, b, c):
                pointer.free()

    def close(self) -> None:
        self.kernel.close()


def exact(values: np.ndarray, dtype: str) -> np.ndarray:
    return round_to(values.astype(np.float64), dtype)


def through(runner: Runner, which: str, M: int, N: int, K: int) -> str:
    """C = I·B (``which`` = B) or A·I: the sources of the wrong elements, or ok."""
    dtype = runner.config.dtype
    rows, cols = (K, N) if which == "B" else (M, K)
    r, c = np.meshgrid(np.arange(rows), np.arange(cols), indexing="ij")
    identity = exact(np.eye(M if which == "B" else K, K if which == "B" else N), dtype)
    sources = []
    for pattern in ((c % 256), r % 256) if which == "B" else ((r % 256), c % 256):
        matrix = exact(pattern, dtype)
        product = runner.multiply(identity, matrix) if which == "B" else runner.multiply(matrix, identity)
        sources.append(product)
    got_col, got_row = (sources[0], sources[1]) if which == "B" else (sources[1], sources[0])
    i, j = np.meshgrid(np.arange(got_col.shape[0]), np.arange(got_col.shape[1]), indexing="ij")
    want_row, want_col = i % 256, j % 256
    unwritten = np.isnan(got_col) | np.isnan(got_row)
    wrong = unwritten | (got_row != want_row) | (got_col != want_col)
    if not wrong.any():
        return "ok"
    where = np.argwhere(wrong)[:SHOWN]
    examples = ", ".join(f"C[{m},{n}]←{which}[{got_row[m, n]:.0f},{got_col[m, n]:.0f}]" for m, n in where)
    return (f"{int(wrong.sum())} of {wrong.size} wrong ({int(unwritten.sum())} unwritten; row source right for "
            f"{float(np.mean(got_row == want_row)):.0%}, column source for {float(np.mean(got_col == want_col)):.0%}):"
            f" {examples}")


@functools.cache
def random_inputs(dtype: str, M: int, N: int, K: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng([M, N, K])
    return exact(rng.uniform(-1, 1, (M, K)), dtype), exact(rng.uniform(-1, 1, (K, N)), dtype)


@functools.cache
def reference(dtype: str, M: int, N: int, K: int) -> np.ndarray:
    A, B = random_inputs(dtype, M, N, K)
    return A.astype(np.float64) @ B.astype(np.float64)


def random(runner: Runner, M: int, N: int, K: int, check: bool) -> str:
    dtype = runner.config.dtype
    C = runner.multiply(*random_inputs(dtype, M, N, K))
    if not check:
        return "launched"
    if np.isnan(C).any():
        return f"{int(np.isnan(C).sum())} of {C.size} elements never written"
    expected = reference(dtype, M, N, K)
    error = float(np.linalg.norm(C - expected) / np.linalg.norm(expected))
    bound = tolerance(dtype, Problem(M, N, K)).bound
    return f"{'ok' if error <= bound else 'WRONG'}: ‖C − ref‖/‖ref‖ = {error:.2e} (bound {bound:.2e})"


def probe(dtype: str, params: dict[str, Any], shape: tuple[int, int, int], random_only: bool, check: bool) -> None:
    BM, BN = params["BM"], params["BN"]
    label = f"{dtype:<9}" + " ".join(f"{k}={v}" for k, v in params.items())
    try:
        runner = Runner(Config.make(Problem(*shape), "wgmma", dtype, params))
    except RuntimeError as exc:
        print(f"{label}: {exc}", flush=True)
        return
    try:
        if not random_only:
            # Two tiles each way (two cluster ranks, persistent blocks walking), several k-slices.
            M, N, K = 2 * BM * params["CLUSTER"], 2 * BN, 4 * params["BK"]
            print(f"{label}  B through: {through(runner, 'B', K, N, K)}", flush=True)
            print(f"{label}  A through: {through(runner, 'A', M, K, K)}", flush=True)
        print(f"{label}  random {'×'.join(map(str, shape))}: {random(runner, *shape, check)}", flush=True)
    except (TensorMapRefused, runner.cuda_driver.DriverError) as exc:
        print(f"{label}: {type(exc).__name__}: {exc}", flush=True)
    finally:
        runner.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dtypes", default="bfloat16,float16,tf32")
    parser.add_argument("--shape", default="1000,3000,2000", help="M,N,K of the random case")
    parser.add_argument("--rungs", default="", help="indices of the configurations of each dtype's ladder (default "
                        "all)")
    parser.add_argument("--random-only", action="store_true", help="skip the structured cases")
    parser.add_argument("--launch-only", action="store_true", help="random inputs, one launch, no host reference")
    args = parser.parse_args(argv)
    from tuner.backends.pycuda.device import require_gpu

    require_gpu()
    M, N, K = (int(x) for x in args.shape.split(","))
    for dtype in args.dtypes.split(","):
        ladder = [p for d, p in GPU_PARAMETERS if d == dtype]
        rungs = [int(i) for i in args.rungs.split(",")] if args.rungs else range(len(ladder))
        for rung in rungs:
            probe(dtype, ladder[rung], (M, N, K), args.random_only or args.launch_only, not args.launch_only)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
