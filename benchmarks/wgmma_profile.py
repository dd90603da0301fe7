"""What limits the wgmma family and cuBLAS at one size: each launched once under Nsight Compute, side by side,
against the device's tensor ceilings.

    python benchmarks/wgmma_profile.py device --out DIR
    python benchmarks/wgmma_profile.py metrics QUERY_FILE
    python benchmarks/wgmma_profile.py compile [--configs LIST.json] [--size 8192] [--dtypes tf32,bfloat16]
    python benchmarks/wgmma_profile.py launch --dtype tf32 --which kernel|cublas [--configs …] [--size 8192]
    python benchmarks/wgmma_profile.py summarise --out DIR [--size 8192] [--dtypes tf32,bfloat16]

``device`` prints the GPU's ceilings (``tuner device``: on sm_90 the tensor ceilings are the higher of mma.sync's
and wgmma's) and keeps them in ``DIR/device.json``. ``metrics`` reads the output of ``ncu --query-metrics`` and
prints the metrics to collect: the duration, the SM clock, DRAM and L2 throughput, and every tensor-pipe metric
the GPU has (names holding ``tensor`` or ``gmma``). ``launch`` is the program Nsight Compute profiles: the fastest
wgmma configuration of the dtype at SIZE³ in LIST.json (by the kernel TFLOP/s of ``--results``, the committed
side-by-side run; the first listed where it has none), or cuBLAS in that dtype (the tuner's baseline:
cublasGemmEx with TF32 compute for tf32), on the tuner's random inputs, launched WARMUPS times and once more
inside a profiler range (``ncu --profile-from-start off`` counts that one). ``compile`` fills the compile cache
with the chosen configurations beforehand. ``summarise`` reads ``DIR/ncu_<dtype>_<kernel|cublas>.csv`` (``ncu
--import … --csv --page raw``) and writes ``DIR/wgmma_profile_<gpu>.txt`` and ``.json``: per launch the duration,
TFLOP/s, the SM clock it ran at, operations per SM per clock against the tensor cores' dense rate, the share of
the measured tensor ceiling (as measured, and scaled to the launch's clock), tensor-pipe use, DRAM and L2
throughput and the leading warp stall reasons. ``.device/run_wgmma_profile.sh`` runs the whole sequence on a GPU.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import re
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from benchmarks.kernel_anatomy import CLOCK_METRICS, STALL_PREFIX, STALL_SUFFIX  # noqa: E402
from benchmarks.reporting import gpu_slug  # noqa: E402
from benchmarks.vs_cublas import listed_configs  # noqa: E402
from tuner.config import Config, Problem  # noqa: E402
from tuner.counters.ncu import parse_metric_names  # noqa: E402
from tuner.counters.ncu_csv import BASE_UNITS, RawMetrics, number, parse_ncu_raw, scaled, unit_factor  # noqa: E402
from tuner.errors import TunerError  # noqa: E402
from tuner.kernels import matmul  # noqa: E402
from tuner.peaks import key as peak_key  # noqa: E402
from tuner.settings import CompileSettings  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
CONFIGS = ROOT / "benchmarks" / "tensor_configs.json"
RESULTS = ROOT / "benchmarks" / "results" / "tensor_vs_cublas_h100.json"
DTYPES = ("tf32", "bfloat16")
WHO = ("kernel", "cublas")
FIXED_METRICS = (
    "gpu__time_duration.sum", "sm__cycles_elapsed.avg.per_second", "sm__throughput.avg.pct_of_peak_sustained_elapsed",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed", "dram__bytes.sum.per_second",
    "lts__throughput.avg.pct_of_peak_sustained_elapsed", "lts__t_bytes.sum.per_second",
    "sm__warps_active.avg.pct_of_peak_sustained_active", "launch__registers_per_thread",
)
"""Metrics every GPU since Volta has: the duration, the SM clock, the SMs', DRAM's and the L2's throughput."""
TENSOR_PIPE = re.compile(r"^sm__pipe_\w*(tensor|gmma)\w*_cycles_active$")
TENSOR_INSTRUCTIONS = re.compile(r"^sm__inst_executed_pipe_\w*(tensor|gmma)\w*$")
PIPE_SUFFIX = ".avg.pct_of_peak_sustained_active"
FALLBACK_TENSOR = ("sm__pipe_tensor_op_hmma_cycles_active" + PIPE_SUFFIX,)
"""Where the query gave no names: the tensor pipe's metric as every GPU since Volta names it."""
SECTIONS = ("SpeedOfLight", "WarpStateStats")
"""Nsight Compute sections collected beside the metrics (WarpStateStats: the stall reasons)."""
DENSE_FLOPS_PER_SM_CLOCK = {"tf32": 2048, "bfloat16": 4096, "float16": 4096}
"""sm_90's dense tensor-core operations per SM per clock (tuner.backends.pycuda.device.TENSOR_FLOPS_PER_SM_CLOCK)."""
TOP_STALLS = 4


