"""Float64 under the card's power limit: each kernel launched back to back for a few seconds while NVML samples
the power, the SM clock and the reasons the driver gives for holding the clock down.

    python benchmarks/power_limit.py RUN_DIR [--seconds 3] [--out DIR]

The kernels: the project's FP64 multiply-add ceiling kernel (constant operands), multiply-adds on 8×8 outer
products of register operands loaded from random data (what a register-blocked GEMM's inner loop issues, with no
memory traffic), the fastest float64 configuration of the tuning run RUN_DIR at its largest problem, and cuBLAS
DGEMM (FP64 tensor cores) on the same buffers. Rates count the seconds after the first, once the clock has
settled. Writes ``DIR/power_limit_<gpu>.txt`` and ``.json``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from benchmarks.reporting import DEFAULT_OUT, finish, write  # noqa: E402
from benchmarks.vs_cublas import best_configs  # noqa: E402
from tuner.backends.pycuda.backend import PycudaBackend  # noqa: E402
from tuner.backends.pycuda.ceilings import FMA_BLOCKS_PER_SM, FMA_CHAINS, FMA_THREADS, KERNEL_DIR  # noqa: E402
from tuner.compile.nvcc import compile_source  # noqa: E402
from tuner.config import Config  # noqa: E402
from tuner.errors import TunerError  # noqa: E402
from tuner.kernels import matmul
from tuner.kernels.matmul import tolerance  # noqa: E402
from tuner.kernels.render import launch, render  # noqa: E402
from tuner.results.metadata import metadata_id  # noqa: E402

OUTER_PRODUCTS = r"""
// acc[m][n] += a[m] * b[n] over an 8×8 register tile, odd rows backwards (consecutive multiply-adds share an
// operand, as in regblock's serpentine order); a and b come from random data so that the operands toggle.
extern "C" __global__ void __launch_bounds__(256, 1) outer_products(double* out, const double* in, int iterations)
{
    double a[8], b[8], acc[8][8];
    for (int i = 0; i < 8; ++i) { a[i] = in[(threadIdx.x + i) % 64]; b[i] = in[64 + (threadIdx.x + 3 * i) % 64]; }
    for (int m = 0; m < 8; ++m)
        for (int n = 0; n < 8; ++n) acc[m][n] = a[m] + b[n];
    for (int it = 0; it < iterations; ++it) {
#pragma unroll
        for (int m = 0; m < 8; ++m)
#pragma unroll
            for (int q = 0; q < 8; ++q) {
                const int n = m % 2 ? 7 - q : q;
                acc[m][n] = fma(a[m], b[n], acc[m][n]);
            }
    }
    double s = 0;
    for (int m = 0; m < 8; ++m)
        for (int n = 0; n < 8; ++n) s += acc[m][n];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
"""
OUTER_ITERATIONS = 4000
FMA_ITERATIONS = 4096
SETTLE_S = 1.0
REASONS = {0x1: "idle", 0x2: "application clocks", 0x4: "SW power cap", 0x8: "HW slowdown", 0x20: "SW thermal",
           0x40: "HW thermal", 0x80: "HW power brake"}


def _module(source: str, arch: str, folder: Path) -> Any:
    import cupy as cp

    compiled = compile_source(source, arch)
    if not compiled.ok:
        raise TunerError(f"a kernel of the power benchmark did not compile: {compiled.log.strip()[:400]}")
    path = folder / f"kernel{len(list(folder.iterdir()))}.cubin"
    path.write_bytes(compiled.cubin or b"")
    return cp.RawModule(path=str(path))


def _sustain(name: str, run: Callable[[], None], flops: float, seconds: float, nvml: Any) -> dict[str, Any]:
    """Launch ``run`` back to back for ``seconds``; the rate and NVML's readings over the settled part."""
    import cupy as cp
    import pynvml

    run()
    cp.cuda.runtime.deviceSynchronize()
    readings, launches, settled = [], 0, None
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for _ in range(4):
            run()
        cp.cuda.runtime.deviceSynchronize()
        now = time.perf_counter() - start
        launches += 4
        if settled is None and now >= SETTLE_S:
            settled = (now, launches)
        readings.append((now, pynvml.nvmlDeviceGetClockInfo(nvml, pynvml.NVML_CLOCK_SM),
                         pynvml.nvmlDeviceGetPowerUsage(nvml) / 1000,
                         pynvml.nvmlDeviceGetCurrentClocksEventReasons(nvml)))
    elapsed = time.perf_counter() - start
    since, before = settled or (0.0, 0)
    late = [r for r in readings if r[0] >= since] or readings
    reasons = 0
    for r in late:
        reasons |= r[3]
    return {"kernel": name, "tflops": flops * (launches - before) / (elapsed - since) / 1e12,
            "sm_clock_mhz": statistics.median(r[1] for r in late), "sm_clock_mhz_min": min(r[1] for r in late),
            "power_w": statistics.median(r[2] for r in late),
            "reasons": [text for bit, text in REASONS.items() if reasons & bit], "seconds": elapsed}


def _gemm_config(run_dir: Path) -> Config:
    configs = [c for c in best_configs(run_dir)[0] if c.dtype == "float64"]
    if not configs:
        raise TunerError(f"{run_dir}: the run has no ok float64 evaluation")
    return max(configs, key=lambda c: matmul.flops(c.problem))


def measure(config: Config, seconds: float, env: dict[str, Any]) -> list[dict[str, Any]]:
    import cupy as cp
    import pynvml

    device = env["device"]
    pynvml.nvmlInit()
    nvml = pynvml.nvmlDeviceGetHandleByPciBusId(device["pci_bus_id"])
    arch, sms = device["arch"], device["multiprocessors"]
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        fma_source = f"typedef double real_t;\n#define CHAINS {FMA_CHAINS}\n" + (KERNEL_DIR / "fma.cu").read_text()
        fma = _module(fma_source, arch, Path(folder)).get_function("fma_chains")
        blocks = sms * FMA_BLOCKS_PER_SM
        out = cp.empty(blocks * FMA_THREADS)
        args = (out, cp.float64(0.999), cp.float64(0.001), cp.int32(FMA_ITERATIONS))
        rows.append(_sustain("FP64 ceiling kernel (multiply-adds, constant operands)",
                             lambda: fma((blocks,), (FMA_THREADS,), args),
                             2 * blocks * FMA_THREADS * FMA_CHAINS * FMA_ITERATIONS, seconds, nvml))

        outer = _module(OUTER_PRODUCTS, arch, Path(folder)).get_function("outer_products")
        outer_blocks = sms  # one 8-warp block per SM, as the float64 GEMM runs
        data = cp.random.default_rng(1).random(128) * 0.5 + 0.25
        out = cp.empty(outer_blocks * 256)
        rows.append(_sustain("8×8 outer products, register operands from random data",
                             lambda: outer((outer_blocks,), (256,), (out, data, cp.int32(OUTER_ITERATIONS))),
                             2 * 64 * OUTER_ITERATIONS * 256 * outer_blocks, seconds, nvml))

        p = config.problem
        rng = cp.random.default_rng(0)
        A, B, C = rng.random((p.M, p.K)) * 2 - 1, rng.random((p.K, p.N)) * 2 - 1, cp.empty((p.M, p.N))
        geometry = launch(config)
        gemm = _module(render(config), arch, Path(folder)).get_function(geometry.kernel_name)
        gemm.max_dynamic_shared_size_bytes = geometry.dynamic_shared_bytes
        grid = geometry.grid_on(sms)
        sizes = (cp.int32(p.M), cp.int32(p.N), cp.int32(p.K))
        rows.append(_sustain(f"tuned GEMM {p.label}: {config.family} "
                             + " ".join(f"{k}={v}" for k, v in config.params),
                             lambda: gemm(grid, geometry.block, (A, B, C, *sizes),
                                          shared_mem=geometry.dynamic_shared_bytes),
                             matmul.flops(p), seconds, nvml))
        reference = A @ B
        error = float(cp.linalg.norm(C - reference) / cp.linalg.norm(reference))
        if not error <= tolerance(config.dtype, p).bound:
            raise TunerError(f"the tuned GEMM disagrees with cuBLAS: ‖C − ref‖/‖ref‖ = {error:.1e}")
        rows.append(_sustain(f"cuBLAS DGEMM {p.label} (FP64 tensor cores)", lambda: cp.matmul(A, B, out=C),
                             matmul.flops(p), seconds, nvml))
    return rows


def table(rows: list[dict[str, Any]], env: dict[str, Any], run_dir: Path, seconds: float) -> str:
    device, ceiling = env["device"], env["peaks"]["measured"]["float64_gflops"] / 1e3
    lines = [
        f"Float64 kernels launched back to back for {seconds:g} s each on {device['name']} "
        f"(driver {env['versions']['driver']}); rates and NVML readings after the first {SETTLE_S:g} s",
        "",
        f"{'TFLOP/s':>8}{'% ceiling':>10}{'SM MHz':>8}{'min':>6}{'W':>6}  {'clock held by':<16}kernel",
    ]
    for r in rows:
        lines.append(f"{r['tflops']:>8.2f}{100 * r['tflops'] / ceiling:>10.1f}{r['sm_clock_mhz']:>8.0f}"
                     f"{r['sm_clock_mhz_min']:>6.0f}{r['power_w']:>6.0f}  {', '.join(r['reasons']) or '—':<16}"
                     f"{r['kernel']}")
    lines += [
        "",
        f"% ceiling = against the FP64 multiply-add ceiling measured on this GPU, {ceiling:.2f} TFLOP/s (the first "
        "kernel, timed for under a second)",
        f"tuned GEMM from {run_dir}; metadata_id {metadata_id(env)}",
    ]
    return "\n".join(lines)


def run(run_dir: Path, seconds: float, out: Path) -> Path:
    config = _gemm_config(run_dir)  # before starting the GPU: the run may have no float64 result
    with PycudaBackend() as backend:
        env = backend.metadata()
    rows = measure(config, seconds, env)
    text = table(rows, env, run_dir, seconds)
    print(text)
    return write(out, "power_limit", env, text, {"run": str(run_dir), "seconds": seconds, "rows": rows})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path, help="a tuning run's output folder with float64 results")
    parser.add_argument("--seconds", type=float, default=3.0, help="how long each kernel runs (default 3)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder for the .txt and .json files")
    args = parser.parse_args(argv)
    return finish(lambda: run(args.run_dir, args.seconds, args.out))


if __name__ == "__main__":
    raise SystemExit(main())
