"""Where a Hopper kernel's time goes, block by block: an instrumented copy of the wgmma template stamps, with the
GPU's global timer, each block's start, its producer's first copy, its first consumer's first and last full stage,
the moment a part of a split sum may add to C, and its end, keeps them in device memory during one timed launch of
each configuration, and the last block of that
launch to finish prints them all (so that printing delays no block of a later wave); the table gives the spread of
each moment over the blocks, the bytes each SM took into shared memory per microsecond of streaming, and the
configuration's and cuBLAS's times by the method.

    python benchmarks/block_timeline.py --configs LIST.json [--launch 6] [--out DIR] [--name block_timeline]

LIST.json is a ``vs_cublas.py`` listing of wgmma-family kernels (``wgmma``, ``wgmma_fp8``, ``wgmma_fp8_blocks``),
each run on each of its problems. The copy is a family of its own (``<family>_timeline``, written to a temporary
folder): the same rules, geometry and cost model, the template with the stamps added and a TIMELINE_ID parameter that
names the configuration in what it prints. The stamps cost a few instructions a stage; the launch printed
(``--launch``, counted from 0 per configuration: the verified launch, the warm-ups, then the timed samples, each
after an L2 flush) is one the method times, its printing at the end among what is timed (the median over the
samples is not moved by one). Times are µs from the first block's start; the first TIMELINE_BLOCKS blocks are kept.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from benchmarks.reporting import DEFAULT_OUT, finish, write  # noqa: E402
from benchmarks.vs_cublas import MEASURE, listed_configs  # noqa: E402
from kernel_templates import wgmma  # noqa: E402
from tuner.config import Config  # noqa: E402
from tuner.errors import TunerError  # noqa: E402
from tuner.kernels.discovery import get_family, use_family_dirs  # noqa: E402
from tuner.kernels.family import ceil_div  # noqa: E402
from tuner.measure.measurement import Measurement  # noqa: E402

FAMILIES = ("wgmma", "wgmma_fp8", "wgmma_fp8_blocks")
MARK = "TIMELINE"

TIMELINE_BLOCKS = 4096
"""Blocks whose stamps a launch keeps (the first ones by index); a larger grid's others are not shown."""
_PRELUDE = (
    "#include <cstdio>\n"
    f"#define TIMELINE_BLOCKS {TIMELINE_BLOCKS}u\n"
    "__device__ unsigned int timeline_launch, timeline_done;\n"
    "__device__ unsigned long long timeline_stamps[8 * TIMELINE_BLOCKS];\n"
    "__device__ __forceinline__ unsigned long long timeline_now()\n"
    "{\n    unsigned long long t;\n    asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(t));\n    return t;\n}\n")
_PRINT = (
    "        // Each block keeps its stamps; the last to finish prints them all, so that no block's printing delays\n"
    "        // the blocks of a later wave.\n"
    "        if (threadIdx.x == 128) {{\n"
    "            const unsigned long long t_end = timeline_now();\n"
    "            if (launch_no == {launch} && blockIdx.x < TIMELINE_BLOCKS) {{\n"
    "                unsigned long long* row = timeline_stamps + 8 * blockIdx.x;\n"
    "                row[0] = blockIdx.x;\n                row[1] = smid;\n                row[2] = t_entry;\n"
    "                row[3] = t_issue;\n                row[4] = t_first;\n                row[5] = t_last;\n"
    "                row[6] = t_ready;\n                row[7] = t_end;\n"
    "            }}\n"
    "            __threadfence();\n"
    "            if (atomicAdd(&timeline_done, 1u) == gridDim.x - 1) {{\n"
    "                if (launch_no == {launch})\n"
    "                    for (unsigned int b = 0; b < min(gridDim.x, TIMELINE_BLOCKS); ++b) {{\n"
    "                        const volatile unsigned long long* row = timeline_stamps + 8 * b;\n"
    "                        printf(\"" + MARK + " {{{{ TIMELINE_ID }}}} \"\n"
    "                               \"%llu %llu %llu %llu %llu %llu %llu %llu\\n\",\n"
    "                               row[0], row[1], row[2], row[3], row[4], row[5], row[6], row[7]);\n"
    "                    }}\n"
    "                timeline_done = 0;\n"
    "                atomicAdd(&timeline_launch, 1u);\n"
    "            }}\n"
    "        }}\n")