def choose_metrics(query_output: str) -> list[str]:
    """The metrics to collect: the fixed ones, and the tensor pipe's busy share and instruction counts under every
    name the query lists (containing ``tensor`` or ``gmma``); the fallback name where it lists none."""
    names = sorted(parse_metric_names(query_output))
    tensor = [f"{n}{PIPE_SUFFIX}" for n in names if TENSOR_PIPE.match(n)]
    tensor += [f"{n}.sum" for n in names if TENSOR_INSTRUCTIONS.match(n)]
    return [*FIXED_METRICS, *(tensor or FALLBACK_TENSOR)]


def chosen_config(dtype: str, size: int, configs: Path, results: Path | None) -> tuple[Config, CompileSettings]:
    """The fastest wgmma configuration of ``dtype`` at size³ that ``configs`` lists (by ``results``' rows)."""
    listed, settings = listed_configs(configs)
    problem = Problem(size, size, size)
    candidates = [c for c in listed if c.family == "wgmma" and c.dtype == dtype and c.problem == problem]
    if not candidates:
        raise TunerError(f"{configs}: no wgmma configuration in {dtype} at {problem.label}; add one to its "
                         f"\"kernels\" and {size} to its \"problems\"")
    rates: dict[str, float] = {}
    if results is not None and results.is_file():
        try:
            rows = json.loads(results.read_text()).get("rows", [])
            rates = {r["config"]: float(r["kernel_tflops"]) for r in rows if r.get("status") == "ok"}
        except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
            raise TunerError(f"{results}: not a side-by-side record of benchmarks/vs_cublas.py ({exc})") from None
    return max(candidates, key=lambda c: rates.get(c.key, 0.0)), settings


# --- on the GPU -------------------------------------------------------------------------------------------------

def _profiler(start: bool) -> None:
    """Open or close the profiler range of the current context (cuProfilerStart/Stop of the driver)."""
    driver = ctypes.CDLL("libcuda.so.1")
    status = (driver.cuProfilerStart if start else driver.cuProfilerStop)()
    if status != 0:
        raise TunerError(f"cuProfiler{'Start' if start else 'Stop'} failed with CUDA status {status}")


def _workspace(problem: Problem, dtype: str, seed: int) -> Any:
    """The tuner's matmul buffers with its random inputs (no reference: nothing is checked under the profiler)."""
    from tuner.backends.pycuda.workspace import HostData, Workspace
    from tuner.kernels.arguments import Buffer
    from tuner.kernels.family import MATMUL
    from tuner.kernels.verify import random_inputs

    buffers = [a for a in MATMUL.arguments if isinstance(a, Buffer)]
    host = HostData(random_inputs(buffers, problem, dtype, seed), {}, MATMUL.tolerance(dtype, problem))
    return Workspace(MATMUL, problem, dtype, host)


def _compiled(config: Config, settings: CompileSettings) -> bytes:
    from tuner.compile.nvcc import compile_source
    from tuner.kernels.render import render

    result = compile_source(render(config), settings.arch, settings.options)
    if not result.ok or result.binary is None:
        raise TunerError(f"{config.key} did not compile for {settings.arch}:\n{result.log}")
    return result.binary


def compile_all(dtypes: list[str], size: int, configs: Path, results: Path | None) -> None:
    for dtype in dtypes:
        config, settings = chosen_config(dtype, size, configs, results)
        print(f"compiling {config.key}…", file=sys.stderr, flush=True)
        _compiled(config, settings)


def launch(dtype: str, which: str, size: int, configs: Path, results: Path | None, warmups: int, seed: int) -> None:
    """WARMUPS launches, then one inside the profiler range; the kernel's configuration or cuBLAS."""
    import pycuda.driver as cuda

    from tuner.backends.pycuda.device import require_gpu

    require_gpu()
    problem = Problem(size, size, size)
    workspace = _workspace(problem, dtype, seed)
    close = None
    try:
        if which == "kernel":
            from tuner.backends.pycuda.measurer import ExtendedLaunch
            from tuner.kernels.render import launch as geometry

            config, settings = chosen_config(dtype, size, configs, results)
            multiprocessors = cuda.Context.get_device().get_attribute(cuda.device_attribute.MULTIPROCESSOR_COUNT)
            launcher = ExtendedLaunch(_compiled(config, settings), geometry(config), workspace, multiprocessors)
            run, close, what = launcher.run, launcher.close, config.key
        else:
            from tuner.backends.pycuda.cublas import gemm_launcher

            run, what = gemm_launcher(int(workspace.device["A"]), int(workspace.device["B"]),
                                      int(workspace.device["C"]), size, size, size, dtype)
        print(f"launching {what} ({warmups} warm-up launches, then one profiled)", file=sys.stderr, flush=True)
        for _ in range(warmups):
            run()
        cuda.Context.synchronize()
        _profiler(True)
        run()
        cuda.Context.synchronize()
        _profiler(False)
    finally:
        if close is not None:
            close()
        workspace.free()


