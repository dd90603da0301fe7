"""The seed kernels on the local GPU: naive (16×16) and tiled 8/16/32 at 4096³ in float32 and float64, next to
cuBLAS and the device's measured ceilings, all in the same run and by the same timing method.

    python benchmarks/seed_kernels.py [--out DIR] [--size N] [--hot]

Prints the table and writes it, with the rows and the environment metadata, to
``DIR/seed_kernels_<gpu>.txt`` and ``.json`` (DIR defaults to benchmarks/results). Samples are cold (the L2
flushed before each) unless ``--hot``, which keeps the L2 warm and writes ``seed_kernels_hot_<gpu>.*``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from benchmarks.reporting import DEFAULT_OUT, finish, tflops, write  # noqa: E402
from tuner.backends.pycuda.backend import PycudaBackend  # noqa: E402
from tuner.backends.pycuda.timing import describe_method  # noqa: E402
from tuner.config import Config, Problem  # noqa: E402
from tuner.measure.measurement import Measurement  # noqa: E402
from tuner.results.metadata import metadata_id  # noqa: E402
from tuner.settings import CompileSettings, MeasureSettings  # noqa: E402

KERNELS = (
    ("naive 16×16", "naive", {"BLOCK_X": 16, "BLOCK_Y": 16}),
    ("tiled 8", "tiled", {"TILE_WIDTH": 8}),
    ("tiled 16", "tiled", {"TILE_WIDTH": 16}),
    ("tiled 32", "tiled", {"TILE_WIDTH": 32}),
)
DTYPES = ("float32", "float64")


def row(label: str, dtype: str, problem: Problem, result: Measurement, cublas: float | None) -> dict[str, Any]:
    rate = tflops(problem, result)
    timing = result.timing
    return {
        "kernel": label,
        "dtype": dtype,
        "status": result.status.value,
        "reason": result.reason,
        "tflops": rate,
        "pct_of_cublas": 100 * rate / cublas if rate and cublas else None,
        "median_ms": timing.median_ms if timing else None,
        "cv": timing.cv if timing else None,
        "samples": timing.count if timing else 0,
        "throttled_samples": timing.throttled_samples if timing else 0,
        "sm_clock_mhz_before": timing.sm_clock_mhz_before if timing else None,
        "sm_clock_mhz_after": timing.sm_clock_mhz_after if timing else None,
        "verify_error": result.error,
        "compile_time_s": result.compile_time_s,
    }


def _cell(value: float | None, form: str) -> str:
    return "—" if value is None else format(value, form)


def table(problem: Problem, rows: list[dict[str, Any]], env: dict[str, Any]) -> str:
    device, versions = env["device"], env["versions"]
    theoretical, measured = env["peaks"]["theoretical"], env["peaks"]["measured"]
    by = {(r["kernel"], r["dtype"]): r for r in rows}
    lines = [
        f"Seed kernels, C = A·B at {problem.label}, on {device['name']} (driver {versions['driver']}, "
        f"CUDA {versions['cuda']}, nvcc {versions['nvcc']}, PyCUDA {versions['pycuda']})",
        f"method: {env['measure']['method']}",
        "",
        f"{'kernel':<26}" + "".join(f"{dtype + ' TFLOP/s':>18}{'% cuBLAS':>10}" for dtype in DTYPES),
    ]
    for label in [k[0] for k in KERNELS] + ["cuBLAS"]:
        cells = ""
        for dtype in DTYPES:
            r = by[(label, dtype)]
            rate = _cell(r["tflops"], ".2f") if r["status"] == "ok" else r["status"]
            cells += f"{rate:>18}{_cell(r['pct_of_cublas'], '.1f'):>10}"
        lines.append(f"{label:<26}{cells}")
    for label, peaks in (("multiply-add ceiling", measured), ("theoretical peak", theoretical)):
        cells = "".join(f"{_cell((peaks.get(f'{d}_gflops') or 0) / 1e3 or None, '.2f'):>18}{'':>10}" for d in DTYPES)
        lines.append(f"{label:<26}{cells}")
    bandwidth, peak_bandwidth = measured.get("bandwidth_gbs"), theoretical.get("bandwidth_gbs")
    share = f" ({100 * bandwidth / peak_bandwidth:.0f}% of the theoretical" if bandwidth and peak_bandwidth else " ("
    lines += [
        "",
        f"DRAM bandwidth (streaming copy): {_cell(bandwidth and bandwidth / 1e3, '.2f')} TB/s{share} "
        f"{_cell(peak_bandwidth and peak_bandwidth / 1e3, '.2f')} TB/s)",
        f"ceilings measured {env['ceilings']['measured_utc']}; metadata_id {metadata_id(env)}",
    ]
    clocks = [c for r in rows for c in (r["sm_clock_mhz_before"], r["sm_clock_mhz_after"]) if c]
    if clocks:
        throttled = sum(r["throttled_samples"] for r in rows)
        lines.append(f"SM clock (NVML) before/after the kernels' samples: {min(clocks):.0f}–{max(clocks):.0f} MHz; "
                     f"{throttled} of {sum(r['samples'] for r in rows)} samples throttled")
    for dtype in DTYPES:
        cublas, peak = by[("cuBLAS", dtype)]["tflops"], theoretical.get(f"{dtype}_gflops")
        if cublas and peak and cublas * 1e3 > peak:
            lines.append(f"cuBLAS {dtype} runs above the multiply-add peak: its GEMM uses the {dtype} tensor cores "
                         "(DMMA on sm_90), which the FMA peak and ceiling do not count")
    failed = [r for r in rows if r["status"] != "ok"]
    lines += [f"{r['kernel']} {r['dtype']}: {r['status']}: {r['reason']}" for r in failed]
    return "\n".join(lines)


def run(size: int, out: Path, hot: bool = False) -> Path:
    problem = Problem(size, size, size)
    measure = MeasureSettings(cold_caches=not hot)
    with PycudaBackend(measure, CompileSettings()) as backend:
        configs = {(label, dtype): Config.make(problem, family, dtype, params)
                   for dtype in DTYPES for label, family, params in KERNELS}
        backend.prefetch(list(configs.values()))
        print("describing the GPU and its ceilings…", file=sys.stderr, flush=True)
        env = backend.metadata()
        rows = []
        for dtype in DTYPES:
            print(f"cuBLAS {dtype}…", file=sys.stderr, flush=True)
            baseline = backend.baseline(problem, dtype)
            cublas = tflops(problem, baseline)
            for label, _, _ in KERNELS:
                print(f"{label} {dtype}…", file=sys.stderr, flush=True)
                rows.append(row(label, dtype, problem, backend.evaluate(configs[(label, dtype)]), cublas))
            rows.append(row("cuBLAS", dtype, problem, baseline, cublas))
    text = table(problem, rows, env)
    print(text)
    record = {"problem": problem.label, "method": describe_method(measure), "rows": rows}
    return write(out, "seed_kernels_hot" if hot else "seed_kernels", env, text, record)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder for the .txt and .json files")
    parser.add_argument("--size", type=int, default=4096, help="M = N = K (default 4096)")
    parser.add_argument("--hot", action="store_true", help="keep the L2 warm between samples (no flush)")
    args = parser.parse_args(argv)
    return finish(lambda: run(args.size, args.out, args.hot))


if __name__ == "__main__":
    raise SystemExit(main())
