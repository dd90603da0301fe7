"""How exact the FP8 kernels are: each design's relative error ‖C − ref‖ / ‖ref‖ against K, in e4m3 and e5m2,
beside the bound the verification applies ((K/32)·2⁻¹⁴) and cuBLASLt's FP8 GEMM (promoted accumulation) on the
same inputs, through the project's own measuring path (inputs exact in the dtype, float64 reference).

    python benchmarks/fp8_accuracy.py [--ks 128,1024,4096,8192] [--size 1024] [--out DIR]
    python benchmarks/fp8_accuracy.py --memcheck   # two small odd shapes per design and dtype, for compute-sanitizer
    python benchmarks/fp8_accuracy.py --profile "fine-grained scales"   # one design at 8192³, for ncu

Writes ``DIR/fp8_accuracy_<gpu>.txt`` and ``.json``.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from benchmarks.reporting import DEFAULT_OUT, finish, write  # noqa: E402
from tuner.backends.pycuda.backend import PycudaBackend  # noqa: E402
from tuner.config import Config, Problem  # noqa: E402
from tuner.kernels.fp8_matmul import tolerance  # noqa: E402
from tuner.settings import CompileSettings, MeasureSettings  # noqa: E402

_BASE = dict(BK=128, STAGES=4, GROUP=8, SPLIT_K=1, CONSUMERS=2, REGALLOC=1, CLUSTER=2, PERSISTENT=1)
DESIGNS: dict[str, tuple[str, dict[str, Any]]] = {
    "no promotion (BN 256)": ("wgmma_fp8", dict(_BASE, BM=128, BN=256, PROMOTE=0)),
    "promote every 4 slices": ("wgmma_fp8", dict(_BASE, BM=128, BN=128, PROMOTE=4)),
    "promote every slice": ("wgmma_fp8", dict(_BASE, BM=128, BN=128, PROMOTE=1)),
    "fine-grained scales": ("wgmma_fp8_blocks", dict(_BASE, BM=128, BN=128, SCALING="blocks")),
    "fine-grained scales (BN 192)": ("wgmma_fp8_blocks", dict(_BASE, BM=128, BN=192, SCALING="blocks")),
}
DTYPES = ("float8_e4m3", "float8_e5m2")
MEMCHECK_DTYPES = (*DTYPES, "float8_e4m3_e5m2", "float8_e4m3_out_bfloat16", "float8_e4m3_e5m2_out_bfloat16")
"""Under compute-sanitizer: both formats, the mixed product, and C written in bfloat16 (its own stores)."""
QUICK = MeasureSettings(warmup=1, min_samples=3, max_samples=5, max_time_s=0.2, timeout_s=60.0)
MEMCHECK_SHAPES = (Problem(333, 520, 208), Problem(333, 521, 208))
"""No tile divides M or N, K is no whole slice; the second's N is odd (C's rows start at odd elements)."""
PROFILE_SHAPE = Problem(8192, 8192, 8192)


def measure(ks: list[int], size: int) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    configs = [Config.make(Problem(size, size, k), family, dtype, params)
               for k in ks for dtype in DTYPES for family, params in DESIGNS.values()]
    rows = []
    with PycudaBackend(QUICK, CompileSettings(arch="sm_90a")) as backend:
        backend.prefetch(configs)
        for k in ks:
            for dtype in DTYPES:
                problem = Problem(size, size, k)
                row: dict[str, Any] = {"K": k, "dtype": dtype, "bound": tolerance(dtype, problem).bound}
                for name, (family, params) in DESIGNS.items():
                    result = backend.evaluate(Config.make(problem, family, dtype, params))
                    row[name] = result.error if result.status.value == "ok" else result.status.value
                vendor = backend.baseline(problem, dtype)
                row["cuBLASLt"] = vendor.error if vendor and vendor.status.value == "ok" else "unavailable"
                rows.append(row)
                print(row, file=sys.stderr, flush=True)
        env = backend.metadata()
    return rows, env


def text_of(rows: list[dict[str, Any]], size: int, env: dict[str, Any]) -> str:
    columns = ["K", "dtype", "bound", *DESIGNS, "cuBLASLt"]
    cell = lambda v: f"{v:.2e}" if isinstance(v, float) else str(v)  # noqa: E731
    lines = [f"FP8 relative error ‖C − ref‖/‖ref‖ on {env['device']['name']}, M = N = {size}, inputs uniform "
             f"±[0.1, 1] rounded to the dtype; per-tensor scales 1.5 and 0.625", " | ".join(columns)]
    lines += [" | ".join(cell(row[c]) for c in columns) for row in rows]
    return "\n".join(lines)


def launch_only(designs: list[str], problems: tuple[Problem, ...], dtypes: tuple[str, ...]) -> int:
    """Each design once on each problem (under compute-sanitizer or ncu, which follow the measuring process)."""
    configs = [Config.make(problem, DESIGNS[name][0], dtype, DESIGNS[name][1])
               for problem in problems for dtype in dtypes for name in designs]
    with PycudaBackend(QUICK, CompileSettings(arch="sm_90a")) as backend:
        for config in configs:
            result = backend.evaluate(config)
            print(f"{config.key}: {result.status.value} {result.reason[:160]}", flush=True)
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ks", default="128,1024,4096,8192")
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    parser.add_argument("--memcheck", action="store_true")
    parser.add_argument("--profile", choices=list(DESIGNS))
    args = parser.parse_args(argv)
    if args.memcheck:
        return launch_only(list(DESIGNS), MEMCHECK_SHAPES, MEMCHECK_DTYPES)
    if args.profile:
        return launch_only([args.profile], (PROFILE_SHAPE,), DTYPES[:1])
    ks = [int(k) for k in args.ks.split(",")]

    def produce() -> Path:
        rows, env = measure(ks, args.size)
        return write(args.out, "fp8_accuracy", env, text_of(rows, args.size, env), {"size": args.size, "rows": rows})

    return finish(produce)


if __name__ == "__main__":
    sys.exit(main())
