"""Reports of a run folder, made from its stored results alone (no GPU): PNG figures and one HTML page.

    from tuner.report import write_report
    paths = write_report("reports/fermi_like")   # roofline.png, convergence.png, params_*.png, ..., report.html
"""

from __future__ import annotations

import multiprocessing
import os
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future, ProcessPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple, ParamSpec, TypeVar

from matplotlib.figure import Figure

from tuner import atomic_file
from tuner.backends.child_start import main_module_hidden
from tuner.lifetime import die_with_parent, name_starter
from tuner.report.bandwidth import bandwidth_plan
from tuner.report.convergence import convergence_figure
from tuner.report.hierarchical import hierarchical_plan
from tuner.report.html import Image, render_html
from tuner.report.importances import DEADLINE_S, METHOD, TOP_TRIALS, importances_figure, param_importances
from tuner.report.literal_text import as_written
from tuner.report.parameters import parameter_plan
from tuner.report.pareto import pareto_plan
from tuner.report.roofline import roofline_plan
from tuner.report.run_folder import Draw, Run, load_run

__all__ = ["REPORT_PARTS", "PartTime", "default_jobs", "start_drawing_processes", "write_report"]

REPORT_HTML = "report.html"
DPI = 120
REPORT_PARTS = ("load", "roofline", "counters", "convergence", "parameters", "energy", "importances", "html")
"""The parts of a report, in the order they are made; ``write_report`` can time each."""
IMPORTANCES_PNG = "importances.png"
PARALLEL_FROM_CORES = 4
P = ParamSpec("P")
T = TypeVar("T")


def _save(figure: Figure, path: Path) -> Path:
    as_written(figure)
    atomic_file.replace_with(path, lambda partial: figure.savefig(partial, dpi=DPI, format="png"))
    return path


class PartTime(NamedTuple):
    """How long one part of a report took: on the clock, and on the CPUs of the processes that made it."""

    wall_s: float
    cpu_s: float


@contextmanager
def _timed(timings: dict[str, PartTime] | None, part: str) -> Iterator[None]:
    wall, cpu = time.perf_counter(), time.process_time()
    try:
        yield
    finally:
        if timings is not None:
            timings[part] = PartTime(time.perf_counter() - wall, time.process_time() - cpu)


# --- what a report holds ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Planned:
    """One figure of the report: its section (a part of REPORT_PARTS), file name and how to draw it."""

    part: str
    name: str
    draw: Draw


def _plan(run: Run) -> list[Planned]:
    planned = [Planned("roofline", name, draw) for plan in (roofline_plan(run), bandwidth_plan(run))
               for name, draw in plan.items()]
    planned += [Planned("counters", name, draw) for name, draw in hierarchical_plan(run).items()]
    if not run.kernels.empty:
        planned.append(Planned("convergence", "convergence.png", convergence_figure))
    planned += [Planned("parameters", name, draw) for name, draw in parameter_plan(run).items()]
    planned += [Planned("energy", name, draw) for name, draw in pareto_plan(run).items()]
    return planned


