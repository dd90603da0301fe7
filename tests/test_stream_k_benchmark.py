"""benchmarks/stream_k.py's logic without a GPU: which rows of a shape-suite result it takes, the variants it times
for each, and the table it prints from measured rows."""

from __future__ import annotations

import json

import pytest

from benchmarks.stream_k import chosen_rows, main, read_result, stream_k_variants, suite_config, table
from tuner.config import Config, Problem
from tuner.errors import TunerError

DECODE = Config.make(Problem(1, 6144, 4096), "wgmma", "bfloat16",
                     dict(BK=64, BM=64, BN=128, CLUSTER=1, CONSUMERS=1, GROUP=8, PERSISTENT=0, REDUCE="atomic",
                          REGALLOC=0, SPLIT_K=4, STAGES=3))
RAGGED = Config.make(Problem(5000, 7000, 3000), "wgmma", "bfloat16",
                     dict(BK=64, BM=256, BN=192, CLUSTER=2, CONSUMERS=2, GROUP=8, PERSISTENT=1, REDUCE="serial",
                          REGALLOC=1, SPLIT_K=1, STAGES=4))


def row(config: Config, ratio: float | None, dtype: str = "bfloat16") -> dict:
    return {"shape": "s", "problem": config.problem.label, "dtype": dtype, "config": config.key,
            "ratio_cublas": ratio}


def test_the_rows_below_the_ratio_of_wgmma_kernels_in_the_dtype():
    mma = Config.make(Problem(3001, 2999, 4097), "mma", "bfloat16", dict(BM=128))
    result = {"rows": [row(DECODE, 0.80), row(DECODE, 0.97), row(DECODE, 0.80, "float16"), row(mma, 0.84),
                       row(DECODE, None), {"dtype": "bfloat16", "config": None, "ratio_cublas": 0.5}]}
    assert chosen_rows(result, 0.95, "bfloat16") == [result["rows"][0]]


def test_a_rows_key_gives_back_its_configuration():
    assert suite_config(row(DECODE, 0.8)) == DECODE and suite_config(row(RAGGED, 0.9)) == RAGGED


def test_the_variants_move_the_tile_to_persistent_blocks_then_stream_it():
    variants = stream_k_variants(DECODE)
    assert [(v["STREAM_K"], v["REDUCE"]) for v in variants] == [
        (0, "serial"), (1, "serial"), (1, "atomic"), (2, "serial"), (2, "atomic")]
    for v in variants:
        assert (v["PERSISTENT"], v["CLUSTER"], v["SPLIT_K"], v["BM"], v["BN"], v["STAGES"]) == (1, 1, 1, 64, 128, 3)


def test_a_tile_at_the_register_budget_streams_with_atomic_additions_only():
    """256×192 over two consumers holds 192 accumulators a thread: the serial reduction's 16 more pass 232."""
    assert [(v["STREAM_K"], v["REDUCE"], v["BM"]) for v in stream_k_variants(RAGGED)] == [
        (0, "serial", 256), (1, "atomic", 256), (2, "atomic", 256)]


def test_a_tile_without_registers_for_any_reduction_gives_each_consumer_half():
    """tf32's 128×256 over two consumers: two m64n128 slabs of Cᵀ a consumer, 28 registers each to reduce; with
    128 columns, one slab each."""
    tf32 = Config.make(Problem(5000, 7000, 3000), "wgmma", "tf32",
                       dict(BK=32, BM=128, BN=256, CLUSTER=2, CONSUMERS=2, GROUP=8, PERSISTENT=1, REGALLOC=1,
                            STAGES=4))
    variants = stream_k_variants(tf32)
    assert {(v["BM"], v["BN"]) for v in variants} == {(128, 128)} and {v["STREAM_K"] for v in variants} == {0, 1, 2}


def test_a_result_that_is_not_one_is_refused_naming_the_file(tmp_path):
    """The suite's own reader (benchmarks/shapes.py), which merge uses too."""
    bad = tmp_path / "r.json"
    for text in ('{"rows": "none"}', "{", json.dumps({"rows": [], "metadata": {}})):
        bad.write_text(text)
        with pytest.raises(TunerError, match="r.json: not a result of 'shapes.py compare'"):
            read_result(bad)


@pytest.mark.parametrize("key", ["axbxc/wgmma/bfloat16/BM=64", "1x2x3/wgmma/bfloat16/BM",
                                 "1x2x3/wgmma/bfloat16/X=1.5e3", "1x2x3/wgmma"])
def test_a_row_naming_no_readable_configuration_is_refused(key):
    with pytest.raises(TunerError, match="the row of s names"):
        suite_config({"shape": "s", "config": key})


def test_the_table_names_each_variant_and_the_fastest_per_shape():
    env = {"device": {"name": "NVIDIA H200"}, "measure": {"method": "events"}, "versions": {}, "peaks": {}}
    rows = [{"shape": "a", "problem": "1x6144x4096", "variant": v, "status": "ok", "kernel_tflops": t, "ratio": r,
             "ratio_suite": t / 1.8, "config": f"k/{v}"} for v, t, r in
            (("suite", 1.8, 0.80), ("stream-K 2 atomic", 2.1, 0.93))]
    rows.append({"shape": "a", "problem": "1x6144x4096", "variant": "stream-K 1 serial", "status": "kernel: wrong",
                 "reason": "2 elements off"})
    text = table(rows, env, "merged.json", 2)
    assert "a stream-K variant fastest on 1 of 1 shapes" in text
    assert "stream-K 2 atomic" in text and "1.167" in text and "kernel: wrong: 2 elements off" in text


@pytest.mark.parametrize("options", [["--rounds", "0"], ["--max-time", "0"], ["--max-time", "nan"]])
def test_no_round_or_no_time_is_refused_before_any_measurement(tmp_path, capsys, options):
    assert main([str(tmp_path / "absent.json"), *options]) == 2
    assert "give at least one round and a positive time" in capsys.readouterr().err


def test_an_absent_result_is_refused_naming_it(tmp_path, capsys):
    assert main([str(tmp_path / "absent.json")]) == 2
    assert "absent.json: not a result of 'shapes.py compare'" in capsys.readouterr().err
