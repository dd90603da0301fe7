"""The shape suite's logic without a GPU: the shapes it lists, the experiment it writes, the DRAM share, the
table and the figure."""

from __future__ import annotations

import json

import pytest

import tuner
from benchmarks import shape_figure, shapes
from tuner.config import Problem
from tuner.errors import TunerError
from tuner.measure.measurement import Measurement, Status, Timing


def test_the_suite_holds_two_models_four_layers_six_token_counts_and_ragged_shapes():
    suite, dtypes = shapes.load_suite()
    assert dtypes == ["bfloat16", "float16"]
    layers = [s for s in suite if s.kind != "ragged"]
    assert len(layers) == 2 * 4 * 6 and len(suite) > len(layers)
    assert {s.problem.M for s in layers} == {1, 16, 128, 1024, 4096, 16384}
    assert {s.kind for s in layers if s.problem.M <= 16} == {"decode"}
    assert any(s.problem.K % 8 for s in suite) and any(s.problem.N % 8 for s in suite)


def test_a_selection_that_matches_nothing_is_refused_by_name():
    suite, dtypes = shapes.load_suite()
    with pytest.raises(TunerError, match="no shape"):
        shapes.selected(suite, dtypes, "llama9", None)
    with pytest.raises(TunerError, match="not float64"):
        shapes.selected(suite, dtypes, None, "float64")
    kept, kept_dtypes = shapes.selected(suite, dtypes, "llama3-8b/qkv", "float16")
    assert len(kept) == 6 and kept_dtypes == ["float16"]
    kept, _ = shapes.selected(suite, dtypes, "llama3-8b/qkv,ragged,odd-k", None)
    assert [s.name for s in kept][-2:] == ["ragged", "odd-k"] and len(kept) == 8


def test_a_selection_by_class_keeps_the_decode_shapes_and_nothing_else():
    suite, dtypes = shapes.load_suite()
    kept, _ = shapes.selected(suite, dtypes, None, None, "decode")
    assert {s.problem.M for s in kept} == {1, 16} and len(kept) == 2 * 4 * 2
    kept, _ = shapes.selected(suite, dtypes, "llama3-70b", None, "decode")
    assert [s.name for s in kept][:2] == ["llama3-70b/qkv/M=1", "llama3-70b/qkv/M=16"] and len(kept) == 8
    with pytest.raises(TunerError, match="no shape of the suite has 'ragged' in its name and the class decode"):
        shapes.selected(suite, dtypes, "ragged", None, "decode")


def test_the_written_experiment_is_a_valid_experiment_of_the_selected_shapes(tmp_path, root):
    text = shapes.experiment(root / "experiments/h100_wgmma.yaml", "llama3-8b/down", "bfloat16")
    path = tmp_path / "suite.yaml"
    path.write_text(text)
    experiment = tuner.load_experiment(path)
    assert [(p.M, p.N, p.K) for p in experiment.problems] == [(m, 4096, 14336) for m in (1, 16, 128, 1024, 4096,
                                                                                           16384)]
    assert experiment.dtypes == ("bfloat16",)


def test_the_dram_share_counts_a_b_and_a_float32_c_once():
    problem = Problem(1, 8192, 8192)
    timing = Timing(median_ms=0.05, mean_ms=0.05, min_ms=0.05, stdev_ms=0.0, samples_ms=(0.05,))
    moved = (8192 + 8192 * 8192) * 2 + 8192 * 4
    share = shapes.dram_share(problem, "bfloat16", Measurement(Status.OK, timing=timing), 4000.0)
    assert share == pytest.approx(moved / 0.05e-3 / 4000e9)


def test_the_table_and_the_figure_show_every_row(tmp_path):
    rows = [{"shape": f"s{i}", "dtype": d, "ours_tflops": 100.0 + i, "cublas_tflops": 100.0, "cublaslt_tflops": 110.0,
             "triton_tflops": None, "ratio_cublas": (100.0 + i) / 100, "ratio_cublaslt": (100.0 + i) / 110,
             "ratio_triton": None, "ours_dram_share": None, "ours_from": "fastest of 5 listed configurations"}
            for i in range(3) for d in ("bfloat16", "float16")]
    env = {"device": {"name": "GPU"}, "versions": {"driver": "1", "cuda": "13"}, "measure": {"method": "m"},
           "peaks": {"measured": {"bandwidth_gbs": 4000.0}}}
    text = shapes.table(rows, env)
    assert sum(line.split()[:1] in (["s0"], ["s1"], ["s2"]) for line in text.splitlines()) == 6 and "1.020" in text
    figure = shape_figure.ratio_figure(rows, tmp_path / "f.png", "t")
    assert figure.stat().st_size > 10_000


def test_merged_results_keep_the_suite_order_and_the_latest_row_of_each_shape(tmp_path, root):
    results = root / "benchmarks/results"
    untuned, tuned = results / "shapes_h200.json", results / "shapes_tuned100_odd_h200.json"
    stem = shapes.merge([untuned, tuned], tmp_path, "merged")
    document = json.loads(stem.with_suffix(".json").read_text())
    rows = {(r["shape"], r["dtype"]): r for r in document["rows"]}
    assert len(rows) == len(document["rows"]) == 54 + 3
    assert rows[("odd-n", "bfloat16")]["ours_from"] == "tuned for this shape (shapes_tuned100_odd_h200.json)"
    assert rows[("ragged", "bfloat16")]["ours_from"].endswith("(shapes_h200.json)")
    assert [r["shape"] for r in document["rows"]][:2] == ["llama3-8b/qkv/M=1", "llama3-8b/qkv/M=16"]
    text = stem.with_suffix(".txt").read_text()
    assert "rows from 2 runs" in text and "shapes_tuned100_odd_h200.json c2649d0e9cc3" in text
    assert stem.with_suffix(".png").stat().st_size > 0


def test_results_of_two_gpu_models_are_not_merged(tmp_path, root):
    other = json.loads((root / "benchmarks/results/shapes_h200.json").read_text())
    other["metadata"]["device"]["name"] = "NVIDIA H100 80GB HBM3"
    (tmp_path / "h100.json").write_text(json.dumps(other))
    with pytest.raises(TunerError, match="h100.json: measured on NVIDIA H100"):
        shapes.merge([root / "benchmarks/results/shapes_tuned100_odd_h200.json", tmp_path / "h100.json"], tmp_path)


def test_a_result_with_a_malformed_row_is_refused_naming_the_file(tmp_path, root):
    document = json.loads((root / "benchmarks/results/shapes_tuned100_odd_h200.json").read_text())
    del document["rows"][1]["ratio_cublas"]
    (tmp_path / "cut.json").write_text(json.dumps(document))
    with pytest.raises(TunerError, match=r"cut.json: not a result .*lacks ratio_cublas"):
        shapes.merge([tmp_path / "cut.json"], tmp_path)
    assert shapes.main(["merge", str(tmp_path / "cut.json"), "--out", str(tmp_path)]) == 2
