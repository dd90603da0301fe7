"""How fast a kernel entry's valid set is built: per-rule truth tables (tuner.space.entry_space) against checking
every combination one by one, as tuner/space.py did up to BASELINE.

    python benchmarks/space_build.py [--out DIR] [--repeat N] [--baseline REV] [--skip-old]

Three measurements on this machine, with its load average before and after (the machine may be shared):

* the regblock entry of benchmarks/space_build.yaml: 294,912 combinations, searched over four odd-sized problems;
* MILLION, a regblock entry of 995,328 combinations;
* ``python -m tuner space benchmarks/space_build.yaml`` in a fresh interpreter, in this checkout and in REV
  (exported with ``git archive``), and a fresh interpreter that only imports the package, for scale.

The old construction is ``count_one_by_one`` below, the loop of tuner/space.py at BASELINE: every static rule
for every (dtype, values) combination, each one a dict. Both constructions must agree on the number of valid
combinations and on how many each rule rejects. The new one is built from scratch each time (no cache) and timed
as the best of ``--repeat`` runs; the old one once. Writes ``DIR/space_build_<cpu>.txt`` and ``.json``.
"""

from __future__ import annotations

import argparse
import itertools
import os
import platform
import subprocess
import sys
import tarfile
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from io import BytesIO
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout without installing

from benchmarks.reporting import DEFAULT_OUT, finish, write  # noqa: E402
from tuner.errors import TunerError  # noqa: E402
from tuner.experiment.schema import load_experiment  # noqa: E402
from tuner.kernels.discovery import get_family  # noqa: E402
from tuner.kernels.family import Family  # noqa: E402
from tuner.kernels.targets import target  # noqa: E402
from tuner.results.metadata import git_state, python_versions  # noqa: E402
from tuner.space.entry_space import KernelSpec, build_entry_space, violations  # noqa: E402
from tuner.tuning.space_command import format_table  # noqa: E402

EXPERIMENT = Path(__file__).resolve().parent / "space_build.yaml"
BASELINE = "b4f4833"
"""The last revision that checked every combination of a kernel entry one by one."""
MILLION = KernelSpec("regblock", {
    "BM": (64, 128, 256), "BN": (32, 64, 128, 256), "BK": (8, 16, 32), "TM": (4, 8), "TN": (4, 8), "WARP_N": (4, 8),
    "A_T": (0, 1, 2), "PAD": (0, 4), "VECTOR": (0, 1), "ASYNC": (0, 1), "STAGES": (2, 3, 4), "UNROLL": (32,),
    "MIN_BLOCKS": (1, 2), "COPY_SPREAD": (0, 8), "SWIZZLE": (0, 1), "OUTER_ORDER": (0, 1, 2), "SCHEDULE": (0, 1),
}, ("float32",))


def checked_one_by_one(spec: KernelSpec, family: Family) -> Iterator[tuple[str, dict, list[str]]]:
    """Every (dtype, parameter values) combination of an entry in enumeration order, with the rules it breaks."""
    names = list(spec.values)
    for dtype in spec.dtypes:
        for combo in itertools.product(*(spec.values[n] for n in names)):
            params = dict(zip(names, combo, strict=True))
            yield dtype, params, violations(family, params, dtype, target(spec.arch))


def count_one_by_one(spec: KernelSpec, family: Family) -> tuple[int, int, Counter]:
    """(combinations, valid combinations, how many each rule rejected), as tuner.space.entry_space.count_valid at
    BASELINE."""
    total = valid = 0
    reasons: Counter = Counter()
    for _, _, broken in checked_one_by_one(spec, family):
        total += 1
        valid += not broken
        reasons.update(broken)
    return total, valid, reasons


def count_by_tables(spec: KernelSpec, family: Family) -> tuple[int, int, Counter]:
    names = tuple(spec.values)
    space = build_entry_space(family, names, tuple(tuple(spec.values[n]) for n in names), tuple(spec.dtypes),
                              target(spec.arch))
    return space.size, len(space.valid_rows), space.rejected_by


