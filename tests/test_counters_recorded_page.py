"""A raw Nsight Compute page recorded on a GPU by benchmarks/counters_check.sh (tests/data/ncu_raw_counters_h100.csv,
with the configuration of each of its kernels in the .json beside it): what the parser, the matching and the report
make of it, and what the kernels' code says it must hold. Skipped until such a page is committed."""

from __future__ import annotations

import json

import pytest

import tuner
from tests.counted_backend import DATA, CountedBackend, PageCounters, seed_experiment
from tuner.counters.ncu_csv import parse_ncu_raw
from tuner.kernels.model import cost
from tuner.report.hierarchical import hierarchical_figure, hierarchical_plan
from tuner.report.run_folder import load_run
from tuner.report.traffic import landing_text, traffic_tables
from tuner.results import table as results

PAGE = DATA / "ncu_raw_counters_h100.csv"
pytestmark = pytest.mark.skipif(not PAGE.is_file(), reason="no page recorded on a GPU is committed yet "
                                                           "(benchmarks/counters_check.sh saves one)")


@pytest.fixture(scope="module")
def configs():
    return [results.config_from_dict(c) for c in json.loads(PAGE.with_suffix(".json").read_text())["kernels"]]


@pytest.fixture(scope="module")
def rows(configs):
    counted = PageCounters(PAGE, configs=configs).count(configs)
    assert counted.reasons == []
    return {row["config_key"]: row for row in counted.rows}


def test_every_kernel_of_the_page_is_matched(configs, rows):
    assert len(parse_ncu_raw(PAGE.read_text())) == len(configs) == len(rows)


def test_the_counts_hold_what_the_kernels_code_says(configs, rows):
    naive = next(c for c in configs if c.family == "naive")
    for config in configs:
        row = rows[config.key]
        problem = config.problem
        assert row["flops_counted"] == 2 * problem.M * problem.N * problem.K
        assert row["l2_bytes"] >= row["dram_bytes"]  # the L2 sees more than the L1's misses: DRAM's fills too
        if config.family == "tiled":
            width = int(config.param_dict["TILE_WIDTH"])
            assert row["l1_bytes"] == pytest.approx(cost(naive).global_bytes / width, rel=0.10)
            if row["l1_requested_bytes"] is not None:  # every lane loads an element of its own
                assert row["l1_requested_bytes"] == pytest.approx(cost(config).global_bytes, rel=0.02)
    naive_row = rows[naive.key]
    assert naive_row["l1_bytes"] == pytest.approx(cost(naive).global_bytes / 2, rel=0.05)  # 4 sectors for 256 B
    if naive_row["l1_requested_bytes"] is not None:  # a warp names 2 elements of A and 16 of B per step
        assert naive_row["l1_requested_bytes"] == pytest.approx(cost(naive).global_bytes * 9 / 32, rel=0.05)


def test_the_report_places_the_recorded_kernels(configs, tmp_path):
    (problem,) = {c.problem for c in configs}
    widths = tuple(sorted(int(c.param_dict["TILE_WIDTH"]) for c in configs if c.family == "tiled"))
    tuner.run(seed_experiment("all", problem, widths), backend=CountedBackend(PageCounters(PAGE, configs=configs)),
              out=tmp_path, quiet=True, report=False)
    run = load_run(tmp_path)
    assert list(hierarchical_plan(run)) == ["roofline_hierarchical.png"]
    ax = hierarchical_figure(run, "float32", problem.label).axes[0]
    placed = run.ok[run.ok["l1_bytes"].notna()]  # the scripted outcomes fail TILE_WIDTH=8 as a compile error
    assert sum(1 for c in ax.collections if c.get_gid() == "point-l1") == len(placed) == len(configs) - 1
    assert sum(len(t.rows) for _, t in traffic_tables(run)) == len(placed)
    (text,) = landing_text(run)
    assert "4 B per FLOP" in text
