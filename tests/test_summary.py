"""The summary `python -m tuner run` prints: within the terminal's width, every best configuration named in full,
and the numbers explained."""

from __future__ import annotations

from pathlib import Path

from tuner.results import table as results
from tuner.tuning.progress import summary_table, summary_text

ROOT = Path(__file__).resolve().parent.parent


def _table(recording: str):
    df, _ = results.load(ROOT / "experiments/data" / recording)
    return df, summary_table(df)


def test_long_configurations_are_numbered_and_named_below_the_table():
    df, table = _table("h100_sgemm_h100")
    text = summary_text(table, 80)
    lines = text.splitlines()
    assert max(len(line) for line in lines) <= 80
    best = results.best_rows(df).set_index(["problem", "dtype"])
    rows = [line.split() for line in lines if line.split()[:1] and line.split()[0] in best.index.levels[0]]
    assert sorted(row[2] for row in rows) == [f"[{i}]" for i in range(1, len(best) + 1)]  # six distinct best kernels
    legend = " ".join(line.strip() for line in lines if line.split()[0] not in best.index.levels[0])
    for problem, dtype, number, *_ in rows:
        params = " ".join(f"{k}={v}" for k, v in results.row_params(best.loc[(problem, dtype)]).items())
        assert f"{number} regblock {params}" in legend


def test_short_configurations_stay_in_the_table():
    _, table = _table("fermi_like_h100")
    text = summary_text(table, 120)
    assert "4096x4096x4096  float32  tiled TILE_WIDTH=" in text
    assert "[1]" not in text
    header = text.splitlines()[0].split()
    assert header[-1] == "ok"  # only the statuses that occurred: every configuration of this recording ran
    assert max(len(line) for line in text.splitlines()) <= 120


def test_the_numbers_are_explained_under_the_table():
    _, table = _table("fermi_like_h100")
    notes = " ".join(summary_text(table, 100).splitlines()[4:])
    assert "no-cache model's bytes" in notes and "past 100%" in notes
    assert "distinct configurations evaluated, by outcome" in notes


def test_a_run_measured_on_the_cpu_names_its_blas_not_cublas():
    _, table = _table("fermi_like_h100")
    on_cpu = {"environments": {"abc": {"versions": {"cc": "gcc 12", "blas": "OpenBLAS 0.3 (2 threads)"}}}}
    on_gpu = {"environments": {"abc": {"versions": {"cuda": "13.0"}}}}
    assert (results.baseline_library(on_cpu), results.measuring_device(on_cpu)) == ("BLAS", "CPU")
    assert (results.baseline_library(on_gpu), results.measuring_device(on_gpu)) == ("cuBLAS", "GPU")
    text = summary_text(table, 120, results.baseline_library(on_cpu))
    assert " BLAS " in text.splitlines()[0] and "cuBLAS" not in text