def _timed(work: Callable[[], Any], repeat: int) -> tuple[Any, float, float]:
    """(result, best wall seconds, CPU seconds of that run) over ``repeat`` runs."""
    best = (float("inf"), 0.0)
    result = None
    for _ in range(repeat):
        wall, cpu = time.perf_counter(), time.process_time()
        result = work()
        best = min(best, (time.perf_counter() - wall, time.process_time() - cpu))
    return result, *best


def _build_row(label: str, spec: KernelSpec, repeat: int, skip_old: bool) -> dict[str, Any]:
    family = get_family(spec.family)
    print(f"{label}: truth tables…", file=sys.stderr, flush=True)
    (total, valid, rejected), wall, cpu = _timed(lambda: count_by_tables(spec, family), repeat)
    row: dict[str, Any] = {"space": label, "combinations": total, "valid": valid,
                           "rejected_by": dict(rejected), "tables_s": wall, "tables_cpu_s": cpu,
                           "tables_per_s": total / wall}
    if not skip_old:
        print(f"{label}: one by one…", file=sys.stderr, flush=True)
        old, old_wall, old_cpu = _timed(lambda: count_one_by_one(spec, family), 1)
        if old[:2] != (total, valid) or dict(old[2]) != dict(rejected):
            raise TunerError(f"{label}: the truth tables found {valid} of {total} valid ({dict(rejected)}), checking "
                             f"one by one {old[1]} of {old[0]} ({dict(old[2])})")
        row.update(one_by_one_s=old_wall, one_by_one_cpu_s=old_cpu, one_by_one_per_s=total / old_wall,
                   speedup=old_wall / wall)
    return row


def _cli_seconds(checkout: Path, args: list[str], repeat: int) -> tuple[float, float]:
    """(best wall seconds, CPU seconds of the children) of ``python args`` run in ``checkout``."""
    env = {**os.environ, "PYTHONPATH": str(checkout), "PYTHONIOENCODING": "utf-8"}
    best = (float("inf"), 0.0)
    for _ in range(repeat):
        before = os.times()
        start = time.perf_counter()
        done = subprocess.run([sys.executable, *args], cwd=checkout, env=env, capture_output=True, text=True,
                              check=False)
        wall = time.perf_counter() - start
        after = os.times()
        if done.returncode != 0:
            raise TunerError(f"python {' '.join(args)} in {checkout} failed: {done.stderr.strip()[-400:]}")
        best = min(best, (wall, after.children_user + after.children_system
                          - before.children_user - before.children_system))
    return best


def _export(revision: str, folder: Path) -> Path:
    archive = subprocess.run(["git", "archive", revision], cwd=ROOT, capture_output=True, check=False)
    if archive.returncode != 0:
        raise TunerError(f"git archive {revision} failed: {archive.stderr.decode().strip()}")
    with tarfile.open(fileobj=BytesIO(archive.stdout)) as tar:
        tar.extractall(folder, filter="data")
    return folder


def _space_rows(repeat: int, baseline: str | None) -> list[dict[str, Any]]:
    command = ["-m", "tuner", "space", str(EXPERIMENT)]
    rows = []
    print("python -m tuner space…", file=sys.stderr, flush=True)
    wall, cpu = _cli_seconds(ROOT, command, repeat)
    rows.append({"command": "python -m tuner space benchmarks/space_build.yaml", "revision": "this checkout",
                 "wall_s": wall, "cpu_s": cpu})
    wall, cpu = _cli_seconds(ROOT, ["-c", "import tuner.tuning.space_command"], repeat)
    rows.append({"command": "python -c 'import tuner.tuning.space_command'", "revision": "this checkout",
                 "wall_s": wall, "cpu_s": cpu})
    if baseline:
        print(f"python -m tuner space at {baseline}…", file=sys.stderr, flush=True)
        with tempfile.TemporaryDirectory() as folder:
            wall, cpu = _cli_seconds(_export(baseline, Path(folder)), command, 1)
        rows.append({"command": "python -m tuner space benchmarks/space_build.yaml", "revision": baseline,
                     "wall_s": wall, "cpu_s": cpu})
    return rows


