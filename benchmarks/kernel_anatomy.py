"""What limits the best tuned kernels of a run: the compiler's resource report, the instruction mix of their
hot loops in the disassembly, and (on a GPU, with Nsight Compute) the hardware counters of one launch.

    python benchmarks/kernel_anatomy.py RUN_DIR [--no-counters] [--out DIR]

For the fastest configuration of each problem and dtype of the tuning run RUN_DIR:

- **resources**: registers, spills, stack and shared memory, from ``nvcc -Xptxas -v`` as the tuner compiles it;
- **disassembly** (``cuobjdump -sass``): the innermost loops that hold most of the multiply-adds, and in them the
  width of every global, shared and local memory instruction (are the copies 128-bit? is anything spilled?),
  the multiply-adds per shared-memory load, and the share of multiply-adds that take an operand from the
  operand reuse cache rather than the register file;
- **counters** (``ncu --clock-control none``, the third launch of the kernel in a verified evaluation, caches
  flushed by Nsight Compute as the tuner flushes L2): shared-memory bank conflicts and wavefronts per request,
  the busy share of the multiply-add pipe, issue-slot use, achieved occupancy, the leading warp stall reasons,
  and L2 and DRAM traffic against the block tile's model.

Writes ``DIR/kernel_anatomy_<gpu>.txt`` and ``.json``.
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from benchmarks.reporting import DEFAULT_OUT, finish, write  # noqa: E402
from benchmarks.vs_cublas import best_configs  # noqa: E402
from tuner.compile.nvcc import compile_source, find_nvcc  # noqa: E402
from tuner.config import Config  # noqa: E402
from tuner.counters.conditions import CLOCK_CONTROL  # noqa: E402
from tuner.counters.ncu import NcuUnavailable, find_ncu  # noqa: E402
from tuner.counters.ncu_csv import RawMetrics, first_of, number, parse_ncu_raw, scaled  # noqa: E402
from tuner.errors import TunerError  # noqa: E402
from tuner.kernels import matmul
from tuner.kernels.model import cost  # noqa: E402
from tuner.kernels.render import launch, render  # noqa: E402
from tuner.results import table as results  # noqa: E402
from tuner.results.metadata import metadata_id  # noqa: E402
from tuner.settings import CompileSettings, MeasureSettings  # noqa: E402

FMA_OPCODE = {"float32": "FFMA", "float64": "DFMA", "int32": "IMAD"}
NCU_SECTIONS = ("SpeedOfLight", "ComputeWorkloadAnalysis", "MemoryWorkloadAnalysis_Tables", "Occupancy",
                "WarpStateStats", "LaunchStats")
PROFILED_LAUNCH = 2
"""Launches of the kernel that Nsight Compute lets pass before the one it profiles: verification, a warm-up."""
HOT_SHARE = 0.25
"""A loop is hot when it holds at least this share of the multiply-adds of the hottest one."""
CLOCK_METRICS = ("sm__cycles_elapsed.avg.per_second", "gpc__cycles_elapsed.avg.per_second")
STALL_PREFIX = "smsp__average_warps_issue_stalled_"
STALL_SUFFIX = "_per_issue_active.ratio"


# --- disassembly ----------------------------------------------------------------------------------------------

_INSTRUCTION = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)([^;]*);")
_TARGET = re.compile(r"0x([0-9a-f]+)")


@dataclass(frozen=True)
class Instruction:
    offset: int
    opcode: str
    operands: str

    @property
    def base(self) -> str:
        return self.opcode.split(".")[0]


def parse_sass(text: str) -> list[Instruction]:
    """The instructions of ``cuobjdump -sass`` output, in address order (one function), without those
    predicated on ``!PT``, which never execute (ptxas pads with them)."""
    found = (_INSTRUCTION.search(line) for line in text.splitlines())
    return [Instruction(int(m[1], 16), m[3], m[4].strip()) for m in found if m and (m[2] or "").strip() != "@!PT"]


def loops(code: list[Instruction]) -> list[tuple[int, int]]:
    """(first, last) offsets of every loop: a branch back to an earlier address."""
    spans = []
    for ins in code:
        if ins.base in ("BRA", "JMP") and (target := _TARGET.search(ins.operands)):
            start = int(target[1], 16)
            if start <= ins.offset:
                spans.append((start, ins.offset))
    return spans


@dataclass
class LoopMix:
    """The instruction mix of one loop body."""

    first: int
    last: int
    instructions: int
    fma: int
    fma_reusing: int
    memory: dict[str, int] = field(default_factory=dict)
    """Count per memory opcode with its width suffix, e.g. ``LDGSTS.E.BYPASS.128``, ``LDS.128``, ``LDS``."""
    barriers: int = 0

    @property
    def shared_loads(self) -> int:
        return sum(n for op, n in self.memory.items() if op.split(".")[0] == "LDS")

    @property
    def local_accesses(self) -> int:
        return sum(n for op, n in self.memory.items() if op.split(".")[0] in ("LDL", "STL"))


MEMORY_OPCODES = ("LDG", "LDGSTS", "STG", "LDS", "STS", "LDSM", "LDL", "STL", "UBLKCP", "UTMALDG")


def loop_mix(code: list[Instruction], first: int, last: int, fma_opcode: str) -> LoopMix:
    body = [ins for ins in code if first <= ins.offset <= last]
    fmas = [ins for ins in body if ins.base == fma_opcode]
    return LoopMix(
        first=first, last=last, instructions=len(body), fma=len(fmas),
        fma_reusing=sum(".reuse" in ins.operands for ins in fmas),
        memory=dict(sorted(Counter(ins.opcode for ins in body if ins.base in MEMORY_OPCODES).items())),
        barriers=sum(ins.base == "BAR" for ins in body),
    )


def hot_loops(code: list[Instruction], fma_opcode: str) -> list[LoopMix]:
    """The innermost loops holding at least HOT_SHARE of the hottest loop's multiply-adds, in address order:
    a loop around a hot loop (a tile loop around the loop over k, say) is left out, so that each hot path of
    the code is reported once."""
    mixes = [loop_mix(code, a, b, fma_opcode) for a, b in set(loops(code))]
    if not mixes or max(m.fma for m in mixes) == 0:
        return []
    top = max(m.fma for m in mixes)
    hot = [m for m in mixes if m.fma >= HOT_SHARE * top]

    def encloses_hot(m: LoopMix) -> bool:
        return any(o is not m and m.first <= o.first and o.last <= m.last for o in hot)

    return sorted((m for m in hot if not encloses_hot(m)), key=lambda m: m.first)


def find_cuobjdump() -> str:
    """cuobjdump beside nvcc, else on PATH."""
    beside = Path(find_nvcc()).parent / "cuobjdump"
    if beside.is_file():
        return str(beside)
    found = shutil.which("cuobjdump")
    if not found:
        raise TunerError("cannot find cuobjdump beside nvcc or on PATH; it comes with the CUDA toolkit "
                         "(or pip install nvidia-cuda-cuobjdump-cu13 and put its bin folder on PATH)")
    return found


def disassemble(cubin: bytes) -> str:
    with tempfile.TemporaryDirectory(prefix="tuner-sass-") as folder:
        path = Path(folder) / "kernel.cubin"
        path.write_bytes(cubin)
        done = subprocess.run([find_cuobjdump(), "-sass", str(path)], capture_output=True, text=True, check=False)
    if done.returncode != 0:
        raise TunerError(f"cuobjdump -sass failed with status {done.returncode}: {done.stderr.strip()}")
    return done.stdout


# --- Nsight Compute ---------------------------------------------------------------------------------------------

def kept(name: str) -> bool:
    """Whether the record keeps a raw metric: not the per-SM extremes, the shares of elapsed cycles that
    duplicate those of active ones, or the device's attributes, which the metadata has."""
    return not (re.search(r"\.(min|max)(\.|$)", name) or name.endswith(".pct_of_peak_sustained_elapsed")
                or name.startswith("device__attribute"))


