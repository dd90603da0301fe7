"""Prediction for shapes never tuned: the nearest valid candidate, never one the new shape cannot run; and the
held-out measure on the shipped recordings, scored only where the recording holds the predicted configuration."""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

import pytest

from tuner.config import Config, Problem
from tuner.results import table as results
from tuner.table.artifact import KernelTable
from tuner.table.build import build_table
from tuner.table.evaluations import recorded
from tuner.table.holdout import SOURCES, hold_out, report
from tuner.table.lookup import candidate_of, choose, table_candidates
from tuner.table.predict import (
    ALIGNMENT_WEIGHT,
    FIXED_MS,
    Candidate,
    busiest_sm_work,
    distance,
    estimate,
    features,
    on_shape,
    predict,
    refusal,
    tiles,
)

SGEMM = Path("experiments/data/h100_sgemm_h100")
FERMI = Path("experiments/data/fermi_like_h100")
WGMMA = Path("experiments/data/h100_wgmma_exhaustive")


@pytest.fixture(scope="module")
def table() -> KernelTable:
    return build_table([SGEMM, FERMI, WGMMA])[0]


def test_a_tuned_shape_gets_its_own_winner_among_its_runs_configurations(table):
    for entry in table.entries:
        same_run = [e for e in table.entries if e.run == entry.run]
        found = predict(table_candidates(same_run), entry.problem, entry.dtype)
        assert found is not None and found.neighbour.config.problem == entry.problem
        assert found.config == candidate_of(entry).config and found.estimated_ms == entry.time_median_ms


def test_another_runs_family_wins_a_tuned_shape_only_where_estimated_faster_than_measured(table):
    for entry in table.entries:
        found = predict(table_candidates(table.entries), entry.problem, entry.dtype)
        assert found is not None
        assert found.config == candidate_of(entry).config or found.estimated_ms < entry.time_median_ms


def test_the_nearest_shape_of_the_same_dtype_is_chosen_and_named(table):
    found = predict(map(candidate_of, table.entries), Problem(8192, 1024, 4000), "float64")
    assert found is not None and found.neighbour.config.problem == Problem(8192, 1024, 4096)
    assert found.config.problem == Problem(8192, 1024, 4000) and found.config.dtype == "float64"
    assert "from tuned neighbour 8192x1024x4096 float64" in found.reason
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
    slower = _regblock_on(table, Problem(128 * 132, 128, 4096), 1.0)
    faster_but_refused = replace(slower, time_ms=0.5, source_best_ms=0.5, arch="sm_75")  # its shared memory
    assert refusal(faster_but_refused.config, "sm_75") is not None
    found = predict([faster_but_refused, slower], Problem(128 * 132, 128, 2048), "float64")
    assert found is not None and found.neighbour == slower


def test_features_see_the_tiles_per_wave_and_the_alignment(table):
    entry = next(e for e in table.entries if e.family == "regblock" and e.dtype == "float64")
    config = candidate_of(entry).config
    on = Config(Problem(128 * 132, 128, 4096), config.family, config.dtype, config.params)  # BM=BN=128: one wave
    tiles_per_wave, fullness, *aligned = features(on, 132)[3:]
    assert tiles_per_wave == 0.0 and fullness == 1.0 and aligned == [1.0, 1.0, 1.0, 1.0]
    ragged = Config(Problem(128 * 133, 128, 4100), config.family, config.dtype, config.params)
    assert features(ragged, 132)[4] == pytest.approx(133 / 264)
    assert features(ragged, 132)[5:].tolist() == [0.0, 0.0, 1.0, 1.0]


def test_a_candidate_behind_its_own_shapes_best_is_estimated_at_its_own_time(table):
    best = candidate_of(table.entries[-1])
    slower = Candidate(best.config, best.time_ms * 2, best.time_ms, best.multiprocessors, best.arch)
    found = predict([slower], best.config.problem, best.config.dtype)
    assert found is not None and found.distance == 0 and found.estimated_ms == best.time_ms * 2
    assert "2.000× that shape's best time" in found.reason
    assert predict([slower, best], best.config.problem, best.config.dtype).neighbour == best


