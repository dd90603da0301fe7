"""Prediction for shapes never tuned: the nearest valid candidate, never one the new shape cannot run; and the
held-out measure on the shipped recordings, scored only where the recording holds the predicted configuration."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from tuner.config import Config, Problem
from tuner.results import table as results
from tuner.table.artifact import KernelTable
from tuner.table.build import build_table
from tuner.table.evaluations import recorded
from tuner.table.holdout import SOURCES, hold_out, report
from tuner.table.lookup import candidate_of, choose
from tuner.table.predict import Candidate, features, predict, refusal

SGEMM = Path("experiments/data/h100_sgemm_h100")
FERMI = Path("experiments/data/fermi_like_h100")
WGMMA = Path("experiments/data/h100_wgmma_exhaustive")


@pytest.fixture(scope="module")
def table() -> KernelTable:
    return build_table([SGEMM, FERMI, WGMMA])[0]


def test_a_tuned_shape_gets_its_own_winner(table):
    for entry in table.entries:
        found = predict(map(candidate_of, table.entries), entry.problem, entry.dtype)
        assert found is not None and found.neighbour.config.problem == entry.problem
        assert found.config == candidate_of(entry).config


def test_the_nearest_shape_of_the_same_dtype_is_chosen_and_named(table):
    found = predict(map(candidate_of, table.entries), Problem(8192, 1024, 4000), "float64")
    assert found is not None and found.neighbour.config.problem == Problem(8192, 1024, 4096)
    assert found.config.problem == Problem(8192, 1024, 4000) and found.config.dtype == "float64"
    assert "nearest tuned neighbour 8192x1024x4096 float64" in found.reason
    assert predict(map(candidate_of, table.entries), Problem(64, 64, 64), "float16") is None


def test_a_slow_family_on_a_near_shape_loses_to_a_fast_one_a_little_further(table):
    found = predict(map(candidate_of, table.entries), Problem(2048, 2048, 1024), "float32")
    assert found is not None and found.config.family == "regblock"


def test_a_configuration_the_new_shape_cannot_run_is_never_chosen(table):
    (wgmma,) = [candidate_of(e) for e in table.entries if e.family == "wgmma"]
    odd = Config(Problem(4096, 4096, 4100), "wgmma", "bfloat16", wgmma.config.params)
    assert "multiple of the 16 bytes" in (refusal(odd) or "")
    assert predict([wgmma], Problem(4096, 4096, 4100), "bfloat16") is None
    found = predict([wgmma], Problem(4096, 4096, 4104), "bfloat16")
    assert found is not None and refusal(found.config) is None
    broken = replace(wgmma, config=Config(wgmma.config.problem, "regblock", "float32", (("BM", 0),)))
    assert refusal(broken.config) is not None and predict([broken], Problem(64, 64, 64), "float32") is None


def test_features_see_the_tiles_per_wave_and_the_alignment(table):
    entry = next(e for e in table.entries if e.family == "regblock" and e.dtype == "float64")
    config = candidate_of(entry).config
    on = Config(Problem(128 * 132, 128, 4096), config.family, config.dtype, config.params)  # BM=BN=128: one wave
    tiles_per_wave, fullness, *aligned = features(on, 132)[3:]
    assert tiles_per_wave == 0.0 and fullness == 1.0 and aligned == [1.0, 1.0, 1.0, 1.0]
    ragged = Config(Problem(128 * 133, 128, 4100), config.family, config.dtype, config.params)
    assert features(ragged, 132)[4] == pytest.approx(133 / 264)
    assert features(ragged, 132)[5:].tolist() == [0.0, 0.0, 1.0, 1.0]


def test_a_candidate_behind_its_own_shapes_best_pays_for_the_gap(table):
    best = candidate_of(table.entries[-1])
    slower = Candidate(best.config, best.time_ms * 2, best.time_ms, best.multiprocessors, best.arch)
    found = predict([slower], best.config.problem, best.config.dtype)
    assert found is not None and found.distance == pytest.approx(0.6931, abs=1e-3)
    assert "2.000× that shape's best time" in found.reason


def test_the_table_answers_a_tuned_shape_from_its_entry_and_another_by_prediction(table):
    assert "why: tuned on this shape" in choose(table, 4096, 4096, 4096, "float64")
    text = choose(table, 2048, 2048, 1024, "float32")
    assert text.startswith("regblock ") and "why: predicted, never measured on this shape" in text


def test_each_held_out_shape_is_scored_against_what_the_recording_holds(root):
    runs = recorded([root / FERMI])
    df = results.load(root / FERMI)[0]
    ok = df[(df["status"] == "ok") & (df["family"] != "baseline")]
    for source in SOURCES:
        rows = hold_out(runs, source)
        assert [r.problem.label for r in rows] == ["1000x777x333", "1024x1024x1024", "4096x4096x4096"]
        for r in rows:
            mine = ok[ok["problem"] == r.problem.label]
            assert r.best_ms == mine["time_median_ms"].min() and r.neighbour != r.problem
            keys = mine["config_key"].tolist()
            assert r.predicted is not None and r.predicted.key in keys
            assert r.predicted_ms == mine[mine["config_key"] == r.predicted.key]["time_median_ms"].min()
            assert r.share_of_best is not None and 0 < r.share_of_best <= 1


def test_a_prediction_the_recording_never_measured_is_counted_not_scored(root):
    rows = hold_out(recorded([root / SGEMM]), "winners")
    unscored = [r for r in rows if r.predicted_ms is None]
    assert unscored and all(r.predicted is not None for r in unscored)
    text = report(rows, "title")
    assert f"{len(rows) - len(unscored)} of {len(rows)} held-out shapes scored" in text
    assert f"{len(unscored)} not scored" in text and "not measured" in text


def test_every_evaluation_of_the_runs_can_answer_where_the_winners_alone_would_not(root, table):
    from tuner.table.evaluations import evaluation_candidates

    pool = evaluation_candidates([root / FERMI])
    assert {c.config.family for c in pool} == {"naive", "tiled"} and len(pool) > 3
    assert all(c.source_best_ms <= c.time_ms for c in pool) and pool[0].multiprocessors == 132
    fermi = KernelTable(tuple(e for e in table.entries if e.run == str(FERMI)))
    text = choose(fermi, 1000, 777, 333, "float32", pool)
    assert "why: tuned on this shape" in text
    assert "why: predicted" in choose(fermi, 999, 777, 333, "float32", pool)