def device_ceilings(out: Path) -> None:
    """Print the device's ceilings as ``tuner device`` does and keep the summary in ``out/device.json``."""
    from tuner.backends.pycuda.summary import format_summary, summary

    info = summary(progress=True)
    print(format_summary(info), flush=True)
    out.mkdir(parents=True, exist_ok=True)
    (out / "device.json").write_text(json.dumps(info, indent=2, default=str) + "\n")


# --- the summary --------------------------------------------------------------------------------------------------

def _main_kernel(kernels: list[RawMetrics]) -> RawMetrics:
    """The longest of the profiled kernels (a library may launch a helper beside its GEMM)."""
    return max(kernels, key=lambda k: scaled(k, "gpu__time_duration.sum", "second") or 0.0)


def launch_figures(metrics: RawMetrics, dtype: str, size: int, device: dict[str, Any] | None) -> dict[str, Any]:
    """One profiled launch's figures, against the device's tensor ceiling for the dtype where ``device`` is given
    (the summary ``tuner device`` keeps)."""
    seconds = scaled(metrics, "gpu__time_duration.sum", "second")
    clock_hz = next((hz for name in CLOCK_METRICS if (hz := scaled(metrics, name, "hertz"))), None)
    flops = matmul.flops(Problem(size, size, size))
    tflops = flops / seconds / 1e12 if seconds else None
    sms = (device or {}).get("device", {}).get("multiprocessors")
    per_clock = flops / (seconds * clock_hz * sms) if seconds and clock_hz and sms else None
    stalls = {name[len(STALL_PREFIX):-len(STALL_SUFFIX)]: value for name in metrics
              if name.startswith(STALL_PREFIX) and name.endswith(STALL_SUFFIX)
              and (value := number(metrics, name)) is not None}
    stalls.pop("selected", None)  # the cycle of the issue itself
    figures: dict[str, Any] = {
        "kernel_name": metrics.get("Kernel Name", ("?", ""))[0],
        "duration_ms": seconds * 1e3 if seconds else None,
        "tflops": tflops,
        "sm_clock_mhz": clock_hz / 1e6 if clock_hz else None,
        "flops_per_sm_clock": per_clock,
        "dense_flops_per_sm_clock": DENSE_FLOPS_PER_SM_CLOCK[dtype],
        "tensor_pipe_pct": {name.removesuffix(PIPE_SUFFIX): value for name in metrics
                            if name.endswith(PIPE_SUFFIX) and ("tensor" in name or "gmma" in name)
                            and (value := number(metrics, name)) is not None},
        "tensor_instructions": {name.removesuffix(".sum"): value for name in metrics
                                if TENSOR_INSTRUCTIONS.match(name.removesuffix(".sum")) and name.endswith(".sum")
                                and (value := number(metrics, name)) is not None},
        "sm_throughput_pct": number(metrics, "sm__throughput.avg.pct_of_peak_sustained_elapsed"),
        "dram_pct": number(metrics, "dram__throughput.avg.pct_of_peak_sustained_elapsed"),
        "dram_gbs": _gigabytes_per_second(metrics, "dram__bytes.sum.per_second"),
        "l2_pct": number(metrics, "lts__throughput.avg.pct_of_peak_sustained_elapsed"),
        "l2_gbs": _gigabytes_per_second(metrics, "lts__t_bytes.sum.per_second"),
        "stalls": dict(sorted(stalls.items(), key=lambda kv: -kv[1])[:TOP_STALLS]),
    }
    figures.update(_against_ceiling(figures, dtype, device))
    return figures


def _gigabytes_per_second(metrics: RawMetrics, name: str) -> float | None:
    """A byte rate in GB/s, whatever prefixes ncu chose (``byte/second``, ``Tbyte/second``, ``Gbyte/s``)."""
    value = number(metrics, name)
    bytes_unit, _, time_unit = metrics[name][1].partition("/") if value is not None else ("", "", "")
    per_byte, per_second = unit_factor(bytes_unit, BASE_UNITS["byte"]), unit_factor(time_unit, BASE_UNITS["second"])
    return value * per_byte / per_second / 1e9 if value is not None and per_byte and per_second else None


