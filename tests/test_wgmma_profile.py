"""The wgmma profile's logic without a GPU: the metrics it asks for, the configuration it profiles, its command line,
and the summary of Nsight Compute's raw CSV pages.

The CSV pages here are FORMAT FIXTURES, not measurements: they follow the layout of ``ncu --csv --page raw`` (a row
of names, a row of units, a row per profiled kernel; thousands separators; units with the prefix ncu chose) with
round numbers made up to check the arithmetic.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import wgmma_profile as wp
from tuner.errors import TunerError

QUERY = """Device NVIDIA H100 80GB HBM3 (GH100)
---------------------------------------------------------------------------
Metric Name                                   Metric Description
dram__bytes                                   # of bytes accessed in DRAM
sm__inst_executed_pipe_tensor_op_gmma         # of warp instructions executed by the gmma pipe
sm__inst_executed_pipe_tensor_op_hmma         # of warp instructions executed by the hmma pipe
sm__pipe_tensor_op_gmma_cycles_active         # of cycles where the gmma pipe was active
sm__pipe_tensor_op_hmma_cycles_active         # of cycles where the hmma pipe was active
sm__pipe_fma_cycles_active                    # of cycles where the fma pipe was active
"""
FLOPS_8192 = 2 * 8192**3
H100_DEVICE = {
    "device": {"name": "NVIDIA H100 80GB HBM3", "multiprocessors": 132},
    "peaks": {"measured": {"tf32_tensor_gflops": 420_000.0, "bfloat16_tensor_gflops": 840_000.0}},
    "ceilings": {"tensor_instructions": {"tf32": "wgmma", "bfloat16": "wgmma"},
                 "details": {"wgmma_tf32": {"sm_clock_mhz_before": 1980.0, "sm_clock_mhz_after": 1980.0},
                             "wgmma_bfloat16": {"sm_clock_mhz_after": 1830.0}}},
}


def format_fixture(kernels: list[dict[str, tuple[str, str]]]) -> str:
    """A raw page in ncu's CSV layout (FORMAT FIXTURE: made-up values), kernels in profiling order."""
    names = ["ID", "Process ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream", "Block Size",
             "Grid Size", "Device", "CC", *[n for n in kernels[0] if n != "Kernel Name"]]
    header = ",".join(f'"{n}"' for n in names)
    units = ",".join(f'"{kernels[0].get(n, ("", ""))[1]}"' for n in names)
    rows = []
    for index, kernel in enumerate(kernels):
        launch = {"ID": str(index), "Process ID": "4242", "Process Name": "python3", "Host Name": "127.0.0.1",
                  "Context": "1", "Stream": "7", "Block Size": "(384, 1, 1)", "Grid Size": "(132, 1, 1)",
                  "Device": "0", "CC": "9.0"}
        rows.append(",".join(f'"{launch.get(n) or kernel[n][0]}"' for n in names))
    return "\n".join(["==PROF== Disconnected from process 4242", header, units, *rows]) + "\n"


def kernel(name: str, duration: tuple[str, str], clock: tuple[str, str], gmma_pct: str) -> dict[str, tuple[str, str]]:
    return {
        "Kernel Name": (name, ""),
        "gpu__time_duration.sum": duration,
        "sm__cycles_elapsed.avg.per_second": clock,
        "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active": (gmma_pct, "%"),
        "sm__inst_executed_pipe_tensor_op_gmma.sum": ("1,048,576", "inst"),
        "dram__throughput.avg.pct_of_peak_sustained_elapsed": ("20.5", "%"),
        "dram__bytes.sum.per_second": ("0.6", "Tbyte/second"),
        "lts__throughput.avg.pct_of_peak_sustained_elapsed": ("40", "%"),
        "lts__t_bytes.sum.per_second": ("3,000,000,000,000", "byte/second"),
        "sm__throughput.avg.pct_of_peak_sustained_elapsed": ("85", "%"),
        "smsp__average_warps_issue_stalled_math_pipe_throttle_per_issue_active.ratio": ("0.5", ""),
        "smsp__average_warps_issue_stalled_wait_per_issue_active.ratio": ("2.25", ""),
        "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio": ("1.5", ""),
        "smsp__average_warps_issue_stalled_selected_per_issue_active.ratio": ("1", ""),
    }


def test_the_tensor_pipe_is_asked_for_under_every_name_the_gpu_lists():
    metrics = wp.choose_metrics(QUERY)
    assert metrics[: len(wp.FIXED_METRICS)] == list(wp.FIXED_METRICS)
    assert metrics[len(wp.FIXED_METRICS):] == [
        "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active",
        "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active",
        "sm__inst_executed_pipe_tensor_op_gmma.sum", "sm__inst_executed_pipe_tensor_op_hmma.sum"]
    assert "sm__pipe_fma_cycles_active.avg.pct_of_peak_sustained_active" not in metrics
    assert wp.choose_metrics("==ERROR== the query failed\n")[-1] == wp.FALLBACK_TENSOR[0]


def test_the_fastest_listed_configuration_is_profiled(tmp_path):
    listing = json.loads(wp.CONFIGS.read_text())
    params = [k["params"] for k in listing["kernels"] if k["family"] == "wgmma" and k["dtype"] == "tf32"][0]
    slower = dict(params, STAGES=3)
    listing["kernels"] = [{"family": "wgmma", "dtype": "tf32", "params": p} for p in (params, slower)]
    configs = tmp_path / "configs.json"
    configs.write_text(json.dumps(listing))
    first, _ = wp.chosen_config("tf32", 8192, configs, None)
    assert first.param_dict["STAGES"] == params["STAGES"]  # no record: the first listed
    record = tmp_path / "record.json"
    slower_key = first.key.replace(f"STAGES={params['STAGES']}", "STAGES=3")
    record.write_text(json.dumps({"rows": [{"config": first.key, "status": "ok", "kernel_tflops": 300.0},
                                           {"config": slower_key, "status": "ok", "kernel_tflops": 350.0}]}))
    chosen, settings = wp.chosen_config("tf32", 8192, configs, record)
    assert chosen.key == slower_key and settings.arch == "sm_90a"
    with pytest.raises(TunerError, match=r"no wgmma configuration in float16 at 8192x8192x8192"):
        wp.chosen_config("float16", 8192, configs, None)
    record.write_text("[1, 2]")
    with pytest.raises(TunerError, match="not a side-by-side record"):
        wp.chosen_config("tf32", 8192, configs, record)


