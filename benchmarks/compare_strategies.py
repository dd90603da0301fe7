"""Every search strategy on the two published GEMM recordings, under both conventions, with its defaults.

    python benchmarks/compare_strategies.py [--out DIR] [--repeats R] [--jobs N]

The same as ``python -m tuner compare experiments/data/recorded/gemm_A100.json.gz
experiments/data/recorded/gemm_RTX_2080_Ti.json.gz --out benchmarks/results/compare``, timed: besides the
command's table, figures and page, ``DIR/runtime.json`` records the wall time, the CPU, the number of processes
and the machine's load average before and after. No GPU is needed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # run from a checkout without installing

from benchmarks.reporting import DEFAULT_OUT  # noqa: E402
from tuner.compare.command import run_comparison  # noqa: E402
from tuner.compare.comparison import DEFAULT_RUNS  # noqa: E402

RECORDED = Path(__file__).resolve().parents[1] / "experiments" / "data" / "recorded"
SPACES = ("gemm_A100", "gemm_RTX_2080_Ti")


def cpu_name() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT / "compare")
    parser.add_argument("--repeats", type=int, default=DEFAULT_RUNS)
    parser.add_argument("--jobs", type=int, default=None)
    args = parser.parse_args(argv)
    load_before = os.getloadavg()
    started = time.monotonic()
    run_comparison([RECORDED / f"{name}.json.gz" for name in SPACES], repeats=args.repeats, jobs=args.jobs,
                   out=args.out)
    wall = time.monotonic() - started
    record = {"wall_s": round(wall, 1), "cpu": cpu_name(), "cpus": os.cpu_count(), "jobs": args.jobs or os.cpu_count(),
              "load_average_before": [round(x, 2) for x in load_before],
              "load_average_after": [round(x, 2) for x in os.getloadavg()], "repeats": args.repeats}
    (args.out / "runtime.json").write_text(json.dumps(record, indent=1) + "\n")
    print(f"{wall:.0f} s on {record['cpus']} × {record['cpu']} (load average before {load_before[0]:.2f}, after "
          f"{record['load_average_after'][0]:.2f})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