def counters_summary(metrics: RawMetrics, config: Config) -> dict[str, Any]:
    """The figures the report prints, from one kernel's raw metrics."""
    seconds = scaled(metrics, "gpu__time_duration.sum", "second")
    conflicts = sum(number(metrics, f"l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_{op}.sum") or 0
                    for op in ("ld", "st"))
    wavefronts = number(metrics, "l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum")
    requests = first_of(metrics, "smsp__sass_inst_executed_op_shared_ld.sum", "smsp__inst_executed_op_shared_ld.sum")
    stalls = {name[len(STALL_PREFIX):-len(STALL_SUFFIX)]: number(metrics, name) or 0.0
              for name in metrics if name.startswith(STALL_PREFIX) and name.endswith(STALL_SUFFIX)}
    stalls.pop("selected", None)  # the cycle of the issue itself, 1 per instruction
    l2_to_sm = number(metrics, "lts__t_sectors_srcunit_tex_op_read.sum")
    local = [number(metrics, f"l1tex__t_sectors_pipe_lsu_mem_local_op_{op}.sum") for op in ("ld", "st")]
    dram = [scaled(metrics, f"dram__bytes_{op}.sum", "byte") for op in ("read", "write")]
    return {
        "duration_ms": seconds * 1e3 if seconds else None,
        "tflops": matmul.flops(config.problem) / seconds / 1e12 if seconds else None,
        "sm_clock_mhz": next((hz / 1e6 for n in CLOCK_METRICS if (hz := scaled(metrics, n, "hertz"))), None),
        "fma_pipe_busy_pct": number(metrics, f"sm__pipe_{'fp64' if config.dtype == 'float64' else 'fma'}"
                                             "_cycles_active.avg.pct_of_peak_sustained_active"),
        "issue_active_pct": first_of(metrics, "sm__issue_active.avg.pct_of_peak_sustained_active",
                                     "sm__issue_active.avg.pct_of_peak_sustained_elapsed"),
        "achieved_occupancy_pct": number(metrics, "sm__warps_active.avg.pct_of_peak_sustained_active"),
        "theoretical_occupancy_pct": number(metrics, "sm__maximum_warps_per_active_cycle_pct"),
        "registers": number(metrics, "launch__registers_per_thread"),
        "shared_bank_conflicts": conflicts,
        "shared_wavefronts_per_load": wavefronts / requests if wavefronts and requests else None,
        "local_bytes": sum(local) * 32 if None not in local else None,
        "l2_to_sm_bytes": l2_to_sm * 32 if l2_to_sm is not None else None,
        "model_global_bytes": cost(config).global_bytes,
        "dram_bytes": sum(dram) if None not in dram else scaled(metrics, "dram__bytes.sum", "byte"),
        "stalls": dict(sorted(stalls.items(), key=lambda kv: -kv[1])[:5]),
    }