def _against_ceiling(figures: dict[str, Any], dtype: str, device: dict[str, Any] | None) -> dict[str, Any]:
    """The share of the tensor ceiling, as measured and scaled to the launch's clock (the ceiling's own clock is
    the one NVML reported after its samples)."""
    if not device:
        return {}
    ceilings = device.get("ceilings", {})
    ceiling = device.get("peaks", {}).get("measured", {}).get(peak_key(dtype, "tensor"))
    instruction = ceilings.get("tensor_instructions", {}).get(dtype, "mma.sync")
    details = ceilings.get("details", {}).get(f"{'wgmma' if instruction == 'wgmma' else 'mma'}_{dtype}", {})
    ceiling_mhz = details.get("sm_clock_mhz_after") or details.get("sm_clock_mhz_before")
    found: dict[str, Any] = {"ceiling_tflops": ceiling / 1e3 if ceiling else None, "ceiling_instruction": instruction,
                             "ceiling_sm_clock_mhz": ceiling_mhz}
    if ceiling and figures["tflops"]:
        found["pct_ceiling"] = 100 * figures["tflops"] * 1e3 / ceiling
        if ceiling_mhz and figures["sm_clock_mhz"]:
            at_clock = ceiling * figures["sm_clock_mhz"] / ceiling_mhz
            found["pct_ceiling_at_clock"] = 100 * figures["tflops"] * 1e3 / at_clock
    return found


def _number(value: float | None, digits: int = 1) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def table(rows: list[dict[str, Any]], device: dict[str, Any] | None, size: int) -> str:
    name = (device or {}).get("device", {}).get("name", "an unnamed GPU")
    lines = [f"The wgmma family and cuBLAS at {size}×{size}×{size} under Nsight Compute on {name}: one launch each "
             "after warm-ups, clocks as they are (--clock-control none)", ""]
    head = (f"{'dtype':<9}{'launch':<8}{'ms':>8}{'TFLOP/s':>9}{'SM MHz':>8}{'FLOP/SM/clk':>13}{'% dense':>9}"
            f"{'% ceiling':>11}{'@clock':>8}{'tensor pipe %':>15}{'DRAM GB/s':>11}{'L2 GB/s':>9}")
    lines.append(head)
    for r in rows:
        if "missing" in r:
            lines.append(f"{r['dtype']:<9}{r['who']:<8}not profiled: {r['missing']}")
            continue
        pipes = _number(max(r["tensor_pipe_pct"].values()), 0) if r["tensor_pipe_pct"] else "—"
        dense = 100 * r["flops_per_sm_clock"] / r["dense_flops_per_sm_clock"] if r["flops_per_sm_clock"] else None
        lines.append(f"{r['dtype']:<9}{r['who']:<8}{_number(r['duration_ms'], 3):>8}{_number(r['tflops']):>9}"
                     f"{_number(r['sm_clock_mhz'], 0):>8}{_number(r['flops_per_sm_clock'], 0):>13}"
                     f"{_number(dense):>9}{_number(r.get('pct_ceiling')):>11}{_number(r.get('pct_ceiling_at_clock')):>8}"
                     f"{pipes:>15}{_number(r['dram_gbs'], 0):>11}{_number(r['l2_gbs'], 0):>9}")
    lines.append("")
    for r in rows:
        if "missing" not in r:
            stalls = ", ".join(f"{k} {v:.2f}" for k, v in r["stalls"].items()) or "—"
            lines.append(f"{r['dtype']} {r['who']}: {r['kernel_name'][:90]}; stalls (cycles per issued instruction): "
                         f"{stalls}")
    pipe_names = next((list(r["tensor_pipe_pct"]) for r in rows if r.get("tensor_pipe_pct")), [])
    ceilings = sorted({(r["dtype"], r["ceiling_tflops"], r["ceiling_instruction"], r["ceiling_sm_clock_mhz"])
                       for r in rows if r.get("ceiling_tflops")})
    lines += [
        "",
        "FLOP/SM/clk = 2·M·N·K / (duration × SM clock × SMs); % dense = of sm_90's dense tensor rate per SM and clock "
        f"({', '.join(f'{d} {v}' for d, v in DENSE_FLOPS_PER_SM_CLOCK.items())})",
        "% ceiling = of the device's measured tensor ceiling; @clock = of that ceiling scaled to the launch's SM clock "
        "(ceiling × launch clock / the clock the ceiling ran at): "
        + ("; ".join(f"{d} {c:.1f} TFLOP/s ({i}, {_number(m, 0)} MHz)" for d, c, i, m in ceilings) or "none known"),
        f"tensor pipe % = the busiest of {', '.join(pipe_names) or 'no tensor-pipe metric'} "
        "(.avg.pct_of_peak_sustained_active)",
        "stalls = smsp__average_warps_issue_stalled_<reason>_per_issue_active (WarpStateStats), the leading "
        f"{TOP_STALLS}",
    ]
    return "\n".join(lines)


