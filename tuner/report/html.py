"""The HTML report: one self-contained page (figures as data URIs, inline CSS, no scripts), from a Jinja template
with autoescaping, so recorded text (compiler messages, device names) can never become markup."""

from __future__ import annotations

import base64
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from pathlib import Path

import jinja2

import tuner.report.environment as environment
import tuner.report.tables as tables
import tuner.report.traffic as traffic
from tuner.report.pareto import front_tables
from tuner.report.run_folder import Run
from tuner.report.source import best_sources
from tuner.results import table as results

TEMPLATE = "report.html.j2"


@dataclass(frozen=True)
class Image:
    """A written figure, embedded in the page."""

    file: str
    title: str
    caption: str
    data_uri: str

    @classmethod
    def embed(cls, path: Path, title: str, caption: str) -> Image:
        encoded = base64.b64encode(path.read_bytes()).decode("ascii")
        return cls(path.name, title, caption, f"data:image/png;base64,{encoded}")


@cache
def _environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).parent),
        autoescape=True,
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )


def render_html(run: Run, images: dict[str, list[Image]], notes: dict[str, list[str]]) -> str:
    """The page. ``images``: section name (roofline, counters, convergence, parameters, importances) -> figures;
    ``notes``: section name -> what was left out there and why."""
    envs = run.environments
    context = {
        "title": f"Tuning report: {run.experiment_name}",
        "generated": datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "summary": environment.summary_items(run),
        "best": tables.best_per_problem(run),
        "runs": environment.runs_table(run),
        "run_notes": run.notes,
        "images": images,
        "notes": notes,
        "bounds": tables.predicted_vs_achieved(run),
        "traffic": traffic.traffic_tables(run),
        "landing": traffic.landing_text(run),
        "counter_notes": traffic.counters_notes(run),
        "on_cpu": results.measuring_device(run.metadata) == "CPU",
        "top": tables.top_configurations(run),
        "fronts": front_tables(run),
        "statuses": tables.status_counts(run),
        "failures": tables.failure_reasons(run),
        "sources": best_sources(run),
        "environments": [(environment.environment_heading(run, env_id), environment.environment_items(env),
                          environment.ceilings_table(env)) for env_id, env in envs.items()],
        "environment_note": environment.environment_note(run),
        "models": environment.machine_models_table(run),
        "experiment_source": (run.metadata.get("experiment") or {}).get("source") or "",
    }
    return _environment().get_template(TEMPLATE).render(**context)