def profile(config: Config, run_dir: Path, folder: Path) -> RawMetrics:
    """Profile one launch of ``config`` with Nsight Compute and return its raw metrics."""
    try:
        ncu = find_ncu()
    except NcuUnavailable as exc:
        raise TunerError(f"hardware counters need Nsight Compute: {exc}; or pass --no-counters for the compiler's "
                         "report and the disassembly alone") from None
    report = folder / f"{config.dtype}_{config.problem.label}"
    kernel = launch(config).kernel_name
    command = [ncu, "--clock-control", CLOCK_CONTROL, "--target-processes", "all", "--kernel-name", kernel,
               "--launch-skip", str(PROFILED_LAUNCH), "--launch-count", "1",
               "--export", str(report), "--force-overwrite",
               *[arg for s in NCU_SECTIONS for arg in ("--section", s)],
               sys.executable, str(Path(__file__).resolve()), str(run_dir), "--launch-one", config.key]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0 or not report.with_suffix(".ncu-rep").is_file():
        raise TunerError(f"Nsight Compute could not profile {config.key} (status {done.returncode}): "
                         f"{(done.stderr or done.stdout).strip()[-800:]}")
    exported = subprocess.run([ncu, "--import", str(report.with_suffix(".ncu-rep")), "--csv", "--page", "raw"],
                              capture_output=True, text=True, check=False)
    if exported.returncode != 0:
        raise TunerError(f"ncu --import failed with status {exported.returncode}: {exported.stderr.strip()}")
    return parse_ncu_raw(exported.stdout)[0]


