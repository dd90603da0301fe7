"""The README's examples run as written: its experiment file holds the defaults it says it shows, its Python blocks
run (on the replay backend and this CPU; the one CUDA block is the GPU's), and its commands run from a folder of
their own, those that need a GPU on the replay backend where a recording of theirs ships, every other one named
here with the reason it does not run in the suite."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import tuner
from tuner.experiment.schema import parse_experiment
from tuner.settings import CompileSettings, MeasureSettings, SearchSettings
from tuner.space.entry_space import count_valid

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
BLOCKS = re.findall(r"^```(\w+)\n(.*?)^```", README, flags=re.S | re.M)
COMMANDS = [line.strip().split("  #")[0].strip() for line in README.splitlines()
            if re.match(r"^ {4}(python -m tuner|optuna-dashboard) ", line)]

ON_REPLAY = {
    "python -m tuner run experiments/fermi_like.yaml": "--backend replay",
    "python -m tuner run experiments/fermi_like.yaml --objective time,energy --strategy bruteforce --out "
    "reports/fermi_pareto": "--backend replay",
}
"""GPU commands whose experiment ships a recording: run on the replay backend."""
TABLE_PATH = ("a workload of the reader's own, tuned on a GPU, into a table: tests/test_table_cli.py runs the same "
              "path on a replay run, tests/test_table_export_cuda.py builds the export")
ELSEWHERE = {
    "python -m tuner space experiments/fermi_like.yaml --compile":
        "compiles every kernel with nvcc (tests/test_compile.py)",
    "python -m tuner device": "the GPU's ceilings (tests/gpu/test_device.py)",
    "python -m tuner profile reports/fermi_like --all": "Nsight Compute on the GPU (tests/gpu/test_counters.py)",
    "python -m tuner compare experiments/data/recorded/gemm_A100.json.gz":
        "50 runs of every strategy take minutes (tests/test_compare_command.py runs compare with fewer)",
    "python -m tuner run experiments/h100_sgemm.yaml --objective energy": "the GPU's energy counter",
    "python -m tuner run experiments/h100_sgemm.yaml --gpus all": "several GPUs (tests/test_multi_gpu.py)",
    "python -m tuner run experiments/h100_sgemm.yaml --gpus 0,2": "several GPUs (tests/test_multi_gpu.py)",
    "python -m tuner run experiments/h100_sgemm.yaml --storage postgresql://tuner:secret@db.example/tuning":
        "a PostgreSQL server of its own (tests/test_shared_storage.py)",
    "python -m tuner run experiments/h100_sgemm.yaml --storage journal:///shared/tuning/h100_sgemm.log":
        "a shared file system (tests/test_shared_storage.py)",
    "python -m tuner run experiments/cpu_blocking.yaml": "a minute of CPU (tests/cpu/test_cpu_run.py runs one trial)",
    "optuna-dashboard reports/fermi_like/study.log": "a server (tests/test_optuna_view.py)",
    "python -m tuner table workload --from-trace trace.json --out mlp.json":
        "a PyTorch profiler trace of the reader's program (tests/test_table_trace.py runs it on one in torch's format)",
    **{command: TABLE_PATH for command in (
        "python -m tuner table experiment mlp.json --base experiments/h100_sgemm.yaml --out experiments/mlp",
        "python -m tuner run experiments/mlp/mlp_float32.yaml",
        "python -m tuner table build reports/mlp_float32 [RUN_DIR ...] --out tables/mlp",
        "python -m tuner table show tables/mlp",
        "python -m tuner table predict tables/mlp 2048 4096 1024 float32",
        "python -m tuner table predict tables/mlp 2048 4096 1024 float32 --evaluations",
        "python -m tuner table holdout experiments/data/fermi_like_h100 --out benchmarks/results --name "
        "table_holdout_fermi_like_h100",
        "python -m tuner table export-cuda tables/mlp --out gemm_cuda")},
}
GPU_BLOCK = 'source="my_gemm.cu"'
"""The Python block that tunes a CUDA source (tests/gpu/test_tune_source.py tunes one)."""


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder of its own, where the README's relative paths (experiments/...) lead to the repository's."""
    (tmp_path / "experiments").symlink_to(ROOT / "experiments")
    monkeypatch.chdir(tmp_path)
    return tmp_path


def test_the_experiment_file_shows_the_defaults():
    text = next(body for kind, body in BLOCKS if kind == "yaml" and body.startswith("name: fermi_like"))
    document = yaml.safe_load(text)
    experiment = parse_experiment(text, "README.md")
    assert {k: getattr(experiment.search, k) for k in document["search"] if k != "objective"} == \
        {k: getattr(SearchSettings(), k) for k in document["search"] if k != "objective"}
    assert experiment.search.objective == SearchSettings().objective == (document["search"]["objective"],)
    assert experiment.measure == MeasureSettings()
    assert set(document["measure"]) == {f.name for f in dataclasses.fields(MeasureSettings)}
    assert experiment.compile == dataclasses.replace(CompileSettings(), options=tuple(document["compile"]["options"]))
    assert CompileSettings().options == ("-O3",) and CompileSettings().arch == document["compile"]["arch"]


def test_the_restrictions_example_narrows_its_entry():
    entry = next(body for kind, body in BLOCKS if kind == "yaml" and "restrictions:" in body)
    text = f"name: restricted\nproblems:\n  - {{M: 64, N: 64, K: 64}}\nkernels:\n{entry}"
    spec = parse_experiment(text, "README.md").kernels[0]
    total, valid, reasons = count_valid(spec)
    assert total == 16 and 0 < valid < 16
    assert {"restriction BLOCK_X * BLOCK_Y <= 512", "restriction BLOCK_X >= BLOCK_Y"} <= set(reasons)


@pytest.mark.slow  # a replayed run and a C kernel tuned on this CPU, each with its whole report
def test_the_python_examples_run(quick_ceilings, workdir):
    python = [body for kind, body in BLOCKS if kind == "python"]
    on_gpu = [body for body in python if GPU_BLOCK in body]
    assert len(on_gpu) == 1 and len(python) >= 3
    namespace: dict = {}
    for body in python:
        if body not in on_gpu:
            exec(compile(body, "README.md", "exec"), namespace)  # noqa: S102 - the README's own examples
    assert isinstance(namespace["experiment"], tuner.Experiment)
    result = namespace["result"]  # the C kernel given as source, tuned on this CPU
    assert result.best.iloc[0]["family"] == "my_gemm" and result.best.iloc[0]["p_TILE"] >= 2
    assert (workdir / "reports" / "notebook" / "report.html").is_file()


@pytest.mark.slow  # ten commands, each a process of its own, most of them whole runs with their reports
def test_every_command_is_run_or_said_where_it_is(quick_ceilings, workdir):
    assert set(ON_REPLAY) | set(ELSEWHERE) <= set(COMMANDS)
    for command in COMMANDS:
        if command in ELSEWHERE:
            continue
        line = f"{command} {ON_REPLAY[command]}" if command in ON_REPLAY else command
        words = line.split()
        assert words[:3] == ["python", "-m", "tuner"], f"no rule for the README's command {command!r}"
        done = subprocess.run([sys.executable, *words[1:]], cwd=workdir, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, f"{line}\n{done.stderr[-3000:]}"
        assert "Traceback" not in done.stderr
