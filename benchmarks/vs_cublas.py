"""The best tuned kernel of each problem and dtype of a run, timed side by side with cuBLAS in one process, on
the same buffers and by the same method, in alternating rounds; prints kernel / cuBLAS ratios.

    python benchmarks/vs_cublas.py RUN_DIR [--rounds 3] [--max-time 3] [--out DIR]
    python benchmarks/vs_cublas.py --configs LIST.json [--rounds 3] [--max-time 3] [--out DIR]

RUN_DIR is a tuning run's output folder (e.g. reports/h100_sgemm); instead, ``--configs`` names a JSON file of
configurations to time: ``{"arch": "sm_90a", "problems": [[M, N, K], ...], "kernels": [{"family": ..., "dtype":
..., "params": {...}}, ...]}`` (every kernel on every problem; arch and options default to the compile settings').
Each row also gives the kernel's share of the device's measured ceiling for its dtype (the multiply-add chains of
the CUDA cores, or the tensor cores' mma.sync, or on sm_90 wgmma where faster, where the dtype has one), since
cuBLAS DGEMM runs on the FP64 tensor cores of Hopper GPUs, which a CUDA-core kernel cannot use. Writes
``DIR/vs_cublas_<gpu>.txt`` and ``.json`` (``--name`` changes the stem).
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from benchmarks.reporting import DEFAULT_OUT, finish, tflops, write  # noqa: E402
from tuner.backends.pycuda.backend import PycudaBackend  # noqa: E402
from tuner.backends.pycuda.timing import describe_method  # noqa: E402
from tuner.config import Config, Problem  # noqa: E402
from tuner.errors import TunerError  # noqa: E402
from tuner.peaks import compute_peak  # noqa: E402
from tuner.results import table as results  # noqa: E402
from tuner.results.metadata import metadata_id  # noqa: E402
from tuner.settings import CompileSettings, MeasureSettings  # noqa: E402
from tuner.table.build import read_run  # noqa: E402

MEASURE = MeasureSettings(min_samples=20, max_samples=400, max_time_s=3.0)


def best_configs(run_dir: Path) -> tuple[list[Config], CompileSettings]:
    """The fastest ok configuration per problem and dtype, and the compile settings the run used."""
    df, metadata = read_run(run_dir)
    configs = [results.config_of_row(row) for _, row in results.best_rows(df).iterrows()]
    if not configs:
        raise TunerError(f"{run_dir}: the run has no ok evaluation to compare with cuBLAS")
    compiled = [env.get("compile", {}) for env in metadata.get("environments", {}).values()]
    options = next((tuple(c["options"]) for c in compiled if c.get("options")), CompileSettings().options)
    arch = next((c["arch"] for c in compiled if c.get("arch")), CompileSettings().arch)
    return configs, CompileSettings(arch=arch, options=options)


def listed_kernels(path: Path) -> tuple[list[dict[str, Any]], list[Problem], CompileSettings]:
    """A ``--configs`` file's kernels (family, dtype, params), its problems and its compile settings."""
    try:
        listing = json.loads(path.read_text())
        problems = [Problem(*sizes) for sizes in listing["problems"]]
        kernels = [{"family": k["family"], "dtype": k["dtype"], "params": dict(k["params"])}
                   for k in listing["kernels"]]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise TunerError(f"{path}: not a list of configurations to time ({type(exc).__name__}: {exc}); see "
                         f"benchmarks/vs_cublas.py for the format") from None
    defaults = CompileSettings()
    return kernels, problems, CompileSettings(arch=listing.get("arch", defaults.arch),
                                              options=tuple(listing.get("options", defaults.options)))


def listed_configs(path: Path) -> tuple[list[Config], CompileSettings]:
    """The configurations a ``--configs`` file lists (every kernel on every problem) and its compile settings."""
    kernels, problems, compile_settings = listed_kernels(path)
    try:
        configs = [Config.make(problem, k["family"], k["dtype"], k["params"]) for k in kernels for problem in problems]
    except (ValueError, KeyError, TypeError) as exc:
        raise TunerError(f"{path}: not a list of configurations to time ({type(exc).__name__}: {exc})") from None
    return configs, compile_settings


def compare(backend: PycudaBackend, config: Config, rounds: int) -> dict[str, Any]:
    """Alternate kernel and cuBLAS (each round swaps who goes first) and summarise the rounds."""
    kernel_rates, cublas_rates, ratios, errors = [], [], [], []
    clocks: dict[str, list[float]] = {"kernel": [], "cublas": []}
    for round_ in range(rounds):
        order = ("kernel", "cublas") if round_ % 2 == 0 else ("cublas", "kernel")
        measured = {}
        for who in order:
            result = backend.evaluate(config) if who == "kernel" else backend.baseline(config.problem, config.dtype)
            if tflops(config.problem, result) is None:
                return {"config": config.key, "status": f"{who}: {result.status.value}", "reason": result.reason}
            measured[who] = result
            if result.timing and result.timing.sm_clock_mhz_after:
                clocks[who].append(result.timing.sm_clock_mhz_after)
        kernel_rates.append(tflops(config.problem, measured["kernel"]))
        cublas_rates.append(tflops(config.problem, measured["cublas"]))
        ratios.append(kernel_rates[-1] / cublas_rates[-1])
        errors.append(measured["kernel"].error)
    return {
        "config": config.key, "status": "ok", "problem": config.problem.label, "dtype": config.dtype,
        "family": config.family, "params": config.param_dict,
        "kernel_tflops": statistics.median(kernel_rates), "cublas_tflops": statistics.median(cublas_rates),
        "ratio": statistics.median(ratios), "ratio_min": min(ratios), "ratio_max": max(ratios),
        "rounds": {"kernel_tflops": kernel_rates, "cublas_tflops": cublas_rates, "ratio": ratios},
        "verify_error": max(errors),
        "sm_clock_mhz": {who: statistics.median(v) if v else None for who, v in clocks.items()},
    }