ANCHORS = (
    ("#include <stdint.h>\n", "#include <stdint.h>\n" + _PRELUDE),
    ("    extern __shared__ __align__(16) unsigned char dynamic_shared[];\n",
     "    extern __shared__ __align__(16) unsigned char dynamic_shared[];\n"
     "    const unsigned long long t_entry = timeline_now();\n"
     "    const unsigned int launch_no = *reinterpret_cast<volatile unsigned int*>(&timeline_launch);\n"
     "    __shared__ volatile unsigned long long t_issue;\n"
     "    unsigned int smid;\n"
     "    asm volatile(\"mov.u32 %0, %%smid;\" : \"=r\"(smid));\n"),
    ("\"l\"(&map_a), \"l\"(&map_b) : \"memory\");\n",
     "\"l\"(&map_a), \"l\"(&map_b) : \"memory\");\n            t_issue = timeline_now();\n"),
    ("        Walk walk(units, k_tiles, first_work, work_step);\n        for (Work item; walk.next(item);) {\n"
     "            const int k_begin",
     "        unsigned long long t_first = 0, t_last = 0, t_ready = 0;\n"
     "        Walk walk(units, k_tiles, first_work, work_step);\n        for (Work item; walk.next(item);) {\n"
     "            const int k_begin"),
    ("                barrier_wait(full_0 + 8 * stage, phase);\n",
     "                barrier_wait(full_0 + 8 * stage, phase);\n"
     "                t_last = timeline_now();\n"
     "                if (t_first == 0)\n"
     "                    t_first = t_last;\n"),
    ("                await_zeroed(split_flags + tile);\n",
     "                await_zeroed(split_flags + tile);\n            if (item.parts > 1)\n"
     "                t_ready = timeline_now();\n"),
    ("                await_turn(split_flags + tile, item.turn);\n",
     "                await_turn(split_flags + tile, item.turn);\n            if (item.turn > 0)\n"
     "                t_ready = timeline_now();\n"),
    ("{% if pingpong %}\n        if (consumer == 0 && issued > 0)",
     "{print}{% if pingpong %}\n        if (consumer == 0 && issued > 0)"),
)
"""(text of the template, what replaces it): each anchor occurs once in the template."""


def instrumented(template: str, launch: int) -> str:
    """The template with the stamps; TunerError where an anchor is not found once (the template changed)."""
    for anchor, replacement in ANCHORS:
        if template.count(anchor) != 1:
            raise TunerError(f"the wgmma template no longer holds, once, the line the timeline instruments after: "
                             f"{anchor.strip()[:60]!r}; update benchmarks/block_timeline.py's ANCHORS")
        template = template.replace(anchor, replacement.replace("{print}", _PRINT.format(launch=launch)))
    return template


def family_module(family: str) -> str:
    """The declaration of ``<family>_timeline``: the family with the instrumented template and TIMELINE_ID."""
    return (
        "from dataclasses import replace\n\n"
        f"from kernel_templates import {family} as original\n"
        "from tuner.kernels.family import Parameter\n\n"
        f"FAMILY = replace(original.FAMILY, name='{family}_timeline', template='{family}_timeline.cu.j2',\n"
        "                 parameters=(*original.FAMILY.parameters,\n"
        "                             Parameter('TIMELINE_ID', 'the configuration a printed line belongs to', (0,))),\n"
        "                 folder=None, declaration=None)\n")


def write_families(folder: Path, launch: int) -> None:
    for family in FAMILIES:
        original = get_family(family)
        (folder / f"{family}_timeline.cu.j2").write_text(instrumented(original.template_path.read_text(), launch))
        (folder / f"{family}_timeline.py").write_text(family_module(family))


@dataclass(frozen=True)
class Stamp:
    block: int
    sm: int
    entry: int
    issue: int
    first: int
    last: int
    ready: int
    """When a part of a tile's sum may add to C (atomic: part 0 has zeroed the tile; serial: its turn has come, for
    the parts after the first); 0 where the block's last item was no such part."""
    end: int