def summarise(out: Path, dtypes: list[str], size: int) -> Path:
    """Read the CSVs of the profiled launches in ``out`` and write the table and its record there."""
    device_file = out / "device.json"
    device = json.loads(device_file.read_text()) if device_file.is_file() else None
    rows: list[dict[str, Any]] = []
    for dtype in dtypes:
        for who in WHO:
            path = out / f"ncu_{dtype}_{who}.csv"
            try:
                kernels = parse_ncu_raw(path.read_text())
            except OSError as exc:
                rows.append({"dtype": dtype, "who": who, "missing": f"{path.name}: {exc.strerror}"})
                continue
            except TunerError as exc:
                rows.append({"dtype": dtype, "who": who, "missing": f"{path.name}: {exc}"})
                continue
            rows.append({"dtype": dtype, "who": who, "profiled_kernels": len(kernels),
                         **launch_figures(_main_kernel(kernels), dtype, size, device)})
    text = table(rows, device, size)
    print(text)
    stem = out / f"wgmma_profile_{gpu_slug(device['device']['name']) if device else 'gpu'}"
    stem.with_suffix(".txt").write_text(text + "\n")
    stem.with_suffix(".json").write_text(json.dumps({"size": size, "rows": rows}, indent=2) + "\n")
    return stem


# --- the command line ---------------------------------------------------------------------------------------------

def _dtypes(text: str) -> list[str]:
    dtypes = [d for d in text.split(",") if d]
    unknown = [d for d in dtypes if d not in DENSE_FLOPS_PER_SM_CLOCK]
    if unknown or not dtypes:
        raise argparse.ArgumentTypeError(f"dtypes are tf32, bfloat16 or float16, not {text!r}")
    return dtypes


def parser() -> argparse.ArgumentParser:
    top = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    commands = top.add_subparsers(dest="command", required=True)
    device = commands.add_parser("device", help="print the GPU's ceilings and keep them in OUT/device.json")
    device.add_argument("--out", type=Path, required=True)
    metrics = commands.add_parser("metrics", help="the metrics to collect, from ncu --query-metrics output")
    metrics.add_argument("query", type=Path, help="a file holding the output of ncu --query-metrics")
    for name, text in (("compile", "compile the chosen configurations"), ("launch", "the program ncu profiles"),
                       ("summarise", "read OUT's CSVs, write OUT/wgmma_profile_<gpu>.txt and .json")):
        command = commands.add_parser(name, help=text)
        command.add_argument("--size", type=int, default=8192, help="M = N = K (default 8192)")
        if name == "launch":
            command.add_argument("--dtype", type=lambda t: _dtypes(t)[0], required=True)
            command.add_argument("--which", choices=WHO, required=True)
            command.add_argument("--warmups", type=int, default=2)
            command.add_argument("--seed", type=int, default=0, help="the inputs' seed (the tuner's default 0)")
        else:
            command.add_argument("--dtypes", type=_dtypes, default=list(DTYPES))
        if name == "summarise":
            command.add_argument("--out", type=Path, required=True)
        else:
            command.add_argument("--configs", type=Path, default=CONFIGS)
            command.add_argument("--results", type=Path, default=RESULTS,
                                 help="a vs_cublas.py record to pick the fastest configuration by")
    return top


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        if args.command == "device":
            device_ceilings(args.out)
        elif args.command == "metrics":
            try:
                query = args.query.read_text()
            except OSError as exc:
                raise TunerError(f"{args.query}: cannot read the metric query's output ({exc.strerror})") from None
            print(",".join(choose_metrics(query)))
        elif args.command == "compile":
            compile_all(args.dtypes, args.size, args.configs, args.results)
        elif args.command == "launch":
            launch(args.dtype, args.which, args.size, args.configs, args.results, args.warmups, args.seed)
        else:
            stem = summarise(args.out, args.dtypes, args.size)
            print(f"wrote {stem}.txt and {stem}.json", file=sys.stderr)
    except TunerError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