def _regblock_on(table: KernelTable, problem: Problem, time_ms: float) -> Candidate:
    """The float64 regblock winner (128×128 tiles) as if measured on ``problem`` in ``time_ms``."""
    entry = next(e for e in table.entries if e.family == "regblock" and e.dtype == "float64")
    config = Config(problem, entry.family, entry.dtype, candidate_of(entry).config.params)
    return Candidate(config, time_ms, time_ms, 132, "sm_90")


def test_the_estimate_scales_the_busiest_sms_tiles_and_k_past_the_fixed_cost(table):
    one_wave = _regblock_on(table, Problem(128 * 132, 128, 4096), 1.0)
    assert tiles(one_wave.config) == 132 and busiest_sm_work(one_wave.config, 132) == 4096
    rest = 1.0 - FIXED_MS
    cases = [(Problem(128 * 133, 128, 4096), 2), (Problem(128 * 264, 128, 4096), 2), (Problem(128 * 66, 128, 4096), 1),
             (Problem(128, 128, 4096), 1), (Problem(128 * 132, 128, 8192), 2), (Problem(128 * 265, 128, 2048), 1.5)]
    for problem, scale in cases:
        assert estimate(one_wave, on_shape(one_wave.config, problem)) == pytest.approx(FIXED_MS + rest * scale)
    assert distance(one_wave.config, on_shape(one_wave.config, Problem(128 * 132, 512, 4100))) == \
        pytest.approx(2 + math.log2(4100 / 4096) + 2 * ALIGNMENT_WEIGHT)


def test_a_candidate_estimated_faster_beats_a_nearer_one_estimated_slower(table):
    near = _regblock_on(table, Problem(128 * 132, 128, 4096), 2.0)
    far = _regblock_on(table, Problem(128 * 132, 128, 8192), 2.0)
    target = Problem(128 * 132, 128, 5120)
    assert distance(near.config, on_shape(near.config, target)) < distance(far.config, on_shape(far.config, target))
    found = predict([near, far], target, "float64")
    assert found is not None and found.neighbour == far
    assert found.estimated_ms == pytest.approx(FIXED_MS + (2.0 - FIXED_MS) * 5120 / 8192)
    slower_far = replace(far, time_ms=5.0, source_best_ms=5.0)
    assert predict([near, slower_far], target, "float64").neighbour == near


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
    rows = hold_out(recorded([root / SGEMM]), "table")
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


LLAMA = Path("experiments/data/table_llama2_h200")


def test_held_out_llama_shapes_are_predicted_from_the_tables_best_few_and_ranked(root):
    runs = recorded([root / LLAMA])
    rows = hold_out(runs, "table")
    assert len(rows) == 18 and all(r.predicted is not None and r.recorded_here == 20 for r in rows)
    scored = [r for r in rows if r.predicted_ms is not None]
    for r in scored:
        here = sorted(t for c, t in runs.times.items() if c.problem == r.problem)
        assert r.best_ms == here[0] and here[r.rank - 1] == r.predicted_ms
    shares = [r.share_of_best for r in scored]
    assert len(scored) >= 9 and sum(shares) / len(shares) >= 0.95 and min(shares) >= 0.9
    text = report(rows, "title")
    assert f"{len(scored)} of 18 held-out shapes scored" in text and " 1/20" in text


def test_a_route_predicts_from_the_entries_alternatives_too(root):
    from tuner.table.routing import route

    table = build_table([root / LLAMA])[0]
    assert all(len(e.alternatives) == 7 for e in table.entries)
    winners = {candidate_of(e).config.params for e in table.entries}
    chosen = [route(table, e.problem, e.dtype, exclude={e.problem}) for e in table.entries]
    assert all(r.kind == "predicted" and refusal(r.config) is None for r in chosen)
    assert any(r.config.params not in winners for r in chosen)
    pool = table_candidates(e for e in table.entries if e.problem != table.entries[0].problem)
    assert chosen[0].config == predict(pool, table.entries[0].problem, table.entries[0].dtype).config