def parse(lines: list[str]) -> dict[int, list[Stamp]]:
    """The printed stamps by TIMELINE_ID (lines of other output are skipped)."""
    found: dict[int, list[Stamp]] = defaultdict(list)
    for line in lines:
        fields = line.split()
        if len(fields) == 10 and fields[0] == MARK:
            found[int(fields[1])].append(Stamp(*map(int, fields[2:])))
    return found


def copied_bytes(config: Config) -> int:
    """Bytes the producer copies into shared memory over the launch: per k-slice of each tile, B's BN columns and
    A's rows in whole boxes (BM rows a box, or A_BOX rows as many as reach into A)."""
    p, problem = config.param_dict, config.problem
    bm, bn, box = int(p["BM"]), int(p["BN"]), wgmma.a_box(p)
    rows = sum(ceil_div(min(bm, problem.M - top), box) * box for top in range(0, problem.M, bm))
    slice_bytes = int(p["BK"]) * config.element_bytes
    tiles_n = ceil_div(problem.N, bn)
    return wgmma.k_tiles(p, problem) * slice_bytes * tiles_n * (rows + bn * ceil_div(problem.M, bm))


def _spread(values: list[float]) -> dict[str, float]:
    return {"min": min(values), "median": statistics.median(values), "max": max(values)}


def summary(config: Config, stamps: list[Stamp]) -> dict[str, Any]:
    """The spread over blocks of each moment (µs from the first start), the first copy's latency and the stream's
    length, and the bytes an SM took into shared memory per µs of its blocks' median stream."""
    start = min(s.entry for s in stamps)

    def moment(values: Iterable[int]) -> dict[str, float]:   # µs from the first block's start
        return _spread([(v - start) / 1e3 for v in values])
    stream = [(s.last - s.first) / 1e3 for s in stamps]
    per_sm: dict[int, int] = defaultdict(int)
    for s in stamps:
        per_sm[s.sm] += 1
    copied, middle = copied_bytes(config), statistics.median(stream)
    waits = [(s.ready - s.last) / 1e3 for s in stamps if s.ready]
    adds = [(s.end - s.ready) / 1e3 for s in stamps if s.ready]
    return {
        "config": config.key, "problem": config.problem.label, "blocks": len(stamps), "sms": len(per_sm),
        "blocks_per_sm_max": max(per_sm.values()), "copied_mb": copied / 1e6,
        "issue_us": moment(s.issue for s in stamps), "first_us": moment(s.first for s in stamps),
        "last_us": moment(s.last for s in stamps), "end_us": moment(s.end for s in stamps),
        "first_latency_us": _spread([(s.first - s.issue) / 1e3 for s in stamps]), "stream_us": _spread(stream),
        "wait_us": _spread(waits) if waits else None, "add_us": _spread(adds) if adds else None,
        "gb_per_s_per_sm": copied / len(per_sm) / (middle * 1e3) if middle else None,
    }


def table(rows: list[dict[str, Any]], env: dict[str, Any], source: str, launch: int) -> str:
    lines = [
        f"Block timelines of {source} on {env['device']['name']} (launch {launch} of each configuration; µs from the "
        "first block's start, min/median/max over the blocks)",
        f"method: {env['measure']['method']}",
        "",
        f"{'problem':<16}{'blocks':>7}{'SMs':>5}{'/SM':>4}{'first copy':>12}{'first full':>18}{'last full':>18}"
        f"{'end':>18}{'stream':>18}{'wait':>12}{'add':>12}{'MB in':>8}{'GB/s/SM':>9}{'timed':>7}{'cuBLAS':>7}"
        "  configuration",
    ]
    for r in rows:
        if "reason" in r:
            lines.append(f"{r['config']}: {r['reason']}")
            continue
        rate = f"{r['gb_per_s_per_sm']:.0f}" if r["gb_per_s_per_sm"] else "—"
        timed, vendor = (f"{r[key]:.1f}" if r.get(key) else "—" for key in ("timed_us", "cublas_us"))
        lines.append(f"{r['problem']:<16}{r['blocks']:>7}{r['sms']:>5}{r['blocks_per_sm_max']:>4}"
                     f"{r['issue_us']['median']:>12.1f}{_cell(r['first_us']):>18}{_cell(r['last_us']):>18}"
                     f"{_cell(r['end_us']):>18}{_cell(r['stream_us']):>18}{_pair(r['wait_us']):>12}{_pair(r['add_us']):>12}"
                     f"{r['copied_mb']:>8.1f}{rate:>9}"
                     f"{timed:>7}{vendor:>7}  "
                     f"{r['config'].split('/', 1)[1]}")
    lines += ["", "first copy: the producer's first TMA copy issued; first/last full: the first consumer's first and "
              "last stage landed; stream: last full − first full of a block; wait, add (median/max over the parts of "
              "split-K or stream-K sums that add to C): from the last full stage until the part may add, and "
              "from then to the block's end; MB in: A's boxes and B's tiles the "
              "producers copy into shared memory in the launch; GB/s/SM: MB in per SM used over the median stream; "
              "timed: the median of the method's samples (µs, the printed launch among them); cuBLAS: its median, "
              "timed the same way in the same process"]
    return "\n".join(lines)


