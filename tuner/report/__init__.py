"""Reports of a run folder, made from its stored results alone (no GPU): PNG figures and one HTML page.

    from tuner.report import write_report
    paths = write_report("reports/fermi_like")   # roofline.png, convergence.png, params_*.png, ..., report.html
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import NamedTuple

from matplotlib.figure import Figure

from tuner.report.bandwidth import bandwidth_figures
from tuner.report.convergence import convergence_figure
from tuner.report.html import Image, render_html
from tuner.report.importances import DEADLINE_S, METHOD, TOP_TRIALS, importances_figure, param_importances
from tuner.report.parameters import parameter_figures
from tuner.report.roofline import roofline_figures
from tuner.report.run_folder import load_run

__all__ = ["REPORT_PARTS", "PartTime", "write_report"]

REPORT_HTML = "report.html"
DPI = 120
REPORT_PARTS = ("load", "roofline", "convergence", "parameters", "importances", "html")
"""The parts of a report, in the order they are made; ``write_report`` can time each."""


def _save(figure: Figure, path: Path, quiet: bool) -> Path:
    if not quiet:
        print(f"report: {path.name}", file=sys.stderr)
    partial = path.with_name(f".{path.name}.partial")
    figure.savefig(partial, dpi=DPI, format="png")
    partial.replace(path)
    return path


class PartTime(NamedTuple):
    """How long one part of a report took: on the clock, and on this process's CPUs."""

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


def write_report(run_dir: str | Path, *, quiet: bool = False, importances_deadline_s: float = DEADLINE_S,
                 timings: dict[str, PartTime] | None = None) -> list[Path]:
    """Write the figures and report.html into ``run_dir``; returns the paths written, the page last.

    Parameter importances not computed within ``importances_deadline_s`` seconds are left out with a note.
    ``timings``, when given, receives the time each of REPORT_PARTS took (figures with their PNG files).
    Raises TunerError when the folder holds no readable results.parquet, or one without any row."""
    with _timed(timings, "load"):
        run = load_run(run_dir)
    folder = run.path
    written: list[Path] = []
    images: dict[str, list[Image]] = {"roofline": [], "convergence": [], "parameters": [], "importances": []}
    notes: dict[str, list[str]] = {}
    if run.kernels.empty:
        absent = f"no tuned kernel was evaluated in this run (its table holds only {run.library} baselines)"
        for section in ("roofline", "convergence", "parameters"):
            notes[section] = [f"Nothing to draw: {absent}."]

    with _timed(timings, "roofline"):
        for name, figure in roofline_figures(run).items():
            path = _save(figure, folder / name, quiet)
            scope = "overview" if name == "roofline.png" else name.removeprefix("roofline_").removesuffix(".png")
            scope = scope.replace("_", ", ")
            images["roofline"].append(Image.embed(path, f"Roofline, {scope}", "Log-log: achieved GFLOP/s against "
                                                  "analytical intensity; colour = kernel class, ring = best."))
            written.append(path)
        for name, figure in bandwidth_figures(run).items():
            path = _save(figure, folder / name, quiet)
            scope = name.removeprefix("bandwidth_").removesuffix(".png").replace("_", ", ")
            images["roofline"].append(Image.embed(
                path, f"Bandwidth roofline, {scope}", "A kernel without arithmetic: the effective bandwidth of each "
                "evaluation per class, against the device's copy bandwidth and the models'; a short line is a "
                "class's bound from its traffic model; ring = best."))
            written.append(path)

    with _timed(timings, "convergence"):
        if not run.kernels.empty:
            path = _save(convergence_figure(run), folder / "convergence.png", quiet)
            images["convergence"].append(Image.embed(
                path, "Best so far", "Best performance (GFLOP/s, or GB/s for a kernel without arithmetic) found so "
                "far per study, by trial number (left) and by wall time since the run started (right); faint points "
                "are the individual successful trials."))
            written.append(path)

    with _timed(timings, "parameters"):
        for name, figure in parameter_figures(run).items():
            path = _save(figure, folder / name, quiet)
            family = name.removeprefix("params_").removesuffix(".png")
            images["parameters"].append(Image.embed(
                path, f"Parameters of {family}", "Best performance reached with each parameter value (grey cells, "
                "red labels and red crosses: evaluated, never ok; white cells: never evaluated)."))
            written.append(path)

    with _timed(timings, "importances"):
        found, notes["importances"] = param_importances(run, importances_deadline_s)
        if found:
            path = _save(importances_figure(found), folder / "importances.png", quiet)
            images["importances"].append(Image.embed(
                path, "Parameter importances", f"{METHOD} importances of the parameters for each Optuna study, per "
                f"set of trials sharing their parameters: how differently each parameter's values are spread among "
                f"the best trials (the top 10%, at least {TOP_TRIALS}, at most half; their number is in each title) "
                f"than among all of them. Failed evaluations count as 0, as the study was told."))
            written.append(path)

    with _timed(timings, "html"):
        page = folder / REPORT_HTML
        partial = page.with_name(f".{REPORT_HTML}.partial")
        partial.write_text(render_html(run, images, notes), encoding="utf-8")
        partial.replace(page)
    if not quiet:
        print(f"report: {REPORT_HTML}", file=sys.stderr)
    written.append(page)
    return written