def test_the_command_line_refuses_what_it_cannot_run(capsys, tmp_path):
    with pytest.raises(SystemExit) as exit_:
        wp.main(["launch", "--dtype", "float64", "--which", "kernel"])
    assert exit_.value.code == 2 and "dtypes are tf32, bfloat16 or float16" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_:
        wp.main(["launch", "--dtype", "tf32"])
    assert exit_.value.code == 2 and "--which" in capsys.readouterr().err
    assert wp.main(["metrics", str(tmp_path / "absent.txt")]) == 2
    assert "absent.txt: cannot read the metric query's output" in capsys.readouterr().err
    args = wp.parser().parse_args(["summarise", "--out", str(tmp_path), "--dtypes", "tf32"])
    assert (args.dtypes, args.size) == (["tf32"], 8192)


def test_the_summary_places_each_launch_against_the_ceiling_at_its_clock(tmp_path, capsys):
    """FORMAT FIXTURE: made-up figures in ncu's raw CSV layout; the arithmetic is what is checked."""
    (tmp_path / "device.json").write_text(json.dumps(H100_DEVICE))
    ours = kernel("matmul", ("3", "msecond"), ("1.755", "cycle/nsecond"), "90.5")
    helper = kernel("splitKreduce_kernel", ("10,000", "nsecond"), ("1,755,000,000", "cycle/second"), "0")
    library = kernel("sm90_xmma_gemm_tf32f32_tf32f32_f32_tn_n_tilesize256x128x32", ("2,750,000", "nsecond"),
                     ("1,600,000,000", "cycle/second"), "95")
    (tmp_path / "ncu_tf32_kernel.csv").write_text(format_fixture([ours]))
    (tmp_path / "ncu_tf32_cublas.csv").write_text(format_fixture([helper, library]))
    (tmp_path / "ncu_bfloat16_kernel.csv").write_text("==PROF== Disconnected from process 4242\n")
    assert wp.main(["summarise", "--out", str(tmp_path)]) == 0
    assert "wrote" in capsys.readouterr().err
    record = json.loads((tmp_path / "wgmma_profile_h100.json").read_text())
    rows = {(r["dtype"], r["who"]): r for r in record["rows"]}
    mine = rows["tf32", "kernel"]
    assert mine["tflops"] == pytest.approx(FLOPS_8192 / 3e-3 / 1e12)
    assert mine["sm_clock_mhz"] == pytest.approx(1755.0)
    assert mine["flops_per_sm_clock"] == pytest.approx(FLOPS_8192 / (3e-3 * 1.755e9 * 132))
    assert mine["pct_ceiling"] == pytest.approx(100 * mine["tflops"] / 420.0)
    assert mine["pct_ceiling_at_clock"] == pytest.approx(100 * mine["tflops"] / (420.0 * 1755 / 1980))
    assert mine["tensor_pipe_pct"] == {"sm__pipe_tensor_op_gmma_cycles_active": 90.5}
    assert mine["tensor_instructions"] == {"sm__inst_executed_pipe_tensor_op_gmma": 1_048_576.0}
    assert mine["dram_gbs"] == pytest.approx(600.0) and mine["l2_gbs"] == pytest.approx(3000.0)
    assert list(mine["stalls"]) == ["wait", "long_scoreboard", "math_pipe_throttle"]  # "selected" is the issue
    theirs = rows["tf32", "cublas"]
    assert theirs["profiled_kernels"] == 2 and theirs["kernel_name"].startswith("sm90_xmma_gemm_tf32")
    assert theirs["duration_ms"] == pytest.approx(2.75) and theirs["sm_clock_mhz"] == pytest.approx(1600.0)
    assert "no profiled kernel" in rows["bfloat16", "kernel"]["missing"]
    assert "No such file" in rows["bfloat16", "cublas"]["missing"]
    text = (tmp_path / "wgmma_profile_h100.txt").read_text()
    assert "tf32 420.0 TFLOP/s (wgmma, 1980 MHz)" in text
    line = next(li for li in text.splitlines() if li.startswith("tf32     kernel"))
    assert line.split()[2:8] == ["3.000", f"{mine['tflops']:.1f}", "1755", f"{mine['flops_per_sm_clock']:.0f}",
                                 f"{100 * mine['flops_per_sm_clock'] / 2048:.1f}", f"{mine['pct_ceiling']:.1f}"]
    assert "bfloat16 kernel  not profiled" in text


def test_without_the_device_summary_the_launches_are_shown_without_a_ceiling(tmp_path):
    (tmp_path / "ncu_tf32_kernel.csv").write_text(format_fixture([kernel("matmul", ("3", "msecond"),
                                                                         ("1.755", "cycle/nsecond"), "90")]))
    stem = wp.summarise(tmp_path, ["tf32"], 8192)
    assert stem == Path(tmp_path / "wgmma_profile_gpu")
    row = json.loads(stem.with_suffix(".json").read_text())["rows"][0]
    assert row["flops_per_sm_clock"] is None and "pct_ceiling" not in row and row["tflops"] > 0
