"""How long the report of a large run takes: runs of 1,000, 3,000 and 10,000 evaluations, each reported and timed
part by part.

    python benchmarks/report_scale.py [--sizes 1000 3000 10000] [--work DIR] [--out DIR]

Each run is a random search over the naive kernel's 1,000 block shapes (BLOCK_X 1–40 × BLOCK_Y 1–25), made by
``tuner.run`` with the scripted stand-in backend of the tests (tests/scripted_backend.py): its rates and times
are not measurements, they only give the report rows to draw. Only the report's times are measured. A study
takes at most 800 evaluations, so a larger run has more problems (13 for 10,000).

The runs are built in ``--work`` (a temporary folder unless given; given, a run already built there is reused,
since ``tuner.run`` continues a finished study without evaluating anything) and are never shipped. Writes the
table of times and the machine's description to ``DIR/report_scale_<cpu>.txt`` and ``.json`` (DIR defaults to
benchmarks/results).
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.metadata
import io
import math
import os
import platform
import sys
import tempfile
import textwrap
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # run from a checkout without installing
sys.path.insert(0, str(ROOT / "tests"))  # the scripted stand-in backend

from scripted_backend import ScriptedBackend  # noqa: E402

from benchmarks.reporting import DEFAULT_OUT, finish, write  # noqa: E402
from tuner.experiment.schema import Experiment, parse_experiment  # noqa: E402
from tuner.report import REPORT_PARTS, PartTime, write_report  # noqa: E402
from tuner.report.run_folder import load_run  # noqa: E402
from tuner.results.metadata import git_state, metadata_id, python_versions  # noqa: E402
from tuner.tuning import folder  # noqa: E402
from tuner.tuning import run as tuning  # noqa: E402

SIZES = (1000, 3000, 10000)
STUDY_TRIALS = 800
"""Evaluations per study at most: a random search then still finds most of its trials unevaluated."""
BLOCK_X = tuple(range(1, 41))
BLOCK_Y = tuple(range(1, 26))
WIDTH = 110
"""Columns of the text written."""
PACKAGES = ("numpy", "pandas", "pyarrow", "matplotlib", "optuna", "scikit-learn", "sqlalchemy", "jinja2")


def experiment(evaluations: int) -> tuple[Experiment, int]:
    """The experiment of a run of about ``evaluations`` evaluations, and the trials of each of its studies."""
    studies = math.ceil(evaluations / STUDY_TRIALS)
    trials = math.ceil(evaluations / studies)
    problems = "\n".join(f"  - {{M: {size}, N: {size}, K: {size}}}" for size in range(512, 512 + 256 * studies, 256))
    text = (f"name: report_scale_{evaluations}\n"
            f"description: Random search over 1,000 block shapes of the naive kernel, answered by the scripted "
            f"stand-in backend (not measurements).\n"
            f"problems:\n{problems}\n"
            f"kernels:\n  - template: naive\n"
            f"    parameters: {{BLOCK_X: {list(BLOCK_X)}, BLOCK_Y: {list(BLOCK_Y)}, dtype: [float32]}}\n"
            f"machine_models:\n  - {{name: Fermi-like, peak_gflops: {{float32: 1000}}, bandwidth_gbs: 150}}\n"
            f"search: {{strategy: random, trials: {trials}, seed: 0}}\n")
    return parse_experiment(text, f"report_scale_{evaluations}.yaml"), trials


@contextlib.contextmanager
def _building() -> Iterator[None]:
    """The table saved at the end of each study rather than every few seconds (which only makes the building
    faster)."""
    saved = folder.SAVE_INTERVAL_S
    folder.SAVE_INTERVAL_S = math.inf
    try:
        yield
    finally:
        folder.SAVE_INTERVAL_S = saved


def build(evaluations: int, work: Path) -> Path:
    out = work / f"naive_{evaluations}"
    chosen, trials = experiment(evaluations)
    started = time.perf_counter()
    with _building(), contextlib.redirect_stdout(io.StringIO()):  # its summary: the synthetic numbers
        tuning.run(chosen, backend=ScriptedBackend(), trials=trials, out=out, quiet=True, report=False)
    print(f"{out}: built in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    return out


def machine() -> dict[str, Any]:
    """The machine and software the times were taken with (``device`` names the CPU, as benchmarks.reporting
    names files by it)."""
    model = platform.processor() or platform.machine()
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    versions = {**python_versions(), **{name: _version(name) for name in PACKAGES}}
    return {"device": {"name": model, "kind": "cpu", "logical_cores": os.cpu_count()},
            "platform": platform.platform(), "versions": versions, "git": git_state(),
            "created_utc": datetime.now(UTC).isoformat(timespec="seconds")}


def _version(package: str) -> str | None:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return None


def time_report(folder: Path) -> dict[str, Any]:
    """Write the folder's report once, timing each part."""
    timings: dict[str, PartTime] = {}
    load_before = os.getloadavg()[0]
    wall, cpu = time.perf_counter(), time.process_time()
    written = write_report(folder, quiet=True, timings=timings)
    total = PartTime(time.perf_counter() - wall, time.process_time() - cpu)
    table = load_run(folder).kernels
    return {
        "run": folder.name, "evaluations": len(table), "problems": int(table["problem"].nunique()),
        "figures": sum(p.suffix == ".png" for p in written), "load_average_1min_before": load_before,
        "parts": {part: timings[part]._asdict() for part in REPORT_PARTS}, "total": total._asdict(),
    }