def table(rows: list[dict[str, Any]], env: dict[str, Any], source: str, rounds: int) -> str:
    device, versions, measured = env["device"], env["versions"], env["peaks"]["measured"]
    lines = [
        f"{source} against cuBLAS on {device['name']} (driver {versions['driver']}, "
        f"CUDA {versions['cuda']}, nvcc {versions['nvcc']}, PyCUDA {versions['pycuda']}); {rounds} alternating "
        "rounds, medians",
        f"method: {env['measure']['method']}",
        "",
        f"{'problem':<16}{'dtype':<9}{'kernel TFLOP/s':>15}{'cuBLAS TFLOP/s':>16}{'ratio':>8}{'range':>14}"
        f"{'% ceiling':>15}{'SM MHz':>12}  configuration",
    ]
    for r in rows:
        if r["status"] != "ok":
            lines.append(f"{r['config']}: {r['status']} {r['reason']}")
            continue
        ceiling = compute_peak(measured, r["dtype"])
        share = f"{100 * r['kernel_tflops'] * 1e3 / ceiling:.1f}" if ceiling else "—"
        params = " ".join(f"{k}={v}" for k, v in r["params"].items())
        mhz = "/".join(f"{c:.0f}" if c else "—" for c in r["sm_clock_mhz"].values())
        lines.append(f"{r['problem']:<16}{r['dtype']:<9}{r['kernel_tflops']:>15.2f}{r['cublas_tflops']:>16.2f}"
                     f"{r['ratio']:>8.3f}{r['ratio_min']:>7.3f}–{r['ratio_max']:<6.3f}{share:>15}{mhz:>12}  "
                     f"{r['family']} {params}")
    lines += [
        "",
        "ratio = kernel TFLOP/s / cuBLAS TFLOP/s (median of the rounds' ratios); % ceiling = kernel against the "
        "device's measured ceiling of the dtype (multiply-add chains, or the tensor cores' mma.sync or wgmma) "
        + ", ".join(f"{d} {peak / 1e3:.2f} TFLOP/s" for d in sorted({r["dtype"] for r in rows if r["status"] == "ok"})
                    if (peak := compute_peak(measured, d))),
        "cuBLAS float64 (DGEMM) runs on the FP64 tensor cores of sm_90, which the multiply-add ceiling does not count",
        "SM MHz = the SM clock NVML reported after the kernel's / cuBLAS's samples (medians of the rounds)",
        f"metadata_id {metadata_id(env)}",
    ]
    return "\n".join(lines)


def run(run_dir: Path | None, listing: Path | None, rounds: int, max_time_s: float, out: Path, name: str) -> Path:
    if listing is not None:
        configs, compile_settings = listed_configs(listing)
        source = f"Kernels of {listing.name}"
    elif run_dir is not None:
        configs, compile_settings = best_configs(run_dir)
        source = f"Best tuned kernels of {run_dir.name}"
    else:
        raise TunerError("give a run's output folder or --configs LIST.json")
    measure = replace(MEASURE, max_time_s=max_time_s)
    with PycudaBackend(measure, compile_settings) as backend:
        backend.prefetch(configs)
        env = backend.metadata()
        rows = []
        for config in configs:
            print(f"{config.key} against cuBLAS…", file=sys.stderr, flush=True)
            rows.append(compare(backend, config, rounds))
    text = table(rows, env, source, rounds)
    print(text)
    record = {"run": str(run_dir or listing), "rounds": rounds, "method": describe_method(measure), "rows": rows}
    return write(out, name, env, text, record)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path, nargs="?", help="a tuning run's output folder")
    parser.add_argument("--configs", type=Path, help="a JSON list of configurations to time instead of a run's best")
    parser.add_argument("--rounds", type=int, default=3, help="alternating kernel/cuBLAS rounds (default 3)")
    parser.add_argument("--max-time", type=float, default=MEASURE.max_time_s,
                        help=f"seconds of samples per measurement at most (default {MEASURE.max_time_s:g})")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder for the .txt and .json files")
    parser.add_argument("--name", default="vs_cublas", help="stem of the written files (default vs_cublas)")
    args = parser.parse_args(argv)
    return finish(lambda: run(args.run_dir, args.configs, args.rounds, args.max_time, args.out, args.name))


if __name__ == "__main__":
    raise SystemExit(main())