def _caption(name: str) -> tuple[str, str]:
    """The title and caption of a figure, by its file name."""
    if name.startswith("roofline_hierarchical"):
        scope = name.removeprefix("roofline_hierarchical").removesuffix(".png").strip("_").replace("_", ", ")
        return (f"Hierarchical roofline{', ' + scope if scope else ''}", "Each counted kernel at the intensities "
                "its counters give at DRAM (circle), the L2 (square) and the L1 (triangle), joined by a line, at its "
                "counted FLOP/s; the hollow diamond is its analytical point (the no-cache model). Lines are the "
                "levels' measured bandwidth roofs under the measured compute peak.")
    if name == "roofline.png" or name.startswith("roofline_"):
        scope = "overview" if name == "roofline.png" else name.removeprefix("roofline_").removesuffix(".png")
        return (f"Roofline, {scope.replace('_', ', ')}", "Log-log: achieved GFLOP/s against analytical intensity; "
                "colour = kernel class, ring = best.")
    if name.startswith("bandwidth_"):
        scope = name.removeprefix("bandwidth_").removesuffix(".png").replace("_", ", ")
        return (f"Bandwidth roofline, {scope}", "A kernel without arithmetic: the effective bandwidth of each "
                "evaluation per class, against the device's copy bandwidth and the models'; a short line is a "
                "class's bound from its traffic model; ring = best.")
    if name == "convergence.png":
        return ("Best so far", "Best performance (GFLOP/s, or GB/s for a kernel without arithmetic) found so far per "
                "study, by trial number (left) and by wall time since the run started (right; for a replayed run, "
                "the recording's device time of the configurations replayed so far); faint points are the "
                "individual successful trials.")
    if name.startswith("pareto_"):
        scope = name.removeprefix("pareto_").removesuffix(".png").replace("_", ", ")
        return (f"Time against energy, {scope}", "Log-log: each evaluation with an energy at its median time and its "
                "energy per launch; the red steps join the Pareto front (no other evaluation is both faster and "
                "cheaper), its points numbered fastest first as in the table below; triangle up: the fastest, star: "
                "the knee, triangle down: the most efficient.")
    family = name.removeprefix("params_").removesuffix(".png")
    return (f"Parameters of {family}", "Best performance reached with each parameter value (grey cells, red labels "
            "and red crosses: evaluated, never ok; white cells: never evaluated).")


# --- drawing, here or in other processes ---------------------------------------------------------------------

_RUNS: dict[str, Run] = {}
"""The run folders a drawing process has read, by path."""


def _run_of(folder: str) -> Run:
    if folder not in _RUNS:
        _RUNS[folder] = load_run(folder)
    return _RUNS[folder]


def _draw(folder: str, name: str, draw: Draw) -> PartTime:
    """Draw and save one figure of the run in ``folder``; the time it took."""
    wall, cpu = time.perf_counter(), time.process_time()
    _save(draw(_run_of(folder)), Path(folder) / name)
    return PartTime(time.perf_counter() - wall, time.process_time() - cpu)


def _importances(folder: str, deadline_s: float) -> tuple[bool, list[str], PartTime]:
    """Compute and draw the parameter importances: (drawn, notes, the time it took)."""
    wall, cpu = time.perf_counter(), time.process_time()
    found, notes = param_importances(_run_of(folder), deadline_s)
    if found:
        _save(importances_figure(found), Path(folder) / IMPORTANCES_PNG)
    return bool(found), notes, PartTime(time.perf_counter() - wall, time.process_time() - cpu)


class _Here(Executor):
    """Runs each task at once, in this process."""

    def submit(self, fn: Callable[P, T], /, *args: P.args, **kwargs: P.kwargs) -> Future[T]:
        future: Future[T] = Future()
        try:
            future.set_result(fn(*args, **kwargs))
        except BaseException as exc:  # handed to whoever asks for the result
            future.set_exception(exc)
        return future


DRAWING_SERVER = "tuner.report.drawing_server"


def _context() -> multiprocessing.context.BaseContext:
    """Processes forked from a server that has imported the report's modules: each starts drawing at once."""
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([DRAWING_SERVER])
    name_starter()  # the server, started from here, ties itself to this process
    return context


def start_drawing_processes() -> None:
    """Start the server the drawing processes are forked from, so that it imports matplotlib and the report's
    modules while the caller goes on (a run calls this while its measuring processes start); with too few cores
    to draw in parallel, nothing."""
    if default_jobs() <= 1:
        return
    _context()
    from multiprocessing import forkserver

    with main_module_hidden():
        forkserver.ensure_running()


def _tie_to_server() -> None:
    """A drawing process dies with the server it was forked from, which ends when the process it serves ends."""
    server = sys.modules.get(DRAWING_SERVER)
    die_with_parent(server.SERVER_PID if server is not None else os.getppid())


def _pool(jobs: int) -> Executor:
    if jobs <= 1:
        return _Here()
    return ProcessPoolExecutor(jobs, mp_context=_context(), initializer=_tie_to_server)


