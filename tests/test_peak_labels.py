"""What the summary, the report's tables and the roofline say a run's arithmetic peak is: the CPU's cores, the
GPU's CUDA cores, or its tensor cores through the instruction that measured them (mma.sync, wgmma); and a CPU
run's report speaks of no GPU tool."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

from tuner.report.html import render_html  # noqa: E402
from tuner.report.roofline import roofline_figure  # noqa: E402
from tuner.report.run_folder import load_run  # noqa: E402
from tuner.report.tables import best_per_problem  # noqa: E402
from tuner.results import table as results  # noqa: E402
from tuner.results.environment import Environment  # noqa: E402
from tuner.results.peak_source import short_of_tensor_rate, unit_words  # noqa: E402
from tuner.tuning.progress import summary_table, summary_text  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
WGMMA_RECORDING = ROOT / "experiments/data/h100_wgmma_exhaustive"


def _summary(folder: Path) -> tuple[str, str]:
    """The summary's text, and its words on one line."""
    df, metadata = results.load(folder)
    text = summary_text(summary_table(df, metadata=metadata), 110)
    return text, " ".join(text.split())


def _with_environments(folder: Path, tmp_path: Path, change) -> Path:
    copy = tmp_path / folder.name
    shutil.copytree(folder, copy)
    metadata = json.loads((copy / "metadata.json").read_text())
    for environment in metadata["environments"].values():
        change(environment)
    (copy / "metadata.json").write_text(json.dumps(metadata))
    return copy


def _measured_with_wgmma(environment: dict) -> None:
    environment["ceilings"]["tensor_instructions"] = {"bfloat16": "wgmma"}


def _on_cpu(environment: dict) -> None:
    environment["backend"] = "cpu"
    environment["device"] = {"name": "Some CPU"}


def test_the_shipped_wgmma_recording_names_its_peak_the_mma_sync_rate_and_no_ceiling_measured_too_low():
    text, words = _summary(WGMMA_RECORDING)
    assert "115.2^" in text and "115.2!" not in text
    assert "its tensor cores' mma.sync rate" in words and "through wgmma" in words
    assert "measured too low" not in words and "CUDA cores' multiply-add rate and" not in words


def test_the_report_flags_the_share_of_an_mma_sync_ceiling_on_sm90_as_such():
    table = best_per_problem(load_run(WGMMA_RECORDING))
    assert "115.2 %^" in table.rows[0]
    assert "through wgmma" in table.caption and "measured too low" not in table.caption


def test_a_wgmma_ceiling_is_named_as_such_and_a_share_above_it_is_flagged(tmp_path):
    folder = _with_environments(WGMMA_RECORDING, tmp_path, _measured_with_wgmma)
    text, words = _summary(folder)
    assert "its tensor cores' wgmma rate" in words and "mma.sync" not in words
    assert "115.2!" in text and "^" not in text.splitlines()[1]  # above the full tensor rate: too low a ceiling
    labels = [line.get_label() for ax in roofline_figure(load_run(folder)).axes for line in ax.get_lines()]
    assert any("GFLOP/s tensor cores (wgmma)" in label for label in labels)


def test_a_cpu_run_speaks_of_its_cores_not_of_cuda_cores_or_mma_sync(tmp_path):
    folder = _with_environments(ROOT / "experiments/data/fermi_like_h100", tmp_path, _on_cpu)
    _, words = _summary(folder)
    assert "its cores' multiply-add rate" in words
    assert "CUDA" not in words and "mma.sync" not in words
    labels = [line.get_label() for ax in roofline_figure(load_run(folder)).axes for line in ax.get_lines()]
    ceilings = [label for label in labels if ", measured:" in label or ", theoretical:" in label]
    assert ceilings and all("GFLOP/s cores" in label and "CUDA" not in label for label in ceilings)
    page = render_html(load_run(folder), {}, {})
    assert "Nsight Compute counted" not in page and "reaches on this GPU" not in page
    assert "measured C kernels on the CPU" in page


def test_which_instruction_a_tensor_ceiling_came_from():
    sm90 = {"device": {"compute_capability": "9.0"}, "peaks": {"measured": {"bfloat16_tensor_gflops": 6e5}}}
    older = Environment.from_dict(sm90)
    assert short_of_tensor_rate(older, "bfloat16") and not short_of_tensor_rate(older, "float64")
    assert unit_words(older, "bfloat16", "tensor") == "tensor cores (mma.sync)"
    assert unit_words(older, "bfloat16", "tensor", measured=False) == "tensor cores"
    newer = Environment.from_dict({**sm90, "ceilings": {"tensor_instructions": {"bfloat16": "wgmma"}}})
    assert not short_of_tensor_rate(newer, "bfloat16")
    a100 = Environment.from_dict({**sm90, "device": {"compute_capability": "8.0"}})
    assert not short_of_tensor_rate(a100, "bfloat16")  # mma.sync is its full tensor rate


def test_the_wgmma_dtypes_the_labels_know_are_those_the_ceilings_measure():
    from tuner.backends.pycuda.tensor_ceilings import WGMMA_ARCH, WGMMA_K
    from tuner.peaks import WGMMA_DTYPES

    assert {capability: set(dtypes) for capability, dtypes in WGMMA_DTYPES.items()} == {
        capability: set(WGMMA_K) for capability in WGMMA_ARCH}


def test_a_recording_of_an_unknown_device_is_named_neither_cublas_nor_gpu(tmp_path):
    import io

    import tuner
    from tuner.tuning.result_display import print_summary

    result = tuner.run(ROOT / "experiments/recorded_gemm_a100.yaml", backend="replay", trials=3,
                       out=tmp_path / "run", quiet=True, report=False)
    assert (results.baseline_library(result.metadata), results.measuring_device(result.metadata)) == (
        "baseline", "device")
    shown = io.StringIO()
    print_summary(result, shown, 120)
    text = shown.getvalue()
    assert "cuBLAS" not in text and "GPU busy" not in text and "device busy" in text
    on_cpu = {"environments": {"a": {"backend": "cpu"}, "b": {"backend": "recorded"}}}
    assert (results.baseline_library(on_cpu), results.measuring_device(on_cpu)) == ("BLAS", "CPU")
