"""counters.parquet, the results columns joined from it, which configurations are counted, and the one line that
says what was counted or why not."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from tuner.config import Config, Problem
from tuner.counters import store
from tuner.counters.collect import CountersNote, chosen, count_configurations
from tuner.counters.sources import Counted
from tuner.results.schema import BASELINE_FAMILY

GPU = "NVIDIA H100 80GB HBM3"


def _counted(key: str, l1: float = 4e9, gpu: str = GPU, **more) -> dict:
    return {"config_key": key, "gpu_name": gpu, "dram_bytes": 1e7, "l2_bytes": 5e8, "l1_bytes": l1,
            "l1_requested_bytes": 8e9, "flops_counted": 2e9, "flops_counted_how": "counted", "ncu_version": "2025.3",
            "clock_control": "none", "cache_control": "all", "replay_passes": 2, **more}


def _results(**more) -> pd.DataFrame:
    return pd.DataFrame([
        {"config_key": "p/naive/float32/A=1", "gpu_name": GPU, "flops": 2e9, "bytes_model": 8e9, **more},
        {"config_key": "p/naive/float32/A=2", "gpu_name": GPU, "flops": 2e9, "bytes_model": 8e9, **more},
        {"config_key": "p/naive/float32/A=1", "gpu_name": "another GPU", "flops": 2e9, "bytes_model": 8e9, **more},
    ])


def test_a_folder_without_counters_has_none(tmp_path):
    assert store.load(tmp_path).empty
    assert store.conditions(store.load(tmp_path)) == {}
    df = _results()
    assert store.join_folder(df, tmp_path) is df


def test_counted_rows_are_kept_and_a_recount_on_the_same_gpu_replaces_its_row(tmp_path):
    store.merge(tmp_path, [_counted("a"), _counted("b")])
    store.merge(tmp_path, [_counted("a", l1=3e9), _counted("a", gpu="another GPU")])
    counters = store.load(tmp_path)
    assert len(counters) == 3
    assert counters.set_index(["config_key", "gpu_name"]).loc[("a", GPU), "l1_bytes"] == 3e9
    assert store.counted_keys(counters) == {("a", GPU), ("b", GPU), ("a", "another GPU")}
    assert store.conditions(counters)["ncu_versions"] == ["2025.3"]
    assert store.conditions(counters)["clock_control"] == ["none"]


def test_the_results_take_the_counts_of_their_configuration_and_gpu_with_intensities_and_ratios():
    counters = store.empty()
    counters = pd.concat([counters, pd.DataFrame([_counted("p/naive/float32/A=1")])], ignore_index=True)
    joined = store.join(_results(), counters)
    first, uncounted, elsewhere = (joined.iloc[i] for i in range(3))
    assert first["l1_bytes"] == 4e9 and first["intensity_l1"] == pytest.approx(0.5)
    assert first["intensity_l2"] == pytest.approx(4) and first["intensity_dram"] == pytest.approx(200)
    assert first["l1_vs_model"] == pytest.approx(0.5) and first["requested_vs_model"] == pytest.approx(1)
    assert first["flops_vs_model"] == pytest.approx(1) and first["flops_counted_how"] == "counted"
    assert math.isnan(uncounted["l1_bytes"]) and math.isnan(uncounted["intensity_l1"])
    assert math.isnan(elsewhere["l1_bytes"])  # counted on one GPU model, measured on another
    again = store.join(joined, counters)
    assert list(again.columns) == list(joined.columns)  # the columns of an earlier join are replaced


def test_zero_bytes_give_no_intensity():
    counters = pd.DataFrame([_counted("p/naive/float32/A=1", dram_bytes=0.0)])
    assert math.isnan(store.join(_results(), counters).iloc[0]["intensity_dram"])


PROBLEMS = {"s1": Problem(64, 64, 64), "s2": Problem(128, 64, 64)}


def _key(study: str, block_x: int) -> str:
    return Config.make(PROBLEMS[study], "naive", "float32", {"BLOCK_X": block_x, "BLOCK_Y": 8}).key


def _table() -> pd.DataFrame:
    rows = []
    for study, problem in PROBLEMS.items():
        for i in range(1, 6):
            rows.append({"study": study, "config_key": _key(study, i), "family": "naive", "problem": problem.label,
                         "dtype": "float32", "status": "ok", "performance": float(i), "gflops": 1.0,
                         **problem.as_dict(), "p_BLOCK_X": i, "p_BLOCK_Y": 8, "gpu_name": GPU})
    rows.append({**rows[0], "config_key": "failed", "status": "wrong", "performance": None})
    rows.append({**rows[0], "config_key": f"64x64x64/{BASELINE_FAMILY}/float32/", "family": BASELINE_FAMILY,
                 "performance": 99.0})
    return pd.DataFrame(rows)


def test_best_takes_the_fastest_of_each_study_and_all_every_successful_kernel():
    best = chosen(_table(), "best", best=2)
    assert list(best["config_key"]) == [_key("s1", 5), _key("s2", 5), _key("s1", 4), _key("s2", 4)]
    assert len(chosen(_table(), "all")) == 10
    assert chosen(_table(), "none").empty
    named = chosen(_table(), "best", keys=[_key("s2", 1), f"64x64x64/{BASELINE_FAMILY}/float32/"])
    assert list(named["config_key"]) == [_key("s2", 1)]


class _Source:
    def __init__(self, counted: Counted):
        self.result = counted
        self.asked: list[list[str]] = []
        self.detail: list[bool] = []

    def count(self, configs, say=None, detail=True):
        self.asked.append([c.key for c in configs])
        self.detail.append(detail)
        return self.result


def test_every_configuration_is_counted_without_the_costliest_metrics(tmp_path):
    every = _Source(Counted([], [], "ncu"))
    count_configurations(_table(), tmp_path, every, "all")
    best, named = _Source(Counted([], [], "ncu")), _Source(Counted([], [], "ncu"))
    count_configurations(_table(), tmp_path, best, "best", best=1)
    count_configurations(_table(), tmp_path, named, "all", keys=[_key("s1", 5)])
    assert (every.detail, best.detail, named.detail) == ([False], [True], [True])


def test_configurations_counted_before_are_not_counted_again(tmp_path):
    df = _table()
    first = _Source(Counted([_counted(_key("s1", 5))], [], "Nsight Compute"))
    note = count_configurations(df, tmp_path, first, "best", best=1)
    assert (note.asked, note.counted, note.before) == (2, 1, 0)
    assert first.asked == [[_key("s1", 5), _key("s2", 5)]]
    second = _Source(Counted([], ["a reason"], ""))
    note = count_configurations(df, tmp_path, second, "best", best=1)
    assert (note.asked, note.counted, note.before) == (2, 0, 1) and second.asked == [[_key("s2", 5)]]
    assert note.text() == "1 of 2 configurations counted (the fastest 1 of each study, 1 of them before); not all: " \
                          "a reason"


def test_without_a_source_the_reason_is_said(tmp_path):
    note = count_configurations(_table(), tmp_path, None, "best", unable="the cpu backend reads no hardware counters")
    assert note.text() == "none read: the cpu backend reads no hardware counters"
    assert count_configurations(_table(), tmp_path, None, "none").text().startswith("not read (measure.counters")


def test_a_backend_without_counters_says_so_where_nothing_was_countable(tmp_path):
    note = count_configurations(_table().iloc[0:0], tmp_path, None, "best", unable="the cpu backend reads no "
                                                                                 "hardware counters")
    assert note.text() == "none read: the cpu backend reads no hardware counters"


def test_the_note_in_words():
    assert CountersNote("best", 6, 6, how="Nsight Compute 2025.3").text() == \
        "6 configurations counted (the fastest 3 of each study) by Nsight Compute 2025.3"
    assert CountersNote("all", 0).text() == "none read: no successful configuration to count"
    assert CountersNote("all", 4, 0, 0, ("no permission", "another")).text() == "none read: no permission (and 1 more)"
    note = CountersNote("all", 4, 2, 2, (), "ncu", 1.5)
    assert note.text() == "4 configurations counted (every successful configuration, 2 of them before) by ncu"
    assert CountersNote.from_dict(note.to_dict()) == note


def test_counters_read_on_another_gpu_model_are_said_not_to_join(tmp_path):
    source = _Source(Counted([_counted(_key("s1", 5), gpu="NVIDIA A100-SXM4-40GB")], [], "ncu"))
    note = count_configurations(_table(), tmp_path, source, "best", best=1)
    assert note.reasons == ("counted on NVIDIA A100-SXM4-40GB, not on the NVIDIA H100 80GB HBM3 that measured the "
                            "run: the results table joins counters of the GPU model that measured a row only",)