def default_jobs() -> int:
    """Processes drawing a report: every core this process may use, from four on (on fewer, the figures are drawn
    here, one after the other: a server and its processes would take the cores the drawing needs)."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    return cores if cores >= PARALLEL_FROM_CORES else 1


# --- the report ---------------------------------------------------------------------------------------------


def _embedded(folder: Path, planned: list[Planned], importances: bool,
              quiet: bool) -> tuple[dict[str, list[Image]], list[Path]]:
    """The figures drawn, as the page embeds them by section, and their paths (the importances' last)."""
    images: dict[str, list[Image]] = {"roofline": [], "counters": [], "convergence": [], "parameters": [],
                                      "energy": [], "importances": []}
    written: list[Path] = []
    for item in planned:
        path = folder / item.name
        images[item.part].append(Image.embed(path, *_caption(item.name)))
        written.append(path)
    if importances:
        path = folder / IMPORTANCES_PNG
        if not quiet:
            print(f"report: {IMPORTANCES_PNG}", file=sys.stderr)
        images["importances"].append(Image.embed(
            path, "Parameter importances", f"{METHOD} importances of the parameters for each Optuna study, per "
            f"set of trials sharing their parameters: how differently each parameter's values are spread among "
            f"the best trials (the top 10%, at least {TOP_TRIALS}, at most half; their number is in each title) "
            f"than among all of them. Failed evaluations count as 0, as the study was told."))
        written.append(path)
    return images, written


def write_report(run_dir: str | Path, *, quiet: bool = False, importances_deadline_s: float = DEADLINE_S,
                 timings: dict[str, PartTime] | None = None, jobs: int = 1) -> list[Path]:
    """Write the figures and report.html into ``run_dir``; returns the paths written, the page last.

    Parameter importances not computed within ``importances_deadline_s`` seconds are left out with a note.
    ``jobs``: processes drawing the figures at once (1: this process alone). ``timings``, when given, receives
    the time each of REPORT_PARTS took (figures with their PNG files; a part's figures added up, though several
    processes draw them at once).
    Raises TunerError when the folder holds no readable results.parquet, or one without any row."""
    with _timed(timings, "load"):
        run = load_run(run_dir)
    folder = run.path
    _RUNS[str(folder)] = run
    notes: dict[str, list[str]] = {}
    if run.kernels.empty:
        absent = f"no tuned kernel was evaluated in this run (its table holds only {run.library} baselines)"
        for section in ("roofline", "convergence", "parameters", "energy"):
            notes[section] = [f"Nothing to draw: {absent}."]
    planned = _plan(run)
    took: dict[str, PartTime] = {part: PartTime(0.0, 0.0) for part in REPORT_PARTS[1:-1]}
    with main_module_hidden(), _pool(min(jobs, len(planned) + 1)) as pool:
        importances = pool.submit(_importances, str(folder), importances_deadline_s)
        drawn = [(item, pool.submit(_draw, str(folder), item.name, item.draw)) for item in planned]
        for item, future in drawn:
            one = future.result()
            took[item.part] = PartTime(took[item.part].wall_s + one.wall_s, took[item.part].cpu_s + one.cpu_s)
            if not quiet:
                print(f"report: {item.name}", file=sys.stderr)
        found, notes["importances"], took["importances"] = importances.result()
        pool.shutdown(wait=False)  # every figure is saved: the processes need not be waited for
    _RUNS.pop(str(folder), None)
    if timings is not None:
        timings.update(took)

    if not run.kernels.empty and not any(item.part == "energy" for item in planned):
        notes["energy"] = ["This run measured no energy (measure.energy was off, or its device has no energy "
                           "counter): nothing to draw."]
    images, written = _embedded(folder, planned, found, quiet)

    with _timed(timings, "html"):
        page = folder / REPORT_HTML
        atomic_file.write_text(page, render_html(run, images, notes))
    if not quiet:
        print(f"report: {REPORT_HTML}", file=sys.stderr)
    written.append(page)
    return written