def _cell(spread: dict[str, float]) -> str:
    return f"{spread['min']:5.1f}/{spread['median']:5.1f}/{spread['max']:5.1f}"


def _pair(spread: dict[str, float] | None) -> str:
    return f"{spread['median']:5.1f}/{spread['max']:5.1f}" if spread else "—"


def _us(result: Measurement) -> float | None:
    return result.timing.median_ms * 1e3 if result.timing else None


def run(listing: Path, launch: int, out: Path, name: str) -> Path:
    from tuner.backends.pycuda.backend import PycudaBackend

    configs, compile_settings = listed_configs(listing)
    outside = [c.family for c in configs if c.family not in FAMILIES]
    if outside:
        raise TunerError(f"{listing}: the timeline instruments the wgmma families ({', '.join(FAMILIES)}), not "
                         f"{', '.join(sorted(set(outside)))}")
    if launch < 0:
        raise TunerError(f"--launch {launch}: give the launch to print, counted from 0")
    timed = [Config.make(c.problem, f"{c.family}_timeline", c.dtype, {**c.param_dict, "TIMELINE_ID": i})
             for i, c in enumerate(configs)]
    with tempfile.TemporaryDirectory() as folder, tempfile.TemporaryFile("w+") as printed:
        write_families(Path(folder), launch)
        use_family_dirs([folder])
        saved = os.dup(1)
        sys.stdout.flush()
        os.dup2(printed.fileno(), 1)   # the measuring process inherits it: the kernels' printf lands in the file
        try:
            with PycudaBackend(MEASURE, compile_settings) as backend:
                backend.prefetch(timed)
                env = backend.metadata()
                results = []
                for config in timed:
                    print(f"{config.key}…", file=sys.stderr, flush=True)
                    results.append(backend.evaluate(config))
                vendor = {(c.problem, c.dtype): backend.baseline(c.problem, c.dtype) for c in configs}
        finally:
            os.dup2(saved, 1)
            os.close(saved)
        printed.seek(0)
        stamps = parse(printed.read().splitlines())
    rows = []
    for i, (config, result) in enumerate(zip(configs, results, strict=True)):
        if i in stamps:
            rows.append({**summary(config, stamps[i]), "status": result.status.value, "timed_us": _us(result),
                         "cublas_us": _us(vendor[config.problem, config.dtype])})
        else:
            rows.append({"config": config.key, "status": result.status.value,
                         "reason": f"printed nothing ({result.status.value}: {result.reason or 'fewer launches'})"})
    text = table(rows, env, listing.name, launch)
    print(text)
    return write(out, name, env, text, {"listing": str(listing), "launch": launch, "rows": rows})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--configs", type=Path, required=True, help="a vs_cublas.py listing of wgmma kernels")
    parser.add_argument("--launch", type=int, default=6, help="the launch to print, from 0 (default 6: a timed one)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder for the .txt and .json files")
    parser.add_argument("--name", default="block_timeline", help="stem of the written files")
    args = parser.parse_args(argv)
    return finish(lambda: run(args.configs, args.launch, args.out, args.name))


if __name__ == "__main__":
    raise SystemExit(main())