def text(rows: list[dict[str, Any]], env: dict[str, Any]) -> str:
    cores, versions = env["device"]["logical_cores"], env["versions"]
    width = max(len(p) for p in REPORT_PARTS) + 2
    header = f"{'evaluations':>11}{'problems':>10}{'figures':>9}" + "".join(f"{p:>{width}}" for p in REPORT_PARTS)
    lines = [
        textwrap.fill(
            f"Time of `python -m tuner report` (tuner.report.write_report) by the size of the run, on "
            f"{env['device']['name']} ({cores} logical cores), Python {versions['python']}, pandas "
            f"{versions['pandas']}, matplotlib {versions['matplotlib']}, Optuna {versions['optuna']}.", WIDTH),
        textwrap.fill(
            "Runs: random search over 1,000 block shapes of the naive kernel (BLOCK_X 1-40 × BLOCK_Y 1-25), at most "
            f"{STUDY_TRIALS} evaluations per problem, made by tuner.run with the scripted stand-in backend of the "
            "tests (tests/scripted_backend.py): their rates are synthetic, not measurements; only the report's "
            "times are measured.", WIDTH),
    ]
    for unit, key in (("wall-clock seconds", "wall_s"), ("CPU seconds of the report's process", "cpu_s")):
        lines += ["", f"{unit} per part, and in all:", header + f"{'total':>8}"]
        for r in rows:
            cells = "".join(f"{r['parts'][p][key]:>{width}.2f}" for p in REPORT_PARTS)
            lines.append(f"{r['evaluations']:>11,}{r['problems']:>10}{r['figures']:>9}{cells}{r['total'][key]:>8.2f}")
    lines += [
        "",
        textwrap.fill("load: reading the folder; roofline, convergence, parameters: the figures with their PNG files; "
                      "importances: PED-ANOVA per study from the results table, and its figure; html: the page with "
                      "the figures embedded.", WIDTH),
        textwrap.fill("The machine is shared: the 1-minute load average before each report was "
                      + ", ".join(f"{r['load_average_1min_before']:.1f}" for r in rows)
                      + f" on {cores} cores; where it exceeds the cores, wall-clock time exceeds CPU time.", WIDTH),
        f"metadata_id {metadata_id(env)}",
    ]
    return "\n".join(lines)


def run(sizes: list[int], work: Path | None, out: Path) -> Path:
    with tempfile.TemporaryDirectory(prefix="report_scale_") as scratch:
        folder = work or Path(scratch)
        runs = [build(size, folder) for size in sizes]
        write_report(runs[0], quiet=True)  # imports, font cache: the first report of a process pays for them
        rows = [time_report(path) for path in runs]
    env = machine()
    table = text(rows, env)
    print(table)
    return write(out, "report_scale", env, table, {"sizes": sizes, "study_trials": STUDY_TRIALS, "rows": rows})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), metavar="N",
                        help="evaluations of each run (default: 1000 3000 10000)")
    parser.add_argument("--work", type=Path, help="folder to build the runs in and keep them (default: a "
                        "temporary folder)")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder for the .txt and .json files")
    args = parser.parse_args(argv)
    return finish(lambda: run(args.sizes, args.work, args.out))


if __name__ == "__main__":
    raise SystemExit(main())
