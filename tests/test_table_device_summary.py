"""The kernel-table device benchmark (benchmarks/table_device.py) without a GPU: it imports without PyTorch or
PyCUDA, its held-out shares and goals, what each shape learned from the shapes tuned before it (on a replayed run
with transfer), its error bound and the text of its record."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import tuner
from benchmarks.table_device import CHAIN_PER_LAYER, budget, end_to_end_bound
from benchmarks.table_summary import EARLY_EVALUATIONS, learned_from_earlier, report_text, share_summary
from tuner.results.schema import BASELINE_FAMILY

ROOT = Path(__file__).resolve().parents[1]


def test_the_benchmark_imports_without_torch_or_pycuda(root):
    probe = ("import sys, benchmarks.table_device, benchmarks.table_measure, benchmarks.table_timing; "
             "print(sorted(m for m in ('torch', 'pycuda', 'cupy') if m in sys.modules))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0 and done.stdout.strip() == "[]", done.stderr


def test_shares_give_mean_and_worst_of_the_scored_and_the_goals():
    summary = share_summary([1.0, 0.92, None, 0.96])
    assert summary["scored"] == 3 and summary["not_scored"] == 1
    assert summary["mean"] == pytest.approx(0.96) and summary["worst"] == 0.92 and summary["goals_met"]
    assert not share_summary([1.0, 0.85])["goals_met"] and not share_summary([0.94, 0.94])["goals_met"]
    assert share_summary([None]) == {"scored": 0, "not_scored": 1, "mean": None, "worst": None, "goals_met": False}


@pytest.fixture(scope="module")
def transferred_run(tmp_path_factory):
    return tuner.run(ROOT / "experiments/fermi_like.yaml", backend="replay", transfer=2, trials=8, quiet=True,
                     out=tmp_path_factory.mktemp("run") / "fermi", report=False, summary=False)


@pytest.mark.parametrize("early", [3, EARLY_EVALUATIONS])
def test_each_shape_after_the_first_says_what_its_first_evaluations_reached(transferred_run, early):
    df = transferred_run.df
    tuned = df[df["family"] != BASELINE_FAMILY]
    order = list(dict.fromkeys(tuned.sort_values("wall_offset_s")["problem"]))
    rows = learned_from_earlier(df, early)
    assert [r["problem"] for r in rows] == order[1:]
    for row in rows:
        times = tuned[tuned["problem"] == row["problem"]].sort_values("wall_offset_s")["time_median_ms"].tolist()
        assert row["evaluations"] == len(times) and row["best_ms"] == min(times)
        assert row["early_share"] == pytest.approx(min(times) / min(times[:early]))
        assert row["transferred"] == tuned[tuned["problem"] == row["problem"]]["transferred_from"].notna().sum() > 0
        reached = row["evaluations_to_goal"]
        assert min(times) / min(times[:reached]) >= 0.97 and (reached == 1 or min(times) / min(times[:reached - 1])
                                                               < 0.97)


def test_the_bound_adds_each_products_roundings_along_the_chain():
    one_layer = end_to_end_bound(1, 4096)
    assert one_layer == pytest.approx(CHAIN_PER_LAYER * (2**-7 + 4096 * 2**-24))
    assert end_to_end_bound(2, 4096) == pytest.approx(2 * one_layer)
    assert budget(None) == {"trials_per_shape": 50, "timeout_s_per_shape": 30}
    assert budget(7)["trials_per_shape"] == 7


def test_the_record_reads_as_a_table_naming_the_goals(transferred_run):
    held = [{"shape": "128x4096x4096", "route": "predicted", "own_ms": 0.1, "predicted_ms": 0.11, "torch_ms": 0.12,
             "share": 0.1 / 0.11, "predicted_config": "wgmma BM=128"},
            {"shape": "64x64x64", "route": "fallback", "own_ms": 0.01, "predicted_ms": 0.01, "torch_ms": 0.01,
             "share": None, "predicted_config": None}]
    record = {
        "model": "a stack", "dtype": "bfloat16_out_bfloat16", "tokens": [2048, 128], "workload": [{}] * 18,
        "environment": {"gpu": "NVIDIA H200", "driver": "570", "cuda": "12.8", "torch": "2.6"},
        "stages_s": {"record": 1.0, "tune": 500.0, "build": 2.0},
        "tuning": {"shapes": 18, "evaluations": 360, "trials_per_shape": 20, "timeout_s_per_shape": 25,
                   "goal_met": True},
        "held_out": {"rows": held, "summary": share_summary([r["share"] for r in held])},
        "host_overhead": {"shape": "64x64x64", "calls": 10000, "route": "fallback", "table_us": 9.0,
                          "torch_us": 5.0, "difference_us": 4.0},
        "cuda_graph": {"captured": False, "error": "RuntimeError: not allowed"},
        "end_to_end": [{"tokens": 128, "torch_ms": 2.0, "table_ms": 1.9, "ratio": 2.0 / 1.9, "table_error": 0.01,
                        "torch_error": 0.01, "bound": 0.07, "within_bound": True}],
        "learned": learned_from_earlier(transferred_run.df),
    }
    text = report_text(record)
    assert "mean 0.909, worst 0.909 (1 scored, 1 not); goals ≥0.95 mean, ≥0.9 worst: NOT met" in text
    assert "difference 4.00 µs (goal ≤10.0: met)" in text and "CUDA graph: NOT captured (RuntimeError" in text
    assert "ratio torch/table 1.053" in text and "(within)" in text and "1024x1024x1024" in text