def launch_one(run_dir: Path, key: str) -> int:
    """Inside Nsight Compute: evaluate one configuration (verified, two warm-ups, a few timed launches)."""
    from tuner.backends.pycuda.backend import PycudaBackend

    configs, compile_settings = best_configs(run_dir)
    config = next((c for c in configs if c.key == key), None)
    if config is None:
        raise TunerError(f"{run_dir}: {key} is not among the run's best configurations")
    with PycudaBackend(MeasureSettings(min_samples=3, max_samples=3), compile_settings) as backend:
        result = backend.evaluate(config)
    print(f"{key}: {result.status.value} {result.reason or ''}", file=sys.stderr)
    return 0 if result.status.value == "ok" else 1


# --- one kernel ------------------------------------------------------------------------------------------------

def anatomy(config: Config, compile_settings: CompileSettings) -> dict[str, Any]:
    compiled = compile_source(render(config), compile_settings.arch, compile_settings.options)
    if not compiled.ok or compiled.cubin is None:
        raise TunerError(f"{config.key} no longer compiles: {compiled.log.strip()[-500:]}")
    code = parse_sass(disassemble(compiled.cubin))
    geometry = launch(config)
    return {
        "config": config.key, "problem": config.problem.label, "dtype": config.dtype, "family": config.family,
        "params": config.param_dict,
        "resources": {**asdict(compiled.resources), "dynamic_shared_bytes": geometry.dynamic_shared_bytes,
                      "threads": geometry.block[0] * geometry.block[1] * geometry.block[2]},
        "hot_loops": [{**asdict(m), "shared_loads": m.shared_loads, "local_accesses": m.local_accesses}
                      for m in hot_loops(code, FMA_OPCODE[config.dtype])],
    }


# --- the report --------------------------------------------------------------------------------------------------

def _fmt(value: float | None, spec: str = ".1f") -> str:
    return "—" if value is None else format(value, spec)


def describe(row: dict[str, Any]) -> list[str]:
    r = row["resources"]
    fma = FMA_OPCODE[row["dtype"]]
    params = " ".join(f"{k}={v}" for k, v in row["params"].items())
    lines = [
        f"{row['problem']} {row['dtype']}: {row['family']} {params}",
        f"  resources: {r['registers']} registers, {r['spill_store_bytes']} B spill stores, {r['spill_load_bytes']} "
        f"B spill loads, {r['local_bytes']} B stack, {r['dynamic_shared_bytes']} B dynamic shared memory, "
        f"{r['threads']} threads",
    ]
    for i, m in enumerate(row["hot_loops"], 1):
        memory = ", ".join(f"{op} ×{n}" for op, n in m["memory"].items()) or "none"
        per_load = m["fma"] / m["shared_loads"] if m["shared_loads"] else None
        lines += [
            f"  hot loop {i} (0x{m['first']:x}–0x{m['last']:x}): {m['instructions']} instructions, {m['fma']} {fma} "
            f"({100 * m['fma'] / m['instructions']:.1f}%), {100 * m['fma_reusing'] / max(1, m['fma']):.1f}% of them "
            f"with an operand from the reuse cache, {_fmt(per_load)} {fma} per shared load, {m['barriers']} barriers, "
            f"{m['local_accesses']} local-memory accesses",
            f"    memory instructions: {memory}",
        ]
    c = row.get("counters")
    if c:
        stalls = ", ".join(f"{name} {value:.2f}" for name, value in c["stalls"].items())
        l2, dram = c["l2_to_sm_bytes"], c["dram_bytes"]
        lines += [
            f"  counters: {_fmt(c['duration_ms'], '.3f')} ms = {_fmt(c['tflops'], '.2f')} TFLOP/s at "
            f"{_fmt(c['sm_clock_mhz'], '.0f')} MHz; {fma} pipe busy {_fmt(c['fma_pipe_busy_pct'])}% of active "
            f"cycles, issue slots {_fmt(c['issue_active_pct'])}%; occupancy {_fmt(c['achieved_occupancy_pct'])}% "
            f"achieved of {_fmt(c['theoretical_occupancy_pct'])}% theoretical",
            f"    shared memory: {c['shared_bank_conflicts']:.0f} bank conflicts, "
            f"{_fmt(c['shared_wavefronts_per_load'], '.2f')} wavefronts per load instruction; local memory "
            f"{_fmt(c['local_bytes'], '.0f')} B",
            f"    traffic: L2→SM {_fmt(l2 / 1e9 if l2 else None, '.2f')} GB (block-tile model "
            f"{c['model_global_bytes'] / 1e9:.2f} GB), DRAM {_fmt(dram / 1e9 if dram else None, '.2f')} GB",
            f"    warp stalls per issued instruction (leading): {stalls or '—'}",
        ]
    return lines


