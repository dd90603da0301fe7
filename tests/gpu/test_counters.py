"""The counters on the GPU: Nsight Compute counts the seed kernels (naive 16×16, tiled 16 and 32 at 1024³ float32),
and what it counts is what the kernels' code says it must be; the ceilings of the cache levels order as the
hierarchy does; a run (in its measuring process) and ``tuner profile`` (Nsight Compute) read counters end to end. Each
test skips, saying why, where ncu is not installed; a GPU where counters cannot be read for another reason (no
permission, say) fails with that reason."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from tuner.config import Config, Problem
from tuner.counters.ncu import NcuUnavailable, find_ncu
from tuner.counters.sources import NcuCounters
from tuner.kernels.model import cost
from tuner.results.schema import BASELINE_FAMILY
from tuner.settings import CompileSettings

pytestmark = pytest.mark.gpu

ROOT = Path(__file__).resolve().parents[2]
PROBLEM = Problem(1024, 1024, 1024)
NAIVE = Config.make(PROBLEM, "naive", "float32", {"BLOCK_X": 16, "BLOCK_Y": 16})
TILED = {t: Config.make(PROBLEM, "tiled", "float32", {"TILE_WIDTH": t}) for t in (16, 32)}
MOST_PASSES = 3


@pytest.fixture(scope="module")
def ncu() -> str:
    try:
        return find_ncu()
    except NcuUnavailable as exc:
        pytest.skip(str(exc))


@pytest.fixture(scope="module")
def counted(ncu, backend):
    result = NcuCounters(CompileSettings(), device_name=backend.device()["device"]["name"]).count(
        [NAIVE, *TILED.values()])
    assert result.reasons == [], f"{result.reasons}\n{result.log}"
    return {row["config_key"]: row for row in result.rows}, result


def test_every_seed_kernel_is_counted_in_at_most_three_replay_passes(counted):
    rows, result = counted
    print(result.how, "; metrics the GPU lacks:", {row["metrics_missing"] for row in rows.values()})
    assert set(rows) == {NAIVE.key, *(c.key for c in TILED.values())}
    passes = [row["replay_passes"] for row in rows.values()]
    assert None not in passes, f"no pass count in Nsight Compute's output:\n{result.log}"
    assert all(1 <= count <= MOST_PASSES for count in passes), result.how
    assert all(row["clock_control"] == "none" and row["cache_control"] == "all" for row in rows.values())


def test_the_operations_counted_are_the_products_multiply_adds(counted):
    rows, _ = counted
    for row in rows.values():
        assert row["flops_counted"] == 2 * 1024**3  # one FFMA per product term, nothing else in floating point


def test_the_warps_address_what_their_loads_name_once_each(counted):
    """sm__sass_data_bytes_mem_global counts each distinct byte once per warp instruction. The tiled kernels' lanes
    all load distinct elements, so they address the model's bytes; a warp of the naive kernel's 16-wide block covers
    two rows of C and per step of k names 2 elements of A (one per row, broadcast) and 16 of B: 72 bytes where the
    model counts its 32 lanes' 256, 9/32 of it."""
    rows, _ = counted
    if rows[NAIVE.key]["l1_requested_bytes"] is None:
        pytest.skip("this GPU has no sm__sass_data_bytes_mem_global: the bytes the warps address are not counted")
    for config in TILED.values():
        assert rows[config.key]["l1_requested_bytes"] == pytest.approx(cost(config).global_bytes, rel=0.02)
    share = rows[NAIVE.key]["l1_requested_bytes"] / cost(NAIVE).global_bytes
    print(f"addressed / model, naive 16x16: {share:.4f} (9/32 = {9 / 32:.4f})")
    assert share == pytest.approx(9 / 32, rel=0.05)


def test_the_l1_sectors_of_tiled_t_are_the_naive_models_over_t(counted):
    rows, _ = counted
    naive_model = cost(NAIVE).global_bytes
    for width, config in TILED.items():
        measured = rows[config.key]["l1_bytes"]
        print(f"L1 bytes tiled {width}: {measured:.4g}, naive model / {width}: {naive_model / width:.4g}")
        assert measured == pytest.approx(naive_model / width, rel=0.10)