def _environment() -> dict[str, Any]:
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as info:
            cpu = next((line.split(":", 1)[1].strip() for line in info if line.startswith("model name")), cpu)
    except OSError:
        pass
    return {
        "device": {"name": cpu, "cores": os.cpu_count(), "platform": platform.platform()},
        "versions": python_versions(),
        "git": git_state(),
        "created_utc": datetime.now(UTC).isoformat(timespec="seconds"),
    }


def _table(builds: list[dict[str, Any]], commands: list[dict[str, Any]], env: dict[str, Any],
           load: tuple[tuple[float, ...], tuple[float, ...]]) -> str:
    device = env["device"]
    build_rows = []
    for r in builds:
        old = [f"{r['one_by_one_s']:.2f}", f"{r['one_by_one_cpu_s']:.2f}", f"{r['one_by_one_per_s']:,.0f}",
               f"{r['speedup']:.0f}×"] if "one_by_one_s" in r else ["—"] * 4
        build_rows.append([r["space"], f"{r['combinations']:,}", f"{r['valid']:,}", *old[:3], f"{r['tables_s']:.3f}",
                           f"{r['tables_cpu_s']:.3f}", f"{r['tables_per_s']:,.0f}", old[3]])
    lines = [
        f"Building a kernel entry's valid set on {device['name']} ({device['cores']} cores), Python "
        f"{env['versions']['python']}, numpy {env['versions']['numpy']}; git {str(env['git']['commit'])[:7]}"
        f"{' (dirty)' if env['git']['dirty'] else ''}",
        f"one by one: the per-combination loop of {BASELINE}, one run; truth tables: the best of the repeats "
        "(wall time; CPU seconds of the same run beside it)",
        "",
        format_table(("space", "combinations", "valid", "one by one s", "CPU s", "combos/s", "truth tables s",
                      "CPU s", "combos/s", "speedup"), build_rows, right=range(1, 10), indent=""),
        "",
        format_table(("command (fresh interpreter)", "revision", "wall s", "CPU s"),
                     [[r["command"], r["revision"], f"{r['wall_s']:.2f}", f"{r['cpu_s']:.2f}"] for r in commands],
                     right=(2, 3), indent=""),
        "",
        "load average (1, 5, 15 min) before: {:.2f} {:.2f} {:.2f}; after: {:.2f} {:.2f} {:.2f}".format(
            *load[0], *load[1]),
    ]
    return "\n".join(lines)


def run(out: Path, repeat: int, baseline: str | None, skip_old: bool) -> Path:
    load_before = os.getloadavg()
    (spec,) = load_experiment(EXPERIMENT).kernels
    builds = [_build_row("space_build.yaml regblock", spec, repeat, skip_old),
              _build_row("MILLION regblock", MILLION, repeat, skip_old)]
    commands = _space_rows(repeat, None if skip_old else baseline)
    load = (load_before, os.getloadavg())
    env = _environment()
    text = _table(builds, commands, env, load)
    print(text)
    record = {"experiment": str(EXPERIMENT.relative_to(ROOT)), "baseline": baseline, "repeat": repeat,
              "million": {"family": MILLION.family, "values": MILLION.values, "dtypes": MILLION.dtypes},
              "builds": builds, "commands": commands,
              "load_average": {"before": load[0], "after": load[1]}}
    return write(out, "space_build", env, text, record)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder for the .txt and .json files")
    parser.add_argument("--repeat", type=int, default=5, help="runs of each new construction and command (best)")
    parser.add_argument("--baseline", default=BASELINE, help=f"revision to time `space` in (default {BASELINE})")
    parser.add_argument("--skip-old", action="store_true", help="time only the new construction (minutes faster)")
    args = parser.parse_args(argv)
    return finish(lambda: run(args.out, args.repeat, args.baseline, args.skip_old))


if __name__ == "__main__":
    raise SystemExit(main())