def table(rows: list[dict[str, Any]], env: dict[str, Any], run_dir: Path) -> str:
    device, versions = env["device"], env["versions"]
    lines = [f"Anatomy of the best tuned kernels of {run_dir.name} on {device['name']} (nvcc {versions['nvcc']}, "
             f"driver {versions['driver']})", ""]
    for row in rows:
        lines += [*describe(row), ""]
    lines += [
        "hot loop = an innermost loop holding at least a quarter of the multiply-adds of the hottest one; kernels "
        "with a 128-bit path and a scalar path for unaligned operands show both",
        "counters = Nsight Compute, clocks left as they were, the third launch in a verified evaluation, caches "
        "flushed before it" if any(r.get("counters") for r in rows) else "counters: not collected (--no-counters)",
        f"metadata_id {metadata_id(env)}",
    ]
    return "\n".join(lines)


def recorded_environment(run_dir: Path) -> dict[str, Any]:
    _, metadata = results.load(run_dir)
    environments = list(metadata.get("environments", {}).values())
    if not environments:
        raise TunerError(f"{run_dir}: the run records no device; run with counters on a GPU instead")
    return environments[-1]


def run(run_dir: Path, counters: bool, out: Path) -> Path:
    configs, compile_settings = best_configs(run_dir)
    if counters:
        from tuner.backends.pycuda.backend import PycudaBackend

        try:
            with PycudaBackend(MeasureSettings(), compile_settings) as backend:
                env = backend.metadata()
        except TunerError as exc:
            raise TunerError(f"hardware counters need the GPU: {exc}; or pass --no-counters for the compiler's "
                             "report and the disassembly alone") from None
    else:
        env = recorded_environment(run_dir)
    rows = []
    with tempfile.TemporaryDirectory(prefix="tuner-ncu-") as folder:
        for config in configs:
            print(f"{config.key}…", file=sys.stderr, flush=True)
            row = anatomy(config, compile_settings)
            if counters:
                metrics = profile(config, run_dir, Path(folder))
                row["counters"] = counters_summary(metrics, config)
                row["counters_raw"] = {name: value for name, value in metrics.items() if kept(name)}
            rows.append(row)
    text = table(rows, env, run_dir)
    print(text)
    return write(out, "kernel_anatomy", env, text, {"run": str(run_dir), "rows": rows})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("run_dir", type=Path, help="a tuning run's output folder")
    parser.add_argument("--no-counters", action="store_true", help="skip Nsight Compute (no GPU needed)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder for the .txt and .json files")
    parser.add_argument("--launch-one", metavar="KEY", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.launch_one:
        try:
            return launch_one(args.run_dir, args.launch_one)
        except TunerError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    return finish(lambda: run(args.run_dir, not args.no_counters, args.out))


if __name__ == "__main__":
    raise SystemExit(main())
