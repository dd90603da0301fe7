"""The hierarchical roofline in the report: the figure (its points, roofs, legend and units), the model-vs-measured
traffic tables, the text on where the seeds' bytes per FLOP land, and the notes on how counters were read or why
not. The counters come from the synthetic raw page of tests/data, through the tuner's own matching of profiled
kernels to configurations (tests/counted_backend.py); the timings are the scripted stand-in's."""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest

import tuner
from tests.counted_backend import COUNTED_ENVIRONMENT, SEED_CONFIGS, CountedBackend, seed_experiment
from tuner.report import write_report
from tuner.report.hierarchical import HIERARCHICAL_PNG, hierarchical_figure, hierarchical_plan
from tuner.report.run_folder import load_run
from tuner.report.traffic import counters_notes, landing_text, traffic_tables

MNK = 1024**3


@pytest.fixture(scope="module")
def folder(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("hierarchical")
    tuner.run(seed_experiment("all"), backend=CountedBackend(), out=out, quiet=True, report=False)
    return out


@pytest.fixture(scope="module")
def run(folder):
    return load_run(folder)


def _points(ax, gid):
    return [tuple(offset) for artist in ax.collections if artist.get_gid() == gid for offset in artist.get_offsets()]


def test_one_figure_for_one_problem(run):
    assert list(hierarchical_plan(run)) == [HIERARCHICAL_PNG]


def test_each_kernel_stands_at_its_three_measured_intensities_joined_by_a_line(run):
    ax = hierarchical_figure(run, "float32", "1024x1024x1024").axes[0]
    l1, l2, dram = (sorted(_points(ax, f"point-{level}")) for level in ("l1", "l2", "dram"))
    assert len(l1) == len(l2) == len(dram) == 3
    naive_time = next(r for _, r in run.ok.iterrows() if r["config_key"] == SEED_CONFIGS[0].key)["time_median_ms"]
    naive_y = 2 * MNK / (naive_time * 1e-3) / 1e9
    assert l1[0] == pytest.approx((2 * MNK / 4.299162e9, naive_y))  # the naive kernel: the lowest L1 intensity
    assert l2[0][0] == pytest.approx(2 * MNK / 517.2e6)
    assert dram[0][0] == pytest.approx(2 * MNK / (8.39e6 + 4.19e6))
    lines = [line for line in ax.lines if line.get_gid() == "levels"]
    assert len(lines) == 3 and all(len(set(line.get_ydata())) == 1 for line in lines)
    model = sorted(_points(ax, "point-model"))
    assert model[0][0] == pytest.approx(run.ok.set_index("config_key").loc[SEED_CONFIGS[0].key, "intensity"])


def test_the_roofs_are_the_levels_measured_bandwidths_under_the_compute_peak(run):
    ax = hierarchical_figure(run, "float32", "1024x1024x1024").axes[0]
    roofs = {line.get_gid(): line for line in ax.lines if str(line.get_gid()).startswith("roof-")}
    assert set(roofs) == {"roof-dram", "roof-l2", "roof-l1", "roof-shared"}
    measured = COUNTED_ENVIRONMENT["peaks"]["measured"]
    x, y = roofs["roof-l2"].get_data()
    assert y[0] == pytest.approx(measured["l2_bandwidth_gbs"] * x[0])
    assert max(y) == pytest.approx(measured["float32_gflops"])
    assert "L2 roof: 700 GB/s measured, ridge 1.43 FLOP/B" in roofs["roof-l2"].get_label()


def test_the_figure_stands_on_its_own(run):
    figure = hierarchical_figure(run, "float32", "1024x1024x1024")
    ax = figure.axes[0]
    title = ax.get_title()
    assert "Hierarchical roofline of seeds: float32, 1024x1024x1024" in title and "the analytical point" in title
    assert "FLOP per byte" in ax.get_xlabel() and "GFLOP/s" in ax.get_ylabel()
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    for expected in ("counted FLOPs / L1 bytes", "counted FLOPs / L2 bytes", "counted FLOPs / DRAM bytes",
                     "analytical: the family's no-cache model", "naive", "tiled TILE_WIDTH=16", "tiled TILE_WIDTH=32",
                     "DRAM roof: 100 GB/s measured, ridge 10 FLOP/B",
                     "float32 CUDA-core multiply-add peak: 1,000 GFLOP/s measured"):
        assert expected in labels


def test_model_against_measured_traffic_per_family(run):
    tables = dict(traffic_tables(run))
    assert list(tables) == ["naive", "tiled"]
    (naive,) = tables["naive"].rows
    columns = tables["naive"].columns
    cell = dict(zip(columns, naive, strict=True))
    assert cell["configuration"] == "BLOCK_X=16, BLOCK_Y=16"
    assert cell["model GB"] == "8.59" and cell["requested GB"] == "8.59 (1×)"
    assert cell["L1 GB"] == "4.3 (0.5×)" and cell["DRAM GB"].endswith("(0.00146×)")
    assert cell["FLOPs counted / 2·M·N·K"] == "1"
    assert [r[2] for r in tables["tiled"].rows] == ["TILE_WIDTH=32", "TILE_WIDTH=16"]  # fastest first


def test_the_text_says_where_the_seeds_bytes_per_flop_land(run):
    (text,) = landing_text(run)
    assert "the naive kernel reads two operands per multiply-add, 4 B per FLOP (4-byte elements)" in text
    assert "the L1 looked up 2 B/FLOP in 32-byte sectors" in text and "DRAM moved 0.0059 B/FLOP" in text
    assert "would cap it at 25 GFLOP/s" in text
    assert "tiled TILE_WIDTH=16: 15.9× less requested, 7.95× fewer L1 bytes (the model: 15.9× less)" in text
    assert text.index("TILE_WIDTH=16") < text.index("TILE_WIDTH=32")


def test_the_notes_say_how_the_counters_were_read(run):
    conditions, flops = counters_notes(run)
    assert "Nsight Compute 2025.3.0.0" in conditions and "clock control none" in conditions
    assert "cache control all (every cache flushed before each replay pass), 2 replay passes" in conditions
    assert flops == "FLOPs: counted: CUDA-core add, multiply (1) and fused multiply-add (2) instructions."


def test_the_page_holds_the_section(folder):
    written = write_report(folder, quiet=True)
    assert folder / HIERARCHICAL_PNG in written
    page = html.unescape((folder / "report.html").read_text())
    section = page[page.index('<section id="counters">'):]
    section = section[:section.index("</section>")]
    assert "Model vs measured traffic: naive" in section and "Model vs measured traffic: tiled" in section
    assert "The seeds' argument, measured on scripted stand-in (test double)" in section
    assert re.search(r'<img src="data:image/png;base64,[^"]+" alt="Hierarchical roofline">', section)


def test_a_run_without_counters_says_why(tmp_path):
    tuner.run(seed_experiment("none"), backend=CountedBackend(), out=tmp_path, quiet=True, report=False)
    run = load_run(tmp_path)
    assert hierarchical_plan(run) == {} and traffic_tables(run) == [] and landing_text(run) == []
    assert counters_notes(run) == ["Counters of the last run: not read (measure.counters: none; python -m tuner "
                                   "profile RUN_FOLDER reads them)"]


def test_one_figure_per_problem_where_several_were_counted(tmp_path):
    from dataclasses import replace

    from tuner.config import Problem

    experiment = seed_experiment("all")
    experiment = replace(experiment, problems=(experiment.problems[0], Problem(512, 512, 512)))
    tuner.run(experiment, backend=CountedBackend(), out=tmp_path, quiet=True, report=False)
    # the page counts the 1024³ kernels only: the 512³ ones are asked and said not counted
    run = load_run(tmp_path)
    assert list(hierarchical_plan(run)) == ["roofline_hierarchical_float32_1024x1024x1024.png"]
    note = run.metadata["runs"][-1]["counters"]
    assert (note["asked"], note["counted"]) == (6, 3)