def test_a_warp_of_two_rows_shares_its_sectors_of_a_and_b(counted):
    """Each warp of the naive kernel's 16-wide block covers two rows of C: per step of k its lanes read two elements
    of A (one per row, broadcast) and one 64-byte row segment of B, twice: 4 sectors, 128 bytes, where the model
    counts 256. So the L1 sees half the model's bytes, and naive / tiled16 at the L1 is about 8, not 16: the 16-fold
    cut is against what the no-cache model says the naive kernel reads."""
    rows, _ = counted
    naive = rows[NAIVE.key]
    share = naive["l1_bytes"] / cost(NAIVE).global_bytes
    ratio = naive["l1_bytes"] / rows[TILED[16].key]["l1_bytes"]
    print(f"L1 / model, naive 16x16: {share:.3f}; L1 naive / tiled16: {ratio:.2f}")
    assert share == pytest.approx(0.5, rel=0.05)
    assert ratio == pytest.approx(8, rel=0.10)


def test_the_l2_moves_no_less_than_dram_and_dram_reads_each_input_once(counted):
    rows, _ = counted
    inputs = 2 * 1024**2 * 4  # A and B; C's lines may still sit in the L2 when the kernel ends
    for key, row in rows.items():
        assert row["l2_bytes"] >= row["dram_bytes"], key  # (the L2 counts DRAM's fills too: it can exceed the L1)
        assert row["dram_bytes"] >= 0.95 * inputs, key  # every cache flushed before each pass


def test_the_cache_levels_ceilings_order_as_the_hierarchy(backend):
    peaks = backend.device()["peaks"]
    measured, theoretical = peaks["measured"], peaks["theoretical"]
    print({k: round(measured[k]) for k in ("bandwidth_gbs", "l2_bandwidth_gbs", "l1_bandwidth_gbs",
                                           "shared_bandwidth_gbs")})
    assert measured["bandwidth_gbs"] < measured["l2_bandwidth_gbs"] < measured["l1_bandwidth_gbs"]
    assert measured["l2_bandwidth_gbs"] < measured["shared_bandwidth_gbs"]
    for key in ("l1_bandwidth_gbs", "shared_bandwidth_gbs"):
        assert measured[key] <= 1.05 * theoretical[key]


SMALL = """\
name: counted_seeds
problems:
  - {M: 512, N: 512, K: 512}
kernels:
  - template: naive
    parameters: {BLOCK_X: [16, 32], BLOCK_Y: [8]}
  - template: tiled
    parameters: {TILE_WIDTH: [16, 32]}
search: {strategy: grid, trials: 10}
measure: {counters: best}
"""


def test_a_run_reads_counters_and_profile_adds_the_rest(ncu, tmp_path):
    experiment = tmp_path / "counted_seeds.yaml"
    experiment.write_text(SMALL)
    out = tmp_path / "run"
    done = subprocess.run([sys.executable, "-m", "tuner", "run", str(experiment), "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    summary = " ".join(done.stdout.split())
    assert ("counters: 3 configurations counted (the fastest 3 of each study) by CUPTI's range profiler in the "
            "measuring process" in summary), summary
    df = pd.read_parquet(out / "results.parquet")
    kernels = df[df["family"] != BASELINE_FAMILY]
    assert kernels["l1_bytes"].notna().sum() == 3
    assert (out / "roofline_hierarchical.png").is_file()
    done = subprocess.run([sys.executable, "-m", "tuner", "profile", str(out), "--all", "--no-report"], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "counters: 4 configurations counted (every successful configuration, 3 of them before)" in done.stdout
    assert pd.read_parquet(out / "results.parquet")["l1_bytes"].notna().sum() == 4
    metadata = json.loads((out / "metadata.json").read_text())
    assert metadata["counters"]["clock_control"] == ["none"]
    assert metadata["counters"]["cache_control"] == ["all", "l2"]  # profile: Nsight Compute; the run: in process
