"""benchmarks/counters.py on stand-ins for the runs and the profiler: the table it prints, the files it writes and
the fixture it saves (its numbers are not checked: they are the stand-ins')."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks import counters as bench
from tests.counted_backend import COUNTED_ENVIRONMENT
from tuner.counters.sources import Counted
from tuner.kernels.model import cost


def _fake_run(mode: str, out: Path, objective: str | None = None) -> dict:
    out.mkdir(parents=True)
    (out / "metadata.json").write_text(json.dumps({"environments": {"e": COUNTED_ENVIRONMENT}}))
    seconds = {"all": 13.0, "none": 10.0}[mode]
    return {"counters": mode, "wall_s": seconds, "search_s": 8.0, "counters_s": 2.5 if mode == "all" else None,
            "counted": 54 if mode == "all" else None, "asked": 54 if mode == "all" else None, "note": "",
            "evaluations": 60}


class _FakeNcu:
    def __init__(self, *args, **kwargs):
        pass

    def count(self, configs, say=None, detail=True):
        rows = []
        for config in configs:
            width = int(config.param_dict.get("TILE_WIDTH", 1))
            model = cost(config).global_bytes
            rows.append({"config_key": config.key, "l1_requested_bytes": model, "l1_bytes": model / (2 if width == 1
                                                                                                       else 1),
                         "l2_bytes": model / 8, "dram_bytes": 2e8, "flops_counted": 2 * 4096**3, "replay_passes": 2,
                         "counters_time_ms": 20.0})
        return Counted(rows, [], "Nsight Compute 2025.3.0.0, 2 replay passes per kernel", '"ID"\n', tuple(
            c.key for c in configs))


def test_the_benchmark_reports_both_goals_and_saves_the_fixture(tmp_path, monkeypatch):
    monkeypatch.setattr(bench, "timed_run", _fake_run)
    monkeypatch.setattr(bench, "NcuCounters", _FakeNcu)
    stem = bench.run(2, tmp_path / "out", tmp_path / "fixture", tmp_path / "kept")
    text = stem.with_suffix(".txt").read_text()
    assert "wall time with every configuration counted / without: 1.300 (median of each; goal ≤ 1.30: met)" in text
    assert "L1 of tiled T within 0.4% of the naive model / T (goal ≤ 10%: met)" in text
    assert "the naive kernel's L1 bytes are 0.500× of them" in text
    assert "naive / tiled TILE_WIDTH=16: requested 15.9" in text
    record = json.loads(stem.with_suffix(".json").read_text())
    assert [r["counters"] for r in record["wall_times"]] == ["all", "none", "none", "all"]
    assert len(record["l1_cut"]) == 4
    saved = json.loads((tmp_path / "fixture" / f"{stem.name.replace('counters', 'ncu_raw_counters')}.json")
                       .read_text())
    assert saved["kernels"][0] == {"sizes": {"M": 4096, "N": 4096, "K": 4096}, "family": "naive", "dtype": "float32",
                                   "params": {"BLOCK_X": 16, "BLOCK_Y": 16}}
    assert (tmp_path / "kept" / "metadata.json").is_file()
